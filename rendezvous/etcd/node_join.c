/*
 * Every node's own steps, by its phase: joining a round (in one write,
 * with the lead if nobody holds it), waiting for room, wanting a new
 * round when its workers failed, reading its place once the round runs,
 * coming back with a round it runs (reattach), and closing the job.  It
 * writes only its own keys and h/state's close; it may call the exit
 * barrier (node_barrier.c), the lease's way out, the writes and the
 * layers below; nothing above it but through n->evaluate.
 */
#include <stdio.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"

/* Of a join's responses (join_ops), the one that counts the joins. */
#define JOIN_SEQ_READ	2

/* A join landed; ops is the reply of its operations (join_ops). */
static void
joined_ops(struct node *n, json_t *reply, json_t *ops)
{
	long long rev;

	n->joined = n->asked + 1;
	/*
	 * h/lead existed at this revision or our join made it: there is no
	 * election to try until the copy has seen that far.
	 */
	if (header_rev(reply, &rev) && rev > n->elect_rev)
		n->elect_rev = rev;
	/* The join and the count are of one revision: we are in it. */
	say_joined(n, n->asked, reply_version(ops, JOIN_SEQ_READ) > 0 ?
	    reply_version(ops, JOIN_SEQ_READ) : 1);
}

static void
joined(struct node *n, bool ok, json_t *reply)
{
	if (ok)
		joined_ops(n, reply, reply);
}

/*
 * The join of a job with no state yet (join_step): made the state, or
 * found it as it would have made it, or found another and lost.
 */
static void
joined_fresh(struct node *n, bool ok, json_t *reply)
{
	json_t *made = reply_txn(reply, 0), *found;
	long long rev;

	if (!ok || made == NULL)
		return;
	if (json_is_true(json_object_get(made, "succeeded"))) {
		/* Decide again once the copy has our h/state. */
		if (header_rev(reply, &rev) && rev > n->need_rev)
			n->need_rev = rev;
		joined_ops(n, reply, made);
		return;
	}
	found = reply_txn(made, 0);
	if (json_is_true(json_object_get(found, "succeeded"))) {
		joined_ops(n, reply, found);
		return;
	}
	/* Another round, or another job's terms: read them. */
	lost_race(n, reply);
}

static void
waited(struct node *n, bool ok, json_t *reply)
{
	struct state st;

	if (!ok)
		return;
	n->waited = n->asked + 1;
	state_read(n, &st);
	info_msg("etcd: job %s: waiting: %u nodes at most", n->me.run_id,
	    st.max);
	state_done(&st);
	say_joined(n, n->asked, reply_count(reply, 1));
}

/* Our place in round n->asked came (or not): join_step decides. */
static void
on_place(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	json_t *kv = json_array_get(json_object_get(reply, "kvs"), 0);
	char val[1024];

	n->busy = false;
	/* A member behind our copy, or the revision compacted away. */
	n->place_linear = reply == NULL;
	if (reply == NULL)
		warn_msg("etcd: reading our place in round %u: %s", n->asked,
		    err);
	else {
		n->fetched = n->asked + 1;
		n->assigned = kv != NULL && etcd_unb64(json_object_get(kv,
		    "value"), val, sizeof(val)) >= 0 && place_parse(n, val,
		    n->asked, &n->place);
	}
	if (n->shutting)
		shutdown_step(n);
	else
		n->evaluate(n);
}

/*
 * The place is read at the copy's revision, which has the round running,
 * from whichever member answers without a round of its consensus: the
 * past does not change, so that is as good as a linearizable read and
 * costs etcd far less when K nodes read at once.  A member that has not
 * got that far, or has compacted it, refuses; then a linearizable read.
 */
static void
place_fetch(struct node *n, unsigned round)
{
	char key[1024];
	json_t *body;

	snprintf(key, sizeof(key), "%sa/%u/%s", n->prefix, round,
	    n->me.node_id);
	body = json_pack("{s:o}", "key", etcd_b64(key, strlen(key)));
	if (!n->place_linear && n->rev > 0) {
		json_object_set_new(body, "serializable", json_true());
		json_object_set_new(body, "revision", json_integer(n->rev));
	}
	n->asked = round;
	n->busy = true;
	if (etcd_call(n->e, "/v3/kv/range", body, on_place, n) == -1)
		n->busy = false;
}

static void
wanted(struct node *n, bool ok, json_t *reply)
{
	(void)reply;
	if (ok)
		n->wanted = n->target;
}

/* Put one key of ours under our lease, with no compare. */
static void
put_own(struct node *n, const char *key, const char *val, then_fn *then)
{
	txn(n, json_array(), json_pack("[o]", op_put(n, key, val, true)), then,
	    false);
}

/*
 * One write: the join, the count it makes, and the lead if nobody holds
 * it, so that the first joiner leads at once.  A node that waited for
 * room or wanted a new round drops those keys; in a job that has no
 * state yet it has none to drop (fresh), and the write is the lighter.
 */
static json_t *
join_ops(struct node *n, unsigned c, bool fresh)
{
	char key[512], *val, seq[64], wkey[512], want[512];
	json_t *ops, *seq_read;

	snprintf(key, sizeof(key), "r/%u/join/%s", c, n->me.node_id);
	snprintf(seq, sizeof(seq), "r/%u/seq", c);
	snprintf(wkey, sizeof(wkey), "waiting/%s", n->me.node_id);
	snprintf(want, sizeof(want), "want/%s", n->me.node_id);
	val = join_json(n);
	/* seq's version, once put, counts the round's joins in O(1). */
	seq_read = json_pack("{s:{s:o, s:b}}", "request_range", "key",
	    b64key(n, seq), "keys_only", 1);
	ops = json_pack("[o, o, o, {s:{s:[o], s:[o]}}]",
	    op_put(n, key, val, true), op_put(n, seq, "", false), seq_read,
	    "request_txn", "compare", cmp_absent(n, "h/lead"), "success",
	    op_put(n, "h/lead", n->me.node_id, true));
	if (!fresh) {
		json_array_append_new(ops, op_del(n, wkey));
		json_array_append_new(ops, op_del(n, want));
	}
	free(val);
	return ops;
}

/*
 * The first nodes of a job find no state.  Each joins in one write that
 * makes the state if it is still absent, or else joins if the state is
 * byte for byte the one it would have made (round `target` open, the
 * same terms): K nodes starting at once cost K writes, not 2K, and none
 * of them reads again.
 */
static void
join_fresh(struct node *n)
{
	struct state fresh = { .min = n->me.min_nodes,
	    .max = n->me.max_nodes, .last_call_ms = n->me.last_call_ms };
	char *val = state_json(&fresh, n->target, "open", NULL);
	json_t *made, *found, *cmp_same;

	cmp_same = json_pack("{s:o, s:s, s:s, s:o}", "key", b64key(n,
	    "h/state"), "target", "VALUE", "result", "EQUAL", "value",
	    etcd_b64(val, strlen(val)));
	made = join_ops(n, n->target, true);
	json_array_append_new(made, op_put(n, "h/state", val, false));
	found = json_pack("[{s:{s:[o], s:o}}]", "request_txn", "compare",
	    cmp_same, "success", join_ops(n, n->target, true));
	n->asked = n->target;
	txn(n, json_array(), json_pack("[{s:{s:[o], s:o, s:o}}]",
	    "request_txn", "compare", cmp_absent(n, "h/state"), "success",
	    made, "failure", found), joined_fresh, false);
	free(val);
}

void
join_step(struct node *n, struct state *st)
{
	char wkey[512], want[512], cur[64];
	unsigned c;

	if (!st->present) {
		/* Ours made it: the watch is to bring it. */
		if (n->joined != n->target + 1)
			join_fresh(n);
		return;
	}
	if (st->min != n->me.min_nodes || st->max != n->me.max_nodes ||
	    st->last_call_ms != n->me.last_call_ms) {
		say_err(n, "mismatch", "job %s has min:max %u:%u and last call "
		    "%u ms, you asked %u:%u and %u ms", n->me.run_id, st->min,
		    st->max, st->last_call_ms, n->me.min_nodes,
		    n->me.max_nodes, n->me.last_call_ms);
		n->phase = PH_IDLE;
		return;
	}
	if (st->status == ST_CLOSED) {
		if (n->told_joined != 0)
			say_n(n, RV_CLOSED, 0);
		else
			say_err(n, "closed", "job %s is closed", n->me.run_id);
		n->phase = PH_IDLE;
		return;
	}
	c = st->round;
	snprintf(want, sizeof(want), "want/%s", n->me.node_id);
	if (c < n->target) {
		/* Our group failed in the round that runs: all restart. */
		if (n->wanted != n->target) {
			snprintf(cur, sizeof(cur), "%u", n->target);
			put_own(n, want, cur, wanted);
		}
		return;
	}
	snprintf(wkey, sizeof(wkey), "waiting/%s", n->me.node_id);
	if (st->status == ST_OPEN) {
		if (n->joined == c + 1)
			return;
		n->asked = c;
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
		    join_ops(n, c, false), joined, false);
		return;
	}
	/* Round c runs: are we in it? */
	if (n->joined == c + 1) {
		if (n->fetched != c + 1) {
			place_fetch(n, c);
			return;
		}
		if (n->assigned) {
			if (n->told_joined != c + 1)
				say_joined(n, c, n->place.group_world_size);
			say_place(n, &n->place);
			n->phase = PH_RUNNING;
			n->cur = c;
			n->group_rank = n->place.group_rank;
			n->told_waiting = -1;
			return;
		}
	}
	/* Late: the leader opens a round for us if there is room. */
	if (n->waited != c + 1) {
		n->asked = c;
		snprintf(cur, sizeof(cur), "a/%u/", c);
		txn(n, json_array(), json_pack("[o, o]", op_put(n, wkey, "",
		    true), op_count(n, cur)), waited, false);
	}
}

void
running_step(struct node *n, struct state *st)
{
	long long waiting;

	if (st->round > n->cur) {
		say_n(n, RV_RESTART, st->round);
		n->phase = PH_IDLE;
		return;
	}
	if (st->status != ST_RUNNING)
		return;
	waiting = waiting_count(n);
	if (waiting != n->told_waiting) {
		say_n(n, RV_WAITING, waiting);
		n->told_waiting = waiting;
	}
}

static void
reattached(struct node *n, bool ok, json_t *reply)
{
	(void)reply;
	if (!ok)
		return;
	info_msg("etcd: job %s: back in round %u as group rank %u",
	    n->me.run_id, n->cur, n->group_rank);
	n->joined = n->cur + 1;
	if (n->me.state == RS_DONE)
		n->exited = n->cur + 1;
	n->phase = n->me.state == RS_DONE ? PH_BARRIER : PH_RUNNING;
	n->told_waiting = -1;
}

void
reattach_step(struct node *n, struct state *st)
{
	char key[512], *val;
	json_t *ops;
	unsigned next;
	bool ours = false;

	if (round_stands(n, st)) {
		if (n->fetched != n->cur + 1) {
			place_fetch(n, n->cur);
			return;
		}
		ours = n->assigned && n->place.group_rank == n->group_rank;
	}
	if (!ours) {
		next = !st->present ? n->cur + 1 : st->status == ST_OPEN ?
		    st->round : st->round + 1;
		say_n(n, RV_RESTART, next > n->cur ? next : n->cur + 1);
		n->phase = PH_IDLE;
		return;
	}
	snprintf(key, sizeof(key), "r/%u/join/%s", n->cur, n->me.node_id);
	val = join_json(n);
	ops = json_pack("[o]", op_put(n, key, val, true));
	free(val);
	if (n->me.state == RS_DONE)
		json_array_append_new(ops, exit_put(n));
	txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)), ops,
	    reattached, false);
}

static void
closed(struct node *n, bool ok, json_t *reply)
{
	(void)reply;
	if (ok) {
		n->close_wanted = false;
		info_msg("etcd: job %s: closed", n->me.run_id);
	}
}

/* CLOSE: the job is over; later joiners are turned away. */
void
close_step(struct node *n, struct state *st)
{
	char *val;

	if (!st->present || st->status == ST_CLOSED) {
		n->close_wanted = false;
		return;
	}
	val = state_json(st, st->round, "closed", NULL);
	txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
	    json_pack("[o]", op_put(n, "h/state", val, false)), closed, true);
	free(val);
}
