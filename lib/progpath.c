#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "progpath.h"

extern char **environ;

void
prog_path(const char *name, const char *subdir, const char *envvar,
    char *buf, size_t len)
{
	char self[PATH_MAX], *dir;
	const char *env = getenv(envvar);
	ssize_t n;

	if (env != NULL && *env != '\0') {
		strlcpy(buf, env, len);
		return;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		dir = dirname(self);
		if (pathf(buf, len, "%s/%s", dir, name) == 0 &&
		    access(buf, X_OK) == 0)
			return;
		if (pathf(buf, len, "%s/../%s/%s", dir, subdir, name) == 0 &&
		    access(buf, X_OK) == 0)
			return;
	}
	strlcpy(buf, name, len);
}

/*
 * logfd -1: our stdin and stderr, and stdout onto stderr if asked;
 * otherwise stdin /dev/null and stdout and stderr onto logfd.
 */
static int
spawn(char *const argv[], int fd3, bool stdout_to_stderr, int logfd,
    pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int e;

	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
	    POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_init(&fa);
	/* fd3 and logfd are 3 or above: 0, 1 and 2 are always open here. */
	e = posix_spawn_file_actions_adddup2(&fa, fd3, 3);
	if (e == 0 && logfd != -1) {
		e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
		    O_RDONLY, 0);
		if (e == 0)
			e = posix_spawn_file_actions_adddup2(&fa, logfd, 1);
		if (e == 0)
			e = posix_spawn_file_actions_adddup2(&fa, logfd, 2);
	} else if (e == 0 && stdout_to_stderr)
		e = posix_spawn_file_actions_adddup2(&fa, 2, 1);
	if (e == 0)
		e = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return e;
}

int
prog_spawn(char *const argv[], int fd3, bool stdout_to_stderr, pid_t *pid)
{
	return spawn(argv, fd3, stdout_to_stderr, -1, pid);
}

int
prog_spawn_logged(char *const argv[], int fd3, int logfd, pid_t *pid)
{
	return spawn(argv, fd3, false, logfd, pid);
}
