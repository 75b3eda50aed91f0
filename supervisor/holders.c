/*
 * Every worker inherits supervise/group.lock, and so does whatever it
 * forks unless that closes its fds.  The open lock file therefore marks
 * the job's processes even after they left the worker's process group
 * (setsid daemons, double forks): find them by the file's identity.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "supervise.h"

static bool
holds(pid_t pid, dev_t dev, ino_t ino)
{
	char path[64];
	struct dirent *de;
	struct stat st;
	bool found = false;
	DIR *d;
	int dfd;

	if (pathf(path, sizeof(path), "/proc/%d/fd", (int)pid) == -1 ||
	    (d = opendir(path)) == NULL)
		return false;
	dfd = dirfd(d);
	while (!found && (de = readdir(d)) != NULL)
		found = de->d_name[0] != '.' &&
		    fstatat(dfd, de->d_name, &st, 0) == 0 &&
		    st.st_dev == dev && st.st_ino == ino;
	closedir(d);
	return found;
}

unsigned
kill_lock_holders(dev_t dev, ino_t ino, int signo)
{
	struct dirent *de;
	unsigned n = 0;
	pid_t self = getpid(), pid;
	char *end;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid = (pid_t)strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1 || pid == self)
			continue;
		if (holds(pid, dev, ino) && kill(pid, signo) == 0)
			n++;
	}
	closedir(d);
	return n;
}
