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
#include "group_int.h"
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

/*
 * The one place the group's state changes.  Quietly: the caller writes
 * the files once its burst of work is done (a spawn, an exit).
 */
void
group_enter(struct supervisor *sv, enum group_state st)
{
	sv->grp.state = st;
	sv->grp.since = wall_now();
}

void
set_state(struct supervisor *sv, enum group_state st)
{
	group_enter(sv, st);
	report_group(sv);
}

void
supervisor_exit(struct supervisor *sv, int code)
{
	sv->rdzv.rz.stopping = true;
	notify_stopping(sv->notify);
	watchdog_stop(sv);
	healthd_stop(&sv->hd, &sv->loop);
	events_log(sv, "supervisor.exit", json_pack("{si}", "exit_code", code));
	while (sv->rep.report_pending)
		group_report_step(sv, false);
	report_group(sv);
	event_broadcast(sv->cfg, ESV_EVENT_EXIT);
	/* After the barrier: the other nodes' workers are done with it. */
	store_stop(&sv->st);
	rdzv_close(&sv->rdzv.rz, sv->grp.state == G_SUCCEEDED ||
	    sv->grp.state == G_FAILED || sv->grp.state == G_FINISHING);
	/*
	 * No worker is left: let go of the lock before the guardian sees EOF,
	 * so that its search for lock holders finds nobody, not us.
	 */
	group_lock_release(&sv->locks);
	cgroup_cleanup(sv);
	close(sv->guard.fd);
	/* The last line: how the job ended, for whoever reads the log. */
	info_msg("exit %d: job %s after %u attempt%s (restarts: %u after "
	    "failures, %u manual, %u membership) in %.1f s", code,
	    code == ESV_EXIT_OK ? "succeeded" : sv->grp.state == G_FAILED ?
	    "failed" : code == ESV_EXIT_FAILED ? "stopped" : "ended by an error",
	    sv->counts.attempt, sv->counts.attempt == 1 ? "" : "s", sv->counts.restart_count,
	    sv->counts.manual_restarts, sv->counts.membership_restarts,
	    wall_now() - sv->rep.started_wall);
	exit(code);
}

static void
attempt_info(struct supervisor *sv, struct attempt_info *ai)
{
	memset(ai, 0, sizeof(*ai));
	ai->cfg = sv->cfg;
	ai->ranks = sv->rdzv.round.ranks;
	ai->master_addr = sv->rdzv.round.master_addr;
	ai->master_port = sv->rdzv.round.master_port;
	ai->restart_count = sv->counts.restart_count;
	ai->attempt_dir = sv->dirs.attempt_dir;
	ai->use_agent_store = sv->rdzv.round.use_agent_store;
	ai->timer_file = sv->wd.fifo_fd != -1 ? sv->wd.fifo : NULL;
}

static void
refuse_start(struct supervisor *sv, int code, const char *why)
{
	warn_msg("unable to start the worker group: %s", why);
	sv->rep.exit_code = code;
	set_state(sv, G_FAILED);
	event_broadcast(sv->cfg, ESV_EVENT_FINISHED);
	supervisor_exit(sv, code);
}

void
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
	sv->rdzv.have_round = false;
	sv->grp.verdict_pending = false;
	group_enter(sv, G_JOINING);
	if (store_prepare(sv) == -1)
		fail_to_start(sv, "no port for the agent store");
	if (rdzv_join(&sv->rdzv.rz) == -1)
		fail_to_start(sv, "rendezvous failed");
	/* Static rounds complete inside rdzv_join: nothing to show then. */
	if (sv->grp.state == G_JOINING)
		report_group(sv);
}

/*
 * How long after a failure the round's end may still come, caused by
 * it.  A peer node whose lease runs out (a stall, a cut, a frozen host)
 * kills its workers before the rendezvous drops it (esv-rdzv: a grace
 * and a half later, at most a heartbeat more; etcd: when the lease
 * expires or is given up) or hears it join again; ours, whose
 * connections to them end, fail in between, as gloo's do.  And one
 * peer may stop its workers for the new round before our rendezvous
 * has told us of it (on etcd each node learns it from its own watch).
 * A lease covers both.
 */
long long
verdict_ms(struct supervisor *sv)
{
	/* Alone in its job (--standalone, one node), a node has no peers;
	 * static nodes have no rounds to end. */
	if (sv->rdzv.rzp.nnodes_max <= 1)
		return 0;
	if (strcmp(sv->cfg->rdzv_backend, "esv") == 0)
		return rdzv_lease_ms(&sv->rdzv.rzp.rdzv, 0);
	if (strcmp(sv->cfg->rdzv_backend, "etcd") == 0)
		return rdzv_lease_ms(&sv->rdzv.rzp.rdzv, 1);
	return 0;
}

/*
 * The workers failed and are gone: is it a failure?  Only if the round
 * does not end within verdict_ms of the first failure.
 */
static bool
verdict_wait(struct supervisor *sv)
{
	long long now = mono_ms(), at = sv->grp.failed_at + verdict_ms(sv);

	if (sv->grp.failed_at == 0 || now >= at || sv->grp.want_exit)
		return false;
	sv->grp.verdict_pending = true;
	sv->grp.stop_reason = STOP_FAILURE;
	arm_deadline(sv, at - now);
	return true;
}

void
group_launch(struct supervisor *sv)
{
	struct attempt_info ai;
	unsigned i, n = sv->cfg->nproc_per_node;
	char of[16], why[1024];
	int r;

	if (sv->grp.workers == NULL) {
		if ((sv->grp.workers = calloc(n,
		    sizeof(*sv->grp.workers))) == NULL)
			die(ESV_EXIT_SYSTEM, "unable to allocate %u workers", n);
		sv->grp.nworkers = n;
		for (i = 0; i < n; i++) {
			sv->grp.workers[i].local_rank = i;
			sv->grp.workers[i].out.file =
			    sv->grp.workers[i].err.file = -1;
			sv->grp.workers[i].out.w.fd =
			    sv->grp.workers[i].err.w.fd = -1;
			sv->grp.workers[i].pidfd = -1;
			sv->grp.workers[i].cgfd =
			    sv->grp.workers[i].cgprocs = -1;
		}
		report_setup(sv);
	}
	for (i = 0; i < sv->grp.nfailures; i++)
		failure_free(&sv->grp.failures[i]);
	sv->grp.nfailures = 0;
	sv->grp.stop_reason = STOP_NONE;
	sv->grp.kill_phase = 0;
	sv->grp.next_start_wall = 0;
	if (prepare_attempt_dir(sv) == -1)
		fail_to_start(sv, "no log directory");

	if (start_env_build(&sv->env, sv->cfg, sv->jobfd, why,
	    sizeof(why)) == -1)
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
	guardian_flush(&sv->guard);
	/* Start every worker first; the bookkeeping can wait a moment. */
	for (i = 0; i < n; i++) {
		struct envbuf env = { 0 };

		if (workerenv_full(&env, &ai, i, sv->env.vars) == -1)
			die(ESV_EXIT_SYSTEM, "unable to build the environment");
		r = spawn_worker(sv, &sv->grp.workers[i], env.vars);
		envbuf_free(&env);
		if (r == -1)
			break;
	}
	/* After a failed start, the rest never ran in this attempt. */
	while (++i < n) {
		sv->grp.workers[i].state = W_STOPPED;
		sv->grp.workers[i].pid = sv->grp.workers[i].last_pid = 0;
	}
	guardian_flush(&sv->guard);
	group_lock_release(&sv->locks);
	watchdog_pids(&sv->wd, &sv->grp);
	sv->counts.attempt++;
	sv->grp.attempt_started_ms = mono_ms();
	sv->rep.pid_since = wall_now();
	group_enter(sv, G_RUNNING);
	events_log(sv, "group.start", json_pack("{si si si ss si}",
	    "workers", sv->grp.alive, "base_rank", ai.ranks.base_rank,
	    "world_size", ai.ranks.world_size, "master_addr", ai.master_addr,
	    "master_port", ai.master_port));
	/* The files are written from the loop, one worker at a time. */
	sv->rep.report_next = 0;
	sv->rep.report_pending = true;
	/* Those that really run: a failed start ends the loop early. */
	of[0] = '\0';
	if (sv->grp.alive < n)
		snprintf(of, sizeof(of), " of %u", n);
	info_msg("started %u%s workers (attempt %u, restart %u/%u, ranks "
	    "%u-%u of %u, master %s:%u), logs in %s", sv->grp.alive, of,
	    sv->counts.attempt, sv->counts.restart_count, sv->cfg->max_restarts,
	    ai.ranks.base_rank, ai.ranks.base_rank + n - 1,
	    ai.ranks.world_size, ai.master_addr, ai.master_port,
	    sv->dirs.attempt_dir);
	if (sv->grp.alive < n) {
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

	if (sv->rep.report_next < sv->grp.nworkers) {
		wk = &sv->grp.workers[sv->rep.report_next];
		attempt_info(sv, &ai);
		if (workerenv_own(&own, &ai, wk->local_rank,
		    sv->env.vars != NULL ? sv->env.vars : sv->env.environ) == 0)
			r = report_env(sv, wk, own.vars,
			    yield ? signal_waiting : NULL);
		envbuf_free(&own);
		if (r == -1)
			return;
		report_worker(sv, wk);
		sv->rep.report_next++;
	}
	if (sv->rep.report_next < sv->grp.nworkers)
		return;
	sv->rep.report_pending = false;
	if (sv->grp.state != G_RUNNING)
		return;
	report_group(sv);
	event_broadcast(sv->cfg, ESV_EVENT_UP);
	notify_ready(sv);
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

	for (i = 0; i < sv->grp.nworkers; i++) {
		wk = &sv->grp.workers[i];
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

void
arm_deadline(struct supervisor *sv, long long ms)
{
	if (timer_arm_ms(sv->timerw.fd, ms) == -1)
		warn_sys("unable to arm the timer");
}

/* The attempt's bookkeeping, once group.lock is ours again (or given up). */
static void
finish_cleanup(struct supervisor *sv)
{
	unsigned i;

	for (i = 0; i < sv->grp.nworkers; i++) {
		if (sv->grp.workers[i].pgid > 1)
			guardian_drop(&sv->guard, sv->grp.workers[i].pgid);
		sv->grp.workers[i].pgid = 0;
		worker_pidfd_close(&sv->grp.workers[i]);
		output_close(sv, &sv->grp.workers[i]);
	}
	guardian_flush(&sv->guard);
	/*
	 * The workers of other nodes may use the store after ours are done:
	 * after a success it stays until the job's last worker is done, that
	 * is until the exit barrier passes (or is given up) and we exit
	 * (esv-stored(8)).  A stop ends the round on every node: it goes.
	 */
	if (sv->grp.state != G_RUNNING)
		store_stop(&sv->st);
	sv->rep.pid_since = wall_now();
	set_state(sv, G_DOWN);
	event_broadcast(sv->cfg, ESV_EVENT_DOWN);
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
	if (sv->locks.draining)
		drain_step(sv);
}

static void
drain_step(struct supervisor *sv)
{
	enum stop_reason why;

	if ((group_lock_retry(sv) == -1 || !cgroup_empty(&sv->cg)) &&
	    mono_ms() < sv->locks.drain_deadline) {
		arm_deadline(sv, DRAIN_STEP_MS);
		return;
	}
	if (mono_ms() >= sv->locks.drain_deadline)
		warn_msg("processes of the last attempt did not die in %d ms: "
		    "going on anyway", DRAIN_MS);
	sv->locks.draining = false;
	finish_cleanup(sv);
	if ((why = sv->grp.stop_reason) == STOP_NONE) {
		succeeded(sv);
		return;
	}
	sv->grp.stop_reason = STOP_NONE;
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
	if (sv->grp.paused)
		(void)cgroup_freeze(&sv->cg, false);
	group_signal(sv, signo);
	if (signo != SIGCONT && signo != SIGKILL)
		group_signal(sv, SIGCONT);	/* a paused group must hear it */
	sv->grp.paused = false;
	/* A stop asked for while a verdict waits (a signal) ends the wait. */
	if (sv->grp.verdict_pending) {
		sv->grp.verdict_pending = false;
		sv->grp.failed_at = 0;
	}
	if (why == STOP_FAILURE && sv->grp.failed_at == 0)
		sv->grp.failed_at = mono_ms();
	sv->grp.stop_reason = why;
	sv->grp.stop_signal = signo;
	sv->grp.kill_phase = signo == SIGKILL ? 1 : 0;
	sv->grp.fenced = false;
	sv->grp.kill_at = mono_ms() + (signo == SIGKILL ? KILL_GRACE_MS :
	    (long long)sv->cfg->shutdown_timeout_ms);
	flush_exits(sv);
	if (why == STOP_FAILURE)
		warn_msg("worker group failed (%zu worker%s), stopping it",
		    sv->grp.nfailures, sv->grp.nfailures == 1 ? "" : "s");
	else
		info_msg("stopping the worker group (%s) with %s",
		    reasons[why], sig_name(signo));
	events_log(sv, "group.stop", json_pack("{ss ss}", "reason",
	    reasons[why], "signal", sig_name(signo)));
	set_state(sv, G_STOPPING);
	if (sv->grp.alive == 0) {
		/* While draining, drain_step goes on with this stop. */
		if (!sv->locks.draining)
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
bool
inherited(struct supervisor *sv, pid_t pid, bool drop)
{
	size_t i;

	for (i = 0; i < sv->grp.ninherited; i++)
		if (sv->grp.inherited[i] == pid) {
			if (drop)
				sv->grp.inherited[i] =
				    sv->grp.inherited[--sv->grp.ninherited];
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

	rdzv_status(&sv->rdzv.rz, &rs);
	if ((pids = children_list(&n)) == NULL)
		return;
	for (i = 0; i < n; i++)
		if (pids[i] > 1 && pids[i] != sv->guard.pid &&
		    pids[i] != rs.host_pid && pids[i] != rs.lookup_pid &&
		    pids[i] != rs.helper_pid &&
		    pids[i] != sv->wd.pid &&
		    pids[i] != sv->hd.pid && pids[i] != sv->host.pid &&
		    pids[i] != sv->st.pid &&
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
bool
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
	if (!cgroup_empty(&sv->cg))
		cgroup_kill(sv);
	if (group_lock_reclaim(sv) == 0 && cgroup_empty(&sv->cg)) {
		finish_cleanup(sv);
		return true;
	}
	sv->locks.draining = true;
	sv->locks.drain_deadline = mono_ms() + DRAIN_MS;
	arm_deadline(sv, DRAIN_STEP_MS);
	return false;
}

void
job_over(struct supervisor *sv, enum group_state st)
{
	timer_arm_ms(sv->timerw.fd, -1);
	sv->rep.exit_code = st == G_SUCCEEDED ? ESV_EXIT_OK :
	    ESV_EXIT_FAILED;
	events_log(sv, st == G_SUCCEEDED ? "job.succeeded" : "job.failed",
	    NULL);
	set_state(sv, st);
	event_broadcast(sv->cfg, ESV_EVENT_FINISHED);
	supervisor_exit(sv, sv->rep.exit_code);
}

static void
restart_after_failure(struct supervisor *sv)
{
	unsigned long long ran = mono_ms() - sv->grp.attempt_started_ms;
	unsigned delay;

	report_failure(sv, false);
	sv->counts.restart_count++;
	info_msg("worker group failed: restart %u of %u", sv->counts.restart_count,
	    sv->cfg->max_restarts);
	delay = backoff_next(&sv->grp.backoff, ran);
	events_log(sv, "group.restart", json_pack("{si}", "delay_ms", delay));
	/*
	 * Even without a delay the start is the loop's: when no worker could
	 * be started the stop ends at once, and starting again from here
	 * recursed, restart after restart, SIGTERM never read.
	 */
	if (delay > 0)
		info_msg("restart delayed by %u ms (backoff)", delay);
	sv->grp.next_start_wall = (long long)(wall_now() * 1000) + delay;
	set_state(sv, G_BACKOFF);
	arm_deadline(sv, delay);
}

void
after_stop(struct supervisor *sv)
{
	enum stop_reason why = sv->grp.stop_reason;

	if (!finish_attempt(sv))
		return;
	sv->grp.stop_reason = STOP_NONE;
	after_stop_next(sv, why);
}

void
after_stop_next(struct supervisor *sv, enum stop_reason why)
{
	if (why == STOP_FAILURE && verdict_wait(sv))
		return;
	sv->grp.failed_at = 0;
	switch (fsm_after_stop(why, sv->grp.want, sv->grp.want_exit,
	    sv->counts.restart_count, sv->cfg->max_restarts)) {
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
			    sv->counts.restart_count, sv->cfg->max_restarts);
		}
		rdzv_leave(&sv->rdzv.rz);
		return;
	case NEXT_START:
		if (why == STOP_MANUAL)
			sv->counts.manual_restarts++;
		if (why == STOP_MEMBERSHIP)
			sv->counts.membership_restarts++;
		group_start(sv);
	}
}

void
group_go_down(struct supervisor *sv)
{
	timer_arm_ms(sv->timerw.fd, -1);
	rdzv_leave(&sv->rdzv.rz);
	set_state(sv, G_DOWN);
	event_broadcast(sv->cfg, ESV_EVENT_DOWN);
}

void
succeeded(struct supervisor *sv)
{
	info_msg("all %u workers succeeded", sv->grp.nworkers);
	/* Leaving now would look like a scale-down to the others. */
	sv->rep.exit_code = ESV_EXIT_OK;
	set_state(sv, G_FINISHING);
	if (store_linger(sv)) {
		arm_deadline(sv, sv->cfg->rdzv.exit_barrier_ms);
		return;
	}
	rdzv_barrier(&sv->rdzv.rz, sv->cfg->rdzv.exit_barrier_ms);
}

/* The store kept by store_linger is gone: on to the end. */
void
store_gone(struct supervisor *sv)
{
	if (sv->grp.state != G_FINISHING)
		return;
	arm_deadline(sv, -1);
	rdzv_barrier(&sv->rdzv.rz, sv->cfg->rdzv.exit_barrier_ms);
}

void
group_timer(struct supervisor *sv)
{
	if (sv->locks.draining) {
		drain_step(sv);
		return;
	}
	if (sv->grp.verdict_pending) {
		if (mono_ms() < sv->grp.failed_at + verdict_ms(sv)) {
			arm_deadline(sv, sv->grp.failed_at + verdict_ms(sv) -
			    mono_ms());
			return;
		}
		sv->grp.verdict_pending = false;
		sv->grp.stop_reason = STOP_NONE;
		sv->grp.failed_at = 0;
		after_stop_next(sv, STOP_FAILURE);
		return;
	}
	if (sv->grp.state == G_BACKOFF) {
		group_start(sv);
		return;
	}
	if (sv->grp.state == G_FINISHING && sv->st.lingering) {
		warn_msg("agent store: workers of other nodes still connected "
		    "after %u ms (exit_barrier_timeout): stopping it",
		    sv->cfg->rdzv.exit_barrier_ms);
		sv->st.lingering = false;
		store_stop(&sv->st);
		rdzv_barrier(&sv->rdzv.rz, sv->cfg->rdzv.exit_barrier_ms);
		return;
	}
	if (sv->grp.state != G_STOPPING)
		return;
	if (sv->grp.kill_phase == 0) {
		if (sv->grp.fenced)
			warn_msg("the lease of the workers' ranks ran out: "
			    "SIGKILL to the %u still alive", sv->grp.alive);
		else
			warn_msg("workers still alive %u ms after %s: sending "
			    "SIGKILL", sv->cfg->shutdown_timeout_ms,
			    sig_name(sv->grp.stop_signal));
		sv->grp.kill_phase = 1;
		group_signal(sv, SIGKILL);
		cgroup_kill(sv);
		arm_deadline(sv, KILL_GRACE_MS);
		return;
	}
	/* Unkillable (D state): do not hang on it as torch 1.13 does. */
	warn_msg("%u workers did not die %d ms after SIGKILL: giving up on them",
	    sv->grp.alive, KILL_GRACE_MS);
	for (unsigned i = 0; i < sv->grp.nworkers; i++)
		if (sv->grp.workers[i].pid != 0) {
			sv->grp.workers[i].pid = 0;
			sv->grp.workers[i].state = W_STOPPED;
		}
	sv->grp.alive = 0;
	after_stop(sv);
}
