/*
 * The rendezvous' callbacks (rdzv.h): a round is ready, failed or is
 * over (membership, fence, barrier), and what each means for the group.
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

void
group_round_ready(struct supervisor *sv, const struct rdzv_round *r)
{
	if (sv->grp.state != G_JOINING)
		return;
	sv->rdzv.round = *r;
	sv->rdzv.have_round = true;
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
	if (sv->grp.state == G_RUNNING) {
		sv->grp.want_exit = sv->rdzv.rz.stopping = true;
		group_stop(sv, SIGTERM, STOP_EXIT);
		return;
	}
	sv->rep.exit_code = ESV_EXIT_FAILED;
	set_state(sv, G_FAILED);
	event_broadcast(sv->cfg, ESV_EVENT_FINISHED);
	supervisor_exit(sv, ESV_EXIT_FAILED);
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
	    mono_ms() - sv->grp.failed_at);
	events_log(sv, "rdzv.superseded", json_pack("{si sI}", "failures",
	    (int)sv->grp.nfailures, "after_ms",
	    (json_int_t)(mono_ms() - sv->grp.failed_at)));
	for (i = 0; i < sv->grp.nfailures; i++)
		failure_free(&sv->grp.failures[i]);
	sv->grp.nfailures = 0;
	sv->grp.failed_at = 0;
	if (!sv->grp.verdict_pending) {
		sv->grp.stop_reason = STOP_MEMBERSHIP;
		return;
	}
	sv->grp.verdict_pending = false;
	sv->grp.stop_reason = STOP_NONE;
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

	if (sv->grp.state != G_RUNNING || sv->grp.alive == 0)
		return false;
	for (i = 0; i < sv->grp.nworkers; i++) {
		if (sv->grp.workers[i].pid == 0) {
			if (sv->grp.workers[i].state != W_SUCCEEDED)
				return false;
			continue;
		}
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, sv->grp.workers[i].pid, &si, WEXITED |
		    WNOHANG | WNOWAIT) == -1 || si.si_pid == 0 ||
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
	return sv->grp.state != G_RUNNING;
}

/* A node came or went: a new round, free of charge (torch's scale up/down). */
void
group_membership_changed(struct supervisor *sv)
{
	if (done_meanwhile(sv))
		return;
	if (sv->grp.state == G_FINISHING) {
		/*
		 * The round our workers finished was restarted elsewhere: a
		 * round completes on every node or on none, so they run
		 * again in the next, free of charge like any membership
		 * restart.
		 */
		info_msg("rendezvous: the round this node finished was "
		    "superseded: its workers run again in the next round");
		events_log(sv, "rdzv.superseded", json_pack("{si}", "round",
		    sv->rdzv.round.round));
		sv->counts.membership_restarts++;
		store_stop(&sv->st);
		group_start(sv);
		return;
	}
	info_msg("rendezvous: membership changed: restarting the group");
	events_log(sv, "rdzv.membership", NULL);
	if (sv->grp.state == G_RUNNING)
		group_stop(sv, SIGTERM, STOP_MEMBERSHIP);
	else if (sv->grp.stop_reason == STOP_FAILURE &&
	    sv->grp.failed_at != 0 &&
	    (sv->grp.state == G_STOPPING || sv->grp.verdict_pending) &&
	    mono_ms() < sv->grp.failed_at + verdict_ms(sv))
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
	    group_state_name(sv->grp.state)));
	if (sv->grp.state == G_RUNNING)
		group_stop(sv, SIGTERM, STOP_MEMBERSHIP);
	/*
	 * Past the end we told the guardian: it has killed the workers'
	 * cgroup (we were stopped), so the next start needs new ones.
	 */
	if (sv->guard.lease > 0 && now >= sv->guard.lease)
		cgroup_kill(sv);
	if (sv->grp.state != G_STOPPING || sv->grp.alive == 0 ||
	    sv->grp.kill_phase != 0 || sv->locks.draining ||
	    kill_at_ms >= sv->grp.kill_at)
		return;
	sv->grp.kill_at = kill_at_ms;
	sv->grp.fenced = true;
	arm_deadline(sv, kill_at_ms > now ? kill_at_ms - now : 0);
}

void
group_barrier_done(struct supervisor *sv, bool released)
{
	if (sv->grp.state != G_FINISHING)
		return;
	events_log(sv, "rdzv.barrier", json_pack("{sb}", "released",
	    released));
	job_over(sv, G_SUCCEEDED);
}
