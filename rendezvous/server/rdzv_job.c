/*
 * The rounds of a job: a JOIN taken in, a round completed or given up,
 * the wait list, the exit barrier and the nodes lost at it, recovery
 * after a restart of the server.  This file decides; rdzv_tell.c says it
 * to the nodes and rdzv_table.c keeps the record of jobs and nodes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "ranks.h"
#include "rdzv_server_int.h"

static void	evaluate(struct rdzv_server *, struct job *);

static void
lost_clear(struct job *job)
{
	job->nlost = job->lost_waiting = 0;
}

static int
lost_find(const struct job *job, const char *id)
{
	unsigned i;

	for (i = 0; i < job->nlost; i++)
		if (strcmp(job->lost[i].id, id) == 0)
			return (int)i;
	return -1;
}

static void
lost_del(struct job *job, int i)
{
	if (!job->lost[i].finished)
		job->lost_waiting--;
	job->lost[i] = job->lost[--job->nlost];
}

/* Remember nd, a member of the running round that is gone. */
static bool
lost_add(struct job *job, const struct node *nd, bool finished)
{
	struct lost *nl;

	if (job->nlost >= job->max)
		return false;
	nl = reallocarray(job->lost, job->nlost + 1, sizeof(*nl));
	if (nl == NULL)
		return false;
	job->lost = nl;
	strlcpy(nl[job->nlost].id, nd->id, sizeof(nl[job->nlost].id));
	nl[job->nlost++].finished = finished;
	if (!finished)
		job->lost_waiting++;
	return true;
}

/* To the nodes in the exit barrier (or only to one): it waits for a lost one. */
static void
tell_lost(struct rdzv_server *srv, struct job *job, struct node *only)
{
	struct node *nd;

	if (job->lost_waiting == 0)
		return;
	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_FINISHED && !nd->released &&
		    (only == NULL || nd == only))
			tell_n(srv, nd->sc, RV_LOST, nd->round);
}

/*
 * The exit barrier: every member of the round has finished, those lost
 * at its end included (esv-supervise(8), "Exit barrier").
 */
static void
check_release(struct rdzv_server *srv, struct job *job)
{
	struct node *nd;
	unsigned n = 0;

	if (job->phase == JP_RECOVERING || job->count[NS_JOINED] > 0 ||
	    job->count[NS_EXPECTED] > 0 || job->count[NS_RUNNING] > 0 ||
	    job->lost_waiting > 0)
		return;
	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_FINISHED && !nd->released) {
			tell_n(srv, nd->sc, RV_RELEASE, nd->round);
			nd->released = true;
			job->passed = true;
			job->passed_round = nd->round;
			n++;
		}
	if (n > 0)
		info_msg("job %s: barrier passed: %u nodes released",
		    job->run_id, n);
}

/*
 * Nodes change: a new round opens, the members are told to restart and
 * the wait list gets the room there is.
 */
static void
membership_change(struct rdzv_server *srv, struct job *job,
    struct node *joiner)
{
	struct node *nd;

	job->round++;
	job->phase = JP_GATHERING;
	job->restarted = true;
	job->deadline = -1;
	info_msg("job %s: restart round %u", job->run_id, job->round);
	if (joiner != NULL) {
		info_msg("job %s: node %s joined round %u", job->run_id,
		    joiner->id, job->round);
		set_status(joiner, NS_JOINED);
	}
	/*
	 * A round completes on every node or is restarted on every node:
	 * those that finished it have nothing to wait for now, and run again.
	 */
	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_RUNNING ||
		    (nd->status == NS_FINISHED && !nd->released)) {
			if (nd->status == NS_FINISHED)
				info_msg("job %s: node %s had finished round "
				    "%u, which is superseded: it joins round "
				    "%u", job->run_id, nd->id, nd->round,
				    job->round);
			set_status(nd, NS_EXPECTED);
			tell_n(srv, nd->sc, RV_RESTART, job->round);
		}
	lost_clear(job);
	RB_FOREACH(nd, nodetree, &job->nodes) {
		if (job->count[NS_JOINED] + job->count[NS_EXPECTED] >=
		    job->max)
			break;
		if (nd->status == NS_WAITING) {
			info_msg("job %s: node %s joined round %u from the "
			    "wait list", job->run_id, nd->id, job->round);
			set_status(nd, NS_JOINED);
			tell_joined(srv, nd);
		}
	}
	if (joiner != NULL)
		tell_joined(srv, joiner);
	evaluate(srv, job);
	check_release(srv, job);
}

static void
complete(struct rdzv_server *srv, struct job *job)
{
	unsigned n = job->count[NS_JOINED], i = 0;
	struct rank_assignment ra = { 0 };
	struct group_info *groups;
	struct node *nd, **members;

	if (n == 0)
		return;
	groups = calloc(n, sizeof(*groups));
	members = calloc(n, sizeof(*members));
	if (groups == NULL || members == NULL) {
		warn_sys("job %s: round %u", job->run_id, job->round);
		job->deadline = srv->now + srv->conf.heartbeat_ms;
		goto out;
	}
	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_JOINED) {
			groups[i].role = nd->role;
			groups[i].local_world_size = nd->nproc;
			members[i++] = nd;
		}
	tell_members(srv, members[0], members, n, job->round);
	for (i = 0; i < n; i++) {
		/* nproc and the node count are bounded: no overflow. */
		(void)ranks_assign(groups, n, i, &ra);
		tell_round(srv, members[i], &ra, members[0]);
		set_status(members[i], NS_RUNNING);
		members[i]->group_rank = i;
		members[i]->round = job->round;
	}
	job->phase = JP_RUNNING;
	job->deadline = -1;
	info_msg("job %s: round %u complete: %u nodes, world %u, master %s:%u, "
	    "in %lld ms since the last join", job->run_id, job->round, n,
	    ra.world_size, members[0]->addr, members[0]->port,
	    srv->now - job->last_join);
	if (job->count[NS_WAITING] > 0)
		tell_waiting(srv, job);
out:
	free(groups);
	free(members);
}

/*
 * Until when must a round wait, for no rank to be given that another
 * node may still hold?  A member told to restart that has not come back
 * may run its workers until its lease is over (it is alive and stopping
 * them, or cut off and about to fence them), and so may a node we do not
 * know of, after a restart of ours (hold_until).  0: no wait.
 */
static long long
lease_hold(struct rdzv_server *srv, struct job *job)
{
	long long until = job->hold_until, end;
	struct node *nd;

	if (srv->conf.lease_ms == 0)
		return 0;
	if (job->count[NS_EXPECTED] > 0)
		RB_FOREACH(nd, nodetree, &job->nodes) {
			end = srv_lease_end(srv, nd->sc);
			if (nd->status == NS_EXPECTED && end > until)
				until = end;
		}
	return until > srv->now ? until : 0;
}

/*
 * Should the round being gathered complete?  A round opened by a restart
 * waits for the members told to restart (at least --recovery-timeout), so
 * that a short last call does not leave them out one by one; and no
 * round completes while a rank it gives may still be held (lease_hold).
 */
static void
evaluate(struct rdzv_server *srv, struct job *job)
{
	long long wait, hold;

	if (job->phase != JP_GATHERING || job->closed)
		return;
	if (job->count[NS_JOINED] < job->min) {
		job->deadline = -1;
		return;
	}
	if (job->deadline < 0) {
		wait = job->last_call_ms;
		if (job->count[NS_EXPECTED] > 0 &&
		    wait < srv->conf.recovery_ms)
			wait = srv->conf.recovery_ms;
		job->deadline = srv->now + wait;
	}
	if (job->count[NS_JOINED] < job->max && (!job->restarted ||
	    job->count[NS_EXPECTED] > 0) && srv->now < job->deadline)
		return;
	if ((hold = lease_hold(srv, job)) != 0) {
		/* Looked at again then, or when a member is back. */
		job->deadline = hold;
		return;
	}
	complete(srv, job);
}

/* The job runs again: the wait list may now fit. */
static void
running_again(struct rdzv_server *srv, struct job *job)
{
	unsigned next = job->count[NS_RUNNING] + job->count[NS_EXPECTED] + 1;

	if (job->count[NS_WAITING] == 0)
		return;
	if (next <= job->max && job->count[NS_FINISHED] == 0)
		membership_change(srv, job, NULL);
	else
		tell_waiting(srv, job);
}

static void
recovery_check(struct rdzv_server *srv, struct job *job)
{
	unsigned back = job->count[NS_RUNNING] + job->count[NS_FINISHED];

	if (job->phase != JP_RECOVERING || back < job->expect_n)
		return;
	job->phase = JP_RUNNING;
	job->deadline = -1;
	info_msg("job %s: recovered round %u: %u nodes back", job->run_id,
	    job->round, back);
	running_again(srv, job);
	check_release(srv, job);
}

/*
 * nd, a member of the running round, is lost while the others wait in
 * its exit barrier.  If we hung up on it (its lease ran out), it may be
 * alive, its workers finished: the barrier waits for it to say so, or
 * for the others' exit_barrier_timeout (they are told: LOST).  One that
 * had finished is remembered, to be released if it comes back.  True if
 * the round goes on; false: it is superseded.
 */
static bool
lost_at_barrier(struct node *nd, bool silent)
{
	struct job *job = nd->job;

	if (job->phase != JP_RUNNING || nd->round != job->round ||
	    job->count[NS_JOINED] > 0 || job->count[NS_EXPECTED] > 0)
		return false;
	if (nd->status == NS_FINISHED) {
		(void)lost_add(job, nd, true);
		return true;
	}
	if (nd->status != NS_RUNNING || !silent ||
	    job->count[NS_RUNNING] > 1 ||
	    job->count[NS_FINISHED] + job->nlost == 0 ||
	    !lost_add(job, nd, false))
		return false;
	info_msg("job %s: node %s lost before it finished round %u: the exit "
	    "barrier waits for it (its workers may have finished)",
	    job->run_id, nd->id, nd->round);
	return true;
}

static void
node_lost(struct rdzv_server *srv, struct node *nd, const char *why)
{
	struct job *job = nd->job;
	enum node_status st = nd->status;
	long long end = srv_lease_end(srv, nd->sc);
	bool held;

	info_msg("job %s: node %s lost: %s", job->run_id, nd->id, why);
	/*
	 * We hung up on it (it did not read, it said something wrong): it
	 * may be alive and its workers run until its lease is over.  A node
	 * that hangs up itself has stopped them, or died with them.
	 */
	if (srv->conf.lease_ms > 0 && nd->sc->dead &&
	    (st == NS_RUNNING || st == NS_EXPECTED) &&
	    strcmp(why, "heartbeat") != 0 && end > job->hold_until)
		job->hold_until = end;
	held = !job->closed && lost_at_barrier(nd, nd->sc->dead);
	node_free(job, nd);
	if (held)
		tell_lost(srv, job, NULL);
	else if (!job->closed) {
		if (st == NS_JOINED || st == NS_EXPECTED)
			evaluate(srv, job);
		else if (st == NS_RUNNING)
			membership_change(srv, job, NULL);
		else if (st == NS_WAITING && job->phase == JP_RUNNING)
			tell_waiting(srv, job);
	}
	check_release(srv, job);
}

void
job_node_gone(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const char *why)
{
	struct job *job = sc->node->job;

	node_lost(srv, sc->node, why != NULL ? why : "replaced");
	job_gc(srv, job);
}

/*
 * A JOIN new from a node already in the current round, asking for a
 * round it has not run (j->round is the first it may join): its JOIN
 * crossed our answer, or it lost the connection that carried it.  Say
 * again what we said; it is no news of failed workers.
 */
static bool
join_again(struct rdzv_server *srv, struct job *job, struct node *nd,
    const struct rdzv_join *j)
{
	struct rdzv_msg m = { .verb = RV_ROUND };

	if (nd == NULL || j->round > job->round)
		return false;
	if (nd->status == NS_JOINED && job->phase == JP_GATHERING) {
		tell_joined(srv, nd);
		return true;
	}
	if (nd->status != NS_RUNNING || nd->round != job->round ||
	    job->phase != JP_RUNNING)
		return false;
	info_msg("job %s: node %s joined round %u again", job->run_id,
	    nd->id, job->round);
	tell_joined(srv, nd);
	if (nd->assigned.group_rank == 0)
		tell_members_again(srv, job, nd);
	m.u.round = nd->assigned;
	srv_send(srv, nd->sc, &m);
	return true;
}

static void
join_new(struct rdzv_server *srv, struct job *job, struct rdzv_sconn *sc,
    struct node *nd, const struct rdzv_join *j)
{
	bool member = false;
	unsigned next;
	int i;

	if (join_again(srv, job, nd, j))
		return;
	/* A member lost at the barrier, back with no finished workers. */
	if ((i = lost_find(job, j->node_id)) >= 0) {
		lost_del(job, i);
		member = true;
	}
	if (job->phase == JP_RECOVERING) {
		if (nd == NULL || nd->status != NS_RUNNING) {
			nd = node_set(job, sc, nd, j, NS_WAITING);
			if (nd != NULL)
				tell_joined(srv, nd);
			return;
		}
		/* A recovered member's group failed: recovery is moot. */
		job->phase = JP_RUNNING;
		job->deadline = -1;
	}
	if (job->phase == JP_GATHERING) {
		if ((nd = node_set(job, sc, nd, j, NS_JOINED)) == NULL)
			return;
		info_msg("job %s: node %s joined round %u", job->run_id,
		    nd->id, job->round);
		job->last_join = srv->now;
		tell_joined(srv, nd);
		evaluate(srv, job);
		return;
	}
	next = job->count[NS_RUNNING] + job->count[NS_EXPECTED];
	if (nd == NULL || (nd->status != NS_RUNNING &&
	    nd->status != NS_EXPECTED))
		next++;
	if ((nd = node_set(job, sc, nd, j, nd != NULL ? nd->status :
	    NS_WAITING)) == NULL)
		return;
	job->last_join = srv->now;
	/* A member joining anew lost its workers: the world is broken. */
	if (member || nd->status == NS_RUNNING ||
	    nd->status == NS_FINISHED) {
		membership_change(srv, job, nd);
		return;
	}
	/*
	 * Nodes that finished the round wait in its barrier: it is not
	 * restarted for a newcomer (their workers would run again).
	 */
	if (next <= job->max && job->count[NS_FINISHED] + job->nlost == 0) {
		membership_change(srv, job, nd);
		return;
	}
	if (job->count[NS_FINISHED] + job->nlost > 0)
		info_msg("job %s: node %s waits: round %u is finishing",
		    job->run_id, nd->id, job->round);
	else
		info_msg("job %s: node %s waits: %u nodes at most",
		    job->run_id, nd->id, job->max);
	set_status(nd, NS_WAITING);
	tell_joined(srv, nd);
	tell_waiting(srv, job);
}

/* Is j a reconnection of the member nd, as the server knows it? */
static bool
same_member(const struct job *job, const struct node *nd,
    const struct rdzv_join *j)
{
	if (nd == NULL || j->state == RS_NEW ||
	    nd->group_rank != j->group_rank)
		return false;
	if (nd->status == NS_FINISHED)
		return j->state == RS_DONE && nd->round == j->round;
	return nd->status == NS_RUNNING && job->round == j->round;
}

static bool
rank_taken(struct job *job, unsigned g, const struct node *self)
{
	struct node *nd;

	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd != self && (nd->status == NS_RUNNING ||
		    nd->status == NS_FINISHED) && nd->group_rank == g)
			return true;
	return false;
}

static void
reattach(struct rdzv_server *srv, struct job *job, struct node *nd,
    const struct rdzv_join *j)
{
	info_msg("job %s: node %s reconnected", job->run_id, nd->id);
	if (nd->status == NS_RUNNING && j->state == RS_DONE) {
		/* Its BARRIER was lost with the old connection. */
		job_barrier(srv, nd->sc, j->round);
	} else if (nd->status == NS_FINISHED && nd->released)
		tell_n(srv, nd->sc, RV_RELEASE, nd->round);
	else if (nd->status == NS_FINISHED)
		tell_lost(srv, job, nd);
}

/*
 * A node back at the exit barrier of its round: lost at its end, with
 * its workers finished or running on; or its round passed the barrier
 * while it was away.  True if it was taken back (or released).
 */
static bool
back_to_barrier(struct rdzv_server *srv, struct job *job,
    struct rdzv_sconn *sc, struct node *nd, const struct rdzv_join *j)
{
	bool done = j->state == RS_DONE;
	int i;

	if (done && job->passed && j->round == job->passed_round) {
		info_msg("job %s: node %s is back: the exit barrier of round "
		    "%u passed: released", job->run_id, j->node_id, j->round);
		tell_n(srv, sc, RV_RELEASE, j->round);
		return true;
	}
	if (nd != NULL || job->phase != JP_RUNNING ||
	    j->round != job->round ||
	    (i = lost_find(job, j->node_id)) == -1 ||
	    (job->lost[i].finished && !done))
		return false;
	if ((nd = node_set(job, sc, NULL, j, done ? NS_FINISHED :
	    NS_RUNNING)) == NULL)
		return true;
	lost_del(job, i);
	nd->group_rank = j->group_rank;
	nd->round = j->round;
	info_msg("job %s: node %s is back: %s round %u", job->run_id, nd->id,
	    done ? "it finished" : "its workers run", j->round);
	if (done)
		tell_lost(srv, job, nd);
	check_release(srv, job);
	return true;
}

static void
join_back(struct rdzv_server *srv, struct job *job, struct rdzv_sconn *sc,
    struct node *nd, const struct rdzv_join *j)
{
	enum node_status st = j->state == RS_DONE ? NS_FINISHED : NS_RUNNING;
	unsigned next;

	if (same_member(job, nd, j)) {
		reattach(srv, job, nd, j);
		return;
	}
	if (back_to_barrier(srv, job, sc, nd, j))
		return;
	if (job->phase == JP_RECOVERING && j->round == job->round &&
	    j->group_world_size == job->expect_n &&
	    !rank_taken(job, j->group_rank, nd)) {
		if ((nd = node_set(job, sc, nd, j, st)) == NULL)
			return;
		nd->group_rank = j->group_rank;
		nd->round = j->round;
		info_msg("job %s: node %s back as group rank %u", job->run_id,
		    nd->id, nd->group_rank);
		recovery_check(srv, job);
		return;
	}
	/*
	 * Its round is over: it must join anew (and is no member now).  The
	 * RESTART names a round past its own, which it would take for old
	 * news otherwise (this server may number below it after a restart).
	 */
	if (nd != NULL && (nd->status == NS_RUNNING ||
	    nd->status == NS_FINISHED))
		node_lost(srv, nd, "came back from another round");
	next = job->phase == JP_GATHERING ? job->round : job->round + 1;
	tell_n(srv, sc, RV_RESTART, next > j->round ? next : j->round + 1);
}

static void
refuse_mismatch(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct job *job, const struct rdzv_join *j)
{
	if (job->min != j->min_nodes || job->max != j->max_nodes)
		srv_refuse(srv, sc, "mismatch", "job %s has min:max %u:%u, "
		    "you asked %u:%u", job->run_id, job->min, job->max,
		    j->min_nodes, j->max_nodes);
	else
		srv_refuse(srv, sc, "mismatch", "job %s has last call %u ms, "
		    "you asked %u", job->run_id, job->last_call_ms,
		    j->last_call_ms);
}

/*
 * Two connections of one supervisor: a reconnection, which replaces the
 * stale one.  A supervisor's cnonces begin with its instance tag (the
 * first RDZV_INSTANCE_LEN characters, esv-rdzv(8)); another node with
 * the same node id (a pid namespace and host name of its own, or a
 * copied configuration) has another tag, and must not push out a live
 * node: each would push out the other for ever.
 */
static bool
same_instance(const struct rdzv_sconn *a, const struct rdzv_sconn *b)
{
	return strncmp(a->cnonce, b->cnonce, RDZV_INSTANCE_LEN) == 0;
}

void
job_join(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct rdzv_join *j)
{
	struct job *job;
	struct node *nd;

	if (srv->conf.only_job != NULL &&
	    strcmp(srv->conf.only_job, j->run_id) != 0) {
		srv_refuse(srv, sc, "job", "this server serves job %s only, "
		    "not %s", srv->conf.only_job, j->run_id);
		return;
	}
	if (j->max_nodes > srv->conf.max_nodes) {
		srv_refuse(srv, sc, "limit", "max %u above this server's "
		    "limit of %u nodes", j->max_nodes, srv->conf.max_nodes);
		return;
	}
	if ((job = job_find(srv, j->run_id)) == NULL &&
	    (job = job_create_for(srv, sc, j)) == NULL)
		return;
	nd = node_find(job, j->node_id);
	if (job->closed && !same_member(job, nd, j)) {
		/* Its round passed the barrier while it was away: it is done. */
		if (j->state == RS_DONE && job->passed &&
		    j->round == job->passed_round) {
			info_msg("job %s: node %s is back: the exit barrier of "
			    "round %u passed: released", job->run_id,
			    j->node_id, j->round);
			tell_n(srv, sc, RV_RELEASE, j->round);
			return;
		}
		srv_refuse(srv, sc, "closed", "job %s is closed", job->run_id);
		return;
	}
	if (!job->closed && (job->min != j->min_nodes ||
	    job->max != j->max_nodes || job->last_call_ms != j->last_call_ms)) {
		refuse_mismatch(srv, sc, job, j);
		return;
	}
	if (nd == NULL && job->nnodes >= srv->conf.max_nodes) {
		srv_refuse(srv, sc, "limit", "job %s has %u nodes already",
		    job->run_id, job->nnodes);
		return;
	}
	if (nd != NULL && nd->sc != sc && !nd->sc->dead &&
	    !same_instance(nd->sc, sc)) {
		srv_refuse(srv, sc, "duplicate", "job %s: node id %s is in use "
		    "by %s, a live connection of another supervisor",
		    job->run_id, nd->id, nd->sc->peer);
		return;
	}
	if (nd != NULL && nd->sc != sc) {
		/* The node reconnected: the old connection is stale. */
		nd->sc->node = NULL;
		srv_kill(srv, nd->sc, NULL);
		nd->sc = sc;
		sc->node = nd;
	}
	/*
	 * A node that ran a round before we started: we restarted, and a
	 * node of that round that is not back may hold its ranks for up to
	 * a lease from our start.
	 */
	if (srv->conf.lease_ms > 0 && (j->state != RS_NEW || j->round > 0) &&
	    srv->now < srv->started + srv->conf.lease_ms &&
	    job->hold_until < srv->started + srv->conf.lease_ms)
		job->hold_until = srv->started + srv->conf.lease_ms;
	if (nd == NULL && j->state == RS_NEW && job->nnodes == 0 &&
	    job->phase == JP_GATHERING && j->round > job->round) {
		/*
		 * A job made anew (this server restarted) numbers its rounds
		 * on from those its nodes ran: a round number is never
		 * given twice.
		 */
		job->round = j->round;
	}
	if (j->state == RS_NEW)
		join_new(srv, job, sc, nd, j);
	else
		join_back(srv, job, sc, nd, j);
	job_gc(srv, job);
}

void
job_barrier(struct rdzv_server *srv, struct rdzv_sconn *sc, unsigned round)
{
	struct node *nd = sc->node;

	if (nd != NULL && nd->status == NS_RUNNING &&
	    round == nd->job->round) {
		set_status(nd, NS_FINISHED);
		nd->round = round;
		info_msg("job %s: node %s finished round %u", nd->job->run_id,
		    nd->id, round);
		check_release(srv, nd->job);
		return;
	}
	if (nd != NULL && nd->status == NS_FINISHED && nd->round == round)
		return;
	/* It crossed the RESTART on its way: that one decides. */
	if (nd != NULL && (nd->status == NS_EXPECTED ||
	    nd->status == NS_JOINED) && round < nd->job->round)
		return;
	srv_refuse(srv, sc, "proto", "BARRIER %u: not running that round",
	    round);
}

void
job_close(struct rdzv_server *srv, struct rdzv_sconn *sc)
{
	struct job *job;
	struct node *nd, *next;

	if ((job = job_find(srv, sc->run_id)) == NULL &&
	    (job = job_create(srv, sc->run_id)) == NULL) {
		srv_refuse(srv, sc, "limit", "too many jobs");
		return;
	}
	if (job->closed)
		return;
	job->closed = true;
	job->deadline = -1;
	TAILQ_INSERT_TAIL(&srv->closed_jobs, job, closed_entry);
	info_msg("job %s: closed", job->run_id);
	RB_FOREACH_SAFE(nd, nodetree, &job->nodes, next) {
		if (nd->status == NS_RUNNING || nd->status == NS_FINISHED)
			continue;
		tell_n(srv, nd->sc, RV_CLOSED, 0);
		srv_kill(srv, nd->sc, "job closed");
		node_free(job, nd);
	}
	check_release(srv, job);
}

void
jobs_tick(struct rdzv_server *srv)
{
	struct job *job, *next;

	RB_FOREACH_SAFE(job, jobtree, &srv->jobs, next) {
		if (job->deadline < 0 || srv->now < job->deadline)
			continue;
		if (job->phase == JP_GATHERING) {
			evaluate(srv, job);
		} else if (job->phase == JP_RECOVERING) {
			info_msg("job %s: recovery timed out: %u of %u nodes "
			    "back", job->run_id, job->count[NS_RUNNING] +
			    job->count[NS_FINISHED], job->expect_n);
			membership_change(srv, job, NULL);
		}
		job_gc(srv, job);
	}
}

long long
jobs_next_deadline(struct rdzv_server *srv)
{
	long long next = LLONG_MAX;
	struct job *job;

	RB_FOREACH(job, jobtree, &srv->jobs)
		if (job->deadline >= 0 && job->deadline < next)
			next = job->deadline;
	return next;
}
