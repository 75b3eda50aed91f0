/*
 * The node's copy of the job's keys, relative to the prefix, in a tree
 * that keeps a prefix's keys together; a kv of a range or watch event
 * applied to it; and the documents esv wrote, parsed from it (the state,
 * a place), refusing anything else.  The bottom layer: it calls nothing
 * of the node.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"

/*
 * Of one value: esv's own are small (a place, a join, the state with the
 * ids a restart expects back, some 80 to 400 bytes an id); etcd takes
 * requests of 1.5 MiB by default.
 */
#define VALUE_MAX	(4u << 20)

static int
kv_cmp(const struct kv *a, const struct kv *b)
{
	return strcmp(a->key, b->key);
}

RB_GENERATE(kvtree, kv, entry, kv_cmp)

struct kv *
kv_get(struct node *n, const char *key)
{
	struct kv k = { .key = (char *)key };

	return RB_FIND(kvtree, &n->kvs, &k);
}

struct kv *
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

void
kv_clear(struct node *n)
{
	struct kv *kv, *next;

	RB_FOREACH_SAFE(kv, kvtree, &n->kvs, next)
		kv_del(n, kv);
}

/* The keys that begin with pfx, in order: the tree keeps them together. */
struct kv *
kv_from(struct kv *kv, const char *pfx)
{
	return kv != NULL && strncmp(kv->key, pfx, strlen(pfx)) == 0 ? kv :
	    NULL;
}

struct kv *
kv_first(struct node *n, const char *pfx)
{
	struct kv k = { .key = (char *)pfx };

	return kv_from(RB_NFIND(kvtree, &n->kvs, &k), pfx);
}

/* How many keys begin with pfx. */
unsigned
kv_count(struct node *n, const char *pfx)
{
	struct kv *kv;
	unsigned c = 0;

	KV_PREFIX_FOREACH(kv, n, pfx)
		c++;
	return c;
}

/* Is key round R's last call ("r/R/lastcall")? */
bool
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
void
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

bool
header_rev(json_t *reply, long long *rev)
{
	return etcd_int(json_object_get(reply, "header"), "revision", rev) ==
	    0 && *rev > 0;
}

void
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

void
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
bool
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
