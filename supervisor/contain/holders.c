/*
 * Every worker inherits supervise/group.lock, and so does whatever it
 * forks unless that closes its fds.  The open lock file therefore marks
 * the job's processes even after they left the worker's process group
 * (setsid daemons, double forks): find them by the file's identity.
 * A process that closed its fds is found by its process group or
 * session instead: each worker leads both.
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
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "contain.h"
#include "ctldir.h"
#include "kvfile.h"
#include "msg.h"

#define PF_EXITING	0x00000004	/* linux/sched.h: getting shut down */

/* What a sweep needs of one process, from /proc/PID/stat. */
struct proc {
	pid_t			 pid, pgid, sid;
	char			 state;
	bool			 exiting;
	unsigned long long	 start;		/* clock ticks after boot */
};

static int
proc_read(pid_t pid, struct proc *p)
{
	char path[64], buf[1024], *s;
	unsigned long long v[20];
	ssize_t n;
	int fd, i;

	if (pathf(path, sizeof(path), "/proc/%d/stat", (int)pid) == -1 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold anything, ')' too: the last one ends it. */
	if ((s = strrchr(buf, ')')) == NULL || s[1] != ' ' || s[2] == '\0')
		return -1;
	p->pid = pid;
	p->state = s[2];
	s += 3;
	/* Fields 4 (ppid) to 22 (starttime). */
	for (i = 0; i < 19; i++) {
		char *end;

		v[i] = strtoull(s, &end, 10);
		if (end == s)
			return -1;
		s = end;
	}
	p->pgid = (pid_t)v[1];
	p->sid = (pid_t)v[2];
	p->exiting = (v[5] & PF_EXITING) != 0;
	p->start = v[18];
	return 0;
}

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

static bool
in_list(const pid_t *l, size_t n, pid_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i] == x)
			return true;
	return false;
}

static void
add(pid_t **l, size_t *n, size_t *cap, pid_t x)
{
	pid_t *nl;

	if (*n == *cap) {
		if ((nl = reallocarray(*l, *cap ? *cap * 2 : 64,
		    sizeof(*nl))) == NULL)
			return;		/* killed all the same, only not counted */
		*l = nl;
		*cap = *cap ? *cap * 2 : 64;
	}
	(*l)[(*n)++] = x;
}

void
sweep_add_group(struct sweep *s, pid_t pgid)
{
	if (pgid > 1 && !in_list(s->groups, s->ngroups, pgid))
		add(&s->groups, &s->ngroups, &s->gcap, pgid);
}

/*
 * One pass over /proc: SIGKILL the members of the job's groups and
 * sessions, and the holders of the lock with their process groups (a
 * setsid daemon's children in its group may have closed their fds).
 * Returns how many live ones it found.
 */
static unsigned
sweep_once(struct sweep *s)
{
	struct dirent *de;
	struct proc p;
	unsigned found = 0;
	pid_t self = getpid(), pid;
	bool member;
	char *end;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid = (pid_t)strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1 || pid == self ||
		    proc_read(pid, &p) == -1 || p.state == 'Z' ||
		    p.state == 'X')
			continue;
		member = in_list(s->groups, s->ngroups, p.pgid) ||
		    in_list(s->groups, s->ngroups, p.sid);
		if (!member && !holds(pid, s->dev, s->ino))
			continue;
		found++;
		kill(pid, SIGKILL);
		/* Never a group of the supervisor's session: its caller's. */
		if (!member && p.sid != s->spare_sid && p.pgid > 1) {
			killpg(p.pgid, SIGKILL);
			sweep_add_group(s, p.pgid);
		}
		/*
		 * Count each once.  A member may be dying of our killpg; a
		 * holder outside the groups that is already dying was killed
		 * before (the supervisor kills the orphans it adopted).
		 */
		if ((!member && p.exiting) || in_list(s->seen, s->nseen, pid))
			continue;
		add(&s->seen, &s->nseen, &s->seencap, pid);
		if (member)
			s->members++;
		else
			s->holders++;
	}
	closedir(d);
	return found;
}

void
sweep_kill(struct sweep *s, long long ms)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	long long deadline = mono_ms() + ms;
	unsigned found;
	size_t i;

	/* The first scan counts them, while they are alive to be seen. */
	found = sweep_once(s);
	/*
	 * killpg reaches a group whole, forks under way included; a scan of
	 * /proc does not: a process forked behind it is seen on the next.
	 */
	for (i = 0; i < s->ngroups; i++)
		killpg(s->groups[i], SIGKILL);
	while (found > 0 && mono_ms() < deadline) {
		nanosleep(&pause, NULL);
		found = sweep_once(s);
	}
}

void
sweep_free(struct sweep *s)
{
	free(s->groups);
	free(s->seen);
	s->groups = s->seen = NULL;
	s->ngroups = s->gcap = s->nseen = s->seencap = 0;
}

/*
 * The groups a supervisor killed with -9 recorded (supervise/pgids), those
 * still ours only: a process group id is reused once the group is gone.
 * A group is ours if one of its members (or of its session: each worker
 * leads both) holds the lock, or started before the record was written;
 * a new group of that id can only have been made later.
 */
static void
recorded_groups(struct supervisor *sv, struct sweep *s)
{
	char *end;
	struct kvlist kl;
	struct timespec rt, bt;
	struct dirent *de;
	struct stat st;
	struct proc p;
	pid_t *rec = NULL, pid;
	size_t n = 0, cap = 0, i;
	long long since_boot;
	long hz = sysconf(_SC_CLK_TCK);
	long pg;
	DIR *d;

	/* By JOBDIR's fd: these groups are SIGKILLed. */
	if (fstatat(sv->jobfd, ESV_PGIDS, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    kv_read_at(sv->jobfd, ESV_PGIDS, &kl) == -1)
		return;
	for (i = 0; i < kl.n; i++) {
		if (strcmp(kl.pairs[i].key, "pgid") != 0)
			continue;
		pg = strtol(kl.pairs[i].value, &end, 10);
		if (end != kl.pairs[i].value && *end == '\0' && pg > 1 &&
		    pg <= INT_MAX && !in_list(rec, n, (pid_t)pg))
			add(&rec, &n, &cap, (pid_t)pg);
	}
	kv_list_free(&kl);
	if (n == 0 || hz <= 0 || (d = opendir("/proc")) == NULL) {
		free(rec);
		return;
	}
	/* The record's time in the clock of /proc's start times. */
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	since_boot = (st.st_mtim.tv_sec - rt.tv_sec + bt.tv_sec) * hz +
	    ((long long)st.st_mtim.tv_nsec - rt.tv_nsec + bt.tv_nsec) * hz /
	    1000000000;
	while ((de = readdir(d)) != NULL) {
		pid = (pid_t)strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1 || proc_read(pid, &p) == -1 ||
		    p.state == 'Z' || p.state == 'X')
			continue;
		if (in_list(rec, n, p.pgid) && ((long long)p.start <=
		    since_boot || holds(pid, s->dev, s->ino)))
			sweep_add_group(s, p.pgid);
		if (in_list(rec, n, p.sid) && ((long long)p.start <=
		    since_boot || holds(pid, s->dev, s->ino)))
			sweep_add_group(s, p.sid);
	}
	closedir(d);
	free(rec);
}

/* 0 if locked at once, -1 if someone holds it. */
static int
lock_now(struct supervisor *sv, int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		die(ESV_EXIT_SYSTEM, "unable to lock %s/%s", sv->cfg->jobdir,
		    ESV_GROUP_LOCK);
	return -1;
}

/*
 * Wait up to ms for an exclusive flock: LOCK_NB tried every 5 ms, not a
 * blocking flock under alarm(), so no signal is borrowed (one listed in
 * --signals-to-handle is blocked, and its alarm would never interrupt).
 * 0, or -1 with errno EWOULDBLOCK at the deadline.  Start-up only, before
 * the loop runs; from the loop, group_lock_retry on its timer.
 */
static int
lock_wait(int fd, long long ms)
{
	const struct timespec step = { 0, 5 * 1000 * 1000 };
	long long deadline = mono_ms() + ms;

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (mono_ms() >= deadline) {
			errno = EWOULDBLOCK;
			return -1;
		}
		nanosleep(&step, NULL);
	}
}

/*
 * The guardian of a supervisor killed with -9 may still be sweeping: it
 * would take us, holding group.lock, or our new workers for the old job's.
 * Wait until it is done: it holds guardian.lock till then.  Our own
 * guardian shares the lock we keep.
 */
static void
guardian_wait(struct supervisor *sv)
{
	const char *jd = sv->cfg->jobdir;
	int fd;

	fd = openat(sv->jobfd, ESV_GUARDIAN_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1)
		die(ESV_EXIT_SYSTEM, "unable to open %s/%s", jd, ESV_GUARDIAN_LOCK);
	sv->locks.guardlockfd = fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return;
	if (errno != EWOULDBLOCK)
		die(ESV_EXIT_SYSTEM, "unable to lock %s/%s", jd, ESV_GUARDIAN_LOCK);
	/* After an orderly exit it only has a scan of /proc to make. */
	if (lock_wait(fd, 1000) == -1) {
		info_msg("%s: waiting for the guardian of an earlier supervisor "
		    "to finish", jd);
		if (lock_wait(fd, GUARDIAN_SWEEP_MS + 3000) == -1)
			warn_msg("%s: the guardian of an earlier supervisor "
			    "still runs: going on without it", jd);
	}
}

/* Open group.lock (once) and note what it is, for the sweeps. */
static int
lock_open(struct supervisor *sv, struct sweep *s)
{
	struct stat st;
	int fd;

	fd = openat(sv->jobfd, ESV_GROUP_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 || fstat(fd, &st) == -1)
		die(ESV_EXIT_SYSTEM, "unable to open %s/%s", sv->cfg->jobdir,
		    ESV_GROUP_LOCK);
	sv->locks.lock_dev = s->dev = st.st_dev;
	sv->locks.lock_ino = s->ino = st.st_ino;
	s->spare_sid = getsid(0);
	return fd;
}

int
group_lock_take(struct supervisor *sv)
{
	const char *jd = sv->cfg->jobdir;
	struct sweep s = { 0 };
	int fd;

	if (sv->locks.grouplockfd > 0)
		return 0;
	guardian_wait(sv);
	sv->locks.grouplockfd = fd = lock_open(sv, &s);
	/*
	 * After a kill -9 of the supervisor and its guardian: a child that
	 * closed its fds holds no lock, and may outlive its worker.
	 */
	recorded_groups(sv, &s);
	if (s.ngroups == 0 && lock_now(sv, fd) == 0)
		return 0;
	sweep_kill(&s, 5000);
	if (s.members + s.holders > 0)
		warn_msg("%s: processes of an earlier worker group still ran: "
		    "killed %u in its process groups and %u more that held %s",
		    jd, s.members, s.holders, ESV_GROUP_LOCK);
	sweep_free(&s);
	/* Start-up, before the loop runs: this wait blocks nothing yet. */
	return lock_wait(fd, 10000);
}

int
group_lock_reclaim(struct supervisor *sv)
{
	struct sweep s = { 0 };
	unsigned i;
	int fd;

	if (sv->locks.grouplockfd > 0)
		return 0;
	sv->locks.grouplockfd = fd = lock_open(sv, &s);
	if (lock_now(sv, fd) == 0)
		return 0;
	/* The workers' groups were sent SIGKILL: not news. */
	for (i = 0; i < sv->grp.nworkers; i++)
		sweep_add_group(&s, sv->grp.workers[i].pgid);
	sweep_kill(&s, 0);
	if (s.holders > 0)
		warn_msg("%u processes of the job had left its process groups: "
		    "killed them", s.holders);
	sweep_free(&s);
	return lock_now(sv, fd) == 0 ? 0 : 1;
}

int
group_lock_retry(struct supervisor *sv)
{
	return lock_now(sv, sv->locks.grouplockfd);
}

/* The workers hold it now. */
void
group_lock_release(struct locks *l)
{
	if (l->grouplockfd > 0)
		close(l->grouplockfd);
	l->grouplockfd = -1;
}
