/*
 * The guardian: a tiny child that outlives a supervisor killed with
 * SIGKILL and kills the worker process groups it was told about.  A
 * parent-death signal would reach the workers but not their children;
 * killpg on the recorded groups does.
 *
 * Descendants that left those groups are found by the lock file they
 * inherited, or by the worker's session they stayed in (holders.c).
 *
 * Protocol on its pipe (guardproto.h): "+<pgid>\n" records a group,
 * "-<pgid>\n" forgets it.  A worker writes its own "+" line, after setsid
 * and before exec (group.c), so no worker runs a program unknown to the
 * guardian.
 *
 * It is also the backstop of the lease (esv-supervise(8), Leases): the
 * supervisor fences its workers before their ranks may be given away,
 * but a supervisor that is stopped (SIGSTOP, a debugger) fences nothing.
 * So it tells us, at every renewal, when the workers must be dead
 * ("@<ms>\n"); if that time comes with no later one, we SIGKILL the
 * workers (their cgroup, their groups) but not the hosted esv-rdzv
 * ("=<pgid>\n"), and stay.  The supervisor, going on, finds them dead
 * and its lease over: a fence, as if it had done it.
 *
 * EOF means the supervisor is gone: SIGKILL every recorded group, and
 * sweep /proc until nothing of the job is left.  The esv-rdzv the supervisor
 * hosts (a private one for --standalone, or the job's) goes too: told by
 * a pidfd known at our start, and killed if it does not, or killed as a
 * recorded group when started later.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "cgstat.h"
#include "contain.h"
#include "guardproto.h"
#include "msg.h"

/* How long a private esv-rdzv may take to go on SIGTERM (a stopped one won't). */
#define RDZV_GRACE_MS	1000
#define SPARE_MAX	8	/* groups not killed at the lease's end */

static pid_t	spare[SPARE_MAX];

static void
spare_set(pid_t pg, bool on)
{
	size_t i;

	for (i = 0; i < SPARE_MAX; i++)
		if (spare[i] == (on ? 0 : pg)) {
			spare[i] = on ? pg : 0;
			return;
		}
}

static bool
is_spare(pid_t pg)
{
	size_t i;

	for (i = 0; i < SPARE_MAX; i++)
		if (spare[i] == pg)
			return true;
	return false;
}

static void
forget(struct sweep *s, pid_t pg)
{
	size_t i;

	for (i = 0; i < s->ngroups; i++)
		if (s->groups[i] == pg) {
			s->groups[i] = s->groups[--s->ngroups];
			return;
		}
}

static void
on_line(void *ctx, char op, pid_t pg)
{
	struct sweep *s = ctx;

	if (op == '+' || op == '=')
		sweep_add_group(s, pg);
	else
		forget(s, pg);
	if (op == '=')
		spare_set(pg, true);
	else if (op == '-' && is_spare(pg))
		spare_set(pg, false);
}

/* write(2) of a short text to path; errors are the caller's to ignore. */
static int
put(const char *path, const char *text)
{
	int fd, r;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return r;
}

/*
 * The job's cgroup, once nothing of it runs: leave it for its parent,
 * then remove it, leaves first.  The supervisor's helpers may take a
 * moment to go: a few tries.
 */
static void
remove_job_cgroup(const char *job)
{
	char path[PATH_MAX + 64], parent[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int tries;
	bool moved;

	strlcpy(parent, job, sizeof(parent));
	if (strrchr(parent, '/') == NULL)
		return;
	*strrchr(parent, '/') = '\0';
	/* cgroup.kill is asynchronous: wait for the last exit (5 s at most). */
	snprintf(path, sizeof(path), "%s/workers", job);
	for (tries = 0; tries < 500; tries++) {
		struct cgstat st;

		if (cgstat_read_path(path, &st) == -1 || st.populated != 1)
			break;
		poll(NULL, 0, 10);
	}
	/* Our leaf, if the supervisor made one (not in the root cgroup). */
	snprintf(path, sizeof(path), "%s/supervisor", job);
	moved = access(path, F_OK) == 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", parent);
	if (moved && put(path, "0") == -1)
		return;
	snprintf(path, sizeof(path), "%s/workers", job);
	if ((d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
			    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == -1 &&
			    errno != ENOENT)
				warn_sys("guardian: unable to remove %s/%s",
				    path, de->d_name);
		closedir(d);
	}
	rmdir(path);
	snprintf(path, sizeof(path), "%s/supervisor", job);
	for (tries = 0; moved && tries < 100 && rmdir(path) == -1 &&
	    errno == EBUSY; tries++)
		poll(NULL, 0, 10);
	rmdir(job);
}

/* The workers' lease ran out and the supervisor did not stop them. */
static void
lease_kill(struct sweep *s, const char *cgjob)
{
	char path[PATH_MAX + 32];
	size_t i;

	warn_msg("guardian: the workers' lease ran out and the supervisor "
	    "did not stop them (is it stopped?): SIGKILL to the workers");
	if (cgjob[0] != '\0') {
		snprintf(path, sizeof(path), "%s/workers/cgroup.kill", cgjob);
		if (put(path, "1") == -1 && errno != ENOENT && errno != ENODEV)
			warn_sys("guardian: unable to write %s", path);
	}
	for (i = 0; i < s->ngroups; i++)
		if (!is_spare(s->groups[i]))
			(void)kill(-s->groups[i], SIGKILL);
}

static void __attribute__((noreturn))
guardian_main(int rfd, int rdzvfd, dev_t dev, ino_t ino, const char *cgjob)
{
	char cgkill[PATH_MAX + 32];
	struct sweep s = { .dev = dev, .ino = ino };
	struct guard_reader gr = { 0 };
	char buf[4096];
	sigset_t none;
	ssize_t r;

	/* Terminal signals aimed at the job must not take us down first. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	/* Our caller's session: a holder there is killed alone. */
	s.spare_sid = getsid(0);
	for (;;) {
		long long now = mono_ms();
		int t = -1, pr;

		if (gr.lease_end > 0)
			t = gr.lease_end <= now ? 0 : gr.lease_end - now > INT_MAX ?
			    INT_MAX : (int)(gr.lease_end - now);
		/* Not a blocking read while a lease's end is pending. */
		if (t >= 0 && (pr = poll(&(struct pollfd){ .fd = rfd,
		    .events = POLLIN }, 1, t)) <= 0) {
			if (pr == 0 && mono_ms() >= gr.lease_end) {
				lease_kill(&s, cgjob);
				gr.lease_end = 0;
			}
			continue;
		}
		r = read(rfd, buf, sizeof(buf));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		guard_feed(&gr, buf, (size_t)r, on_line, &s);
	}
	if (rdzvfd != -1)
		pidfd_send_signal(rdzvfd, SIGTERM, NULL, 0);
	/* Everything in the workers' cgroups, whatever session it made. */
	if (cgjob[0] != '\0') {
		snprintf(cgkill, sizeof(cgkill), "%s/workers/cgroup.kill", cgjob);
		/*
		 * Gone: the supervisor removed it, nothing was left in it.
		 * ENODEV is the same answer when the removal comes between
		 * our open and our write.
		 */
		if (put(cgkill, "1") == -1 && errno != ENOENT &&
		    errno != ENODEV)
			warn_sys("guardian: unable to write %s", cgkill);
	}
	sweep_kill(&s, GUARDIAN_SWEEP_MS);
	/* A pidfd polls readable once its process is gone. */
	if (rdzvfd != -1 && poll(&(struct pollfd){ .fd = rdzvfd,
	    .events = POLLIN }, 1, RDZV_GRACE_MS) == 0)
		pidfd_send_signal(rdzvfd, SIGKILL, NULL, 0);
	if (cgjob[0] != '\0')
		remove_job_cgroup(cgjob);
	_exit(0);
}

void
guardian_start(struct supervisor *sv)
{
	struct rdzv_status rs;
	int p[2], dropped[2], rdzvfd = -1;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) == -1 || pipe2(dropped, O_CLOEXEC) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create the guardian's pipe");
	/*
	 * Our own child, not reaped yet: its pid cannot have been reused.
	 * The pidfd stays valid for it alone.
	 */
	rdzv_status(&sv->rdzv.rz, &rs);
	if (rs.host_pid > 0 && (rdzvfd = pidfd_open(rs.host_pid, 0)) == -1)
		warn_sys("unable to open a pidfd for esv-rdzv (pid %d)",
		    (int)rs.host_pid);
	if ((pid = fork()) == -1)
		die(ESV_EXIT_SYSTEM, "unable to fork the guardian");
	if (pid == 0) {
		/*
		 * Nothing of the supervisor's but these: not the locks, but
		 * for guardian.lock, which a new supervisor waits for.
		 */
		int fds[3] = { p[0], sv->locks.guardlockfd > 0 ?
		    sv->locks.guardlockfd : -1, rdzvfd }, i;

		for (i = 0; i < 3; i++)
			if (fds[i] != -1 && (fds[i] = fcntl(fds[i], F_DUPFD,
			    6)) == -1)
				_exit(ESV_EXIT_SYSTEM);
		for (i = 0; i < 3; i++)
			if (fds[i] == -1)
				close(3 + i);
			else if (dup2(fds[i], 3 + i) == -1)
				_exit(ESV_EXIT_SYSTEM);
		closefrom(6);
		guardian_main(3, fds[2] != -1 ? 5 : -1, sv->locks.lock_dev,
		    sv->locks.lock_ino, sv->cg.on ? sv->cg.job : "");
	}
	if (rdzvfd != -1)
		close(rdzvfd);
	/*
	 * Until its closefrom, the child shares group.lock's open file, and
	 * so its lock: a group ending meanwhile would find the guardian
	 * holding it and kill it.  Wait for the write end to close there.
	 */
	close(dropped[1]);
	while (read(dropped[0], &c, 1) == -1 && errno == EINTR)
		;
	close(dropped[0]);
	close(p[0]);
	if (sv->guard.fd > 0)
		close(sv->guard.fd);
	sv->guard.fd = p[1];
	sv->guard.pid = pid;
}

/*
 * Workers write their own "+" lines.  Ours ("-" as a group ends, the
 * whole list for a new guardian) are batched and written once per stop
 * of the group, not once per worker: the guardian is woken once.
 */
static char	pending[4096];
static size_t	npending;

void
guardian_flush(struct guardian_run *g)
{
	if (npending > 0 && write(g->fd, pending, npending) !=
	    (ssize_t)npending)
		warn_sys("unable to write to the guardian");
	npending = 0;
}

static void
guardian_send(struct guardian_run *g, char op, pid_t pgid)
{
	char line[GUARD_LINE_MAX];
	size_t n;

	n = guard_line(line, op, pgid);
	if (npending + n > sizeof(pending))
		guardian_flush(g);
	memcpy(pending + npending, line, n);
	npending += n;
}

void
guardian_add(struct guardian_run *g, pid_t pgid)
{
	guardian_send(g, '+', pgid);
}

void
guardian_drop(struct guardian_run *g, pid_t pgid)
{
	guardian_send(g, '-', pgid);
}

void
guardian_add_spare(struct guardian_run *g, pid_t pgid)
{
	guardian_send(g, '=', pgid);
}

void
guardian_lease(struct guardian_run *g, long long kill_at_ms)
{
	char line[GUARD_LINE_MAX];
	size_t n;

	g->lease = kill_at_ms > 0 ? kill_at_ms : 0;
	n = guard_line_ll(line, '@', g->lease);
	if (npending + n > sizeof(pending))
		guardian_flush(g);
	memcpy(pending + npending, line, n);
	npending += n;
	guardian_flush(g);
}

/* Someone killed the guardian: start another and tell it everything. */
void
guardian_died(struct supervisor *sv)
{
	unsigned i;

	warn_msg("the guardian (pid %d) died: starting another",
	    (int)sv->guard.pid);
	guardian_start(sv);
	npending = 0;	/* the dead one's news: the list below replaces it */
	for (i = 0; i < sv->grp.nworkers; i++)
		if (sv->grp.workers[i].pgid > 1)
			guardian_add(&sv->guard, sv->grp.workers[i].pgid);
	if (sv->guard.lease > 0)
		guardian_lease(&sv->guard, sv->guard.lease);
	guardian_flush(&sv->guard);
}
