/*
 * Where esv-supervise finds the programs it starts (esv-rdzv,
 * esv-watchdogd...): $envvar if set, else beside its own executable
 * (installed), else in the build tree's ../subdir/, else by $PATH.
 */
#ifndef ESV_PROGPATH_H
#define ESV_PROGPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

void	prog_path(const char *name, const char *subdir, const char *envvar,
	    char *buf, size_t len);

/*
 * Start argv[0] (a path from prog_path) as a helper daemon: in a session
 * of its own (terminal signals aimed at the job are not for it), with an
 * empty signal mask (ours blocks what signalfd reads), fd3 as its fd 3
 * and, if stdout_to_stderr, its standard output on our standard error.
 * 0 with *pid set, or an errno value.
 */
int	prog_spawn(char *const argv[], int fd3, bool stdout_to_stderr,
	    pid_t *pid);
/*
 * The same for a daemon that must hold none of our stdio (it may outlive
 * a moment of ours, and a batch system waits for every holder of a step's
 * output): stdin /dev/null, stdout and stderr onto logfd.
 */
int	prog_spawn_logged(char *const argv[], int fd3, int logfd, pid_t *pid);

#endif
