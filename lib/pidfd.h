/*
 * Process file descriptors (Linux >= 5.3): a pidfd names one process for
 * as long as it is open, so a signal sent through it can never reach
 * another process that was given the same pid after the first was reaped.
 * Every signal esv sends to a worker goes through one.
 */
#ifndef ESV_PIDFD_H
#define ESV_PIDFD_H

#include <sys/types.h>

/* A pidfd (close-on-exec) for pid, or -1/errno. */
int	esv_pidfd_open(pid_t pid);
/* Signal the process: 0, or -1/errno (ESRCH: it is gone, or reaped). */
int	esv_pidfd_kill(int pidfd, int sig);
/*
 * Signal the process group whose id is the pidfd's process's pid (a
 * session or group leader's pidfd), even after the leader was reaped:
 * 0, or -1/errno.  ESRCH: no process is left in that group.  EINVAL: the
 * kernel (before 6.9) cannot; then only a caller that knows the leader is
 * its own unreaped child may use killpg(2) instead.
 */
int	esv_pidfd_killpg(int pidfd, int sig);

#endif
