/*
 * Every worker inherits supervise/group.lock, and so does whatever it
 * forks unless that closes its fds.  The open lock file therefore marks
 * the job's processes even after they left the worker's process group
 * (setsid daemons, double forks): find them by the file's identity.
 *
 * Between attempts the supervisor holds the lock; it lets go once the
 * workers have it, and takes it back when they are gone.  Getting it
 * back at once proves nothing of the job survived, which spares a scan
 * of /proc on every restart.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "kvfile.h"
#include "msg.h"
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

static void
on_alarm(int sig)
{
	(void)sig;
}

/* The groups a supervisor killed with -9 recorded (supervise/pgids). */
static void
kill_recorded_groups(struct supervisor *sv)
{
	char *p, *end;
	struct kvlist kl;
	long pg;

	/* By JOBDIR's fd: these pids are SIGKILLed. */
	if (kv_read_at(sv->jobfd, ESV_PGIDS, &kl) == -1)
		return;
	for (p = kl.text; p != NULL && *p != '\0'; p = end) {
		p += strcspn(p, "0123456789");
		pg = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pg > 1)
			killpg((pid_t)pg, SIGKILL);
	}
	kv_list_free(&kl);
}

int
group_lock_take(struct supervisor *sv, bool at_start)
{
	const char *jd = sv->cfg->jobdir;
	struct sigaction sa, old;
	struct stat st;
	unsigned n;
	int fd, r;

	if (sv->grouplockfd > 0)
		return 0;
	fd = openat(sv->jobfd, ESV_GROUP_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 || fstat(fd, &st) == -1)
		die(111, "unable to open %s/%s", jd, ESV_GROUP_LOCK);
	sv->lock_dev = st.st_dev;
	sv->lock_ino = st.st_ino;
	sv->grouplockfd = fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		die(111, "unable to lock %s/%s", jd, ESV_GROUP_LOCK);
	if (at_start) {
		warn_msg("%s: processes of an earlier worker group still run: "
		    "killing them", jd);
		kill_recorded_groups(sv);
	}
	if ((n = kill_lock_holders(sv->lock_dev, sv->lock_ino, SIGKILL)) > 0)
		warn_msg("%u processes of the job had left its process groups: "
		    "killed them", n);
	/*
	 * They were sent SIGKILL: only a process stuck in the kernel takes
	 * long.  Bound the wait; the loop must not hang on it.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old);
	alarm(at_start ? 10 : 2);
	r = flock(fd, LOCK_EX);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return r;
}

/* The workers hold it now. */
void
group_lock_release(struct supervisor *sv)
{
	if (sv->grouplockfd > 0)
		close(sv->grouplockfd);
	sv->grouplockfd = -1;
}
