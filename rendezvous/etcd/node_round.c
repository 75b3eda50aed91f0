/*
 * The leader's decisions, from its copy of every key (node_int.h has the
 * layout): completing a round (the places, then the flip to running, in
 * stages of writes), its last call, restarting a round (bump), passing its
 * exit barrier, and who leads (lead_step).  It may call the barrier, the
 * lease's way out, the writes, the copy, what is said and the layers
 * below; nothing above it but through n->evaluate.
 */
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"
#include "ranks.h"

#define RECOVERY_MS	5000	/* a restarted round waits its members */
/* A txn per step: etcd takes 128 operations in one (--max-txn-ops). */
#define OPS_PER_TXN	100

/*
 * Open round `to` in place of round st->round: the nodes expected in it
 * are the members still alive and the nodes waiting for room, so that
 * it completes as soon as they are in.
 */
static void
bump(struct node *n, const struct state *st, unsigned to, const char *why)
{
	json_t *expect = json_array(), *ops;
	struct kv *kv;
	char *val, old[64], pfx[64];
	unsigned count = 0;

	snprintf(pfx, sizeof(pfx), "a/%u/", st->round);
	KV_PREFIX_FOREACH(kv, n, pfx)
		if (kv_getf(n, "r/%u/join/%s", st->round, kv->key +
		    strlen(pfx)) != NULL && count++ < st->max)
			json_array_append_new(expect, json_string(kv->key +
			    strlen(pfx)));
	KV_PREFIX_FOREACH(kv, n, "waiting/")
		if (count++ < st->max)
			json_array_append_new(expect, json_string(kv->key + 8));
	info_msg("etcd: job %s: opening round %u (%s)", n->me.run_id, to,
	    why);
	val = state_json(st, to, "open", expect);
	ops = json_pack("[o]", op_put(n, "h/state", val, false));
	free(val);
	/* Rounds before the one left are of no use to anyone now. */
	if (st->round > 0) {
		snprintf(old, sizeof(old), "r/%u/", st->round - 1);
		json_array_append_new(ops, op_del(n, old));
		snprintf(old, sizeof(old), "a/%u/", st->round - 1);
		json_array_append_new(ops, op_del(n, old));
		snprintf(old, sizeof(old), "h/r/%u/", st->round - 1);
		json_array_append_new(ops, op_del(n, old));
	}
	txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)), ops, NULL,
	    true);
}

/*
 * For group rank 0's place: the numeric addresses the round's nodes gave
 * (their agent store lets them in); none past MEMBERS_MAX nodes, as
 * esv-rdzv.
 */
#define MEMBERS_MAX	200

static json_t *
members_of(json_t **arr, unsigned n)
{
	struct in6_addr buf;
	const char *a;
	json_t *out = json_array();
	unsigned i;

	for (i = 0; i < n && n <= MEMBERS_MAX && out != NULL; i++) {
		a = json_string_value(json_object_get(arr[i], "addr"));
		if (a != NULL && (inet_pton(AF_INET, a, &buf) == 1 ||
		    inet_pton(AF_INET6, a, &buf) == 1))
			json_array_append_new(out, json_string(a));
	}
	return out;
}

static bool
mine(struct node *n, const struct kv *kv)
{
	return kv != NULL && kv->lease == n->lease;
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a,
	    "id")), json_string_value(json_object_get(*(json_t *const *)b,
	    "id")));
}

static int
by_create(const void *a, const void *b)
{
	const struct kv *x = *(struct kv *const *)a, *y = *(struct kv *const *)b;

	return x->create < y->create ? -1 : x->create > y->create;
}

/*
 * A join key as a member of the result, if it is one esv wrote: what
 * other nodes would refuse in the result must not get there.
 */
static json_t *
join_value(struct node *n, const struct kv *kv, const char *pfx)
{
	const char *id = kv->key + strlen(pfx), *role, *addr;
	json_int_t nproc, port;
	json_error_t je;
	json_t *jv;

	if ((jv = json_loads(kv->val, 0, &je)) == NULL ||
	    json_unpack_ex(jv, &je, 0, "{s:I, s:s, s:s, s:I}", "nproc", &nproc,
	    "role", &role, "addr", &addr, "port", &port) == -1 ||
	    nproc < 1 || nproc > 4096 || port < 0 || port > 65535 ||
	    !rdzv_name_ok(id) || !rdzv_name_ok(role) || !rdzv_addr_ok(addr)) {
		warn_msg("etcd: %s%s: not a join esv wrote; left out",
		    n->prefix, kv->key);
		json_decref(jv);
		return NULL;
	}
	json_object_set_new(jv, "id", json_string(id));
	return jv;
}

static void	steps_next(struct node *n);

/* One step of a completion done: the next, or the end (or a lost race). */
static void
step_done(struct node *n, bool ok, json_t *reply)
{
	(void)reply;
	if (!ok || n->shutting || json_array_size(n->steps) == 0) {
		json_decref(n->steps);
		n->steps = NULL;
		return;
	}
	steps_next(n);
}

/* One write of a stage sent at once (steps_next) answered. */
static void
on_chunk(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	long long rev;

	if (reply == NULL) {
		warn_msg("etcd: a write was refused: %s", err);
		n->chunks_failed = true;
	} else if (!json_is_true(json_object_get(reply, "succeeded"))) {
		n->chunks_failed = true;
		if (header_rev(reply, &rev) && rev > n->rev)
			n->chunks_stale = true;
	}
	if (--n->chunks_out > 0)
		return;
	n->busy = false;
	step_done(n, !n->chunks_failed, NULL);
	if (n->chunks_stale && !n->busy) {
		/* As on_txn: a lost compare reads the keys again. */
		n->need_rev = 0;
		refresh(n);
	}
	n->evaluate(n);
	if (n->shutting && !n->busy)
		shutdown_step(n);
}

/*
 * The next stage of a completion: its writes all at once, for none
 * depends on another (each compares h/state alone), then the next
 * stage once every one has landed.
 */
static void
steps_next(struct node *n)
{
	json_t *stage = json_incref(json_array_get(n->steps, 0)), *body;
	size_t i;

	json_array_remove(n->steps, 0);
	if (json_array_size(stage) == 1)
		txn_body(n, json_incref(json_array_get(stage, 0)), step_done,
		    true);
	else {
		n->chunks_out = 0;
		n->chunks_failed = n->chunks_stale = false;
		json_array_foreach(stage, i, body)
			if (etcd_call(n->e, "/v3/kv/txn", json_incref(body),
			    on_chunk, n) == 0)
				n->chunks_out++;
		n->busy = n->chunks_out > 0;
		if (!n->busy) {
			warn_msg("etcd: out of memory for a write");
			json_decref(n->steps);
			n->steps = NULL;
		}
	}
	json_decref(stage);
}

/*
 * Complete round C: the nodes in it are the first max to join (the
 * expected first), ordered by node id as esv-rdzv orders them.  Each
 * one's place goes to a/C/<node>, at most OPS_PER_TXN to a write, and
 * the last write turns the round to running with a compare on seq, so
 * that a join since fails it and the leader decides again.  Followers
 * read their place only once the round runs: places of a completion
 * that failed are never read, and the next attempt deletes them first.
 */
static void
commit(struct node *n, const struct state *st)
{
	char pfx[64], key[512], *val;
	struct kv *kv, **joins, *seq;
	json_t *jv, **arr, *ops, *steps, *chunks, *p;
	struct group_info *g = NULL;
	struct rank_assignment ra;
	unsigned count, i, take = 0;

	snprintf(pfx, sizeof(pfx), "r/%u/join/", st->round);
	count = kv_count(n, pfx);
	joins = calloc(count, sizeof(*joins));
	arr = calloc(count, sizeof(*arr));
	if (joins == NULL || arr == NULL)
		goto out;
	i = 0;
	KV_PREFIX_FOREACH(kv, n, pfx)
		joins[i++] = kv;
	qsort(joins, count, sizeof(*joins), by_create);
	take = 0;
	for (i = 0; i < count && take < st->max; i++)
		if ((jv = join_value(n, joins[i], pfx)) != NULL)
			arr[take++] = jv;
	if (take == 0 || (g = calloc(take, sizeof(*g))) == NULL)
		goto out;
	qsort(arr, take, sizeof(*arr), by_id);
	for (i = 0; i < take; i++) {
		g[i].role = json_string_value(json_object_get(arr[i], "role"));
		g[i].local_world_size = json_integer_value(json_object_get(
		    arr[i], "nproc"));
	}
	/* Stages: a stale a/C/ deleted; the places; the flip. */
	steps = json_array();
	ops = json_array();
	chunks = json_array();
	snprintf(key, sizeof(key), "a/%u/", st->round);
	if (kv_count(n, key) > 0)
		json_array_append_new(steps, json_pack("[{s:[o], s:[o]}]",
		    "compare", cmp_mod(n, "h/state", st->mod), "success",
		    op_del(n, key)));
	for (i = 0; i < take; i++) {
		if (ranks_assign(g, take, i, &ra) == -1) {
			warn_msg("etcd: round %u: ranks overflow", st->round);
			json_decref(ops);
			json_decref(chunks);
			json_decref(steps);
			goto out;
		}
		p = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}",
		    "group_rank", (json_int_t)ra.group_rank, "group_world_size",
		    (json_int_t)ra.group_world_size, "base_rank",
		    (json_int_t)ra.base_rank, "world_size",
		    (json_int_t)ra.world_size, "base_role_rank",
		    (json_int_t)ra.base_role_rank, "role_world_size",
		    (json_int_t)ra.role_world_size, "master_addr",
		    json_object_get(arr[0], "addr"), "master_port",
		    json_object_get(arr[0], "port"));
		if (i == 0 && p != NULL)
			json_object_set_new(p, "members", members_of(arr, take));
		val = json_dumps(p, JSON_COMPACT);
		json_decref(p);
		snprintf(key, sizeof(key), "a/%u/%s", st->round,
		    json_string_value(json_object_get(arr[i], "id")));
		json_array_append_new(ops, op_put(n, key, val, false));
		free(val);
		if (json_array_size(ops) == OPS_PER_TXN && i + 1 < take) {
			json_array_append_new(chunks, json_pack("{s:[o], s:o}",
			    "compare", cmp_mod(n, "h/state", st->mod),
			    "success", ops));
			ops = json_array();
		}
	}
	if (json_array_size(chunks) > 0)
		json_array_append(steps, chunks);
	json_decref(chunks);
	val = state_json(st, st->round, "running", NULL);
	json_array_append_new(ops, op_put(n, "h/state", val, false));
	free(val);
	snprintf(key, sizeof(key), "r/%u/seq", st->round);
	seq = kv_get(n, key);
	json_array_append_new(steps, json_pack("[{s:[o, o], s:o}]", "compare",
	    cmp_mod(n, "h/state", st->mod), cmp_mod(n, key, seq != NULL ?
	    seq->mod : 0), "success", ops));
	info_msg("etcd: job %s: completing round %u with %u node(s)",
	    n->me.run_id, st->round, take);
	json_decref(n->steps);
	n->steps = steps;
	steps_next(n);
out:
	for (i = 0; arr != NULL && i < take; i++)
		json_decref(arr[i]);
	free(g);
	free(arr);
	free(joins);
}

static void
lastcall_put(struct node *n, long long lease, unsigned round)
{
	char key[64], id[32];
	json_t *put;

	snprintf(key, sizeof(key), "r/%u/lastcall", round);
	snprintf(id, sizeof(id), "%lld", lease);
	put = json_pack("{s:o, s:o, s:s}", "key", b64key(n, key), "value",
	    etcd_b64("", 0), "lease", id);
	txn(n, json_pack("[{s:o, s:s, s:s, s:s}]", "key", b64key(n, key),
	    "target", "CREATE", "result", "EQUAL", "create_revision", "0"),
	    json_pack("[{s:o}]", "request_put", put), NULL, true);
}

/* The lease for the last call of round n->lc_round came (or not). */
static void
on_lastcall_lease(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	long long id;

	n->busy = false;
	if (reply == NULL || etcd_int(reply, "ID", &id) == -1 || id == 0)
		warn_msg("etcd: a lease for the last call: %s", err != NULL ?
		    err : "no ID in the reply");
	else
		lastcall_put(n, id, n->lc_round);
	if (n->busy)
		return;
	if (n->shutting)
		shutdown_step(n);
	else
		n->evaluate(n);
}

/*
 * The last call is a key under a lease of its own that nobody keeps
 * alive: etcd deletes it when the time is up, even if the node that made
 * it is gone, and its DELETE is every node's signal to complete.
 */
static void
lastcall_open(struct node *n, const struct state *st)
{
	long long ms = st->last_call_ms;

	if (st->expect != NULL && json_array_size(st->expect) > 0 &&
	    ms < RECOVERY_MS)
		ms = RECOVERY_MS;
	/* One write at a time (busy): the round is the node's to keep. */
	n->lc_round = st->round;
	n->busy = true;
	if (etcd_call(n->e, "/v3/lease/grant", json_pack("{s:I}", "TTL",
	    (json_int_t)((ms + 999) / 1000 > 0 ? (ms + 999) / 1000 : 1)),
	    on_lastcall_lease, n) == -1)
		n->busy = false;
}

static bool
all_expected_in(struct node *n, const struct state *st)
{
	size_t i;
	json_t *id;

	if (st->expect == NULL || json_array_size(st->expect) == 0)
		return false;
	json_array_foreach(st->expect, i, id)
		if (json_string_value(id) == NULL || kv_getf(n, "r/%u/join/%s",
		    st->round, json_string_value(id)) == NULL)
			return false;
	return true;
}

/*
 * A member of round c - 1 that is neither back in round c nor finished,
 * and whose join key still exists: its lease lives, so its workers may
 * still run with their ranks (it is cut off from etcd, or still stopping
 * them).  Round c would give those ranks away: it waits until the node
 * joins, or etcd expires its lease, never on a timeout of its own (the
 * last call, the 5 s of a restart).  NULL if there is none.
 */
static const char *
ranks_held(struct node *n, unsigned c)
{
	char pfx[64];
	struct kv *kv;
	const char *id;

	if (c == 0)
		return NULL;
	snprintf(pfx, sizeof(pfx), "a/%u/", c - 1);
	KV_PREFIX_FOREACH(kv, n, pfx) {
		id = kv->key + strlen(pfx);
		if (kv_getf(n, "r/%u/join/%s", c - 1, id) != NULL &&
		    kv_getf(n, "r/%u/exit/%s", c - 1, id) == NULL &&
		    kv_getf(n, "r/%u/join/%s", c, id) == NULL)
			return id;
	}
	return NULL;
}

static void
decide_open(struct node *n, const struct state *st)
{
	char pfx[64];
	unsigned c = st->round, joined;
	const char *held;

	snprintf(pfx, sizeof(pfx), "r/%u/join/", c);
	if ((joined = kv_count(n, pfx)) == 0)
		return;
	if (joined >= st->max ||
	    (joined >= st->min && all_expected_in(n, st)) ||
	    (joined >= st->min && n->lastcall_gone == (long long)c)) {
		if ((held = ranks_held(n, c)) == NULL)
			commit(n, st);
		else if (n->held_logged != c + 1) {
			info_msg("etcd: job %s: round %u waits for node %s of "
			    "round %u: its lease lives, its workers may run",
			    n->me.run_id, c, held, c - 1);
			n->held_logged = c + 1;
		}
	} else if (joined >= st->min && kv_getf(n, "r/%u/lastcall", c) == NULL)
		lastcall_open(n, st);
}

/*
 * A round that runs (or ran: closed): a member lost, a node that wants
 * a new round or waits for room restarts it while a member still runs;
 * once none runs and one has finished, the exit barrier is passed.  A
 * member whose supervisor hung up unfinished (r/c/left/) restarts it
 * even then; one gone silent holds the barrier until it is back (then
 * finished, or running, or wanting a new round: its workers stopped),
 * or a node closes the job.  A round whose members are all lost (every
 * lease expired at once, as when etcd was out of everyone's reach past
 * the TTL) is restarted too: it has nobody left to finish it, and its
 * nodes, back with new leases, want the next one.
 */
static void
decide_running(struct node *n, const struct state *st)
{
	const char *lost = NULL, *left = NULL, *id;
	unsigned c = st->round, members = 0, alive = 0, running = 0;
	unsigned finished = 0, waiting, wants = 0;
	struct kv *kv, *held;
	char why[300], num[32], pfx[64], key[64];
	bool in, out;

	snprintf(pfx, sizeof(pfx), "a/%u/", c);
	KV_PREFIX_FOREACH(kv, n, pfx) {
		id = kv->key + strlen(pfx);
		in = kv_getf(n, "r/%u/join/%s", c, id) != NULL;
		out = kv_getf(n, "r/%u/exit/%s", c, id) != NULL;
		members++;
		alive += in;
		finished += out;
		running += in && !out;
		if (!in && !out && lost == NULL)
			lost = id;
		if (!in && !out && left == NULL &&
		    kv_getf(n, "r/%u/left/%s", c, id) != NULL)
			left = id;
	}
	if (members == 0)
		return;
	if (left != NULL)
		snprintf(why, sizeof(why), "node %s left before it finished",
		    left);
	else if (lost != NULL && alive == 0 && finished == 0)
		snprintf(why, sizeof(why), "all %u nodes lost", members);
	else if (lost != NULL)
		snprintf(why, sizeof(why), "node %s lost", lost);
	waiting = kv_count(n, "waiting/");
	KV_PREFIX_FOREACH(kv, n, "want/")
		if (strtoul(kv->val, NULL, 10) > c)
			wants++;
	held = kv_getf(n, "h/r/%u/lost", c);
	if (st->status == ST_RUNNING && (running > 0 || finished == 0 ||
	    left != NULL)) {
		if (lost != NULL) {
			bump(n, st, c + 1, why);
			return;
		}
		if (wants > 0) {
			bump(n, st, c + 1, "a node's workers failed");
			return;
		}
		/* Not while nodes wait in its barrier: they would run again. */
		if (waiting > 0 && alive + 1 <= st->max && finished == 0) {
			bump(n, st, c + 1, "a node waits and there is room");
			return;
		}
	}
	if (st->status == ST_RUNNING && running == 0 && finished > 0 &&
	    lost != NULL) {
		/* Back, its workers stopped: they cannot finish the round. */
		if (wants > 0) {
			bump(n, st, c + 1, "a node lost in the exit barrier is "
			    "back without its workers");
			return;
		}
		hold_barrier(n, st, lost);
		return;
	}
	if (st->status == ST_RUNNING && waiting != waiting_count(n)) {
		snprintf(num, sizeof(num), "%u", waiting);
		txn(n, json_array(), json_pack("[o]", op_put(n, "h/waiting", num,
		    false)), NULL, true);
		return;
	}
	/* Closed while it waited for a lost node: it never passes. */
	if (held != NULL && st->status == ST_CLOSED)
		return;
	snprintf(key, sizeof(key), "h/r/%u/lost", c);
	if (running == 0 && finished > 0 && kv_getf(n, "h/r/%u/done", c) ==
	    NULL) {
		snprintf(why, sizeof(why), "h/r/%u/done", c);
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
		    json_pack("[o, o]", op_put(n, why, "", false), op_del(n,
		    key)), NULL, true);
	} else if (held != NULL && lost == NULL)
		/* Back with its workers running: nobody is waited for. */
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st->mod)),
		    json_pack("[o]", op_del(n, key)), NULL, true);
}

/*
 * Lead if nobody does; follow (watch h/ alone) if another does.  Any
 * node that has joined once may lead, whatever its phase: the decisions
 * are functions of the keys, not of the leader's own round.
 */
void
lead_step(struct node *n, const struct state *st)
{
	struct kv *lead = kv_get(n, "h/lead");

	if (lead == NULL) {
		if (n->me.node_id[0] == '\0' || n->rev <= n->elect_rev)
			return;
		/* Lost: the watch brings the winner, nothing to read. */
		n->elect_rev = n->rev;
		txn(n, json_pack("[o]", cmp_absent(n, "h/lead")),
		    json_pack("[o]", op_put(n, "h/lead", n->me.node_id, true)),
		    NULL, false);
		return;
	}
	if (!mine(n, lead)) {
		set_scope(n, false);
		return;
	}
	if (!n->full) {
		set_scope(n, true);
		return;
	}
	if (!st->present)
		return;
	if (st->status == ST_OPEN)
		decide_open(n, st);
	else
		decide_running(n, st);
}
