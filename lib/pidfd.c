#include <sys/syscall.h>

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "pidfd.h"

/* Not every libc has the wrappers, nor every header the numbers. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif
#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP	(1U << 2)	/* Linux 6.9 */
#endif

int
esv_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0U);
}

int
esv_pidfd_kill(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0U);
}

int
esv_pidfd_killpg(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL,
	    PIDFD_SIGNAL_PROCESS_GROUP);
}
