/*
 * esv-supervise [options] JOBDIR [-- entrypoint args...]
 *
 * The per-node elastic agent: runs a group of workers with torchrun's
 * environment, restarts the group as a unit, and keeps the control
 * directory JOBDIR/supervise in runit's layout.  See esv-supervise(8).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "confvalue.h"
#include "contain.h"
#include "control.h"
#include "ctldir.h"
#include "fifodir.h"
#include "group.h"
#include "helpers.h"
#include "kvfile.h"
#include "msg.h"
#include "report.h"
#include "sig.h"
#include "spawning.h"
#include "trust.h"

extern char **environ;

/*
 * Make sure fds 0-2 exist, so that no file we open lands on them, and
 * that nothing else the caller left open reaches the workers (torchrun's
 * Popen closes them too).
 */
static void
sanitize_fds(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		for (fd = 3; fd < 1024; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/*
 * A directory of JOBDIR that only we may change, made if missing; no
 * symlink is followed to it.  An older esv made workers/ 0755: mode
 * tightens it.
 */
static void
own_subdir(struct supervisor *sv, const char *name, mode_t mode)
{
	const char *jd = sv->cfg->jobdir;
	char path[PATH_MAX], why[512];
	int fd;

	if (mkdirat(sv->jobfd, name, mode) == -1 && errno != EEXIST)
		die(ESV_EXIT_SYSTEM, "unable to create %s/%s", jd, name);
	pathf(path, sizeof(path), "%s/%s", jd, name);
	fd = openat(sv->jobfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR))
		diex(ESV_EXIT_USAGE, "%s: not a directory (a symbolic link?): refusing "
		    "it; remove it", path);
	if (fd == -1)
		die(ESV_EXIT_SYSTEM, "unable to open %s", path);
	if (trust_check(fd, path, 0, why, sizeof(why)) == -1)
		diex(ESV_EXIT_USAGE, "%s", why);
	if (fchmod(fd, mode) == -1)
		die(ESV_EXIT_SYSTEM, "unable to set the mode of %s", path);
	close(fd);
}

/*
 * Each worker costs the supervisor open files for as long as it runs: a
 * pipe per stream bound for the console, and a log file per tee'd one.
 * Take all the hard limit allows, and say so up front when the group
 * still cannot fit: otherwise the workers fail to start one attempt
 * after the other.
 */
static void
fd_budget(struct supervisor *sv)
{
	const struct job_config *cfg = sv->cfg;
	unsigned long long need = 0, have = 0;
	struct rlimit rl;
	struct dirent *de;
	unsigned i;
	int which, redir, tee;
	DIR *d;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		/* The workers get the limit they would have had (select(2)). */
		sv->env.nofile = rl;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			getrlimit(RLIMIT_NOFILE, &rl);
			sv->env.nofile.rlim_max = 0;
		}
	}
	for (i = 0; i < cfg->nproc_per_node; i++)
		for (which = 1; which <= 2; which++) {
			redir = std_for_rank(cfg->redirects, i);
			tee = std_for_rank(cfg->tee, i);
			if (!rank_in_filter(cfg->local_ranks_filter, i))
				continue;
			if ((tee & which) != 0)
				need += 2;
			else if ((redir & which) == 0)
				need++;
		}
	/* What we hold now, and a few for a spawn and the reports. */
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((de = readdir(d)) != NULL)
			have += de->d_name[0] != '.';
		closedir(d);
	}
	need += have + 16;
	if (rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur)
		warn_msg("%u workers with these redirects need about %llu open "
		    "files, but RLIMIT_NOFILE is %llu: some will fail to start "
		    "(raise it, or redirect the output to files with -r)",
		    cfg->nproc_per_node, need,
		    (unsigned long long)rl.rlim_cur);
}

/*
 * JOBDIR, supervise/ and workers/ must be ours and writable by nobody
 * else (trust.h): root writes into them and runs what job.ini says.  So
 * must every directory above JOBDIR: whoever could rename one could put
 * a link where a path we hand on leads (the store's state file, the
 * workers' TORCHELASTIC_ERROR_FILE).  Every file below is opened
 * relative to jobfd, never through a symlink.
 */
static void
open_control_dir(struct supervisor *sv, struct job_config *cfg)
{
	const char *jd = sv->cfg->jobdir;
	char why[1024];

	/* esv-run's, in a base of ours: made there, never a link (config.c). */
	sv->jobfd = trust_open_dir(jd, TRUST_MKDIR_LAST | (cfg->jobdir_auto ?
	    TRUST_NOFOLLOW_LAST : 0), 0755, NULL, 0, why, sizeof(why));
	if (sv->jobfd == -1 && errno == EPERM)
		diex(ESV_EXIT_USAGE, "%s", why);
	if (sv->jobfd == -1 && errno == ELOOP && cfg->jobdir_auto)
		diex(ESV_EXIT_USAGE, "%s: a symbolic link: refusing to follow "
		    "it to a job directory; remove it", jd);
	if (sv->jobfd == -1)
		diex(ESV_EXIT_SYSTEM, "unable to open the job directory: %s",
		    why);
	own_subdir(sv, ESV_SUPERVISE_DIR, 0700);
	/* workers/N/env/ holds job.ini's [env]: its secrets too. */
	own_subdir(sv, ESV_WORKERS_DIR, 0700);
	sv->locks.lockfd = openat(sv->jobfd, ESV_LOCK,
	    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sv->locks.lockfd == -1)
		die(ESV_EXIT_SYSTEM, "unable to open %s/%s", jd, ESV_LOCK);
	if (flock(sv->locks.lockfd, LOCK_EX | LOCK_NB) == -1) {
		char was[PATH_MAX];

		strlcpy(was, jd, sizeof(was));
		if (errno == EWOULDBLOCK && config_jobdir_taken(cfg) == 0) {
			info_msg("%s is in use: job directory %s instead", was,
			    cfg->jobdir);
			close(sv->locks.lockfd);
			close(sv->jobfd);
			open_control_dir(sv, cfg);
			return;
		}
		if (errno == EWOULDBLOCK)
			diex(ESV_EXIT_SYSTEM, "%s: another esv-supervise runs in this "
			    "JOBDIR (%s is locked)", jd, ESV_LOCK);
		die(ESV_EXIT_SYSTEM, "unable to lock %s/%s", jd, ESV_LOCK);
	}
	if (group_lock_take(sv) == -1)
		diex(ESV_EXIT_SYSTEM, "%s: an earlier worker group still runs and did not "
		    "die in time: refusing to start a second copy", jd);
	control_setup(sv);
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;
	struct signalfd_siginfo sis[8], si;
	int i, k, n;

	(void)events;
	/* Reading until none was left kept the control FIFO waiting. */
	n = signals_read(w->fd, sis, 8);
	for (k = 0; k < n; k++) {
		si = sis[k];
		if (si.ssi_signo == SIGCHLD) {
			group_reap(sv);
			continue;
		}
		for (i = 0; i < sv->cfg->nsignals; i++)
			if ((int)si.ssi_signo == sv->cfg->signals[i])
				break;
		if (i == sv->cfg->nsignals) {
			/* Only SIGHUP is watched and not forwarded. */
			if (si.ssi_signo == SIGHUP)
				supervisor_reload(sv, "SIGHUP", false);
			continue;
		}
		info_msg("received %s from pid %d (uid %u): stopping the workers",
		    sig_name((int)si.ssi_signo), (int)si.ssi_pid,
		    (unsigned)si.ssi_uid);
		notify_stopping(sv->notify);
		sv->grp.want_exit = true;
		sv->rdzv.rz.stopping = true;
		if (sv->grp.state == G_RUNNING || sv->grp.state == G_STOPPING) {
			if (sv->grp.state == G_STOPPING)
				group_signal(sv, (int)si.ssi_signo);
			else
				group_stop(sv, (int)si.ssi_signo, STOP_SIGNAL);
		} else if (sv->grp.state == G_SUCCEEDED ||
		    sv->grp.state == G_FAILED || sv->grp.state == G_FINISHING)
			supervisor_exit(sv, sv->rep.exit_code);
		else {
			group_enter(sv, G_DOWN);
			supervisor_exit(sv, ESV_EXIT_FAILED);
		}
	}
}

static void
on_timer(struct watch *w, uint32_t events)
{
	(void)events;
	timer_ack(w->fd);
	group_timer(w->ctx);
}

static void
setup_loop(struct supervisor *sv)
{
	sigset_t set;
	int i;

	if (loop_init(&sv->loop) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create an epoll instance");
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	/* Not forwarded (not in --signals-to-handle): it means reload. */
	sigaddset(&set, SIGHUP);
	for (i = 0; i < sv->cfg->nsignals; i++)
		sigaddset(&set, sv->cfg->signals[i]);
	sv->sigw = (struct watch){ .fn = on_signal, .ctx = sv };
	if ((sv->sigw.fd = signals_open(&set)) == -1 ||
	    loop_add(&sv->loop, &sv->sigw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to set up signal handling");
	sv->timerw = (struct watch){ .fn = on_timer, .ctx = sv };
	if ((sv->timerw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&sv->loop, &sv->timerw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create a timer");
	sv->ctl.w = (struct watch){ .fd = sv->ctl.fd, .fn = control_read,
	    .ctx = sv };
	if (loop_add(&sv->loop, &sv->ctl.w, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to watch the control FIFO");
}

static void
rdzv_done(void *ctx, const struct rdzv_round *r)
{
	group_round_ready(ctx, r);
}

static void
rdzv_failed(void *ctx, const char *why)
{
	group_rdzv_failed(ctx, why);
}

static void
rdzv_membership(void *ctx)
{
	group_membership_changed(ctx);
}

static void
rdzv_fenced(void *ctx, long long kill_at_ms)
{
	group_fenced(ctx, kill_at_ms);
}

static void
rdzv_barrier_done(void *ctx, bool released)
{
	group_barrier_done(ctx, released);
}

static void
rdzv_status_changed(void *ctx)
{
	report_group(ctx);
}

/*
 * A hosted esv-rdzv (its own session and group) is killed by the
 * guardian with the workers if we die: a stopped one, which our death's
 * SIGTERM (esv-rdzv --parent) does not move, too.
 */
static void
rdzv_host_changed(void *ctx, pid_t gone, pid_t started)
{
	struct supervisor *sv = ctx;

	if (gone > 0)
		guardian_drop(&sv->guard, gone);
	if (started > 0)
		guardian_add_spare(&sv->guard, started);
	guardian_flush(&sv->guard);
}

/* The guardian's backstop for a supervisor stopped past the lease. */
static void
rdzv_lease(void *ctx, long long kill_at_ms)
{
	struct supervisor *sv = ctx;

	guardian_lease(&sv->guard, kill_at_ms);
}

static void
setup_rendezvous(struct supervisor *sv)
{
	struct rdzv_callbacks cb = { .done = rdzv_done, .failed = rdzv_failed,
	    .membership_changed = rdzv_membership, .fenced = rdzv_fenced,
	    .barrier_done = rdzv_barrier_done,
	    .status_changed = rdzv_status_changed,
	    .host_changed = rdzv_host_changed, .lease = rdzv_lease,
	    .ctx = sv };
	const struct job_config *cfg = sv->cfg;
	struct rdzv_params *p = &sv->rdzv.rzp;
	char err[512];

	*p = (struct rdzv_params){ .rdzv_backend = cfg->rdzv_backend,
	    .run_id = cfg->run_id, .role = cfg->role,
	    .nproc_per_node = cfg->nproc_per_node,
	    .nnodes_min = cfg->nnodes_min, .nnodes_max = cfg->nnodes_max,
	    .node_rank = cfg->node_rank, .rdzv_host = cfg->rdzv_host,
	    .rdzv_endpoints = cfg->rdzv_endpoint,
	    .rdzv_port = cfg->rdzv_port, .rdzv = cfg->rdzv,
	    .local_addr = cfg->local_addr, .master_addr = cfg->master_addr,
	    .master_port = cfg->master_port,
	    .master_port_set = cfg->master_port_set,
	    .standalone = cfg->standalone, .jobdir = cfg->jobdir };
	if (rdzv_open(&sv->rdzv.rz, p, &sv->loop, &cb, err, sizeof(err)) == -1)
		diex(ESV_EXIT_USAGE, "%s", err);
}

int
main(int argc, char **argv)
{
	static struct job_config cfg;
	static struct supervisor sv;
	char err[1024];
	int r;

	setprogname("esv-supervise");
	sanitize_fds();
	if ((r = config_load(&cfg, argc, argv, environ, err, sizeof(err))) == -1)
		diex(ESV_EXIT_USAGE, "%s", err);
	if (r == 1)
		return 0;
	/* Every path esv builds starts with JOBDIR: leave room for the rest. */
	if (strlen(cfg.jobdir) > PATH_MAX / 2)
		diex(ESV_EXIT_USAGE, "%s: JOBDIR path too long", cfg.jobdir);

	if (cfg.dry_run) {
		config_print(stdout, &cfg);
		exit(fflush(stdout) == 0 ? ESV_EXIT_OK : ESV_EXIT_SYSTEM);
	}
	/* torchrun's banner, in one line: the default is surprising. */
	if (cfg.nproc_per_node > 1 && getenv("OMP_NUM_THREADS") == NULL)
		warn_msg("setting OMP_NUM_THREADS to 1 for each worker by default "
		    "so as not to overload the system; tune it for your "
		    "application");
	if (cfg.event_log_handler[0] != '\0' &&
	    strcmp(cfg.event_log_handler, "null") != 0)
		info_msg("--event-log-handler %s: ignored: a Python plugin; esv "
		    "logs its events to %s/%s", cfg.event_log_handler, cfg.jobdir,
		    ESV_EVENTS_FILE);
	if (cfg.logs_specs[0] != '\0')
		info_msg("--logs-specs %s: ignored: a Python plugin; esv's logs "
		    "follow --log-dir, --redirects and --tee", cfg.logs_specs);
	if (cfg.numa_binding[0] != '\0')
		info_msg("--numa-binding %s: not applied by this version of esv",
		    cfg.numa_binding);
	if (cfg.start_method[0] != '\0')
		info_msg("--start-method %s: ignored: every worker is exec'd, "
		    "as torch does for a script", cfg.start_method);
	sv.cfg = &cfg;
	sv.notify = notify_claim_fd(&cfg);
	sv.grp.inherited = children_list(&sv.grp.ninherited);
	sv.locks.grouplockfd = -1;
	sv.wd.fifo_fd = sv.wd.w.fd = -1;
	sv.st.fd = -1;
	sv.dirs.logfd = sv.dirs.runfd = sv.dirs.attemptfd = -1;
	sv.env.environ = environ;
	sv.env.argc = argc;
	sv.env.argv = argv;
	sv.rep.started_wall = wall_now();
	sv.grp.want = 'u';
	sv.rep.exit_code = ESV_EXIT_FAILED;
	sv.grp.backoff = (struct backoff){ .initial_ms = cfg.restart_delay_ms,
	    .max_ms = cfg.restart_delay_max_ms,
	    .reset_ms = cfg.restart_reset_ms };
	signal(SIGPIPE, SIG_IGN);
	/* Grandchildren that a worker orphans come back to us to be reaped. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		die(ESV_EXIT_SYSTEM, "unable to become a child subreaper");
	resolve_python(&sv.env, &cfg);
	sv.rep.job_name = cfg.argv[0];

	open_control_dir(&sv, &cfg);
	/* env/ is read at every start: a refusal before any other work. */
	if (start_env_build(&sv.env, &cfg, sv.jobfd, err, sizeof(err)) == -1)
		diex(ESV_EXIT_USAGE, "%s", err);
	setup_loop(&sv);
	/* Before any helper starts: none may inherit NOTIFY_SOCKET. */
	notify_setup(sv.notify, &sv.loop);
	/* Before any child: each belongs to the job's cgroup. */
	cgroup_setup(&sv, group_cgroup_event);
	if (cgroup_check_limits(&sv, err, sizeof(err)) == -1)
		diex(ESV_EXIT_USAGE, "%s", err);
	hostname_start(&sv);
	setup_rendezvous(&sv);
	watchdog_setup(&sv);
	healthd_setup(&sv);
	guardian_start(&sv);
	/* Last of the checks: a config error leaves no logs/ behind. */
	logs_setup(&sv);
	info_msg("job directory %s (esv-ctl status %s), logs in %s",
	    cfg.jobdir, cfg.jobdir, sv.dirs.run_dir[0] != '\0' ?
	    sv.dirs.run_dir : sv.dirs.log_base);
	events_open(&sv);
	fd_budget(&sv);
	events_log(&sv, "supervisor.start", json_pack("{si ss si}", "pid",
	    (int)getpid(), "run_id", cfg.run_id, "nproc_per_node",
	    cfg.nproc_per_node));
	event_broadcast(&cfg, 's');

	if (faccessat(sv.jobfd, ESV_DOWN_FILE, F_OK, 0) == 0) {
		sv.grp.want = 'd';
		report_group(&sv);
	} else
		group_start(&sv);

	for (;;) {
		if (loop_once(&sv.loop, sv.rep.report_pending ? 0 : -1) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
		if (sv.rep.report_pending)
			group_report_step(&sv, true);
	}
}
