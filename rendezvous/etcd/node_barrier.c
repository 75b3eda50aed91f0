/*
 * The exit barrier of a round: a node that finished writes its exit key
 * and waits until the leader marks the barrier passed (h/r/R/done), the
 * round is restarted under it, or the job is closed; the leader holds
 * the barrier for a member lost before it said it had finished
 * (hold_barrier).  It may call the writes (node_txn.c), what is said and
 * the layers below.
 */
#include <stdio.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"

static void
exited(struct node *n, bool ok, json_t *reply)
{
	if (ok)
		n->exited = n->cur + 1;
	/* h/state changed under the compare: read it rather than write again. */
	else if (reply != NULL)
		lost_race(n, reply);
}

/* Our round is the one that runs (or ran: closed). */
bool
round_stands(const struct node *n, const struct state *st)
{
	return st->present && st->round == n->cur && st->status != ST_OPEN;
}

/*
 * The exit key has no lease: a node that finished and is then lost
 * still counts as finished.  The compare on h/state keeps a node late
 * from a stall from marking a round that was superseded meanwhile.
 */
json_t *
exit_put(struct node *n)
{
	char key[512];

	snprintf(key, sizeof(key), "r/%u/exit/%s", n->cur, n->me.node_id);
	return op_put(n, key, "", false);
}

void
barrier_step(struct node *n, struct state *st)
{
	struct kv *lost;

	if (n->exited != n->cur + 1 && round_stands(n, st)) {
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
		    json_pack("[o]", exit_put(n)), exited, false);
		return;
	}
	/*
	 * Our round was restarted while we waited in its barrier: it can
	 * pass no more, and we join the next as every node does
	 * (esv-supervise(8), "Exit barrier").  Unless our peers went on to
	 * a round that passed its own barrier: the job's work is done.
	 */
	if (st->present && st->round > n->cur &&
	    kv_getf(n, "h/r/%u/done", st->round) == NULL) {
		info_msg("etcd: job %s: round %u superseded by round %u while "
		    "this node waited in its exit barrier", n->me.run_id,
		    n->cur, st->round);
		say_n(n, RV_RESTART, st->round);
		n->phase = PH_IDLE;
		return;
	}
	/*
	 * The barrier waits for a member lost before it said it had
	 * finished; a job closed meanwhile (a node's barrier timed out
	 * waiting for it) ends with the barrier not passed.
	 */
	if (round_stands(n, st) && kv_getf(n, "h/r/%u/done", n->cur) == NULL &&
	    (lost = kv_getf(n, "h/r/%u/lost", n->cur)) != NULL) {
		if (st->status == ST_CLOSED) {
			say_n(n, RV_CLOSED, 0);
			n->phase = PH_IDLE;
		} else if (n->told_lost != n->cur + 1 &&
		    strcmp(lost->val, n->me.node_id) != 0) {
			say_n(n, RV_LOST, n->cur);
			n->told_lost = n->cur + 1;
		}
		return;
	}
	/* The latest round decides: ours, or one our peers went on to. */
	if (!st->present || st->status == ST_OPEN ||
	    kv_getf(n, "h/r/%u/done", st->round) == NULL)
		return;
	info_msg("etcd: job %s: exit barrier passed", n->me.run_id);
	say_n(n, RV_RELEASE, n->cur);
	n->phase = PH_IDLE;
}

/*
 * The leader marks the barrier of round c as waiting for lost, a member
 * gone silent (its lease ran out) before it said it had finished: it may
 * be alive, its workers finished, its supervisor stopped.  The nodes in
 * the barrier are told (LOST) and wait for it until their own
 * exit_barrier_timeout (esv-supervise(8), "Exit barrier").
 */
void
hold_barrier(struct node *n, const struct state *st, const char *lost)
{
	struct kv *kv = kv_getf(n, "h/r/%u/lost", st->round);
	char key[64];

	if (kv != NULL && strcmp(kv->val, lost) == 0)
		return;
	info_msg("etcd: job %s: node %s lost before it finished round %u: "
	    "the exit barrier waits for it (its workers may have finished)",
	    n->me.run_id, lost, st->round);
	snprintf(key, sizeof(key), "h/r/%u/lost", st->round);
	txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
	    json_pack("[o]", op_put(n, key, lost, false)), NULL, true);
}
