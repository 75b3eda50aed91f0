/*
 * The keys of job J, under P = <prefix>/J/ (esv-rdzv-etcd(8)):
 *
 *	h/state			{"round","status":"open|running|closed",
 *				 "min","max","last_call_ms","expect":[ids]}
 *	h/lead			lease: the node that decides, by its id
 *	h/waiting		how many nodes wait for room, as the leader
 *				 last counted them
 *	h/r/R/done		the exit barrier of round R has passed
 *	h/r/R/lost		the barrier of round R waits for this node,
 *				 lost before it said it had finished
 *	a/R/<node>		the node's place in round R, if it is in it:
 *				 {"group_rank","group_world_size","base_rank",
 *				  "world_size","base_role_rank",
 *				  "role_world_size","master_addr","master_port"}
 *	r/R/join/<node>		lease: the node is in round R
 *	r/R/seq			touched by every join: one revision to compare
 *	r/R/lastcall		its own lease, kept alive by nobody: the
 *				 last call of round R is open while it exists
 *	r/R/exit/<node>		the node's group finished round R: no
 *				 lease, the fact outlives the node
 *	r/R/left/<node>		the node's supervisor hung up in round R
 *				 with workers not finished
 *	waiting/<node>		lease: the node waits for room
 *	want/<node>		lease: the node's workers failed; it wants the
 *				 round given as the value
 *
 * One node leads: it holds h/lead, watches every key and writes every
 * decision (completion, last call, restarts, the barrier).  The others
 * watch h/ alone, the few keys that change a few times a round, write
 * only their own keys, and read their own a/R/ key when round R runs: a
 * round of K nodes costs etcd O(K) watch events and O(K) bytes of
 * result, not the O(K^2) of every node watching every join and reading
 * every member.  If the
 * leader dies, h/lead goes with its lease and the first node to create
 * it again leads.
 *
 * Liveness is the lease alone: a node that dies loses its keys when etcd
 * expires its lease, one that leaves revokes it.  No clock of one host is
 * ever compared with another's.  What a node did is not liveness: its
 * exit and left keys have no lease, are written only with a compare on
 * h/state (a round superseded cannot be marked finished), and go with
 * the round's places when round R + 2 opens.
 */
#include <sys/tree.h>

#include <arpa/inet.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* libbsd's tree.h marks its static functions __unused, which glibc
 * leaves undefined (it has struct members of that name). */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif

#include "msg.h"
#include "node.h"
#include "ranks.h"
#include "rdzvconf.h"

#define RECOVERY_MS	5000	/* a restarted round waits its members */
#define WATCH_RETRY_MS	200
#define SHUTDOWN_MS	3000	/* to revoke the lease on the way out */
#define MAX_MEMBERS	8192
/*
 * Of one value: esv's own are small (a place, a join, the state with the
 * ids a restart expects back, some 80 to 400 bytes an id); etcd takes
 * requests of 1.5 MiB by default.
 */
#define VALUE_MAX	(4u << 20)

struct kv {
	RB_ENTRY(kv)	 entry;
	char		*key;		/* relative to the prefix */
	char		*val;
	long long	 create, mod, lease;
};

static int
kv_cmp(const struct kv *a, const struct kv *b)
{
	return strcmp(a->key, b->key);
}

RB_HEAD(kvtree, kv);
RB_GENERATE_STATIC(kvtree, kv, entry, kv_cmp)

enum status { ST_OPEN, ST_RUNNING, ST_CLOSED };

struct state {
	bool		 present;
	long long	 mod;
	unsigned	 round;
	enum status	 status;
	unsigned	 min, max, last_call_ms;
	json_t		*expect;	/* array of ids, or NULL */
	json_t		*doc;
};

/* A txn per step: etcd takes 128 operations in one (--max-txn-ops). */
#define OPS_PER_TXN	100
/* Of a join's responses (join_ops), the one that counts the joins. */
#define JOIN_SEQ_READ	2

enum phase {
	PH_IDLE,	/* waiting for a JOIN */
	PH_JOINING,	/* wants a round >= target */
	PH_REATTACH,	/* a supervisor back with a round it runs */
	PH_RUNNING,	/* runs round cur */
	PH_BARRIER,	/* finished round cur, waits for the others */
};

typedef void	then_fn(struct node *, bool succeeded, json_t *reply);

struct node {
	struct etcd		*e;
	struct loop		*lp;
	struct node_ops		 ops;
	char			 prefix[512];
	unsigned		 ttl_ms;	/* etcd's, once granted */

	long long		 lease;		/* 0: none yet */
	bool			 lease_asked;
	bool			 keepalive_asked;
	/*
	 * The last proof the lease lives: the time the keep-alive that etcd
	 * answered was SENT.  etcd renewed it on receipt, later, so its
	 * expiry is after lease_ok_at + ttl_ms, never before.
	 */
	long long		 lease_ok_at;
	long long		 lease_sent_at;
	bool			 fenced;
	bool			 late_fence;	/* node_late_fence */

	struct kvtree		 kvs;
	bool			 full;		/* leading: the copy is of all */
	bool			 range_full;	/* scope of the read in flight */
	bool			 refresh_full;
	long long		 elect_rev;	/* tried to lead at this copy */
	long long		 rev;		/* of the copy */
	long long		 read_rev;	/* of its last read */
	long long		 need_rev;	/* decide once rev gets here */
	bool			 ready;
	bool			 ranging;
	bool			 resync;	/* the watch was cancelled */
	bool			 in_watch;	/* in its callback: it stays */
	bool			 rescope;	/* end it, read the new scope */
	struct etcd_stream	*watch;
	long long		 watch_at;	/* reopen it then; 0: open */
	long long		 lastcall_gone;	/* round whose lastcall expired */

	struct watch		 timer;
	bool			 busy;		/* a write in flight */
	bool			 echo;		/* wait for it in the copy */
	unsigned		 lc_round;	/* of the last call being made */
	unsigned		 held_logged;	/* round + 1 */
	bool			 stale;		/* lost a race: reading */
	bool			 close_wanted;	/* CLOSE to write */
	bool			 doubt_logged;
	then_fn			*then;

	enum phase		 phase;
	struct rdzv_join	 me;
	unsigned		 target, cur, group_rank;
	unsigned		 told_joined;	/* round + 1 */
	/* Our keys etcd has (round + 1): a follower never sees them. */
	unsigned		 joined, waited, exited, wanted;
	unsigned		 asked;		/* round of the write in flight */
	unsigned		 fetched;	/* our a/R/ read (round + 1) */
	bool			 assigned;	/* and it was there: */
	bool			 place_linear;	/* the last read was refused */
	struct rdzv_round_msg	 place;
	/* Group rank 0's place: the round's addresses, '\n' after each. */
	char			 members[4096];
	json_t			*steps;		/* of a completion: stages */
	unsigned		 chunks_out;	/* a stage's writes in flight */
	bool			 chunks_failed, chunks_stale;
	long long		 told_waiting;	/* -1: nothing told */
	bool			 shutting;
	unsigned		 left;		/* round + 1 to mark left */
	unsigned		 told_lost;	/* round + 1 */
	long long		 shutdown_by;
	bool			 gone;
};

static void	evaluate(struct node *);
static void	rearm(struct node *);
static void	shutdown_step(struct node *);

/* ---- the copy of the job's keys ---- */

static struct kv *
kv_get(struct node *n, const char *key)
{
	struct kv k = { .key = (char *)key };

	return RB_FIND(kvtree, &n->kvs, &k);
}

static struct kv *
kv_getf(struct node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static struct kv *
kv_getf(struct node *n, const char *fmt, ...)
{
	char key[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	return kv_get(n, key);
}

static void
kv_del(struct node *n, struct kv *kv)
{
	RB_REMOVE(kvtree, &n->kvs, kv);
	free(kv->key);
	free(kv->val);
	free(kv);
}

static void
kv_clear(struct node *n)
{
	struct kv *kv, *next;

	RB_FOREACH_SAFE(kv, kvtree, &n->kvs, next)
		kv_del(n, kv);
}

/* The keys that begin with pfx, in order: the tree keeps them together. */
static struct kv *
kv_from(struct kv *kv, const char *pfx)
{
	return kv != NULL && strncmp(kv->key, pfx, strlen(pfx)) == 0 ? kv :
	    NULL;
}

static struct kv *
kv_first(struct node *n, const char *pfx)
{
	struct kv k = { .key = (char *)pfx };

	return kv_from(RB_NFIND(kvtree, &n->kvs, &k), pfx);
}

#define KV_PREFIX_FOREACH(kv, n, pfx)					\
	for ((kv) = kv_first((n), (pfx)); (kv) != NULL;			\
	    (kv) = kv_from(RB_NEXT(kvtree, &(n)->kvs, (kv)), (pfx)))

/* How many keys begin with pfx. */
static unsigned
kv_count(struct node *n, const char *pfx)
{
	struct kv *kv;
	unsigned c = 0;

	KV_PREFIX_FOREACH(kv, n, pfx)
		c++;
	return c;
}

/* Is key round R's last call ("r/R/lastcall")? */
static bool
lastcall_key(const char *key, unsigned *round)
{
	const char *slash = strrchr(key, '/');

	return sscanf(key, "r/%u/lastcall", round) == 1 && slash != NULL &&
	    strcmp(slash, "/lastcall") == 0;
}

/*
 * Apply one kv of a range (initial) or of a watch event (del: it was
 * deleted).  The copy's revision is that of the last event applied, or of
 * the last read; events at or below the read's are old news (one write
 * may bring several events of one revision).
 */
static void
apply(struct node *n, json_t *jkv, bool del, bool initial)
{
	char key[1024], *val;
	const char *b64;
	size_t plen = strlen(n->prefix), cap;
	long long rev;
	struct kv *kv;
	unsigned round;

	if (etcd_unb64(json_object_get(jkv, "key"), key, sizeof(key)) < 0 ||
	    strncmp(key, n->prefix, plen) != 0) {
		warn_msg("etcd: a key outside %s or not base64: ignored",
		    n->prefix);
		return;
	}
	/* What a read since brought already: the watch is behind it. */
	if (etcd_int(jkv, "mod_revision", &rev) == 0 && rev > 0) {
		if (rev <= n->read_rev && !initial)
			return;
		if (!initial && rev > n->rev)
			n->rev = rev;
	}
	kv = kv_get(n, key + plen);
	if (del) {
		if (kv != NULL)
			kv_del(n, kv);
		if (lastcall_key(key + plen, &round))
			n->lastcall_gone = round;
		return;
	}
	/* Three bytes for every four characters of base64, and the NUL. */
	b64 = json_string_value(json_object_get(jkv, "value"));
	cap = (b64 != NULL ? strlen(b64) / 4 * 3 : 0) + 4;
	if (cap > VALUE_MAX + 4) {
		warn_msg("etcd: %s%s: value over %u bytes: ignored", n->prefix,
		    key + plen, VALUE_MAX);
		return;
	}
	if ((val = malloc(cap)) == NULL) {
		warn_sys("etcd: %s", key);
		return;
	}
	if (etcd_unb64(json_object_get(jkv, "value"), val, cap) < 0) {
		warn_msg("etcd: %s%s: value not base64: ignored", n->prefix,
		    key + plen);
		free(val);
		return;
	}
	if (kv == NULL) {
		if ((kv = calloc(1, sizeof(*kv))) == NULL ||
		    (kv->key = strdup(key + plen)) == NULL) {
			free(kv);
			free(val);
			warn_sys("etcd: %s", key);
			return;
		}
		RB_INSERT(kvtree, &n->kvs, kv);
	}
	free(kv->val);
	kv->val = val;
	if (etcd_int(jkv, "create_revision", &kv->create) == -1 ||
	    etcd_int(jkv, "mod_revision", &kv->mod) == -1 ||
	    etcd_int(jkv, "lease", &kv->lease) == -1)
		warn_msg("etcd: %s%s: a revision or lease that is not an "
		    "int64", n->prefix, key + plen);
}

static bool
header_rev(json_t *reply, long long *rev)
{
	return etcd_int(json_object_get(reply, "header"), "revision", rev) ==
	    0 && *rev > 0;
}

/* ---- parsed documents ---- */

static void
state_read(struct node *n, struct state *st)
{
	struct kv *kv = kv_get(n, "h/state");
	json_error_t je;
	const char *status = "";
	json_int_t round = 0, min = 0, max = 0, lc = 0;

	memset(st, 0, sizeof(*st));
	if (kv == NULL)
		return;
	if ((st->doc = json_loads(kv->val, 0, &je)) == NULL ||
	    json_unpack_ex(st->doc, &je, 0, "{s:I, s:s, s:I, s:I, s:I}",
	    "round", &round, "status", &status, "min", &min, "max", &max,
	    "last_call_ms", &lc) == -1 || round < 0 || round > 1000000000 ||
	    min < 1 || max < min || max > MAX_MEMBERS || lc < 0) {
		warn_msg("etcd: %sstate: %s: not a state esv wrote; ignored",
		    n->prefix, st->doc == NULL ? je.text : "bad fields");
		json_decref(st->doc);
		st->doc = NULL;
		return;
	}
	st->present = true;
	st->mod = kv->mod;
	st->round = round;
	st->status = strcmp(status, "running") == 0 ? ST_RUNNING :
	    strcmp(status, "closed") == 0 ? ST_CLOSED : ST_OPEN;
	st->min = min;
	st->max = max;
	st->last_call_ms = lc;
	st->expect = json_object_get(st->doc, "expect");
	if (!json_is_array(st->expect))
		st->expect = NULL;
}

static void
state_done(struct state *st)
{
	json_decref(st->doc);
}

/*
 * The round's addresses in group rank 0's place (for its agent store,
 * told as MEMBER lines before ROUND): numeric ones only, as many as fit.
 */
static void
members_parse(struct node *n, json_t *a)
{
	const char *s;
	size_t i, len = 0, l;

	n->members[0] = '\0';
	if (!json_is_array(a))
		return;
	for (i = 0; i < json_array_size(a); i++) {
		s = json_string_value(json_array_get(a, i));
		if (s == NULL || !rdzv_addr_ok(s) ||
		    (l = strlen(s)) + 2 > sizeof(n->members) - len)
			continue;
		memcpy(n->members + len, s, l);
		len += l;
		n->members[len++] = '\n';
		n->members[len] = '\0';
	}
}

/*
 * A node's place in a round, as the leader wrote it: what ROUND says.
 * Anything else is refused, so that nothing esv did not write reaches
 * the supervisor.
 */
static bool
place_parse(struct node *n, const char *val, unsigned round,
    struct rdzv_round_msg *r)
{
	json_int_t v[7];
	const char *addr;
	json_error_t je;
	json_t *j;
	bool ok;

	memset(r, 0, sizeof(*r));
	ok = (j = json_loads(val, 0, &je)) != NULL && json_unpack_ex(j, &je, 0,
	    "{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "group_rank", &v[0],
	    "group_world_size", &v[1], "base_rank", &v[2], "world_size", &v[3],
	    "base_role_rank", &v[4], "role_world_size", &v[5], "master_addr",
	    &addr, "master_port", &v[6]) == 0 && v[1] >= 1 &&
	    v[1] <= MAX_MEMBERS && v[0] >= 0 && v[0] < v[1] && v[3] >= 1 &&
	    v[3] <= INT32_MAX && v[2] >= 0 && v[2] < v[3] && v[5] >= 1 &&
	    v[5] <= v[3] && v[4] >= 0 && v[4] < v[5] && v[6] >= 0 &&
	    v[6] <= 65535 && rdzv_addr_ok(addr) &&
	    strlen(addr) < sizeof(r->master_addr);
	if (ok) {
		r->round = round;
		r->group_rank = v[0];
		r->group_world_size = v[1];
		r->base_rank = v[2];
		r->world_size = v[3];
		r->base_role_rank = v[4];
		r->role_world_size = v[5];
		strlcpy(r->master_addr, addr, sizeof(r->master_addr));
		r->master_port = v[6];
		members_parse(n, json_object_get(j, "members"));
	} else
		warn_msg("etcd: %sa/%u/%s: not a place esv wrote; ignored",
		    n->prefix, round, n->me.node_id);
	json_decref(j);
	return ok;
}

/* ---- writes ---- */

/* The range of every key under pfx (relative to the prefix). */
static json_t *
prefix_of(struct node *n, const char *pfx)
{
	char key[1024], end[1024];

	snprintf(key, sizeof(key), "%s%s", n->prefix, pfx);
	strlcpy(end, key, sizeof(end));
	end[strlen(end) - 1]++;
	return json_pack("{s:o, s:o}", "key", etcd_b64(key, strlen(key)),
	    "range_end", etcd_b64(end, strlen(end)));
}

static json_t *
b64key(struct node *n, const char *rel)
{
	char key[1024];

	snprintf(key, sizeof(key), "%s%s", n->prefix, rel);
	return etcd_b64(key, strlen(key));
}

static json_t *
op_put(struct node *n, const char *rel, const char *val, bool leased)
{
	json_t *put = json_pack("{s:o, s:o}", "key", b64key(n, rel), "value",
	    etcd_b64(val, strlen(val)));
	char id[32];

	if (leased) {
		snprintf(id, sizeof(id), "%lld", n->lease);
		json_object_set_new(put, "lease", json_string(id));
	}
	return json_pack("{s:o}", "request_put", put);
}

/* Delete a key, or every key under rel when rel ends in '/'. */
static json_t *
op_del(struct node *n, const char *rel)
{
	char end[1024];
	size_t len;
	json_t *del;

	del = json_pack("{s:o}", "key", b64key(n, rel));
	len = strlen(rel);
	if (len > 0 && rel[len - 1] == '/') {
		snprintf(end, sizeof(end), "%s%s", n->prefix, rel);
		end[strlen(end) - 1]++;
		json_object_set_new(del, "range_end", etcd_b64(end,
		    strlen(end)));
	}
	return json_pack("{s:o}", "request_delete_range", del);
}

static json_t *
cmp_mod(struct node *n, const char *rel, long long mod)
{
	char v[32];

	snprintf(v, sizeof(v), "%lld", mod);
	/* A key that does not exist has mod revision 0. */
	return json_pack("{s:o, s:s, s:s, s:s}", "key", b64key(n, rel),
	    "target", "MOD", "result", "EQUAL", "mod_revision", v);
}

static void	refresh(struct node *);
static void	txn_body(struct node *, json_t *body, then_fn *then,
		    bool echo);

/*
 * A compare failed on a copy behind etcd.  If the watch has not brought
 * the winner's write yet, read the keys now rather than wait: the
 * revision etcd answered with may be of another job's write, which our
 * watch never sees.
 */
static void
lost_race(struct node *n, json_t *reply)
{
	long long rev;

	n->need_rev = 0;
	if (header_rev(reply, &rev) && rev > n->rev)
		refresh(n);
}

static void
on_txn(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	then_fn *then = n->then;
	long long rev;
	bool ok = false;

	n->busy = false;
	n->then = NULL;
	if (reply == NULL)
		warn_msg("etcd: a write was refused: %s", err);
	else {
		ok = json_is_true(json_object_get(reply, "succeeded"));
		/*
		 * Decide again only from a copy that has seen our write, if
		 * the copy is to see it at all (a follower's join is not).
		 */
		if (ok && n->echo && header_rev(reply, &rev) &&
		    rev > n->need_rev)
			n->need_rev = rev;
	}
	if (reply != NULL && !ok && n->echo)
		lost_race(n, reply);
	else if (reply != NULL && !ok)
		n->need_rev = 0;
	if (then != NULL)
		then(n, ok, reply);
	evaluate(n);
	if (n->shutting && !n->busy)
		shutdown_step(n);
}

/*
 * echo: the write is of keys in the copy's scope, so that the copy is to
 * see it before anything is decided again; a lost race (echo or not)
 * reads the copy again, unless the caller is content to wait for the
 * watch (n->echo false and no refresh: an election lost).
 */
static void
txn(struct node *n, json_t *compare, json_t *success, then_fn *then,
    bool echo)
{
	txn_body(n, json_pack("{s:o, s:o}", "compare", compare, "success",
	    success), then, echo);
}

static void
txn_body(struct node *n, json_t *body, then_fn *then, bool echo)
{
	n->busy = true;
	n->echo = echo;
	n->then = then;
	if (body == NULL || etcd_call(n->e, "/v3/kv/txn", body, on_txn, n) ==
	    -1) {
		n->busy = false;
		warn_msg("etcd: out of memory for a write");
	}
}

static char *
state_json(const struct state *st, unsigned round, const char *status,
    json_t *expect)
{
	json_t *j = json_pack("{s:I, s:s, s:I, s:I, s:I}", "round",
	    (json_int_t)round, "status", status, "min", (json_int_t)st->min,
	    "max", (json_int_t)st->max, "last_call_ms",
	    (json_int_t)st->last_call_ms);
	char *s;

	if (expect != NULL)
		json_object_set_new(j, "expect", expect);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

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

/* ---- what the supervisor is told ---- */

static void
say_n(struct node *n, enum rdzv_verb v, unsigned x)
{
	struct rdzv_msg m = { .verb = v };

	m.u.n = x;
	n->ops.say(n->ops.ctx, &m);
}

/* The nodes waiting for room, as the leader last wrote it. */
static unsigned
waiting_count(struct node *n)
{
	struct kv *kv = kv_get(n, "h/waiting");
	unsigned long v;
	char *end;

	if (kv == NULL)
		return 0;
	v = strtoul(kv->val, &end, 10);
	return *end == '\0' && v <= MAX_MEMBERS ? (unsigned)v : 0;
}

static void
say_joined(struct node *n, unsigned round, unsigned participants)
{
	struct rdzv_msg m = { .verb = RV_JOINED };

	m.u.joined.round = round;
	m.u.joined.participants = participants;
	m.u.joined.waiting = waiting_count(n);
	n->ops.say(n->ops.ctx, &m);
	n->told_joined = round + 1;
}

static void
say_err(struct node *n, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say_err(struct node *n, const char *code, const char *fmt, ...)
{
	struct rdzv_msg m = { .verb = RV_ERR };
	va_list ap;

	strlcpy(m.u.err.code, code, sizeof(m.u.err.code));
	va_start(ap, fmt);
	vsnprintf(m.u.err.text, sizeof(m.u.err.text), fmt, ap);
	va_end(ap);
	n->ops.say(n->ops.ctx, &m);
}

static void
say_place(struct node *n, const struct rdzv_round_msg *r)
{
	struct rdzv_msg m = { .verb = RV_MEMBER };
	const char *p, *nl;

	m.u.member.round = r->round;
	for (p = n->members; r->group_rank == 0 &&
	    (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		if ((size_t)(nl - p) >= sizeof(m.u.member.addr))
			continue;
		memcpy(m.u.member.addr, p, nl - p);
		m.u.member.addr[nl - p] = '\0';
		n->ops.say(n->ops.ctx, &m);
	}
	m = (struct rdzv_msg){ .verb = RV_ROUND };
	m.u.round = *r;
	info_msg("etcd: job %s: round %u: group rank %u of %u, world %u",
	    n->me.run_id, r->round, r->group_rank, r->group_world_size,
	    r->world_size);
	n->ops.say(n->ops.ctx, &m);
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

/* ---- the steps ---- */

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
	evaluate(n);
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
		evaluate(n);
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

static char *
join_json(struct node *n)
{
	json_t *j = json_pack("{s:I, s:s, s:s, s:I}", "nproc",
	    (json_int_t)n->me.nproc, "role", n->me.role, "addr", n->me.addr,
	    "port", (json_int_t)n->me.port);
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return s;
}

/* ---- every node's own steps: its keys, and what it tells ---- */

static json_t *
cmp_absent(struct node *n, const char *rel)
{
	return json_pack("{s:o, s:s, s:s, s:s}", "key", b64key(n, rel),
	    "target", "CREATE", "result", "EQUAL", "create_revision", "0");
}

static json_t *
op_count(struct node *n, const char *pfx)
{
	json_t *r = prefix_of(n, pfx);

	json_object_set_new(r, "count_only", json_true());
	return json_pack("{s:o}", "request_range", r);
}

/* The version of the one key the i-th response of a txn read. */
static unsigned
reply_version(json_t *reply, size_t i)
{
	json_t *range = json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_range");
	long long version = 0;

	if (etcd_int(json_array_get(json_object_get(range, "kvs"), 0),
	    "version", &version) == -1 || version < 0)
		version = 0;
	return version > MAX_MEMBERS ? MAX_MEMBERS : (unsigned)version;
}

/* The reply of the txn run as the i-th operation of a txn. */
static json_t *
reply_txn(json_t *reply, size_t i)
{
	return json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_txn");
}

/* The count of the range answered as the i-th response of a txn. */
static unsigned
reply_count(json_t *reply, size_t i)
{
	json_t *range = json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_range");
	long long count = 0;

	/* etcd omits a count of zero. */
	if (etcd_int(range, "count", &count) == -1 || count < 0 ||
	    count > MAX_MEMBERS)
		count = 0;
	return (unsigned)count;
}

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
		evaluate(n);
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

static void
exited(struct node *n, bool ok, json_t *reply)
{
	if (ok)
		n->exited = n->cur + 1;
	/* h/state changed under the compare: read it rather than write again. */
	else if (reply != NULL)
		lost_race(n, reply);
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

static void
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

static void
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

/* Our round is the one that runs (or ran: closed). */
static bool
round_stands(const struct node *n, const struct state *st)
{
	return st->present && st->round == n->cur && st->status != ST_OPEN;
}

/*
 * The exit key has no lease: a node that finished and is then lost
 * still counts as finished.  The compare on h/state keeps a node late
 * from a stall from marking a round that was superseded meanwhile.
 */
static json_t *
exit_put(struct node *n)
{
	char key[512];

	snprintf(key, sizeof(key), "r/%u/exit/%s", n->cur, n->me.node_id);
	return op_put(n, key, "", false);
}

static void
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

static void
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
static void
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

/* ---- the leader's decisions, from its copy of every key ---- */

static void	set_scope(struct node *, bool full);

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
 * The leader marks the barrier of round c as waiting for lost, a member
 * gone silent (its lease ran out) before it said it had finished: it may
 * be alive, its workers finished, its supervisor stopped.  The nodes in
 * the barrier are told (LOST) and wait for it until their own
 * exit_barrier_timeout (esv-supervise(8), "Exit barrier").
 */
static void
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
static void
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

static void
evaluate(struct node *n)
{
	struct state st;

	if (node_fence_check(n) || !n->ready || n->busy || n->stale ||
	    n->lease == 0 || n->rev < n->need_rev)
		return;
	/*
	 * A lease not confirmed within its TTL may be gone (we were
	 * stopped, or etcd was out of reach): nothing is decided on it
	 * until etcd says.
	 */
	if (mono_ms() >= n->lease_ok_at + n->ttl_ms)
		return;
	state_read(n, &st);
	if (n->close_wanted)
		close_step(n, &st);
	else if (n->shutting)
		;
	else switch (n->phase) {
	case PH_JOINING:
		join_step(n, &st);
		break;
	case PH_REATTACH:
		reattach_step(n, &st);
		break;
	case PH_RUNNING:
		running_step(n, &st);
		break;
	case PH_BARRIER:
		barrier_step(n, &st);
		break;
	case PH_IDLE:
		break;
	}
	if (!n->busy && !n->shutting && !n->close_wanted)
		lead_step(n, &st);
	state_done(&st);
	if (n->shutting && !n->busy)
		shutdown_step(n);
}

/* ---- the copy: one range, then a watch from its revision ---- */

static void	watch_open(struct node *);
static void	sync_start(struct node *);

static bool
on_watch_msg(void *ctx, json_t *res)
{
	struct node *n = ctx;
	json_t *events, *ev;
	long long compact;
	size_t i;

	if (json_is_true(json_object_get(res, "canceled"))) {
		etcd_int(res, "compact_revision", &compact);
		warn_msg("etcd: watch of %s canceled (%s): reading it again",
		    n->prefix, compact > 0 ? "compacted" : "by the member");
		/* What the watch missed is gone from etcd's history. */
		n->resync = true;
		return false;
	}
	/* Its revision is etcd's now, not what the watch has sent yet. */
	if (json_is_true(json_object_get(res, "created")))
		return true;
	events = json_object_get(res, "events");
	json_array_foreach(events, i, ev)
		apply(n, json_object_get(ev, "kv"), json_string_value(
		    json_object_get(ev, "type")) != NULL && strcmp(
		    json_string_value(json_object_get(ev, "type")), "DELETE") ==
		    0, false);
	n->in_watch = true;
	evaluate(n);
	n->in_watch = false;
	return !n->rescope;
}

static void
on_watch_end(void *ctx, const char *why)
{
	struct node *n = ctx;

	n->watch = NULL;
	if (n->rescope) {
		n->rescope = false;
		if (!n->ranging)
			sync_start(n);
		return;
	}
	if (n->resync) {
		n->resync = false;
		n->ready = false;
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
		rearm(n);
		return;
	}
	warn_msg("etcd: watch of %s ended (%s): watching again from revision "
	    "%lld", n->prefix, why, n->rev + 1);
	n->watch_at = mono_ms() + WATCH_RETRY_MS;
	rearm(n);
}

/* What the copy holds: every key of the job (leading), or h/. */
static json_t *
prefix_range(struct node *n)
{
	return prefix_of(n, n->full ? "" : "h/");
}

/*
 * Lead or follow: the copy is read again in its new scope and the watch
 * opened again from that read.  A read in flight for the other scope is
 * dropped on arrival (range_full, refresh_full).
 */
static void
set_scope(struct node *n, bool full)
{
	if (n->full == full)
		return;
	n->full = full;
	if (full)
		info_msg("etcd: job %s: this node leads: it decides for every "
		    "node", n->me.run_id);
	else
		info_msg("etcd: job %s: another node leads", n->me.run_id);
	n->ready = false;
	n->resync = false;
	n->lastcall_gone = -1;
	/* A stream is not closed from its own callback: it ends it. */
	if (n->in_watch && n->watch != NULL) {
		n->rescope = true;
		return;
	}
	etcd_stream_close(n->watch);
	n->watch = NULL;
	if (!n->ranging)
		sync_start(n);
}

static void
watch_open(struct node *n)
{
	json_t *req = prefix_range(n);
	char rev[32];

	snprintf(rev, sizeof(rev), "%lld", n->rev + 1);
	json_object_set_new(req, "start_revision", json_string(rev));
	n->watch_at = 0;
	n->watch = etcd_stream_open(n->e, "/v3/watch", json_pack("{s:o}",
	    "create_request", req), on_watch_msg, on_watch_end, n);
	if (n->watch == NULL)
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
}

static void
on_range(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	json_t *kvs, *kv;
	size_t i;

	n->ranging = false;
	if (n->range_full != n->full) {
		sync_start(n);
		return;
	}
	if (reply == NULL) {
		warn_msg("etcd: reading %s: %s", n->prefix, err);
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
		rearm(n);
		return;
	}
	kv_clear(n);
	kvs = json_object_get(reply, "kvs");
	json_array_foreach(kvs, i, kv)
		apply(n, kv, false, true);
	header_rev(reply, &n->rev);
	n->read_rev = n->rev;
	n->ready = true;
	n->stale = false;
	watch_open(n);
	evaluate(n);
}

/*
 * A fresh read after a lost race, the watch left running.  A read older
 * than the copy is dropped (the watch overtook it); a newer one replaces
 * the copy, and a last call that it no longer has has expired.
 */
static void
on_refresh(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	struct kv *kv;
	json_t *kvs, *j;
	long long rev;
	unsigned round, lc[8], nlc = 0, i;
	size_t x;

	n->stale = false;
	if (n->refresh_full != n->full) {
		evaluate(n);
		return;
	}
	if (reply == NULL || !header_rev(reply, &rev)) {
		warn_msg("etcd: reading %s: %s", n->prefix, err != NULL ? err :
		    "no revision in the reply");
		evaluate(n);
		return;
	}
	if (rev > n->rev) {
		KV_PREFIX_FOREACH(kv, n, "r/")
			if (nlc < 8 && lastcall_key(kv->key, &round))
				lc[nlc++] = round;
		kv_clear(n);
		kvs = json_object_get(reply, "kvs");
		json_array_foreach(kvs, x, j)
			apply(n, j, false, true);
		n->rev = n->read_rev = rev;
		for (i = 0; i < nlc; i++)
			if (kv_getf(n, "r/%u/lastcall", lc[i]) == NULL)
				n->lastcall_gone = lc[i];
	}
	evaluate(n);
}

static void
refresh(struct node *n)
{
	n->stale = true;
	n->refresh_full = n->full;
	if (etcd_call(n->e, "/v3/kv/range", prefix_range(n), on_refresh, n) ==
	    -1)
		n->stale = false;
}

static void
sync_start(struct node *n)
{
	n->ranging = true;
	n->range_full = n->full;
	n->watch_at = 0;
	if (etcd_call(n->e, "/v3/kv/range", prefix_range(n), on_range, n) ==
	    -1) {
		n->ranging = false;
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
	}
}

/* ---- the lease ---- */

/*
 * Our lease is gone (expired while we were stopped or cut off): our keys
 * went with it and the others may run a round without us, so the
 * workers stop before anything else is done.
 */
static void
fence(struct node *n, const char *why)
{
	warn_msg("etcd: job %s: lease lost (%s)%s", n->me.run_id, why,
	    n->phase == PH_RUNNING ? ": stopping the workers" :
	    n->phase == PH_BARRIER ? ": back in the exit barrier with a new "
	    "one" : "");
	if (n->phase == PH_RUNNING) {
		say_n(n, RV_RESTART, n->cur + 1);
		n->phase = PH_IDLE;
	}
	/*
	 * Our exit key outlives the lease: the workers' success stands, and
	 * the round, if still current, takes us back as finished.
	 */
	if (n->phase == PH_BARRIER) {
		n->me.state = RS_DONE;
		n->phase = PH_REATTACH;
	}
	n->lease = 0;
	n->keepalive_asked = false;
	n->joined = n->waited = n->exited = n->wanted = n->fetched = 0;
	set_scope(n, false);
}

static void	lease_grant(struct node *);

static void
on_grant(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	long long id, ttl;

	n->lease_asked = false;
	if (reply == NULL || etcd_int(reply, "ID", &id) == -1 || id == 0 ||
	    etcd_int(reply, "TTL", &ttl) == -1) {
		warn_msg("etcd: lease grant: %s", err != NULL ? err :
		    "no ID in the reply");
		rearm(n);
		return;
	}
	n->lease = id;
	n->lease_ok_at = n->lease_sent_at;
	n->doubt_logged = false;
	/*
	 * etcd's TTLs are whole seconds, and it raises one below its minimum
	 * (1.5 election timeouts, rounded up: 2 s by default): the lease
	 * that expires is the one etcd granted, and the fence keeps to it.
	 */
	if (ttl > 0 && ttl <= 3600 && ttl * 1000 > n->ttl_ms) {
		info_msg("etcd: lease TTL %lld s (%u ms asked; etcd's TTLs are "
		    "whole seconds, at least its minimum)", ttl, n->ttl_ms);
		n->ttl_ms = ttl * 1000;
	}
	evaluate(n);
	rearm(n);
}

static void
lease_grant(struct node *n)
{
	n->lease_asked = true;
	n->lease_sent_at = mono_ms();
	if (etcd_call(n->e, "/v3/lease/grant", json_pack("{s:I}", "TTL",
	    (json_int_t)((n->ttl_ms + 999) / 1000)), on_grant, n) == -1)
		n->lease_asked = false;
}

static void
on_keepalive(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	json_t *res = json_object_get(reply, "result");
	long long id, ttl;

	n->keepalive_asked = false;
	if (reply == NULL) {
		warn_msg("etcd: lease keep-alive: %s", err);
		fence(n, err);
		rearm(n);
		return;
	}
	if (etcd_int(res, "ID", &id) == -1 || etcd_int(res, "TTL", &ttl) ==
	    -1 || id != n->lease)
		return;
	/* etcd answers a lease it has expired with no TTL. */
	if (ttl <= 0) {
		fence(n, "etcd expired it");
		rearm(n);
		return;
	}
	n->lease_ok_at = n->lease_sent_at;
	if (n->doubt_logged)
		info_msg("etcd: job %s: lease confirmed again", n->me.run_id);
	n->doubt_logged = false;
	evaluate(n);
	rearm(n);
}

static void
keepalive(struct node *n)
{
	char id[32];

	snprintf(id, sizeof(id), "%lld", n->lease);
	n->keepalive_asked = true;
	n->lease_sent_at = mono_ms();
	if (etcd_call(n->e, "/v3/lease/keepalive", json_pack("{s:s}", "ID", id),
	    on_keepalive, n) == -1)
		n->keepalive_asked = false;
}

static void
on_revoke(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;

	(void)reply;
	if (err != NULL)
		warn_msg("etcd: revoking the lease: %s", err);
	n->lease = 0;
	if (!n->gone) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
	}
}

static void
left_done(struct node *n, bool ok, json_t *reply)
{
	(void)ok;
	(void)reply;
	n->left = 0;
}

/*
 * Once, whatever etcd answers: the way out is bounded.  Only while the
 * round is still the current one, so that no later round is restarted
 * for a node of an older one.
 */
static void
left_put(struct node *n)
{
	struct state st;
	char key[512];

	state_read(n, &st);
	if (st.present && st.round + 1 == n->left && st.status ==
	    ST_RUNNING) {
		snprintf(key, sizeof(key), "r/%u/left/%s", st.round,
		    n->me.node_id);
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st.mod)),
		    json_pack("[o]", op_put(n, key, "", false)), left_done,
		    false);
	} else
		n->left = 0;
	state_done(&st);
}

static void
shutdown_step(struct node *n)
{
	char id[32];

	if (n->busy || n->gone)
		return;
	if (n->close_wanted && n->lease != 0 && n->ready) {
		evaluate(n);
		if (n->busy)
			return;
	}
	if (n->lease == 0) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
		return;
	}
	if (n->left != 0 && n->ready) {
		left_put(n);
		if (n->busy)
			return;
	}
	snprintf(id, sizeof(id), "%lld", n->lease);
	n->busy = true;
	if (etcd_call(n->e, "/v3/lease/revoke", json_pack("{s:s}", "ID", id),
	    on_revoke, n) == -1) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
	}
}

/* ---- time ---- */

/*
 * The supervisor runs workers with ranks of ours: it was told a round
 * (RUNNING), or came back with one it runs (REATTACH).  In the exit
 * barrier they have all finished.
 */
static bool
workers_run(const struct node *n)
{
	return n->phase == PH_RUNNING || (n->phase == PH_REATTACH &&
	    n->me.state == RS_RUNNING);
}

/*
 * etcd expires the lease no sooner than lease_ok_at + ttl_ms; the
 * workers are to be dead by then, so they are stopped a grace earlier
 * (SIGTERM, then SIGKILL at the grace's end: rdzv_fence_grace_ms).  A
 * supervisor that fences by our end itself (node_late_fence) does so a
 * grace before it, and its guardian a quarter grace before it: our
 * giving up, a hang-up and a revocation, must come after both, and
 * still before etcd may expire the lease, or a node cut off from etcd
 * would restart its workers sooner than it has to.
 */
static long long
fence_at(const struct node *n)
{
	unsigned g = rdzv_fence_grace_ms(n->ttl_ms);

	return n->lease_ok_at + n->ttl_ms - (n->late_fence ? g / 4 : g);
}

void
node_late_fence(struct node *n)
{
	n->late_fence = true;
	rearm(n);
}

long long
node_lease_end(const struct node *n)
{
	if (n->lease == 0 || n->fenced || n->shutting || n->gone)
		return 0;
	return fence_at(n);
}

/*
 * The keep-alive's period: etcd's clients send one a third of a TTL.
 * While workers run, the end we tell the supervisor (node_lease_end) is
 * what its guardian kills them by, a quarter grace early, if it stops:
 * at a third, that kill could come 1.13 s into a stall with the defaults
 * (2 s TTL, its fifth as grace), too near the second in which a stall
 * is to cost nothing (issue 41).  A quarter makes it 1.3 s.
 */
static long long
keepalive_due(const struct node *n)
{
	return n->lease_ok_at + n->ttl_ms / (workers_run(n) ? 4 : 3);
}

bool
node_fence_check(struct node *n)
{
	long long now = mono_ms(), end;
	double wend;
	time_t t;
	struct tm tm;
	char at[32];

	if (n->fenced)
		return true;
	if (n->shutting || n->gone || !workers_run(n) || now < fence_at(n))
		return false;
	end = n->lease_ok_at + n->ttl_ms;
	wend = wall_now() + (end - now) / 1000.0;
	t = (time_t)wend;
	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%H:%M:%S", &tm);
	warn_msg("etcd: job %s: lease may run out at %s.%03d UTC (no "
	    "keep-alive answered for %lld ms of its %u): fencing",
	    n->me.run_id, at, (int)((wend - (double)t) * 1000), now -
	    n->lease_ok_at, n->ttl_ms);
	n->fenced = true;
	n->phase = PH_IDLE;
	n->ops.fence(n->ops.ctx);
	return true;
}

static void
rearm(struct node *n)
{
	long long at = -1, now = mono_ms(), t;

	/* On the way out the only deadline is the way out's. */
	if (n->shutting) {
		timer_arm_ms(n->timer.fd, n->shutdown_by > now ?
		    n->shutdown_by - now : 0);
		return;
	}
#define SOONER(x) do { t = (x); if (at == -1 || t < at) at = t; } while (0)
	if (n->watch_at != 0)
		SOONER(n->watch_at);
	if (n->lease != 0 && !n->keepalive_asked)
		SOONER(keepalive_due(n));
	if (n->lease != 0 && !n->doubt_logged)
		SOONER(n->lease_ok_at + n->ttl_ms);
	if (n->lease == 0 && !n->lease_asked)
		SOONER(now + WATCH_RETRY_MS);
	/* Even if etcd never answers: the calls in flight just hang. */
	if (workers_run(n) && !n->fenced)
		SOONER(fence_at(n));
#undef SOONER
	timer_arm_ms(n->timer.fd, at == -1 ? -1 : at > now ? at - now : 0);
}

static void
on_timer(struct watch *w, uint32_t events)
{
	struct node *n = w->ctx;
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	/*
	 * A wake before the deadline (an expiry of a deadline armed before
	 * the shutdown): the timer is one-shot, so it is armed again, or
	 * the 3 s would never come.
	 */
	if (n->shutting) {
		if (n->gone)
			return;
		if (now >= n->shutdown_by) {
			warn_msg("etcd: no answer to the lease's revocation: "
			    "etcd expires it in %u ms", n->ttl_ms);
			n->gone = true;
			n->ops.gone(n->ops.ctx);
		} else
			rearm(n);
		return;
	}
	/*
	 * First the lease: after a stop (SIGSTOP, a frozen VM) this is what
	 * the mono clock tells first, and the workers must stop before we
	 * act on an old copy.
	 */
	if (node_fence_check(n))
		return;
	if (n->lease != 0 && now >= n->lease_ok_at + n->ttl_ms &&
	    !n->doubt_logged) {
		warn_msg("etcd: job %s: no keep-alive answered within the "
		    "lease's TTL: deciding nothing until etcd answers",
		    n->me.run_id);
		n->doubt_logged = true;
	}
	if (n->lease == 0 && !n->lease_asked)
		lease_grant(n);
	else if (n->lease != 0 && !n->keepalive_asked &&
	    now >= keepalive_due(n))
		keepalive(n);
	if (n->watch_at != 0 && now >= n->watch_at) {
		if (!n->ready && !n->ranging)
			sync_start(n);
		else if (n->ready && n->watch == NULL)
			watch_open(n);
	}
	rearm(n);
}

/* ---- the interface ---- */

struct node *
node_new(struct etcd *e, struct loop *lp, const char *prefix,
    const char *run_id, unsigned ttl_ms, const struct node_ops *ops)
{
	struct node *n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->e = e;
	n->lp = lp;
	n->ops = *ops;
	n->ttl_ms = ttl_ms;
	/* A supervisor back with running workers has until then. */
	n->lease_ok_at = mono_ms();
	n->told_waiting = -1;
	n->lastcall_gone = -1;
	RB_INIT(&n->kvs);
	snprintf(n->prefix, sizeof(n->prefix), "%s/%s/", prefix, run_id);
	n->timer = (struct watch){ .fn = on_timer, .ctx = n };
	if ((n->timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(lp, &n->timer, EPOLLIN) == -1) {
		free(n);
		return NULL;
	}
	lease_grant(n);
	sync_start(n);
	rearm(n);
	return n;
}

void
node_free(struct node *n)
{
	if (n == NULL)
		return;
	etcd_stream_close(n->watch);
	kv_clear(n);
	json_decref(n->steps);
	loop_del(n->lp, &n->timer);
	close(n->timer.fd);
	free(n);
}

void
node_join(struct node *n, const struct rdzv_join *j)
{
	n->me = *j;
	if (j->state == RS_NEW) {
		n->phase = PH_JOINING;
		n->target = j->round;
		n->told_joined = 0;
	} else {
		n->phase = PH_REATTACH;
		n->cur = j->round;
		n->group_rank = j->group_rank;
	}
	evaluate(n);
}

void
node_barrier(struct node *n, unsigned round)
{
	if (n->phase != PH_RUNNING || round != n->cur) {
		/* It crossed a RESTART on its way: that one decides. */
		if (round < n->cur || n->phase == PH_IDLE ||
		    n->phase == PH_JOINING)
			return;
		say_err(n, "proto", "BARRIER %u: not running that round",
		    round);
		return;
	}
	n->phase = PH_BARRIER;
	evaluate(n);
}

void
node_close_job(struct node *n)
{
	n->close_wanted = true;
	n->phase = PH_IDLE;
	evaluate(n);
}

void
node_hangup(struct node *n)
{
	if (!n->shutting && workers_run(n))
		n->left = n->cur + 1;
}

void
node_shutdown(struct node *n)
{
	if (n->shutting)
		return;
	n->shutting = true;
	n->shutdown_by = mono_ms() + SHUTDOWN_MS;
	rearm(n);
	shutdown_step(n);
}
