/*
 * Containment by cgroup v2 (esv-supervise(8), CONTAINMENT).  Where the
 * supervisor may write to its own cgroup v2 directory (root, or a systemd
 * unit with Delegate=yes), the job gets
 *
 *	BASE/esv.<job>.<pid>/workers/N/		worker N
 *	BASE/esv.<job>.<pid>/supervisor/	the supervisor and its helpers,
 *						where they must leave BASE
 *
 * Processes only in leaves is the kernel's rule where controllers are
 * enabled: the supervisor leaves BASE (a migration, which costs an RCU
 * grace period) only where BASE lends controllers and is not the root
 * (which is exempt from the rule).  Each worker is born in its cgroup
 * (clone_into.c), or where the kernel cannot, moves itself there before
 * it executes anything of the job: nothing it starts can begin outside.
 * A stop ends with workers/cgroup.kill, and the group is down only when
 * workers/cgroup.events says "populated 0" (watched with inotify): a
 * daemon that left the session and closed its fds is gone too.  Pause
 * freezes workers/ (cgroup.freeze).  CPU time and, with the memory
 * controller, memory and OOM kills are read from each worker's cgroup.
 *
 * Without a usable hierarchy, or with --cgroups=false, process groups
 * and group.lock contain the job as before; supervise/state says which
 * containment is in use and why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "cgstat.h"
#include "contain.h"
#include "msg.h"

/* The cgroup2 mount and this process's cgroup below it. */
static int
find_own_cgroup(char *buf, size_t len, bool *is_root, char *why,
    size_t whylen)
{
	char *text, *line, *save, *mnt = NULL, *rel = NULL, *f[12];
	char mountpoint[PATH_MAX] = "";
	int n;

	if ((text = read_text("/proc/self/mountinfo", 1 << 20, NULL)) == NULL) {
		snprintf(why, whylen, "/proc/self/mountinfo: %s",
		    strerror(errno));
		return -1;
	}
	/* id parent maj:min root mountpoint options ... - fstype source ... */
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *dash = strstr(line, " - cgroup2 ");

		if (dash == NULL)
			continue;
		for (n = 0; n < 5 && (f[n] = strsep(&p, " ")) != NULL; n++)
			;
		if (n == 5 && strcmp(f[3], "/") == 0) {
			strlcpy(mountpoint, f[4], sizeof(mountpoint));
			break;
		}
	}
	free(text);
	if (mountpoint[0] == '\0') {
		snprintf(why, whylen, "no cgroup2 file system is mounted");
		return -1;
	}
	if ((text = read_text("/proc/self/cgroup", 1 << 16, NULL)) == NULL) {
		snprintf(why, whylen, "/proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "0::", 3) == 0) {
			rel = line + 3;
			break;
		}
	mnt = mountpoint;
	if (rel == NULL) {
		free(text);
		snprintf(why, whylen, "not in a cgroup v2 hierarchy "
		    "(/proc/self/cgroup has no 0:: line)");
		return -1;
	}
	*is_root = strcmp(rel, "/") == 0;
	n = snprintf(buf, len, "%s%s", mnt, *is_root ? "" : rel);
	free(text);
	if (n < 0 || (size_t)n >= len) {
		snprintf(why, whylen, "the cgroup path is too long");
		return -1;
	}
	return 0;
}

static int
write_at(int dirfd, const char *name, const char *text)
{
	int fd, r;

	if ((fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return r;
}

/* "+memory +cpu +pids", those of them that dirfd's cgroup.controllers has. */
static void
enable_controllers(int dirfd, bool *memory, bool *cpu, bool *pids)
{
	char *have = read_text_at(dirfd, "cgroup.controllers", O_NOFOLLOW,
	    4096, NULL);
	static const char *const names[] = { "memory", "cpu", "pids" };
	bool *on[] = { memory, cpu, pids };
	char word[32];
	size_t i;

	for (i = 0; i < 3; i++) {
		*on[i] = false;
		if (have == NULL || strstr(have, names[i]) == NULL)
			continue;
		snprintf(word, sizeof(word), "+%s", names[i]);
		*on[i] = write_at(dirfd, "cgroup.subtree_control", word) == 0;
	}
	free(have);
}

static void
not_used(struct supervisor *sv, const char *fmt, const char *what, int e)
{
	struct cgroups *cg = &sv->cg;

	snprintf(cg->why, sizeof(cg->why), fmt, what, strerror(e));
	if (cg->workersfd != -1)
		close(cg->workersfd);
	if (cg->jobfd != -1)
		close(cg->jobfd);
	cg->workersfd = cg->jobfd = -1;
	cg->on = false;
}

static void on_inotify(struct watch *w, uint32_t events);

/* True when dirfd's cgroup has controllers its children could use. */
static bool
base_lends(int dirfd)
{
	char *have = read_text_at(dirfd, "cgroup.controllers", O_NOFOLLOW,
	    4096, NULL);
	bool some = have != NULL && have[strspn(have, " \n")] != '\0';

	free(have);
	return some;
}

/* Remove a job's cgroup tree, leaves first; what is busy stays. */
static void
remove_cgroup_tree(int basefd, const char *name)
{
	int jfd, wfd;
	struct dirent *de;
	DIR *d;

	if ((jfd = openat(basefd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1)
		return;
	if ((wfd = openat(jfd, "workers", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1 && (d = fdopendir(wfd)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_type == DT_DIR && de->d_name[0] != '.')
				unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		closedir(d);
	} else if (wfd != -1)
		close(wfd);
	unlinkat(jfd, "workers", AT_REMOVEDIR);
	unlinkat(jfd, "supervisor", AT_REMOVEDIR);
	close(jfd);
	unlinkat(basefd, name, AT_REMOVEDIR);
}

/*
 * What earlier supervisors whose guardian could not finish left in BASE:
 * esv.NAME.PID of a PID that is gone.  Only empty cgroups can be removed,
 * so nothing that still runs is touched.
 */
static void
remove_stale(int basefd)
{
	struct dirent *de;
	const char *dot;
	char *end;
	long pid;
	DIR *d;
	int fd;

	if ((fd = dup(basefd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "esv.", 4) != 0 ||
		    (dot = strrchr(de->d_name, '.')) == de->d_name + 3)
			continue;
		pid = strtol(dot + 1, &end, 10);
		if (*end != '\0' || pid <= 0 || pid == getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		remove_cgroup_tree(basefd, de->d_name);
	}
	closedir(d);
}

/* Our base and name, for the exit handler. */
static int exit_basefd = -1;
static char exit_name[NAME_MAX + 1];
static bool exit_moved;

/*
 * At any exit, also one before the guardian runs (a configuration
 * error): leave the job's cgroup and remove what can be.  The guardian
 * removes the rest once the helpers are gone.
 */
static void
cgroup_atexit(void)
{
	if (exit_basefd == -1)
		return;
	if (!exit_moved || write_at(exit_basefd, "cgroup.procs", "0") == 0)
		remove_cgroup_tree(exit_basefd, exit_name);
}

void
cgroup_setup(struct supervisor *sv, void (*changed)(struct supervisor *))
{
	struct cgroups *cg = &sv->cg;
	char base[PATH_MAX], name[NAME_MAX + 1], procs[PATH_MAX];
	const char *jd = sv->cfg->jobdir, *b;
	bool dummy, is_root;
	size_t i;
	int basefd, supfd;

	cg->on = false;
	cg->jobfd = cg->workersfd = -1;
	cg->inow.fd = -1;
	cg->changed = changed;
	if (!sv->cfg->cgroups) {
		strlcpy(cg->why, "off (--cgroups=false)", sizeof(cg->why));
		return;
	}
	if (find_own_cgroup(base, sizeof(base), &is_root, cg->why,
	    sizeof(cg->why)) == -1)
		return;
	/* esv.<the JOBDIR's name>.<pid>: whose it is, at a glance. */
	b = strrchr(jd, '/') != NULL && strrchr(jd, '/')[1] != '\0' ?
	    strrchr(jd, '/') + 1 : jd;
	snprintf(name, sizeof(name), "esv.%.*s.%d", 200, b, (int)getpid());
	for (i = 4; name[i] != '\0'; i++)
		if (name[i] == '/' || name[i] == ' ' || name[i] == '\n')
			name[i] = '_';
	if ((basefd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		not_used(sv, "%s: %s", base, errno);
		return;
	}
	remove_stale(basefd);
	if (mkdirat(basefd, name, 0755) == -1) {
		not_used(sv, "no writable cgroup v2 here: mkdir %s: %s", base,
		    errno);
		close(basefd);
		return;
	}
	pathf(cg->job, sizeof(cg->job), "%s/%s", base, name);
	if ((cg->jobfd = openat(basefd, name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		not_used(sv, "%s: %s", cg->job, errno);
		unlinkat(basefd, name, AT_REMOVEDIR);
		close(basefd);
		return;
	}
	/*
	 * A move is a migration, which costs an RCU grace period (clone_into.c):
	 * made only where the base's controllers can be had no other way.
	 */
	cg->moved = false;
	if (!is_root && base_lends(basefd)) {
		if (mkdirat(cg->jobfd, "supervisor", 0755) == -1 ||
		    (supfd = openat(cg->jobfd, "supervisor", O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC)) == -1) {
			not_used(sv, "%s/supervisor: %s", cg->job, errno);
			unlinkat(basefd, name, AT_REMOVEDIR);
			close(basefd);
			return;
		}
		if (write_at(supfd, "cgroup.procs", "0") == -1) {
			pathf(procs, sizeof(procs), "%s/supervisor/cgroup.procs",
			    cg->job);
			not_used(sv, "unable to move into %s: %s", procs, errno);
			close(supfd);
			remove_cgroup_tree(basefd, name);
			close(basefd);
			return;
		}
		close(supfd);
		cg->moved = true;
		/*
		 * The base may lend us its controllers now that we left it (a
		 * delegated unit's cgroup holds nobody else); failing that, we
		 * do without: accounting of CPU time needs none.
		 */
		enable_controllers(basefd, &dummy, &dummy, &dummy);
	} else if (is_root)
		/* The root may have processes and lend controllers at once. */
		enable_controllers(basefd, &dummy, &dummy, &dummy);
	exit_basefd = basefd;
	exit_moved = cg->moved;
	strlcpy(exit_name, name, sizeof(exit_name));
	atexit(cgroup_atexit);
	if (mkdirat(cg->jobfd, "workers", 0755) == -1 ||
	    (cg->workersfd = openat(cg->jobfd, "workers", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1) {
		not_used(sv, "%s/workers: %s", cg->job, errno);
		return;
	}
	enable_controllers(cg->jobfd, &dummy, &dummy, &dummy);
	enable_controllers(cg->workersfd, &cg->memory, &cg->cpu, &cg->pids);
	/*
	 * workers/cgroup.events says "populated 1" while any worker's cgroup
	 * holds a process: one file to watch and to read, whatever N.
	 */
	cg->inow = (struct watch){ .fn = on_inotify, .ctx = sv };
	pathf(procs, sizeof(procs), "%s/workers/cgroup.events", cg->job);
	if ((cg->inow.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    inotify_add_watch(cg->inow.fd, procs, IN_MODIFY) == -1 ||
	    loop_add(&sv->loop, &cg->inow, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to watch %s", procs);
	cg->on = true;
	cg->clone_into = true;
	snprintf(cg->why, sizeof(cg->why), "cgroup v2 at %s (controllers:%s%s%s%s)",
	    cg->job, cg->memory ? " memory" : "", cg->cpu ? " cpu" : "",
	    cg->pids ? " pids" : "", !cg->memory && !cg->cpu && !cg->pids ?
	    " none" : "");
}

/* The limits job.ini asks for need their controllers. */
int
cgroup_check_limits(struct supervisor *sv, char *err, size_t len)
{
	const struct job_config *cfg = sv->cfg;
	struct cgroups *cg = &sv->cg;
	const char *key = NULL;

	if (cfg->memory_max[0] != '\0' && !cg->memory)
		key = "memory_max";
	else if (cfg->cpu_max[0] != '\0' && !cg->cpu)
		key = "cpu_max";
	else if (cfg->pids_max[0] != '\0' && !cg->pids)
		key = "pids_max";
	if (key == NULL)
		return 0;
	if (!cg->on)
		snprintf(err, len, "%s: needs cgroup containment, which is not "
		    "in use: %s", key, cg->why);
	else
		snprintf(err, len, "%s: its controller is not enabled for %s "
		    "(cgroup v2 here has%s%s%s%s)", key, cg->job,
		    cg->memory ? " memory" : "", cg->cpu ? " cpu" : "",
		    cg->pids ? " pids" : "", !cg->memory && !cg->cpu &&
		    !cg->pids ? " no controller" : "");
	return -1;
}

/*
 * Worker wk's cgroup, ready for its start: 0, or -1 with errno.
 *
 * A worker's cgroup lives as long as the job when CPU time is all that
 * is counted: the usage at each start is the base its exit subtracts.
 * That spares, at every start of every worker, a rmdir and a mkdir of
 * the cgroup and two opens, a third of what cgroups cost a restart of
 * 256 workers (bench/README, "Containment").  memory.peak can be reset
 * only by Linux 6.12 and later, and only for the file descriptor that
 * reset it, so with the memory controller each start gets a fresh
 * cgroup: every counter of an attempt starts at 0.  So does a start
 * after a cgroup.kill: a child born into a cgroup whose kill count
 * differs from its parent's is killed at birth (Linux 6.18 does that).
 */
static int
new_worker_cgroup(struct supervisor *sv, struct worker *wk, const char *name)
{
	struct cgroups *cg = &sv->cg;
	const struct job_config *cfg = sv->cfg;
	bool had = wk->cgfd != -1;

	if (wk->cgprocs != -1)
		close(wk->cgprocs);
	if (wk->cgfd != -1)
		close(wk->cgfd);
	wk->cgfd = wk->cgprocs = -1;
	wk->cg_cpu_base = 0;
	wk->cg_killed = false;
	/*
	 * The last start's cgroup, empty once that start is over; if not,
	 * it keeps its name.  Before the first start there is none: the
	 * job's cgroup is new.
	 */
	if (had && unlinkat(cg->workersfd, name, AT_REMOVEDIR) == -1 &&
	    errno != ENOENT)
		warn_sys("unable to remove the cgroup %s/workers/%s", cg->job,
		    name);
	if ((mkdirat(cg->workersfd, name, 0755) == -1 && errno != EEXIST) ||
	    (wk->cgfd = openat(cg->workersfd, name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		warn_sys("unable to create the cgroup %s/workers/%s", cg->job,
		    name);
		return -1;
	}
	if ((cfg->memory_max[0] != '\0' &&
	    write_at(wk->cgfd, "memory.max", cfg->memory_max) == -1) ||
	    (cfg->cpu_max[0] != '\0' &&
	    write_at(wk->cgfd, "cpu.max", cfg->cpu_max) == -1) ||
	    (cfg->pids_max[0] != '\0' &&
	    write_at(wk->cgfd, "pids.max", cfg->pids_max) == -1))
		warn_sys("worker %u: unable to set its limits in %s/workers/%s",
		    wk->local_rank, cg->job, name);
	return 0;
}

int
cgroup_worker_prepare(struct supervisor *sv, struct worker *wk)
{
	struct cgroups *cg = &sv->cg;
	struct cgstat base;
	char name[16];

	if (!cg->on)
		return 0;
	snprintf(name, sizeof(name), "%u", wk->local_rank);
	if (wk->cgfd == -1 || cg->memory || wk->cg_killed) {
		if (new_worker_cgroup(sv, wk, name) == -1)
			return -1;
	} else {
		cgstat_read(wk->cgfd, &base, CGSTAT_CPU);
		wk->cg_cpu_base = base.cpu_usec;
	}
	/* Born in it (clone_into.c), or moving itself there. */
	if (cg->clone_into || wk->cgprocs != -1)
		return 0;
	if ((wk->cgprocs = openat(wk->cgfd, "cgroup.procs", O_WRONLY |
	    O_CLOEXEC)) == -1) {
		warn_sys("unable to open %s/workers/%s/cgroup.procs", cg->job,
		    name);
		return -1;
	}
	return 0;
}

/*
 * A child born in its cgroup died before it could run (a cgroup.kill
 * count that differs from ours), or this kernel has no clone3 into a
 * cgroup: from now on each worker moves itself, the way that works
 * everywhere.  Returns what the worker needs for that.
 */
int
cgroup_no_clone_into(struct supervisor *sv, struct worker *wk,
    const char *why)
{
	sv->cg.clone_into = false;
	info_msg("clone3 into a cgroup: %s: each worker moves itself into its "
	    "cgroup from now on", why);
	return cgroup_worker_prepare(sv, wk);
}

void
cgroup_worker_path(const struct cgroups *cg, const struct worker *wk, char *buf,
    size_t len)
{
	if (!cg->on || wk->cgfd == -1)
		buf[0] = '\0';
	else
		pathf(buf, len, "%s/workers/%u", cg->job, wk->local_rank);
}

/* What the kernel counted for wk, read once it has exited. */
void
cgroup_worker_stats(struct cgroups *cg, struct worker *wk)
{
	if (!cg->on || wk->cgfd == -1) {
		wk->cg = (struct cgstat){ -1, -1, -1, -1, -1, -1 };
		return;
	}
	/* What the exit reports: no file that cannot be there. */
	cgstat_read(wk->cgfd, &wk->cg, CGSTAT_CPU |
	    (cg->memory ? CGSTAT_MEMORY : 0));
	if (wk->cg.cpu_usec >= 0)
		wk->cg.cpu_usec = wk->cg_cpu_base < 0 ? -1 :
		    wk->cg.cpu_usec > wk->cg_cpu_base ?
		    wk->cg.cpu_usec - wk->cg_cpu_base : 0;
}

/* Everything in every worker's cgroup, at once, whatever its session. */
void
cgroup_kill(struct supervisor *sv)
{
	unsigned i;

	if (!sv->cg.on)
		return;
	if (write_at(sv->cg.workersfd, "cgroup.kill", "1") == -1)
		warn_sys("unable to write %s/workers/cgroup.kill", sv->cg.job);
	/*
	 * Each worker's cgroup counts the kill now, and a child born into it
	 * would be killed at birth (probe_clone_into): the next start makes
	 * new ones.
	 */
	for (i = 0; i < sv->grp.nworkers; i++)
		sv->grp.workers[i].cg_killed = true;
}

/* True when no worker's cgroup holds a process. */
bool
cgroup_empty(const struct cgroups *cg)
{
	char *text;
	long long populated;

	if (!cg->on)
		return true;
	if ((text = read_text_at(cg->workersfd, "cgroup.events",
	    O_NOFOLLOW, 4096, NULL)) == NULL)
		return true;
	populated = cgstat_keyed(text, "populated");
	free(text);
	return populated != 1;
}

int
cgroup_freeze(struct cgroups *cg, bool frozen)
{
	if (!cg->on)
		return -1;
	if (write_at(cg->workersfd, "cgroup.freeze", frozen ? "1" : "0") ==
	    -1) {
		warn_sys("unable to write %s/workers/cgroup.freeze", cg->job);
		return -1;
	}
	return 0;
}

static void
on_inotify(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	(void)events;
	/* What changed does not matter: the drain reads cgroup.events. */
	while (read(w->fd, buf, sizeof(buf)) > 0)
		;
	sv->cg.changed(sv);
}

/* At exit: the workers' cgroups are empty; the guardian removes the rest. */
void
cgroup_cleanup(struct supervisor *sv)
{
	char name[16];
	unsigned i;

	if (!sv->cg.on)
		return;
	for (i = 0; i < sv->grp.nworkers; i++) {
		snprintf(name, sizeof(name), "%u",
		    sv->grp.workers[i].local_rank);
		unlinkat(sv->cg.workersfd, name, AT_REMOVEDIR);
	}
}
