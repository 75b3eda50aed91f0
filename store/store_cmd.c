/*
 * One request of torch's TCPStore protocol, read from the start of what a
 * connection buffered and run: the commands of both dialects, mapped
 * onto one set (esv-stored(8) has the wire, command by command).
 */
#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "store_int.h"

#define VALIDATE_MAGIC	0x3C85F7CEu

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

/* ---- reading a request ---- */

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
	TRY(need_room(st, key_lookup(st, &k), why, wl));
	if ((e = key_lookup_or_add(st, &k)) == NULL)
		return no_room(st, "SET", &k, v.len, why, wl);
	if (!key_set_value(st, e, v.p, v.len)) {
		key_maybe_drop(st, e);
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
	e = key_lookup(st, &k);
	if (e == NULL || !e->present) {
		/* torch's rule: absent and expected non-empty stores nothing
		 * and answers what was expected. */
		if (want.len > 0)
			return reply_bytes(st, c, want.p, want.len), 1;
		TRY(need_room(st, e, why, wl));
		if ((e = key_lookup_or_add(st, &k)) == NULL)
			return no_room(st, "COMPARE_SET", &k, to.len, why, wl);
		if (!key_set_value(st, e, to.p, to.len)) {
			key_maybe_drop(st, e);
			return no_room(st, "COMPARE_SET", &k, to.len, why, wl);
		}
		/* torch 1.13 wakes nobody here; a waiter is better off. */
		wake(st, e, false);
	} else if (e->vlen == want.len && memcmp(e->val, want.p, want.len) ==
	    0 && !key_set_value(st, e, to.p, to.len))
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
	e = key_lookup(st, &k);
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
	e = key_lookup(st, &k);
	if (e != NULL && e->present && !parse_i64(e->val, e->vlen, &cur)) {
		snprintf(why, wl, "ADD to a value that is not a number");
		return -1;
	}
	TRY(need_room(st, e, why, wl));
	/* Wraps as torch's int64 does in practice, without C's UB. */
	cur = (int64_t)((uint64_t)cur + d);
	snprintf(num, sizeof(num), "%" PRId64, cur);
	if ((e = key_lookup_or_add(st, &k)) == NULL)
		return no_room(st, "ADD", &k, strlen(num), why, wl);
	if (!key_set_value(st, e, (const uint8_t *)num, strlen(num))) {
		key_maybe_drop(st, e);
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
		if (exec && !key_has(key_lookup(st, &k)))
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
		if (key_has(e = key_lookup(st, &k)))
			continue;
		if ((e = key_lookup_or_add(st, &k)) == NULL ||
		    (w = calloc(1, sizeof(*w))) == NULL) {
			if (e != NULL)
				key_maybe_drop(st, e);
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
	if ((e = key_lookup(st, &k)) != NULL && e->present) {
		store_mem_give(st, e->vlen);
		free(e->val);
		e->val = NULL;
		e->vlen = 0;
		e->present = false;
		st->nkeys--;
		n = 1;
		key_maybe_drop(st, e);
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
	e = key_lookup(st, &k);
	TRY(need_room(st, e, why, wl));
	if (e != NULL && e->present && e->vlen + v.len > st->conf.max_value) {
		snprintf(why, wl, "APPEND past a value of %zu bytes",
		    st->conf.max_value);
		return -1;
	}
	if ((e = key_lookup_or_add(st, &k)) == NULL)
		return no_room(st, "APPEND", &k, v.len, why, wl);
	if (!e->present) {
		if (!key_set_value(st, e, v.p, v.len)) {
			key_maybe_drop(st, e);
			return no_room(st, "APPEND", &k, v.len, why, wl);
		}
	} else if (v.len > 0) {
		if (!mem_take(st, v.len))
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
		e = key_lookup(st, &k);
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
	e = key_lookup(st, &k);
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
		if ((e = key_lookup_or_add(st, &k)) == NULL)
			return no_room(st, "QUEUE_PUSH", &k, v.len, why, wl);
		if (!mem_take(st, sizeof(*q) + v.len) ||
		    (q = malloc(sizeof(*q) + v.len)) == NULL) {
			if (!st->over)
				store_mem_give(st, sizeof(*q) + v.len);
			key_maybe_drop(st, e);
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
		key_maybe_drop(st, e);
		return 1;
	default:
		reply_i64(st, c, e != NULL ? (int64_t)e->qlen : 0);
		return 1;
	}
}

/* One request from the start of r: 1 done, 0 not all here, -1 bad. */
int
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
