/*
 * The worker group: start it, watch it, stop it, and decide what follows
 * (fsm.c holds the decisions).  As torch's agent, any failure stops and
 * restarts the whole group; nothing here blocks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "clone_into.h"
#include "contain.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "group.h"
#include "guardproto.h"
#include "helpers.h"
#include "msg.h"
#include "pidfd.h"
#include "report.h"
#include "sig.h"
#include "spawning.h"
#include "subst.h"
#include "trust.h"
#include "utf8.h"
#include "workerenv.h"

/* After SIGKILL, how long a worker stuck in D state may hold us up. */
#define KILL_GRACE_MS	5000
/* A worker that could not execute its entrypoint exits so, as in sh(1). */
#define WORKER_EXEC_FAILED	127
/* SIGKILLed processes that still hold group.lock: retried, then given up. */
#define DRAIN_MS	2000
#define DRAIN_STEP_MS	5

/*
 * The one place the group's state changes.  Quietly: the caller writes
 * the files once its burst of work is done (a spawn, an exit).
 */
void
group_enter(struct supervisor *sv, enum group_state st)
{
	sv->state = st;
	sv->since = wall_now();
}

static void
set_state(struct supervisor *sv, enum group_state st)
{
	group_enter(sv, st);
	report_group(sv);
}

void
supervisor_exit(struct supervisor *sv, int code)
{
	sv->rz.stopping = true;
	notify_stopping(sv);
	watchdog_stop(sv);
	healthd_stop(sv);
	events_log(sv, "supervisor.exit", json_pack("{si}", "exit_code", code));
	while (sv->report_pending)
		group_report_step(sv, false);
	report_group(sv);
	event_broadcast(sv, ESV_EVENT_EXIT);
	/* After the barrier: the other nodes' workers are done with it. */
	store_stop(sv);
	rdzv_close(&sv->rz, sv->state == G_SUCCEEDED ||
	    sv->state == G_FAILED || sv->state == G_FINISHING);
	/*
	 * No worker is left: let go of the lock before the guardian sees EOF,
	 * so that its search for lock holders finds nobody, not us.
	 */
	group_lock_release(sv);
	cgroup_cleanup(sv);
	close(sv->guardianfd);
	/* The last line: how the job ended, for whoever reads the log. */
	info_msg("exit %d: job %s after %u attempt%s (restarts: %u after "
	    "failures, %u manual, %u membership) in %.1f s", code,
	    code == ESV_EXIT_OK ? "succeeded" : sv->state == G_FAILED ?
	    "failed" : code == ESV_EXIT_FAILED ? "stopped" : "ended by an error",
	    sv->attempt, sv->attempt == 1 ? "" : "s", sv->restart_count,
	    sv->manual_restarts, sv->membership_restarts,
	    wall_now() - sv->started_wall);
	exit(code);
}

/*
 * The log base may be shared by many jobs and users (--log-dir): it is
 * trusted if nobody but us or root can write it, or if it has the sticky
 * bit (like /tmp), so that nobody else can rename or remove what we make
 * in it; and so is every directory above it, as the workers are handed
 * paths through it (trust_open_dir).  Below it, everything is reached by
 * directory fd and made with mkdirat, so no name another user placed
 * there is ever followed.
 */
static int make_run_dir(struct supervisor *sv);

void
logs_setup(struct supervisor *sv)
{
	char base[PATH_MAX], why[1024];

	if (sv->cfg->log_dir[0] != '\0')
		strlcpy(base, sv->cfg->log_dir, sizeof(base));
	else
		pathf(base, sizeof(base), "%s/%s", sv->cfg->jobdir,
		    ESV_DEFAULT_LOG_DIR);
	/* log_base: others read these paths, from other directories. */
	sv->logfd = trust_open_dir(base, TRUST_MKDIR | TRUST_STICKY_OK, 0755,
	    sv->log_base, sizeof(sv->log_base), why, sizeof(why));
	if (sv->logfd == -1) {
		int code = errno == EPERM ? ESV_EXIT_USAGE : ESV_EXIT_SYSTEM;
		size_t n = strlen(base);

		/* why names the directory at fault: name the base too. */
		if (strncmp(why, base, n) == 0 && why[n] == ':')
			diex(code, "log directory %s", why);
		diex(code, "log directory %s: %s", base, why);
	}
	/* Now, so that the first line can say where the logs go. */
	(void)make_run_dir(sv);
}

/* torch's mkdtemp(prefix=run_id + "_"): eight random characters. */
static int
make_run_dir(struct supervisor *sv)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
	char rnd[9], name[NAME_MAX + 1];
	struct stat st;
	int tries, i;

	for (tries = 0; tries < 100; tries++) {
		for (i = 0; i < 8; i++)
			rnd[i] = set[arc4random_uniform(sizeof(set) - 1)];
		rnd[8] = '\0';
		if (pathf(name, sizeof(name), "%s_%s", sv->cfg->run_id,
		    rnd) == -1 || pathf(sv->run_dir, sizeof(sv->run_dir),
		    "%s/%s", sv->log_base, name) == -1)
			break;
		if (mkdirat(sv->logfd, name, 0700) == 0) {
			sv->runfd = openat(sv->logfd, name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sv->runfd == -1)
				break;
			/* Nobody can swap it in a trusted base: make sure. */
			if (fstat(sv->runfd, &st) == 0 &&
			    st.st_uid == geteuid())
				return 0;
			close(sv->runfd);
			sv->runfd = -1;
			errno = EPERM;
			break;
		}
		if (errno != EEXIST)
			break;
	}
	warn_sys("unable to create a run directory in %s", sv->log_base);
	sv->run_dir[0] = '\0';
	return -1;
}

/*
 * Every start of the group gets a directory of its own, and no log is
 * ever removed or overwritten: the first start of a restart count has
 * torch's name, attempt_<restart_count>; a later start that keeps the
 * count (a manual or membership restart) gets attempt_<restart_count>.<n>,
 * n = 1, 2, ... (esv-supervise(8), FILES).  torch reuses and empties the
 * directory instead, losing the earlier run's output.
 */
static int
prepare_attempt_dir(struct supervisor *sv)
{
	char name[48], sub[16];
	unsigned i, n;

	if (sv->runfd == -1 && make_run_dir(sv) == -1)
		return -1;
	if (sv->attemptfd != -1)
		close(sv->attemptfd);
	sv->attemptfd = -1;
	for (n = 0; ; n++) {
		if (n == 0)
			snprintf(name, sizeof(name), "attempt_%u",
			    sv->restart_count);
		else
			snprintf(name, sizeof(name), "attempt_%u.%u",
			    sv->restart_count, n);
		pathf(sv->attempt_dir, sizeof(sv->attempt_dir), "%s/%s",
		    sv->run_dir, name);
		if (mkdirat(sv->runfd, name, 0755) == 0)
			break;
		if (errno != EEXIST || n == UINT_MAX - 1) {
			warn_sys("unable to create %s", sv->attempt_dir);
			return -1;
		}
	}
	sv->attemptfd = openat(sv->runfd, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (sv->attemptfd == -1) {
		warn_sys("unable to open %s", sv->attempt_dir);
		return -1;
	}
	for (i = 0; i < sv->nworkers; i++) {
		snprintf(sub, sizeof(sub), "%u", i);
		if (mkdirat(sv->attemptfd, sub, 0755) == -1) {
			warn_sys("unable to create %s/%s", sv->attempt_dir, sub);
			return -1;
		}
	}
	return 0;
}

/* argv of a worker: [python -u [-m]] entrypoint args, ${local_rank} done. */
static char **
worker_argv(struct supervisor *sv, unsigned local_rank)
{
	const struct job_config *cfg = sv->cfg;
	char lr[16];
	struct subst_var vars[] = { { "local_rank", lr } };
	char **av;
	int i, n = 0;

	snprintf(lr, sizeof(lr), "%u", local_rank);
	if ((av = calloc(cfg->argc + 4, sizeof(*av))) == NULL)
		return NULL;
	if (!cfg->no_python) {
		av[n++] = strdup(sv->python);
		av[n++] = strdup("-u");
		if (cfg->module)
			av[n++] = strdup("-m");
	}
	for (i = 0; i < cfg->argc; i++)
		av[n++] = subst_dup(cfg->argv[i], vars, 1);
	for (i = 0; i < n; i++)
		if (av[i] == NULL) {
			while (n > 0)
				free(av[--n]);
			free(av);
			return NULL;
		}
	return av;
}

/*
 * The signals a worker must get back at their default: those we found
 * ignored (a supervisor started in the background of a script has SIGINT
 * ignored; workers must not inherit that).  Looked up once, so each spawn
 * makes a few sigaction calls instead of one per signal.
 */
static const sigset_t *
ignored_signals(void)
{
	static sigset_t ignored;
	static bool ready;
	struct sigaction sa;
	int sig;

	if (ready)
		return &ignored;
	sigemptyset(&ignored);
	for (sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigaddset(&ignored, sig);
	ready = true;
	return &ignored;
}

/* What the child half of spawn_worker needs, and what it says back. */
struct spawn_args {
	char		**av, **envp;
	int		  out, err;	/* its stdout and stderr, or -1 */
	int		  lockfd, guardianfd;
	int		  cgprocs;	/* its cgroup's cgroup.procs, or -1 */
	const sigset_t	 *sigdef;
	const struct rlimit *nofile;
	const char *volatile step;	/* what failed ... */
	volatile int	  error;	/* ... with this errno, or 0: it exec'd */
};

/*
 * The worker, between clone and exec, on its own stack in our memory
 * while we wait (as posix_spawn's child).  It leads a new session (so
 * stops reach its children too) and announces its group to the guardian
 * itself: a supervisor killed at any moment of a spawn leaves no worker
 * the guardian does not know.  Only system calls here: no sanitizer
 * bookkeeping on a stack the sanitizer does not know.
 */
__attribute__((no_sanitize("address", "undefined")))
static int
worker_child(void *arg)
{
	struct spawn_args *a = arg;
	char line[GUARD_LINE_MAX];
	size_t n;
	sigset_t none;
	int sig;

	/* First: nothing of the job may run outside its cgroup. */
	a->step = "cgroup";
	if (a->cgprocs != -1 && write(a->cgprocs, "0", 1) != 1)
		goto fail;
	a->step = "setsid";
	if (setsid() == -1)
		goto fail;
	n = guard_line(line, '+', getpid());
	/* One line, so one atomic write; a dead guardian is replaced. */
	(void)!write(a->guardianfd, line, n);
	a->step = "dup2";
	if ((a->out != -1 && dup2(a->out, STDOUT_FILENO) == -1) ||
	    (a->err != -1 && dup2(a->err, STDERR_FILENO) == -1))
		goto fail;
	/* Inherited on purpose: see holders.c. */
	a->step = "fcntl";
	if (fcntl(a->lockfd, F_SETFD, 0) == -1)
		goto fail;
	a->step = "setrlimit";
	if (a->nofile->rlim_max != 0 && setrlimit(RLIMIT_NOFILE,
	    a->nofile) == -1)
		goto fail;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(a->sigdef, sig) == 1)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	a->step = NULL;
	execvpe(a->av[0], a->av, a->envp);
fail:
	a->error = errno;
	_exit(WORKER_EXEC_FAILED);
}

static void
spawn_failed(struct supervisor *sv, struct worker *wk, const char *step,
    int e)
{
	/* As a shell would: 127, and the reason in the summary. */
	wk->pid = wk->last_pid = wk->pgid = 0;
	wk->state = W_FAILED;
	wk->exitcode = 127;
	wk->exec_errno = e;
	wk->spawn_step = step;
	wk->exit_pending = true;
	output_close(sv, wk);
}

/*
 * clone(CLONE_VM | CLONE_VFORK) and exec, as glibc's posix_spawn does: no
 * page tables to copy, and a failed exec is an error returned here instead
 * of a child that must report it.  Unlike posix_spawn, the child can tell
 * the guardian about itself before it execs.  With cgroups, the same clone
 * through clone3 makes it in its cgroup, where the kernel allows.
 */
static int
spawn_worker(struct supervisor *sv, struct worker *wk, char **envp)
{
	static char *stack;
	static const char birth[] = "its cgroup (died at birth)";
	const size_t stack_size = 256 * 1024;
	struct spawn_args a = { .envp = envp, .lockfd = sv->grouplockfd,
	    .guardianfd = sv->guardianfd, .sigdef = ignored_signals(),
	    .nofile = &sv->nofile };
	const char *step = "clone";
	int fds[2], i, e;
	pid_t pid;

	wk->started = wk->exited = wall_now();
	wk->exitcode = 0;
	wk->exec_errno = 0;
	wk->spawn_step = NULL;
	wk->cg = (struct cgstat){ -1, -1, -1, -1, -1, -1 };
	if (cgroup_worker_prepare(sv, wk) == -1) {
		/* Better no worker than one that could escape. */
		spawn_failed(sv, wk, "its cgroup", errno);
		return -1;
	}
	a.cgprocs = wk->cgprocs;
	if (output_open(sv, wk, fds) == -1) {
		e = errno;
		spawn_failed(sv, wk, "its output", e);
		return -1;
	}
	if ((stack == NULL && (stack = malloc(stack_size)) == NULL) ||
	    (a.av = worker_argv(sv, wk->local_rank)) == NULL) {
		step = "memory";
		e = ENOMEM;
		pid = -1;
		goto out;
	}
	a.out = fds[0];
	a.err = fds[1];
	pid = -1;
	e = 0;
	if (sv->cg.on && sv->cg.clone_into) {
		/* Born in its cgroup: no move, no window (clone_into.c). */
		a.step = birth;
		pid = clone_into_cgroup(worker_child, &a, stack, stack_size,
		    wk->cgfd);
		e = errno;
		step = "its cgroup";
		/*
		 * Not this kernel, or not under this seccomp filter; or the
		 * child died before its first step (it returns only once the
		 * child has exec'd or died): a kernel that killed it at birth.
		 * Its zombie is reaped as a stranger's.  The worker then moves
		 * itself (a->cgprocs), as it does where it is not born in it.
		 */
		if ((pid == -1 && (e == ENOSYS || e == EINVAL || e == E2BIG ||
		    e == EPERM)) || (pid > 0 && a.step == birth)) {
			if (cgroup_no_clone_into(sv, wk, pid == -1 ?
			    strerror(e) : "the child was killed at birth") ==
			    -1) {
				e = errno;
				pid = -1;
				goto out;
			}
			a.cgprocs = wk->cgprocs;
			a.step = NULL;
			pid = -1;
		}
	}
	if (pid == -1 && (!sv->cg.on || !sv->cg.clone_into)) {
		step = "clone";
		pid = clone(worker_child, stack + stack_size, CLONE_VM |
		    CLONE_VFORK | SIGCHLD, &a);
		e = errno;
	}
out:
	for (i = 0; a.av != NULL && a.av[i] != NULL; i++)
		free(a.av[i]);
	free(a.av);
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
	if (pid == -1) {
		spawn_failed(sv, wk, step, e);
		return -1;
	}
	if (a.error != 0) {
		/* It announced its group: take it back, before its pid is free. */
		guardian_drop(sv, pid);
		guardian_flush(sv);
		spawn_failed(sv, wk, a.step, a.error);
		return -1;
	}
	wk->pid = wk->last_pid = wk->pgid = pid;
	worker_pidfd(wk, pid);
	wk->state = W_RUNNING;
	wk->exited = 0;
	sv->alive++;
	output_started(sv, wk);
	return 0;
}

static void
attempt_info(struct supervisor *sv, struct attempt_info *ai)
{
	memset(ai, 0, sizeof(*ai));
	ai->cfg = sv->cfg;
	ai->ranks = sv->round.ranks;
	ai->master_addr = sv->round.master_addr;
	ai->master_port = sv->round.master_port;
	ai->restart_count = sv->restart_count;
	ai->attempt_dir = sv->attempt_dir;
	ai->use_agent_store = sv->round.use_agent_store;
	ai->timer_file = sv->wd_fifo_fd != -1 ? sv->wd_fifo : NULL;
}

static void
refuse_start(struct supervisor *sv, int code, const char *why)
{
	warn_msg("unable to start the worker group: %s", why);
	sv->exit_code = code;
	set_state(sv, G_FAILED);
	event_broadcast(sv, ESV_EVENT_FINISHED);
	supervisor_exit(sv, code);
}

static void
fail_to_start(struct supervisor *sv, const char *why)
{
	refuse_start(sv, ESV_EXIT_SYSTEM, why);
}

/*
 * A new attempt begins with a round of the rendezvous; the workers start
 * when it completes (group_round_ready), at once for the static backend.
 */
void
group_start(struct supervisor *sv)
{
	sv->have_round = false;
	sv->verdict_pending = false;
	group_enter(sv, G_JOINING);
	if (store_prepare(sv) == -1)
		fail_to_start(sv, "no port for the agent store");
	if (rdzv_join(&sv->rz) == -1)
		fail_to_start(sv, "rendezvous failed");
	/* Static rounds complete inside rdzv_join: nothing to show then. */
	if (sv->state == G_JOINING)
		report_group(sv);
}

static void group_launch(struct supervisor *sv);
static void arm_deadline(struct supervisor *sv, long long ms);
static void job_over(struct supervisor *sv, enum group_state st)
    __attribute__((noreturn));

void
group_round_ready(struct supervisor *sv, const struct rdzv_round *r)
{
	if (sv->state != G_JOINING)
		return;
	sv->round = *r;
	sv->have_round = true;
	events_log(sv, "rdzv.round", json_pack("{si si si so si}", "round",
	    r->round, "group_rank", r->ranks.group_rank, "group_world_size",
	    r->ranks.group_world_size, "master_addr", json_text(r->master_addr),
	    "master_port", r->master_port));
	if (store_round(sv) == -1)
		fail_to_start(sv, "the agent store did not start");
	group_launch(sv);
}

void
group_rdzv_failed(struct supervisor *sv, const char *why)
{
	warn_msg("rendezvous failed: %s", why);
	events_log(sv, "rdzv.failed", json_pack("{so}", "reason",
	    json_text(why)));
	if (sv->state == G_RUNNING) {
		sv->want_exit = sv->rz.stopping = true;
		group_stop(sv, SIGTERM, STOP_EXIT);
		return;
	}
	sv->exit_code = ESV_EXIT_FAILED;
	set_state(sv, G_FAILED);
	event_broadcast(sv, ESV_EVENT_FINISHED);
	supervisor_exit(sv, ESV_EXIT_FAILED);
}

static void after_stop_next(struct supervisor *sv, enum stop_reason why);

/*
 * How long after a failure the round's end may still come, caused by
 * it.  A peer node whose lease runs out (a stall, a cut) kills its
 * workers before esv-rdzv drops it (a grace and a half later, at most
 * a heartbeat more) or hears it join again; ours, whose connections to
 * them end, fail in between, as gloo's do.  A lease covers that.
 */
static long long
verdict_ms(struct supervisor *sv)
{
	/* Alone in its job (--standalone, one node), a node has no peers. */
	if (strcmp(sv->cfg->rdzv_backend, "esv") != 0 ||
	    sv->rzp.nnodes_max <= 1)
		return 0;
	return rdzv_lease_ms(&sv->rzp.rdzv, 0);
}

/*
 * The workers failed and are gone: is it a failure?  Only if the round
 * does not end within verdict_ms of the first failure.
 */
static bool
verdict_wait(struct supervisor *sv)
{
	long long now = mono_ms(), at = sv->failed_at + verdict_ms(sv);

	if (sv->failed_at == 0 || now >= at || sv->want_exit)
		return false;
	sv->verdict_pending = true;
	sv->stop_reason = STOP_FAILURE;
	arm_deadline(sv, at - now);
	return true;
}

/*
 * The round ended while the group stopped for a failure that came with
 * that end: peers gone, a store reset.  Not a failure of ours: no
 * restart is counted, no failure summary, a new round as for any
 * membership change.
 */
static void
superseded(struct supervisor *sv)
{
	unsigned i;

	info_msg("rendezvous: the round ended %lld ms after the first worker "
	    "failure: a membership change, not a failure",
	    mono_ms() - sv->failed_at);
	events_log(sv, "rdzv.superseded", json_pack("{si sI}", "failures",
	    (int)sv->nfailures, "after_ms",
	    (json_int_t)(mono_ms() - sv->failed_at)));
	for (i = 0; i < sv->nfailures; i++)
		failure_free(&sv->failures[i]);
	sv->nfailures = 0;
	sv->failed_at = 0;
	if (!sv->verdict_pending) {
		sv->stop_reason = STOP_MEMBERSHIP;
		return;
	}
	sv->verdict_pending = false;
	sv->stop_reason = STOP_NONE;
	arm_deadline(sv, -1);
	after_stop_next(sv, STOP_MEMBERSHIP);
}

/*
 * Every worker has exited 0, their exits not reaped yet: they came while
 * we were stopped (SIGSTOP, a swapping host), older news than what the
 * rendezvous says on our return.
 */
static bool
all_done_unreaped(struct supervisor *sv)
{
	siginfo_t si;
	unsigned i;

	if (sv->state != G_RUNNING || sv->alive == 0)
		return false;
	for (i = 0; i < sv->nworkers; i++) {
		if (sv->workers[i].pid == 0) {
			if (sv->workers[i].state != W_SUCCEEDED)
				return false;
			continue;
		}
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, sv->workers[i].pid, &si, WEXITED | WNOHANG |
		    WNOWAIT) == -1 || si.si_pid == 0 ||
		    si.si_code != CLD_EXITED || si.si_status != 0)
			return false;
	}
	return true;
}

/*
 * Taken first, such a group goes to the exit barrier and reports its
 * round done, rather than being stopped and run again: whether that
 * round still stands is the rendezvous' to say (esv-supervise(8), "Exit
 * barrier").  True if it did.
 */
static bool
done_meanwhile(struct supervisor *sv)
{
	if (!all_done_unreaped(sv))
		return false;
	info_msg("rendezvous: the workers all succeeded before this news "
	    "came: reporting the round done");
	group_reap(sv);
	return sv->state != G_RUNNING;
}

/* A node came or went: a new round, free of charge (torch's scale up/down). */
void
group_membership_changed(struct supervisor *sv)
{
	if (done_meanwhile(sv))
		return;
	if (sv->state == G_FINISHING) {
		/*
		 * The round our workers finished was restarted elsewhere: a
		 * round completes on every node or on none, so they run
		 * again in the next, free of charge like any membership
		 * restart.
		 */
		info_msg("rendezvous: the round this node finished was "
		    "superseded: its workers run again in the next round");
		events_log(sv, "rdzv.superseded", json_pack("{si}", "round",
		    sv->round.round));
		sv->membership_restarts++;
		store_stop(sv);
		group_start(sv);
		return;
	}
	info_msg("rendezvous: membership changed: restarting the group");
	events_log(sv, "rdzv.membership", NULL);
	if (sv->state == G_RUNNING)
		group_stop(sv, SIGTERM, STOP_MEMBERSHIP);
	else if (sv->stop_reason == STOP_FAILURE && sv->failed_at != 0 &&
	    (sv->state == G_STOPPING || sv->verdict_pending) &&
	    mono_ms() < sv->failed_at + verdict_ms(sv))
		superseded(sv);
}

/*
 * The lease of our ranks runs out: the workers go as for a membership
 * change (no restart is counted), but SIGKILL comes at the lease's end
 * if that is sooner than --shutdown-timeout, for the rendezvous may give
 * their ranks away then.
 */
void
group_fenced(struct supervisor *sv, long long kill_at_ms)
{
	long long now = mono_ms();

	if (done_meanwhile(sv))
		return;
	events_log(sv, "rdzv.fenced", json_pack("{sI sf ss}", "kill_in_ms",
	    (json_int_t)(kill_at_ms > now ? kill_at_ms - now : 0), "kill_at",
	    wall_now() + (kill_at_ms - now) / 1000.0, "state",
	    group_state_name(sv->state)));
	if (sv->state == G_RUNNING)
		group_stop(sv, SIGTERM, STOP_MEMBERSHIP);
	/*
	 * Past the end we told the guardian: it has killed the workers'
	 * cgroup (we were stopped), so the next start needs new ones.
	 */
	if (sv->guard_lease > 0 && now >= sv->guard_lease)
		cgroup_kill(sv);
	if (sv->state != G_STOPPING || sv->alive == 0 || sv->kill_phase != 0 ||
	    sv->draining || kill_at_ms >= sv->kill_at)
		return;
	sv->kill_at = kill_at_ms;
	sv->fenced = true;
	arm_deadline(sv, kill_at_ms > now ? kill_at_ms - now : 0);
}

void
group_barrier_done(struct supervisor *sv, bool released)
{
	if (sv->state != G_FINISHING)
		return;
	events_log(sv, "rdzv.barrier", json_pack("{sb}", "released",
	    released));
	job_over(sv, G_SUCCEEDED);
}

static void
group_launch(struct supervisor *sv)
{
	struct attempt_info ai;
	unsigned i, n = sv->cfg->nproc_per_node;
	char of[16], why[1024];
	int r;

	if (sv->workers == NULL) {
		if ((sv->workers = calloc(n, sizeof(*sv->workers))) == NULL)
			die(ESV_EXIT_SYSTEM, "unable to allocate %u workers", n);
		sv->nworkers = n;
		for (i = 0; i < n; i++) {
			sv->workers[i].local_rank = i;
			sv->workers[i].out.file = sv->workers[i].err.file = -1;
			sv->workers[i].out.w.fd = sv->workers[i].err.w.fd = -1;
			sv->workers[i].pidfd = -1;
			sv->workers[i].cgfd = sv->workers[i].cgprocs = -1;
		}
		report_setup(sv);
	}
	for (i = 0; i < sv->nfailures; i++)
		failure_free(&sv->failures[i]);
	sv->nfailures = 0;
	sv->stop_reason = STOP_NONE;
	sv->kill_phase = 0;
	sv->next_start_wall = 0;
	if (prepare_attempt_dir(sv) == -1)
		fail_to_start(sv, "no log directory");

	if (start_env_build(sv, why, sizeof(why)) == -1)
		refuse_start(sv, ESV_EXIT_USAGE, why);
	attempt_info(sv, &ai);
	if (group_lock_reclaim(sv) != 0)
		warn_msg("processes of an earlier attempt still hold %s/%s",
		    sv->cfg->jobdir, ESV_GROUP_LOCK);
	/*
	 * The workers announce their groups to the guardian themselves: what
	 * we owe it goes first, so that a "-" of a pid never follows the "+"
	 * of a new worker that reuses it.
	 */
	guardian_flush(sv);
	/* Start every worker first; the bookkeeping can wait a moment. */
	for (i = 0; i < n; i++) {
		struct envbuf env = { 0 };

		if (workerenv_full(&env, &ai, i, sv->start_env) == -1)
			die(ESV_EXIT_SYSTEM, "unable to build the environment");
		r = spawn_worker(sv, &sv->workers[i], env.vars);
		envbuf_free(&env);
		if (r == -1)
			break;
	}
	/* After a failed start, the rest never ran in this attempt. */
	while (++i < n) {
		sv->workers[i].state = W_STOPPED;
		sv->workers[i].pid = sv->workers[i].last_pid = 0;
	}
	guardian_flush(sv);
	group_lock_release(sv);
	watchdog_pids(sv);
	sv->attempt++;
	sv->attempt_started_ms = mono_ms();
	sv->pid_since = wall_now();
	group_enter(sv, G_RUNNING);
	events_log(sv, "group.start", json_pack("{si si si ss si}",
	    "workers", sv->alive, "base_rank", ai.ranks.base_rank,
	    "world_size", ai.ranks.world_size, "master_addr", ai.master_addr,
	    "master_port", ai.master_port));
	/* The files are written from the loop, one worker at a time. */
	sv->report_next = 0;
	sv->report_pending = true;
	/* Those that really run: a failed start ends the loop early. */
	of[0] = '\0';
	if (sv->alive < n)
		snprintf(of, sizeof(of), " of %u", n);
	info_msg("started %u%s workers (attempt %u, restart %u/%u, ranks "
	    "%u-%u of %u, master %s:%u), logs in %s", sv->alive, of,
	    sv->attempt, sv->restart_count, sv->cfg->max_restarts,
	    ai.ranks.base_rank, ai.ranks.base_rank + n - 1,
	    ai.ranks.world_size, ai.master_addr, ai.master_port,
	    sv->attempt_dir);
	if (sv->alive < n) {
		/* A worker could not start: a failure of the whole group. */
		group_stop(sv, SIGTERM, STOP_FAILURE);
	}
}

/* A signal (a worker's exit above all) is waiting for the loop. */
static bool
signal_waiting(struct supervisor *sv)
{
	struct pollfd pfd = { .fd = sv->sigw.fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * Write the files of one freshly started worker.  On a slow disk an
 * envdir per worker costs milliseconds; done in one go for hundreds of
 * workers it would keep the loop from noticing an exit for seconds.  A
 * signal that arrives meanwhile interrupts the worker's envdir (if yield),
 * which is written again on the next turn.
 */
void
group_report_step(struct supervisor *sv, bool yield)
{
	struct attempt_info ai;
	struct worker *wk;
	struct envbuf own = { 0 };
	int r = 0;

	if (sv->report_next < sv->nworkers) {
		wk = &sv->workers[sv->report_next];
		attempt_info(sv, &ai);
		if (workerenv_own(&own, &ai, wk->local_rank,
		    sv->start_env != NULL ? sv->start_env : sv->environ) == 0)
			r = report_env(sv, wk, own.vars,
			    yield ? signal_waiting : NULL);
		envbuf_free(&own);
		if (r == -1)
			return;
		report_worker(sv, wk);
		sv->report_next++;
	}
	if (sv->report_next < sv->nworkers)
		return;
	sv->report_pending = false;
	if (sv->state != G_RUNNING)
		return;
	report_group(sv);
	event_broadcast(sv, ESV_EVENT_UP);
	notify_ready(sv);
}

/*
 * The worker's pidfd, taken while it is our unreaped child: it is that
 * process, whatever happens to its pid later.
 */
void
worker_pidfd(struct worker *wk, pid_t pid)
{
	if (wk->pidfd != -1)
		close(wk->pidfd);
	if ((wk->pidfd = esv_pidfd_open(pid)) == -1)
		warn_sys("worker %u (pid %d): no pidfd: signals go by pid "
		    "while it is not reaped, and its timers are refused",
		    wk->local_rank, (int)pid);
}

static void
worker_pidfd_close(struct worker *wk)
{
	if (wk->pidfd != -1)
		close(wk->pidfd);
	wk->pidfd = -1;
}

/*
 * Send signo to every process group of the attempt, live or not, through
 * the leader's pidfd: a group whose id was reused after its last process
 * was gone is never signalled.  Without the kernel's support (Linux < 6.9)
 * killpg is safe only while the leader is our unreaped child (its pid
 * cannot be reused then); after, what is left of its group is for the
 * group.lock sweep and our subreaper's kill_adopted.
 */
void
group_signal(struct supervisor *sv, int signo)
{
	static bool no_group_signal;
	struct worker *wk;
	unsigned i;

	for (i = 0; i < sv->nworkers; i++) {
		wk = &sv->workers[i];
		if (wk->pgid <= 1)
			continue;
		if (wk->pidfd != -1 && !no_group_signal) {
			if (esv_pidfd_killpg(wk->pidfd, signo) == 0 ||
			    errno == ESRCH)
				continue;
			if (errno != EINVAL) {
				warn_sys("unable to signal worker %u's group",
				    wk->local_rank);
				continue;
			}
			no_group_signal = true;
		}
		if (wk->pid > 0)
			killpg(wk->pgid, signo);
	}
}

static void
arm_deadline(struct supervisor *sv, long long ms)
{
	if (timer_arm_ms(sv->timerw.fd, ms) == -1)
		warn_sys("unable to arm the timer");
}

static void after_stop(struct supervisor *sv);
static void after_stop_next(struct supervisor *sv, enum stop_reason why);
static void succeeded(struct supervisor *sv);

/* The attempt's bookkeeping, once group.lock is ours again (or given up). */
static void
finish_cleanup(struct supervisor *sv)
{
	unsigned i;

	for (i = 0; i < sv->nworkers; i++) {
		if (sv->workers[i].pgid > 1)
			guardian_drop(sv, sv->workers[i].pgid);
		sv->workers[i].pgid = 0;
		worker_pidfd_close(&sv->workers[i]);
		output_close(sv, &sv->workers[i]);
	}
	guardian_flush(sv);
	/*
	 * The workers of other nodes may use the store after ours are done:
	 * after a success it stays until the job's last worker is done, that
	 * is until the exit barrier passes (or is given up) and we exit
	 * (esv-stored(8)).  A stop ends the round on every node: it goes.
	 */
	if (sv->state != G_RUNNING)
		store_stop(sv);
	sv->pid_since = wall_now();
	set_state(sv, G_DOWN);
	event_broadcast(sv, ESV_EVENT_DOWN);
}

/*
 * The timer during a drain: the lock is ours, or DRAIN_MS are up; then on
 * with what the stop (or the success) was for.  A stop asked for during
 * the drain (a signal, a control command) is what counts by then.
 */
static void drain_step(struct supervisor *sv);

/* cgroup.events of a worker changed: maybe the drain is over. */
void
group_cgroup_event(struct supervisor *sv)
{
	if (sv->draining)
		drain_step(sv);
}

static void
drain_step(struct supervisor *sv)
{
	enum stop_reason why;

	if ((group_lock_retry(sv) == -1 || !cgroup_empty(sv)) &&
	    mono_ms() < sv->drain_deadline) {
		arm_deadline(sv, DRAIN_STEP_MS);
		return;
	}
	if (mono_ms() >= sv->drain_deadline)
		warn_msg("processes of the last attempt did not die in %d ms: "
		    "going on anyway", DRAIN_MS);
	sv->draining = false;
	finish_cleanup(sv);
	if ((why = sv->stop_reason) == STOP_NONE) {
		succeeded(sv);
		return;
	}
	sv->stop_reason = STOP_NONE;
	after_stop_next(sv, why);
}

void
group_stop(struct supervisor *sv, int signo, enum stop_reason why)
{
	static const char *const reasons[] = { [STOP_NONE] = "none",
		[STOP_FAILURE] = "failure", [STOP_MANUAL] = "restart",
		[STOP_DOWN] = "down", [STOP_SIGNAL] = "signal",
		[STOP_EXIT] = "exit", [STOP_MEMBERSHIP] = "membership" };

	/* A frozen group hears nothing: thaw it first. */
	if (sv->paused)
		(void)cgroup_freeze(sv, false);
	group_signal(sv, signo);
	if (signo != SIGCONT && signo != SIGKILL)
		group_signal(sv, SIGCONT);	/* a paused group must hear it */
	sv->paused = false;
	/* A stop asked for while a verdict waits (a signal) ends the wait. */
	if (sv->verdict_pending) {
		sv->verdict_pending = false;
		sv->failed_at = 0;
	}
	if (why == STOP_FAILURE && sv->failed_at == 0)
		sv->failed_at = mono_ms();
	sv->stop_reason = why;
	sv->stop_signal = signo;
	sv->kill_phase = signo == SIGKILL ? 1 : 0;
	sv->fenced = false;
	sv->kill_at = mono_ms() + (signo == SIGKILL ? KILL_GRACE_MS :
	    (long long)sv->cfg->shutdown_timeout_ms);
	flush_exits(sv);
	if (why == STOP_FAILURE)
		warn_msg("worker group failed (%zu worker%s), stopping it",
		    sv->nfailures, sv->nfailures == 1 ? "" : "s");
	else
		info_msg("stopping the worker group (%s) with %s",
		    reasons[why], sig_name(signo));
	events_log(sv, "group.stop", json_pack("{ss ss}", "reason",
	    reasons[why], "signal", sig_name(signo)));
	set_state(sv, G_STOPPING);
	if (sv->alive == 0) {
		/* While draining, drain_step goes on with this stop. */
		if (!sv->draining)
			after_stop(sv);
		return;
	}
	arm_deadline(sv, signo == SIGKILL ? KILL_GRACE_MS :
	    (long long)sv->cfg->shutdown_timeout_ms);
}

pid_t *
children_list(size_t *n)
{
	char path[64], *text, *p, *end;
	pid_t *pids = NULL, *np;
	size_t cap = 0;
	long pid;

	*n = 0;
	if (pathf(path, sizeof(path), "/proc/self/task/%d/children",
	    getpid()) == -1 || (text = read_text(path, 1 << 20, NULL)) == NULL)
		return NULL;
	for (p = text; *p != '\0'; p = end) {
		pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((np = reallocarray(pids, cap, sizeof(*np))) == NULL)
				break;
			pids = np;
		}
		pids[(*n)++] = (pid_t)pid;
	}
	free(text);
	return pids;
}

/* A child we had before we were the supervisor; drop: it was reaped. */
static bool
inherited(struct supervisor *sv, pid_t pid, bool drop)
{
	size_t i;

	for (i = 0; i < sv->ninherited; i++)
		if (sv->inherited[i] == pid) {
			if (drop)
				sv->inherited[i] = sv->inherited[--sv->ninherited];
			return true;
		}
	return false;
}

/*
 * Orphans the workers left (double-forked daemons, dataloaders that set
 * up their own session) were reparented to us as subreaper: kill them.
 * Not our helpers, and not what our caller started before exec'ing us
 * (`sh -c 'sidecar & exec esv-supervise ...'`).  By pid, no pidfd: they
 * are our unreaped children, whose pids no one else can be given.
 */
static void
kill_adopted(struct supervisor *sv)
{
	struct rdzv_status rs;
	pid_t *pids;
	size_t i, n;

	rdzv_status(&sv->rz, &rs);
	if ((pids = children_list(&n)) == NULL)
		return;
	for (i = 0; i < n; i++)
		if (pids[i] > 1 && pids[i] != sv->guardian_pid &&
		    pids[i] != rs.host_pid && pids[i] != rs.lookup_pid &&
		    pids[i] != rs.helper_pid &&
		    pids[i] != sv->wd_pid &&
		    pids[i] != sv->hd_pid && pids[i] != sv->host_pid &&
		    pids[i] != sv->st_pid &&
		    !inherited(sv, pids[i], false))
			kill(pids[i], SIGKILL);
	free(pids);
}

/*
 * Every worker is gone: kill what they left behind and take group.lock
 * back.  True when that is done; false while processes that were sent
 * SIGKILL still hold the lock (stuck in the kernel): the loop's timer
 * retries every DRAIN_STEP_MS, for at most DRAIN_MS, and then goes on
 * with finish_drained, so that no turn of the loop waits for them.
 */
static bool
finish_attempt(struct supervisor *sv)
{
	arm_deadline(sv, -1);
	group_signal(sv, SIGKILL);
	kill_adopted(sv);
	/*
	 * And what left the session and closed its fds: gone by cgroup.  A
	 * kill is not free (the next start needs new cgroups): only if some
	 * process is left.
	 */
	if (!cgroup_empty(sv))
		cgroup_kill(sv);
	if (group_lock_reclaim(sv) == 0 && cgroup_empty(sv)) {
		finish_cleanup(sv);
		return true;
	}
	sv->draining = true;
	sv->drain_deadline = mono_ms() + DRAIN_MS;
	arm_deadline(sv, DRAIN_STEP_MS);
	return false;
}

static void
job_over(struct supervisor *sv, enum group_state st)
{
	timer_arm_ms(sv->timerw.fd, -1);
	sv->exit_code = st == G_SUCCEEDED ? ESV_EXIT_OK :
	    ESV_EXIT_FAILED;
	events_log(sv, st == G_SUCCEEDED ? "job.succeeded" : "job.failed",
	    NULL);
	set_state(sv, st);
	event_broadcast(sv, ESV_EVENT_FINISHED);
	supervisor_exit(sv, sv->exit_code);
}

static void
restart_after_failure(struct supervisor *sv)
{
	unsigned long long ran = mono_ms() - sv->attempt_started_ms;
	unsigned delay;

	report_failure(sv, false);
	sv->restart_count++;
	info_msg("worker group failed: restart %u of %u", sv->restart_count,
	    sv->cfg->max_restarts);
	delay = backoff_next(&sv->backoff, ran);
	events_log(sv, "group.restart", json_pack("{si}", "delay_ms", delay));
	/*
	 * Even without a delay the start is the loop's: when no worker could
	 * be started the stop ends at once, and starting again from here
	 * recursed, restart after restart, SIGTERM never read.
	 */
	if (delay > 0)
		info_msg("restart delayed by %u ms (backoff)", delay);
	sv->next_start_wall = (long long)(wall_now() * 1000) + delay;
	set_state(sv, G_BACKOFF);
	arm_deadline(sv, delay);
}

static void
after_stop(struct supervisor *sv)
{
	enum stop_reason why = sv->stop_reason;

	if (!finish_attempt(sv))
		return;
	sv->stop_reason = STOP_NONE;
	after_stop_next(sv, why);
}

static void
after_stop_next(struct supervisor *sv, enum stop_reason why)
{
	if (why == STOP_FAILURE && verdict_wait(sv))
		return;
	sv->failed_at = 0;
	switch (fsm_after_stop(why, sv->want, sv->want_exit, sv->restart_count,
	    sv->cfg->max_restarts)) {
	case NEXT_EXIT:
		supervisor_exit(sv, ESV_EXIT_FAILED);
	case NEXT_FAILED:
		report_failure(sv, true);
		job_over(sv, G_FAILED);
	case NEXT_RESTART:
		restart_after_failure(sv);
		return;
	case NEXT_DOWN:
		if (why == STOP_FAILURE) {
			/* Asked down while failing: kept, not spent. */
			report_failure(sv, false);
			info_msg("worker group failed while going down: "
			    "staying down, restarts %u of %u",
			    sv->restart_count, sv->cfg->max_restarts);
		}
		rdzv_leave(&sv->rz);
		return;
	case NEXT_START:
		if (why == STOP_MANUAL)
			sv->manual_restarts++;
		if (why == STOP_MEMBERSHIP)
			sv->membership_restarts++;
		group_start(sv);
	}
}

void
group_go_down(struct supervisor *sv)
{
	timer_arm_ms(sv->timerw.fd, -1);
	rdzv_leave(&sv->rz);
	set_state(sv, G_DOWN);
	event_broadcast(sv, ESV_EVENT_DOWN);
}

static struct worker *
find_worker(struct supervisor *sv, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sv->nworkers; i++)
		if (sv->workers[i].pid == pid)
			return &sv->workers[i];
	return NULL;
}

/* Why a worker could not start (exec_errno set), in a static buffer. */
static const char *
start_error(struct supervisor *sv, struct worker *wk)
{
	static char buf[PATH_MAX + 128];

	if (wk->spawn_step != NULL)
		snprintf(buf, sizeof(buf), "unable to start it (%s): %s",
		    wk->spawn_step, strerror(wk->exec_errno));
	else
		snprintf(buf, sizeof(buf), "unable to exec %s: %s",
		    sv->cfg->no_python ? sv->cfg->argv[0] : sv->python,
		    strerror(wk->exec_errno));
	return buf;
}

static void
record_failure(struct supervisor *sv, struct worker *wk)
{
	struct worker_failure *nf;
	char path[PATH_MAX], rel[32];

	nf = reallocarray(sv->failures, sv->nfailures + 1, sizeof(*nf));
	if (nf == NULL) {
		warn_sys("unable to record a failure");
		return;
	}
	sv->failures = nf;
	if (ctl_error_path(path, sizeof(path), sv->attempt_dir,
	    wk->local_rank) == -1)
		path[0] = '\0';
	ctl_error_path(rel, sizeof(rel), NULL, wk->local_rank);
	if (failure_init_at(&nf[sv->nfailures], wk->local_rank,
	    sv->round.ranks.base_rank + wk->local_rank, wk->last_pid,
	    wk->exitcode, sv->attemptfd, sv->attemptfd != -1 ? rel : NULL,
	    O_NOFOLLOW, path, (time_t)wk->exited) == -1)
		return;
	/* A bare SIGKILL says nothing; the memory controller knows more. */
	(void)failure_note_oom(&nf[sv->nfailures], wk->cg.oom_kill,
	    wk->cg.memory_peak);
	/* torch's generic hint would hide the one thing the user needs. */
	if (wk->exec_errno != 0) {
		char *msg = strdup(start_error(sv, wk));

		if (msg != NULL) {
			free(nf[sv->nfailures].message);
			nf[sv->nfailures].message = msg;
		}
	}
	sv->nfailures++;
}

/*
 * Only what must be known to act: the files, the error file and the
 * event line are written by flush_exits, after the signals have gone out.
 */
static void
worker_exited(struct supervisor *sv, struct worker *wk, int status)
{
	wk->pid = 0;
	wk->exited = wall_now();
	sv->alive--;
	wk->exitcode = WIFSIGNALED(status) ? -WTERMSIG(status) :
	    WEXITSTATUS(status);
	if (wk->exitcode == 0)
		wk->state = W_SUCCEEDED;
	else if (sv->state == G_STOPPING)
		wk->state = W_STOPPED;
	else
		wk->state = W_FAILED;
	wk->exit_pending = true;
}

/* One line per worker exit, for the init system's logger. */
static void
worker_exit_line(struct supervisor *sv, const struct worker *wk)
{
	char how[64];

	if (wk->exitcode == -SIGKILL && wk->cg.oom_kill > 0)
		snprintf(how, sizeof(how), "killed by the OOM killer at %.1f GiB",
		    (double)wk->cg.memory_peak / (1 << 30));
	else if (wk->exitcode < 0)
		snprintf(how, sizeof(how), "killed by %s",
		    sig_name(-wk->exitcode));
	else
		snprintf(how, sizeof(how), "exited %d", wk->exitcode);
	info_msg("worker %u (rank %u, pid %d) %s after %.1f s: %s",
	    wk->local_rank, sv->round.ranks.base_rank + wk->local_rank,
	    (int)wk->last_pid, how, wk->exited - wk->started,
	    wk->state == W_SUCCEEDED ? "succeeded" :
	    wk->state == W_FAILED ? "failed" : "stopped");
}

void
flush_exits(struct supervisor *sv)
{
	struct worker *wk;
	unsigned i, exits = 0;
	json_t *ev;

	for (i = 0; i < sv->nworkers; i++) {
		wk = &sv->workers[i];
		if (!wk->exit_pending)
			continue;
		wk->exit_pending = false;
		exits++;
		cgroup_worker_stats(sv, wk);
		if (wk->exec_errno != 0)
			warn_msg("worker %u: %s", wk->local_rank,
			    start_error(sv, wk));
		if (wk->state == W_FAILED) {
			record_failure(sv, wk);
			/* Here, where spawn failures pass too (exec_errno). */
			if (wk->spawn_step != NULL)
				sv->failures_spawn++;
			else if (wk->exec_errno != 0)
				sv->failures_exec++;
			else if (wk->exitcode < 0)
				sv->failures_signal++;
			else
				sv->failures_exit++;
		}
		ev = json_pack("{si si si si ss ss}",
		    "local_rank", wk->local_rank, "rank",
		    sv->round.ranks.base_rank + wk->local_rank, "pid",
		    wk->last_pid, "exitcode", wk->exitcode, "signal",
		    wk->exitcode < 0 ? sig_name(-wk->exitcode) : "", "state",
		    wk->state == W_SUCCEEDED ? "succeeded" :
		    wk->state == W_FAILED ? "failed" : "stopped");
		if (ev != NULL && wk->exec_errno != 0)
			json_object_set_new(ev, "error",
			    json_string(start_error(sv, wk)));
		if (ev != NULL && wk->cg.cpu_usec >= 0)
			json_object_set_new(ev, "cpu_usec",
			    json_integer(wk->cg.cpu_usec));
		if (ev != NULL && wk->cg.memory_peak >= 0)
			json_object_set_new(ev, "memory_peak",
			    json_integer(wk->cg.memory_peak));
		if (ev != NULL && wk->cg.oom_kill >= 0)
			json_object_set_new(ev, "oom_kill",
			    json_boolean(wk->exitcode == -SIGKILL &&
			    wk->cg.oom_kill > 0));
		events_log(sv, "worker.exit", ev);
		worker_exit_line(sv, wk);
		report_worker(sv, wk);
	}
	/* Before the pid can be reused: the dead worker's timers go. */
	if (exits > 0)
		watchdog_pids(sv);
	/*
	 * supervise/state lists the live workers' pids: a worker that
	 * succeeded while the others run leaves it now, not whenever the
	 * next state change happens to write the file (a reader would be
	 * told of a pid that may be another process's by then).  While the
	 * start's reports are still being written, their last step does it.
	 */
	if (exits > 0 && !sv->report_pending)
		report_group(sv);
}

/* SIGCHLD: reap everything; grandchildren we adopted are only reaped. */
static void store_gone(struct supervisor *sv);

void
group_reap(struct supervisor *sv)
{
	struct worker *wk;
	enum store_exit gone;
	unsigned i, failed = 0;
	int status;
	pid_t pid;
	bool done;

	/*
	 * Has the round ended first?  A supervisor woken from a stall finds
	 * its workers' exits and the rendezvous's news at once: exits that
	 * followed the end of the round (the lease ran out, the server
	 * dropped us or restarted the round, and the peers vanished) are a
	 * membership stop, not a failure.  So the rendezvous speaks first.
	 */
	if (sv->state == G_RUNNING)
		rdzv_check(&sv->rz);
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == sv->guardian_pid) {
			guardian_died(sv);
			continue;
		}
		if (rdzv_child_exited(&sv->rz, pid, status))
			continue;
		if ((gone = store_exited(sv, pid, status)) != STORE_NOT_OURS) {
			if (gone == STORE_LINGER_OVER)
				store_gone(sv);
			continue;
		}
		if (pid == sv->wd_pid) {
			watchdog_died(sv, status);
			continue;
		}
		if (pid == sv->hd_pid) {
			healthd_died(sv, status);
			continue;
		}
		if (pid == sv->host_pid) {
			sv->host_pid = 0;
			continue;
		}
		if ((wk = find_worker(sv, pid)) == NULL) {
			(void)inherited(sv, pid, true);
			continue;
		}
		worker_exited(sv, wk, status);
		if (wk->state == W_FAILED)
			failed++;
	}
	if (sv->state == G_RUNNING && failed > 0) {
		/* The signals first: the rest can wait a few microseconds. */
		group_stop(sv, SIGTERM, STOP_FAILURE);
		return;
	}
	flush_exits(sv);
	if (sv->alive > 0 || sv->draining)
		return;
	if (sv->state == G_STOPPING) {
		after_stop(sv);
		return;
	}
	if (sv->state != G_RUNNING)
		return;
	done = true;
	for (i = 0; i < sv->nworkers; i++)
		if (sv->workers[i].state != W_SUCCEEDED)
			done = false;
	if (done && finish_attempt(sv))
		succeeded(sv);
}

static void
succeeded(struct supervisor *sv)
{
	info_msg("all %u workers succeeded", sv->nworkers);
	/* Leaving now would look like a scale-down to the others. */
	sv->exit_code = ESV_EXIT_OK;
	set_state(sv, G_FINISHING);
	if (store_linger(sv)) {
		arm_deadline(sv, sv->cfg->rdzv.exit_barrier_ms);
		return;
	}
	rdzv_barrier(&sv->rz, sv->cfg->rdzv.exit_barrier_ms);
}

/* The store kept by store_linger is gone: on to the end. */
static void
store_gone(struct supervisor *sv)
{
	if (sv->state != G_FINISHING)
		return;
	arm_deadline(sv, -1);
	rdzv_barrier(&sv->rz, sv->cfg->rdzv.exit_barrier_ms);
}

void
group_timer(struct supervisor *sv)
{
	if (sv->draining) {
		drain_step(sv);
		return;
	}
	if (sv->verdict_pending) {
		if (mono_ms() < sv->failed_at + verdict_ms(sv)) {
			arm_deadline(sv, sv->failed_at + verdict_ms(sv) -
			    mono_ms());
			return;
		}
		sv->verdict_pending = false;
		sv->stop_reason = STOP_NONE;
		sv->failed_at = 0;
		after_stop_next(sv, STOP_FAILURE);
		return;
	}
	if (sv->state == G_BACKOFF) {
		group_start(sv);
		return;
	}
	if (sv->state == G_FINISHING && sv->st_lingering) {
		warn_msg("agent store: workers of other nodes still connected "
		    "after %u ms (exit_barrier_timeout): stopping it",
		    sv->cfg->rdzv.exit_barrier_ms);
		sv->st_lingering = false;
		store_stop(sv);
		rdzv_barrier(&sv->rz, sv->cfg->rdzv.exit_barrier_ms);
		return;
	}
	if (sv->state != G_STOPPING)
		return;
	if (sv->kill_phase == 0) {
		if (sv->fenced)
			warn_msg("the lease of the workers' ranks ran out: "
			    "SIGKILL to the %u still alive", sv->alive);
		else
			warn_msg("workers still alive %u ms after %s: sending "
			    "SIGKILL", sv->cfg->shutdown_timeout_ms,
			    sig_name(sv->stop_signal));
		sv->kill_phase = 1;
		group_signal(sv, SIGKILL);
		cgroup_kill(sv);
		arm_deadline(sv, KILL_GRACE_MS);
		return;
	}
	/* Unkillable (D state): do not hang on it as torch 1.13 does. */
	warn_msg("%u workers did not die %d ms after SIGKILL: giving up on them",
	    sv->alive, KILL_GRACE_MS);
	for (unsigned i = 0; i < sv->nworkers; i++)
		if (sv->workers[i].pid != 0) {
			sv->workers[i].pid = 0;
			sv->workers[i].state = W_STOPPED;
		}
	sv->alive = 0;
	after_stop(sv);
}
