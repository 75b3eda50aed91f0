/*
 * torch's TCPStore protocol (esv-stored(8) has the wire, command by
 * command).  Every integer is 8 bytes in host order, every string a u64
 * length and its bytes.  A connection speaks torch 1.13's dialect (the
 * first request is a command) or the newer one (the first five bytes are
 * VALIDATE and its magic); the commands differ only in their numbers, so
 * both map onto one set (store_cmd.c).
 *
 * This file has the connections: their input, buffered and parsed only
 * once all of a request has arrived, from the start of what is buffered,
 * without copying: a value's bytes are not looked at until its last one
 * is in, so a big value costs one parse.  The parts below it are named in
 * store_int.h.
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

/* ---- connections ---- */

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
		if (!mem_take(st, cap - c->incap)) {
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

