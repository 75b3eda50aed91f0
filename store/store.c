/*
 * torch's TCPStore protocol (esv-stored(8) has the wire, command by
 * command).  Every integer is 8 bytes in host order, every string a u64
 * length and its bytes.  A connection speaks torch 1.13's dialect (the
 * first request is a command) or the newer one (the first five bytes are
 * VALIDATE and its magic); the commands differ only in their numbers, so
 * both map onto one set here.
 *
 * A request is parsed only once all of it has arrived, from the start of
 * what is buffered, without copying: a value's bytes are not looked at
 * until its last one is in, so a big value costs one parse.
 */
#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "store.h"

#define VALIDATE_MAGIC	0x3C85F7CEu
#define STOP_WAITING	0
#define WAIT_CANCELED	1
#define CHECK_READY	0
#define CHECK_NOT_READY	1
#define WATCH_REGISTERED 3

enum cmd {
	C_VALIDATE, C_SET, C_COMPARE_SET, C_GET, C_ADD, C_CHECK, C_WAIT,
	C_GETNUMKEYS, C_WATCH_KEY, C_DELETE_KEY, C_APPEND, C_MULTI_GET,
	C_MULTI_SET, C_CANCEL_WAIT, C_PING, C_QUEUE_PUSH, C_QUEUE_POP,
	C_QUEUE_LEN, C_BAD
};

/* torch 1.13 (and the 2.0 additions after its 8), then the newer one. */
static const enum cmd legacy_cmds[] = {
	C_SET, C_COMPARE_SET, C_GET, C_ADD, C_CHECK, C_WAIT, C_GETNUMKEYS,
	C_WATCH_KEY, C_DELETE_KEY, C_APPEND, C_MULTI_GET, C_MULTI_SET,
	C_CANCEL_WAIT
};
static const enum cmd new_cmds[] = {
	C_VALIDATE, C_SET, C_COMPARE_SET, C_GET, C_ADD, C_CHECK, C_WAIT,
	C_GETNUMKEYS, C_DELETE_KEY, C_APPEND, C_MULTI_GET, C_MULTI_SET,
	C_CANCEL_WAIT, C_PING, C_QUEUE_PUSH, C_QUEUE_POP, C_QUEUE_LEN
};

enum dialect { D_UNKNOWN, D_LEGACY, D_NEW };

struct qitem {
	STAILQ_ENTRY(qitem)	 next;
	size_t			 len;
	uint8_t			 bytes[];
};

struct waiter;
TAILQ_HEAD(waitq, waiter);

/* A name: a value, a queue, connections waiting for it, or all three. */
struct entry {
	struct entry		*next;		/* in its bucket */
	uint64_t		 hash;
	uint8_t			*key;
	size_t			 klen;
	bool			 present;
	uint8_t			*val;
	size_t			 vlen;
	STAILQ_HEAD(, qitem)	 queue;
	size_t			 qlen;
	struct waitq		 waiters;
};

struct waiter {
	TAILQ_ENTRY(waiter)	 by_key;
	LIST_ENTRY(waiter)	 by_conn;
	struct entry		*e;
	struct store_conn	*c;
};

struct store_conn {
	LIST_ENTRY(store_conn)	 all;
	void			*conn;
	char			 peer[64];
	enum dialect		 dialect;
	uint8_t			*in;
	size_t			 inlen, incap;
	LIST_HEAD(, waiter)	 waits;
	size_t			 wait_left;	/* keys still missing */
	unsigned long		 nreq;		/* requests done */
	bool			 dead;		/* closed: input ignored */
	unsigned		 busy;		/* in store_input */
};

struct store {
	struct store_conf	 conf;
	struct store_ops	 ops;
	struct entry		**buckets;
	size_t			 nbuckets, nentries;
	size_t			 nkeys, nwaiters, nwaiting;
	size_t			 used;		/* of conf.max_bytes */
	bool			 over;		/* the last take failed */
	LIST_HEAD(, store_conn)	 conns;
};

/* A string of the input: it points into the connection's buffer. */
struct slice {
	const uint8_t	*p;
	size_t		 len;
};

void
store_conf_default(struct store_conf *conf)
{
	conf->max_key = 8 << 10;
	conf->max_value = 8 << 20;
	conf->max_request = 16 << 20;
	conf->max_nkeys = 128 << 10;
	conf->max_keys = 1 << 20;
	conf->max_waiters = 64 << 10;
	/*
	 * torch's elastic get_all WAITs on one key per rank on one
	 * connection: enough for a world of 8192, an eighth of all.
	 */
	conf->max_conn_waiters = 8 << 10;
	conf->max_queue = 64 << 10;
	/*
	 * What torch keeps here is small (NCCL ids of 128 bytes, counters,
	 * the elastic agent's keys): a world of 100000 ranks with 1 KiB of
	 * its own each is a tenth of this.  Checkpoints do not go through
	 * a store.  Room too for a few --max-value values in flight.
	 */
	conf->max_bytes = 256 << 20;
}

/* As store_mem_take; a refusal is remembered for no_room's word. */
static bool
take(struct store *st, size_t n)
{
	if (st->used > st->conf.max_bytes ||
	    n > st->conf.max_bytes - st->used) {
		st->over = true;
		return false;
	}
	st->used += n;
	return true;
}

bool
store_mem_take(struct store *st, size_t n)
{
	if (st->used > st->conf.max_bytes ||
	    n > st->conf.max_bytes - st->used)
		return false;
	st->used += n;
	return true;
}

void
store_mem_force(struct store *st, size_t n)
{
	st->used += n;
}

void
store_mem_give(struct store *st, size_t n)
{
	st->used -= n < st->used ? n : st->used;
}

size_t
store_mem_used(const struct store *st)
{
	return st->used;
}

/* A key for the log: printable, quoted, cut at 32 characters. */
static void
key_fmt(const uint8_t *p, size_t n, char *out, size_t ol)
{
	size_t i, o = 0;

	for (i = 0; i < n && i < 32 && o + 5 < ol; i++)
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
		    p[i] != '\\')
			out[o++] = p[i];
		else
			o += snprintf(out + o, ol - o, "\\x%02x", p[i]);
	if (i < n && o + 4 < ol)
		o += snprintf(out + o, ol - o, "...");
	out[o] = '\0';
}

/* ---- the table ---- */

static uint64_t
hash_of(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (n-- > 0)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static struct entry *
lookup(struct store *st, const struct slice *k)
{
	uint64_t h = hash_of(k->p, k->len);
	struct entry *e;

	for (e = st->buckets[h & (st->nbuckets - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->klen == k->len &&
		    memcmp(e->key, k->p, k->len) == 0)
			return e;
	return NULL;
}

static void
grow(struct store *st)
{
	struct entry **nb, *e, *next;
	size_t n = st->nbuckets * 2, i;

	if ((nb = calloc(n, sizeof(*nb))) == NULL)
		return;		/* longer chains, still correct */
	for (i = 0; i < st->nbuckets; i++)
		for (e = st->buckets[i]; e != NULL; e = next) {
			next = e->next;
			e->next = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
		}
	free(st->buckets);
	st->buckets = nb;
	st->nbuckets = n;
}

static struct entry *
lookup_or_add(struct store *st, const struct slice *k)
{
	struct entry *e;
	size_t b;

	if ((e = lookup(st, k)) != NULL)
		return e;
	if (!take(st, sizeof(*e) + k->len))
		return NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->key = malloc(k->len > 0 ? k->len : 1)) == NULL) {
		free(e);
		store_mem_give(st, sizeof(*e) + k->len);
		return NULL;
	}
	memcpy(e->key, k->p, k->len);
	e->klen = k->len;
	e->hash = hash_of(k->p, k->len);
	STAILQ_INIT(&e->queue);
	TAILQ_INIT(&e->waiters);
	if (st->nentries >= st->nbuckets)
		grow(st);
	b = e->hash & (st->nbuckets - 1);
	e->next = st->buckets[b];
	st->buckets[b] = e;
	st->nentries++;
	return e;
}

/* An entry that holds nothing and is waited for by nobody goes. */
static void
maybe_drop(struct store *st, struct entry *e)
{
	struct entry **pp;

	if (e->present || e->qlen > 0 || !TAILQ_EMPTY(&e->waiters))
		return;
	for (pp = &st->buckets[e->hash & (st->nbuckets - 1)]; *pp != e;
	    pp = &(*pp)->next)
		;
	*pp = e->next;
	st->nentries--;
	store_mem_give(st, sizeof(*e) + e->klen);
	free(e->key);
	free(e->val);
	free(e);
}

static bool
set_value(struct store *st, struct entry *e, const uint8_t *p, size_t n)
{
	size_t old = e->present ? e->vlen : 0;
	uint8_t *v;

	if (n > old && !take(st, n - old))
		return false;
	if ((v = malloc(n > 0 ? n : 1)) == NULL) {
		if (n > old)
			store_mem_give(st, n - old);
		return false;
	}
	if (n < old)
		store_mem_give(st, old - n);
	memcpy(v, p, n);
	free(e->val);
	e->val = v;
	e->vlen = n;
	if (!e->present)
		st->nkeys++;
	e->present = true;
	return true;
}

static bool
has(const struct entry *e)
{
	return e != NULL && (e->present || e->qlen > 0);
}

/* op on key k (n bytes) could not be had: past the budget, or malloc. */
static int
no_room(struct store *st, const char *op, const struct slice *k, size_t n,
    char *why, size_t wl)
{
	char key[140];

	key_fmt(k->p, k->len, key, sizeof(key));
	if (st->over)
		snprintf(why, wl, "%s of key \"%s\" (%zu bytes): past the "
		    "store's budget of %zu bytes (--max-bytes)", op, key, n,
		    st->conf.max_bytes);
	else
		snprintf(why, wl, "%s of key \"%s\": out of memory", op, key);
	st->over = false;
	return -1;
}

/* ---- replies ---- */

static void	conn_close(struct store *, struct store_conn *, const char *,
		    ...) __attribute__((format(printf, 3, 4)));

static bool
reply(struct store *st, struct store_conn *c, const void *p, size_t n)
{
	if (c->dead)
		return false;
	if (st->ops.send(st->ops.ctx, c->conn, p, n) == -1) {
		conn_close(st, c, "a reply past what it may have "
		    "queued (it does not read its replies, or the store is at "
		    "half its --max-bytes in replies)");
		return false;
	}
	return true;
}

static bool
reply_u8(struct store *st, struct store_conn *c, uint8_t v)
{
	return reply(st, c, &v, 1);
}

static bool
reply_i64(struct store *st, struct store_conn *c, int64_t v)
{
	return reply(st, c, &v, sizeof(v));
}

static bool
reply_bytes(struct store *st, struct store_conn *c, const void *p, size_t n)
{
	uint64_t len = n;

	return reply(st, c, &len, sizeof(len)) && (n == 0 ||
	    reply(st, c, p, n));
}

/* ---- waiting ---- */

static void
unpark(struct store *st, struct store_conn *c)
{
	struct waiter *w;
	struct entry *e;

	while ((w = LIST_FIRST(&c->waits)) != NULL) {
		LIST_REMOVE(w, by_conn);
		TAILQ_REMOVE(&w->e->waiters, w, by_key);
		e = w->e;
		free(w);
		st->nwaiters--;
		maybe_drop(st, e);
	}
	if (c->wait_left > 0)
		st->nwaiting--;
	c->wait_left = 0;
}

/* e came to be: its waiters (one, for a queue's push) count it in. */
static void
wake(struct store *st, struct entry *e, bool one)
{
	struct store_conn *c;
	struct waiter *w;

	while ((w = TAILQ_FIRST(&e->waiters)) != NULL) {
		TAILQ_REMOVE(&e->waiters, w, by_key);
		LIST_REMOVE(w, by_conn);
		c = w->c;
		free(w);
		st->nwaiters--;
		if (--c->wait_left == 0) {
			st->nwaiting--;
			reply_u8(st, c, STOP_WAITING);
		}
		if (one)
			break;
	}
}

/* ---- reading a request ---- */

struct rd {
	const uint8_t	*p;
	size_t		 n, off;
};

/* An integer of size bytes in host order: 1 read; 0 not all here yet. */
static int
rd_int(struct rd *r, void *v, size_t size)
{
	if (r->n - r->off < size)
		return 0;
	memcpy(v, r->p + r->off, size);
	r->off += size;
	return 1;
}

#define rd_u64(r, v)	rd_int((r), (v), sizeof(uint64_t))
#define rd_u32(r, v)	rd_int((r), (v), sizeof(uint32_t))

/* 1, 0, or -1 with why: longer than max. */
static int
rd_str(struct rd *r, struct slice *s, size_t max, const char *what,
    char *why, size_t wl)
{
	uint64_t len;

	if (!rd_u64(r, &len))
		return 0;
	if (len > max) {
		snprintf(why, wl, "a %s of %" PRIu64 " bytes (at most %zu)",
		    what, len, max);
		return -1;
	}
	if (r->n - r->off < len)
		return 0;
	s->p = r->p + r->off;
	s->len = len;
	r->off += len;
	return 1;
}

static int
rd_count(struct rd *r, uint64_t *n, size_t max, char *why, size_t wl)
{
	if (!rd_u64(r, n))
		return 0;
	if (*n > max) {
		snprintf(why, wl, "%" PRIu64 " keys in one request (at most "
		    "%zu)", *n, max);
		return -1;
	}
	return 1;
}

#define TRY(x) do { int r_ = (x); if (r_ <= 0) return r_; } while (0)

/* ---- the commands ---- */

/*
 * Each takes the request after its command byte; returns 1 once done
 * (or the connection closed), 0 if the request is not all here, -1 with
 * why for bad input.
 */

static int
need_room(struct store *st, struct entry *e, char *why, size_t wl)
{
	if (e != NULL && e->present)
		return 1;
	if (st->nkeys >= st->conf.max_keys) {
		snprintf(why, wl, "a key past the %zu the store holds",
		    st->conf.max_keys);
		return -1;
	}
	return 1;
}

static int
do_set(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    char *why, size_t wl)
{
	struct slice k, v;
	struct entry *e;

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	TRY(rd_str(r, &v, st->conf.max_value, "value", why, wl));
	if (!exec)
		return 1;
	TRY(need_room(st, lookup(st, &k), why, wl));
	if ((e = lookup_or_add(st, &k)) == NULL)
		return no_room(st, "SET", &k, v.len, why, wl);
	if (!set_value(st, e, v.p, v.len)) {
		maybe_drop(st, e);
		return no_room(st, "SET", &k, v.len, why, wl);
	}
	(void)c;
	wake(st, e, false);
	return 1;
}

static int
do_compare_set(struct store *st, struct store_conn *c, struct rd *r,
    bool exec, char *why, size_t wl)
{
	struct slice k, want, to;
	struct entry *e;

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	TRY(rd_str(r, &want, st->conf.max_value, "value", why, wl));
	TRY(rd_str(r, &to, st->conf.max_value, "value", why, wl));
	if (!exec)
		return 1;
	e = lookup(st, &k);
	if (e == NULL || !e->present) {
		/* torch's rule: absent and expected non-empty stores nothing
		 * and answers what was expected. */
		if (want.len > 0)
			return reply_bytes(st, c, want.p, want.len), 1;
		TRY(need_room(st, e, why, wl));
		if ((e = lookup_or_add(st, &k)) == NULL)
			return no_room(st, "COMPARE_SET", &k, to.len, why, wl);
		if (!set_value(st, e, to.p, to.len)) {
			maybe_drop(st, e);
			return no_room(st, "COMPARE_SET", &k, to.len, why, wl);
		}
		/* torch 1.13 wakes nobody here; a waiter is better off. */
		wake(st, e, false);
	} else if (e->vlen == want.len && memcmp(e->val, want.p, want.len) ==
	    0 && !set_value(st, e, to.p, to.len))
		return no_room(st, "COMPARE_SET", &k, to.len, why, wl);
	reply_bytes(st, c, e->val, e->vlen);
	return 1;
}

static int
do_get(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    char *why, size_t wl)
{
	struct slice k;
	struct entry *e;

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	if (!exec)
		return 1;
	/* torch's clients WAIT first; a missing key reads empty (libuv). */
	e = lookup(st, &k);
	if (e != NULL && e->present)
		reply_bytes(st, c, e->val, e->vlen);
	else
		reply_bytes(st, c, "", 0);
	return 1;
}

/* A counter's value: decimal ASCII, as torch keeps it. */
static bool
parse_i64(const uint8_t *p, size_t n, int64_t *out)
{
	char buf[32], *end;
	long long v;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || *end != '\0' || end == buf)
		return false;
	*out = v;
	return true;
}

static int
do_add(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    char *why, size_t wl)
{
	struct slice k;
	uint64_t d;
	int64_t cur = 0;
	struct entry *e;
	char num[32];

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	TRY(rd_u64(r, &d));
	if (!exec)
		return 1;
	e = lookup(st, &k);
	if (e != NULL && e->present && !parse_i64(e->val, e->vlen, &cur)) {
		snprintf(why, wl, "ADD to a value that is not a number");
		return -1;
	}
	TRY(need_room(st, e, why, wl));
	/* Wraps as torch's int64 does in practice, without C's UB. */
	cur = (int64_t)((uint64_t)cur + d);
	snprintf(num, sizeof(num), "%" PRId64, cur);
	if ((e = lookup_or_add(st, &k)) == NULL)
		return no_room(st, "ADD", &k, strlen(num), why, wl);
	if (!set_value(st, e, (const uint8_t *)num, strlen(num))) {
		maybe_drop(st, e);
		return no_room(st, "ADD", &k, strlen(num), why, wl);
	}
	wake(st, e, false);
	reply_i64(st, c, cur);
	return 1;
}

/* CHECK and WAIT: n keys. */
static int
do_keys(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    bool wait, char *why, size_t wl)
{
	struct slice k;
	struct entry *e;
	struct waiter *w;
	uint64_t n, i;
	size_t missing = 0, start = r->off;

	TRY(rd_count(r, &n, st->conf.max_nkeys, why, wl));
	for (i = 0; i < n; i++) {
		TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
		if (exec && !has(lookup(st, &k)))
			missing++;
	}
	if (!exec)
		return 1;
	if (!wait)
		return reply_u8(st, c, missing == 0 ? CHECK_READY :
		    CHECK_NOT_READY), 1;
	if (missing == 0)
		return reply_u8(st, c, STOP_WAITING), 1;
	if (missing > st->conf.max_conn_waiters) {
		snprintf(why, wl, "a WAIT for %zu keys, past the %zu one "
		    "connection may wait on (--max-conn-waiters)", missing,
		    st->conf.max_conn_waiters);
		return -1;
	}
	if (st->nwaiters + missing > st->conf.max_waiters) {
		snprintf(why, wl, "a WAIT for %zu keys past the %zu waited on "
		    "at once", missing, st->conf.max_waiters);
		return -1;
	}
	/* Park on each missing key (again from the start of the keys). */
	r->off = start;
	(void)rd_u64(r, &n);
	for (i = 0; i < n; i++) {
		(void)rd_str(r, &k, st->conf.max_key, "key", why, wl);
		if (has(e = lookup(st, &k)))
			continue;
		if ((e = lookup_or_add(st, &k)) == NULL ||
		    (w = calloc(1, sizeof(*w))) == NULL) {
			if (e != NULL)
				maybe_drop(st, e);
			unpark(st, c);
			return no_room(st, "WAIT", &k, 0, why, wl);
		}
		w->e = e;
		w->c = c;
		TAILQ_INSERT_TAIL(&e->waiters, w, by_key);
		LIST_INSERT_HEAD(&c->waits, w, by_conn);
		st->nwaiters++;
		c->wait_left++;
	}
	st->nwaiting++;
	return 1;
}

static int
do_delete(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    char *why, size_t wl)
{
	struct slice k;
	struct entry *e;
	int64_t n = 0;

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	if (!exec)
		return 1;
	if ((e = lookup(st, &k)) != NULL && e->present) {
		store_mem_give(st, e->vlen);
		free(e->val);
		e->val = NULL;
		e->vlen = 0;
		e->present = false;
		st->nkeys--;
		n = 1;
		maybe_drop(st, e);
	}
	reply_i64(st, c, n);
	return 1;
}

static int
do_append(struct store *st, struct store_conn *c, struct rd *r, bool exec,
    char *why, size_t wl)
{
	struct slice k, v;
	struct entry *e;
	uint8_t *nv;

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	TRY(rd_str(r, &v, st->conf.max_value, "value", why, wl));
	if (!exec)
		return 1;
	e = lookup(st, &k);
	TRY(need_room(st, e, why, wl));
	if (e != NULL && e->present && e->vlen + v.len > st->conf.max_value) {
		snprintf(why, wl, "APPEND past a value of %zu bytes",
		    st->conf.max_value);
		return -1;
	}
	if ((e = lookup_or_add(st, &k)) == NULL)
		return no_room(st, "APPEND", &k, v.len, why, wl);
	if (!e->present) {
		if (!set_value(st, e, v.p, v.len)) {
			maybe_drop(st, e);
			return no_room(st, "APPEND", &k, v.len, why, wl);
		}
	} else if (v.len > 0) {
		if (!take(st, v.len))
			return no_room(st, "APPEND", &k, v.len, why, wl);
		if ((nv = realloc(e->val, e->vlen + v.len)) == NULL) {
			store_mem_give(st, v.len);
			return no_room(st, "APPEND", &k, v.len, why, wl);
		}
		memcpy(nv + e->vlen, v.p, v.len);
		e->val = nv;
		e->vlen += v.len;
	}
	(void)c;
	wake(st, e, false);
	return 1;
}

static int
do_multi_get(struct store *st, struct store_conn *c, struct rd *r,
    bool exec, char *why, size_t wl)
{
	struct slice k;
	struct entry *e;
	uint64_t n, i;
	size_t start;

	TRY(rd_count(r, &n, st->conf.max_nkeys, why, wl));
	start = r->off;
	for (i = 0; i < n; i++)
		TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	if (!exec)
		return 1;
	r->off = start;
	for (i = 0; i < n && !c->dead; i++) {
		(void)rd_str(r, &k, st->conf.max_key, "key", why, wl);
		e = lookup(st, &k);
		if (e != NULL && e->present)
			reply_bytes(st, c, e->val, e->vlen);
		else
			reply_bytes(st, c, "", 0);
	}
	return 1;
}

static int
do_multi_set(struct store *st, struct store_conn *c, struct rd *r,
    bool exec, char *why, size_t wl)
{
	uint64_t n, i;
	size_t start;
	int rc;

	TRY(rd_count(r, &n, st->conf.max_nkeys, why, wl));
	start = r->off;
	for (i = 0; i < n; i++)
		TRY(do_set(st, c, r, false, why, wl));
	if (!exec)
		return 1;
	r->off = start;
	for (i = 0; i < n; i++)
		if ((rc = do_set(st, c, r, true, why, wl)) <= 0)
			return rc;
	return 1;
}

static int
do_queue(struct store *st, struct store_conn *c, struct rd *r, enum cmd cmd,
    bool exec, char *why, size_t wl)
{
	struct slice k, v;
	struct entry *e;
	struct qitem *q;
	char kf[140];

	TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
	if (cmd == C_QUEUE_PUSH)
		TRY(rd_str(r, &v, st->conf.max_value, "value", why, wl));
	if (!exec)
		return 1;
	e = lookup(st, &k);
	switch (cmd) {
	case C_QUEUE_PUSH:
		if (e == NULL && st->nentries >= st->conf.max_keys) {
			snprintf(why, wl, "a queue past the %zu keys the store "
			    "holds", st->conf.max_keys);
			return -1;
		}
		if (e != NULL && e->qlen >= st->conf.max_queue) {
			key_fmt(k.p, k.len, kf, sizeof(kf));
			snprintf(why, wl, "QUEUE_PUSH to \"%s\": past the %zu "
			    "items a queue holds (--max-queue)", kf,
			    st->conf.max_queue);
			return -1;
		}
		if ((e = lookup_or_add(st, &k)) == NULL)
			return no_room(st, "QUEUE_PUSH", &k, v.len, why, wl);
		if (!take(st, sizeof(*q) + v.len) ||
		    (q = malloc(sizeof(*q) + v.len)) == NULL) {
			if (!st->over)
				store_mem_give(st, sizeof(*q) + v.len);
			maybe_drop(st, e);
			return no_room(st, "QUEUE_PUSH", &k, v.len, why, wl);
		}
		q->len = v.len;
		memcpy(q->bytes, v.p, v.len);
		STAILQ_INSERT_TAIL(&e->queue, q, next);
		e->qlen++;
		wake(st, e, true);
		return 1;
	case C_QUEUE_POP:
		reply_i64(st, c, e != NULL ? (int64_t)e->qlen : 0);
		if (e == NULL || e->qlen == 0)
			return 1;
		q = STAILQ_FIRST(&e->queue);
		STAILQ_REMOVE_HEAD(&e->queue, next);
		e->qlen--;
		reply_bytes(st, c, q->bytes, q->len);
		store_mem_give(st, sizeof(*q) + q->len);
		free(q);
		maybe_drop(st, e);
		return 1;
	default:
		reply_i64(st, c, e != NULL ? (int64_t)e->qlen : 0);
		return 1;
	}
}

/* One request from the start of r: 1 done, 0 not all here, -1 bad. */
static int
request(struct store *st, struct store_conn *c, struct rd *r, char *why,
    size_t wl)
{
	uint8_t code = r->p[r->off];
	enum cmd cmd = C_BAD;
	struct slice k;
	uint32_t u32;
	int rc;

	if (c->dialect == D_NEW && code < sizeof(new_cmds) /
	    sizeof(new_cmds[0]))
		cmd = new_cmds[code];
	else if (c->dialect == D_LEGACY && code < sizeof(legacy_cmds) /
	    sizeof(legacy_cmds[0]))
		cmd = legacy_cmds[code];
	if (cmd == C_BAD) {
		snprintf(why, wl, "command byte 0x%02x: not one of torch's "
		    "(%s dialect)", code, c->dialect == D_NEW ? "newer" :
		    "1.13");
		return -1;
	}
	r->off++;
	/* Parse first: nothing happens until the whole request is here. */
	switch (cmd) {
	case C_VALIDATE:
	case C_PING:
		TRY(rd_u32(r, &u32));
		break;
	case C_SET:
		TRY(do_set(st, c, r, false, why, wl));
		break;
	case C_COMPARE_SET:
		TRY(do_compare_set(st, c, r, false, why, wl));
		break;
	case C_GET:
	case C_WATCH_KEY:
	case C_DELETE_KEY:
		TRY(rd_str(r, &k, st->conf.max_key, "key", why, wl));
		break;
	case C_ADD:
		TRY(do_add(st, c, r, false, why, wl));
		break;
	case C_CHECK:
	case C_WAIT:
		TRY(do_keys(st, c, r, false, cmd == C_WAIT, why, wl));
		break;
	case C_APPEND:
		TRY(do_append(st, c, r, false, why, wl));
		break;
	case C_MULTI_GET:
		TRY(do_multi_get(st, c, r, false, why, wl));
		break;
	case C_MULTI_SET:
		TRY(do_multi_set(st, c, r, false, why, wl));
		break;
	case C_QUEUE_PUSH:
	case C_QUEUE_POP:
	case C_QUEUE_LEN:
		TRY(do_queue(st, c, r, cmd, false, why, wl));
		break;
	default:
		break;
	}
	/*
	 * A client never sends while its WAIT is parked, so a request now
	 * means it gave up (torch 1.13 times out in recv and says nothing):
	 * the parked wait goes, or its late STOP_WAITING would be read as
	 * the first byte of this request's reply.
	 */
	if (c->wait_left > 0)
		unpark(st, c);
	r->off = 1;	/* again, from after the command byte */
	switch (cmd) {
	case C_VALIDATE:
		(void)rd_u32(r, &u32);
		if (u32 != VALIDATE_MAGIC) {
			snprintf(why, wl, "VALIDATE with magic 0x%08x", u32);
			return -1;
		}
		return 1;
	case C_PING:
		(void)rd_u32(r, &u32);
		reply(st, c, &u32, sizeof(u32));
		return 1;
	case C_SET:
		return do_set(st, c, r, true, why, wl);
	case C_COMPARE_SET:
		return do_compare_set(st, c, r, true, why, wl);
	case C_GET:
		return do_get(st, c, r, true, why, wl);
	case C_ADD:
		return do_add(st, c, r, true, why, wl);
	case C_CHECK:
	case C_WAIT:
		return do_keys(st, c, r, true, cmd == C_WAIT, why, wl);
	case C_GETNUMKEYS:
		reply_i64(st, c, (int64_t)st->nkeys);
		return 1;
	case C_WATCH_KEY:
		/* Registered, and never told: no known caller needs it. */
		(void)rd_str(r, &k, st->conf.max_key, "key", why, wl);
		reply_u8(st, c, WATCH_REGISTERED);
		return 1;
	case C_DELETE_KEY:
		return do_delete(st, c, r, true, why, wl);
	case C_APPEND:
		return do_append(st, c, r, true, why, wl);
	case C_MULTI_GET:
		return do_multi_get(st, c, r, true, why, wl);
	case C_MULTI_SET:
		return do_multi_set(st, c, r, true, why, wl);
	case C_CANCEL_WAIT:
		reply_u8(st, c, WAIT_CANCELED);
		return 1;
	case C_QUEUE_PUSH:
	case C_QUEUE_POP:
	case C_QUEUE_LEN:
		rc = do_queue(st, c, r, cmd, true, why, wl);
		return rc;
	default:
		return -1;
	}
}

/* ---- connections ---- */

static void
conn_close(struct store *st, struct store_conn *c, const char *fmt, ...)
{
	va_list ap;
	char why[512];

	if (c->dead)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	warn_msg("%s: %s: closing the connection", c->peer, why);
	c->dead = true;
	unpark(st, c);
	st->ops.close(st->ops.ctx, c->conn);
}

static void
conn_free(struct store *st, struct store_conn *c)
{
	unpark(st, c);
	LIST_REMOVE(c, all);
	store_mem_give(st, c->incap);
	free(c->in);
	free(c);
}

struct store_conn *
store_accept(struct store *st, void *conn, const char *peer)
{
	struct store_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->conn = conn;
	strlcpy(c->peer, peer, sizeof(c->peer));
	LIST_INIT(&c->waits);
	LIST_INSERT_HEAD(&st->conns, c, all);
	return c;
}

/*
 * The newer dialect opens with VALIDATE: 00 CE F7 85 3C.  torch 1.13's
 * SET is 00 too, but then a key length whose low bytes would be that
 * magic, a key of a gigabyte: no 1.13 client sends one.
 */
static bool
detect(struct store_conn *c)
{
	static const uint8_t validate[] = { 0x00, 0xCE, 0xF7, 0x85, 0x3C };

	if (c->inlen == 0)
		return false;
	if (c->in[0] != 0x00)
		c->dialect = D_LEGACY;
	else if (c->inlen >= sizeof(validate))
		c->dialect = memcmp(c->in, validate, sizeof(validate)) == 0 ?
		    D_NEW : D_LEGACY;
	return c->dialect != D_UNKNOWN;
}

/* Byte i of what is buffered followed by buf. */
static int
byte_at(const struct store_conn *c, const uint8_t *buf, size_t n, size_t i)
{
	if (i < c->inlen)
		return c->in[i];
	return i - c->inlen < n ? buf[i - c->inlen] : -1;
}

/*
 * For the log of a request refused before it is all here: its key, if
 * its first bytes are a command and a key (after a VALIDATE), as
 * " for key \"k\""; else "".
 */
static void
peek_key(const struct store *st, const struct store_conn *c,
    const uint8_t *buf, size_t n, char *out, size_t ol)
{
	static const uint8_t validate[] = { 0x00, 0xCE, 0xF7, 0x85, 0x3C };
	uint8_t k[32] = { 0 }, len8[8];
	char kf[140];
	size_t at = 0, i;
	uint64_t len;
	int b;

	out[0] = '\0';
	for (i = 0; i < sizeof(validate); i++)
		if (byte_at(c, buf, n, i) != validate[i])
			break;
	if (i == sizeof(validate))
		at = sizeof(validate);
	at++;			/* the command byte */
	for (i = 0; i < 8; i++) {
		if ((b = byte_at(c, buf, n, at + i)) == -1)
			return;
		len8[i] = b;
	}
	memcpy(&len, len8, 8);
	if (len > st->conf.max_key)
		return;
	for (i = 0; i < len && i < sizeof(k); i++) {
		if ((b = byte_at(c, buf, n, at + 8 + i)) == -1)
			return;
		k[i] = b;
	}
	key_fmt(k, i, kf, sizeof(kf));
	snprintf(out, ol, " for key \"%s%s\"", kf, i < len ? "..." : "");
}

void
store_input(struct store *st, struct store_conn *c, const void *buf,
    size_t n)
{
	char why[512], key[160];
	struct rd r;
	size_t cap, done = 0;
	uint8_t *nb;
	int rc;

	if (c->dead)
		return;
	if (c->inlen + n > st->conf.max_request + 1) {
		conn_close(st, c, "a request of more than %zu bytes",
		    st->conf.max_request);
		return;
	}
	if (c->inlen + n > c->incap) {
		for (cap = c->incap > 0 ? c->incap : 4096; cap < c->inlen + n;
		    cap *= 2)
			;
		if (!take(st, cap - c->incap)) {
			st->over = false;
			peek_key(st, c, buf, n, key, sizeof(key));
			conn_close(st, c, "a request%s of %zu bytes so far: "
			    "past the store's budget of %zu bytes (--max-bytes)",
			    key, c->inlen + n, st->conf.max_bytes);
			return;
		}
		if ((nb = realloc(c->in, cap)) == NULL) {
			store_mem_give(st, cap - c->incap);
			conn_close(st, c, "out of memory");
			return;
		}
		c->in = nb;
		c->incap = cap;
	}
	if (n > 0)
		memcpy(c->in + c->inlen, buf, n);
	c->inlen += n;
	if (c->dialect == D_UNKNOWN && !detect(c))
		return;
	while (!c->dead && done < c->inlen && (st->ops.full == NULL ||
	    !st->ops.full(st->ops.ctx, c->conn))) {
		r = (struct rd){ c->in + done, c->inlen - done, 0 };
		why[0] = '\0';
		if ((rc = request(st, c, &r, why, sizeof(why))) == -1) {
			conn_close(st, c, "%s", why);
			return;
		}
		if (rc == 0)
			break;
		done += r.off;
		c->nreq++;
	}
	if (c->dead)
		return;
	memmove(c->in, c->in + done, c->inlen - done);
	c->inlen -= done;
	if (c->inlen > st->conf.max_request)
		conn_close(st, c, "a request of more than %zu bytes",
		    st->conf.max_request);
}

void
store_lost(struct store *st, struct store_conn *c)
{
	conn_free(st, c);
}

/* ---- the store ---- */

struct store *
store_new(const struct store_conf *conf, const struct store_ops *ops)
{
	struct store *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	st->conf = *conf;
	st->ops = *ops;
	st->nbuckets = 1024;
	if ((st->buckets = calloc(st->nbuckets, sizeof(*st->buckets))) ==
	    NULL) {
		free(st);
		return NULL;
	}
	LIST_INIT(&st->conns);
	return st;
}

void
store_free(struct store *st)
{
	struct store_conn *c;
	struct entry *e, *next;
	struct qitem *q;
	size_t i;

	if (st == NULL)
		return;
	while ((c = LIST_FIRST(&st->conns)) != NULL)
		conn_free(st, c);
	for (i = 0; i < st->nbuckets; i++)
		for (e = st->buckets[i]; e != NULL; e = next) {
			next = e->next;
			while ((q = STAILQ_FIRST(&e->queue)) != NULL) {
				STAILQ_REMOVE_HEAD(&e->queue, next);
				free(q);
			}
			free(e->key);
			free(e->val);
			free(e);
		}
	free(st->buckets);
	free(st);
}

unsigned long
store_conn_progress(const struct store_conn *sc, bool *partial)
{
	*partial = sc->inlen > 0;
	return sc->nreq;
}

size_t
store_nkeys(const struct store *st)
{
	return st->nkeys;
}

size_t
store_nwaiting(const struct store *st)
{
	return st->nwaiting;
}
