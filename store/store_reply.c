/*
 * What goes back to a connection: a reply, the end of a WAIT when its
 * keys came to be, and its close.  A reply the transport cannot queue
 * closes the connection here, so no command has to.
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

/* ---- replies ---- */

bool
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

bool
reply_u8(struct store *st, struct store_conn *c, uint8_t v)
{
	return reply(st, c, &v, 1);
}

bool
reply_i64(struct store *st, struct store_conn *c, int64_t v)
{
	return reply(st, c, &v, sizeof(v));
}

bool
reply_bytes(struct store *st, struct store_conn *c, const void *p, size_t n)
{
	uint64_t len = n;

	return reply(st, c, &len, sizeof(len)) && (n == 0 ||
	    reply(st, c, p, n));
}

/* ---- waiting ---- */

void
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
		key_maybe_drop(st, e);
	}
	if (c->wait_left > 0)
		st->nwaiting--;
	c->wait_left = 0;
}

/* e came to be: its waiters (one, for a queue's push) count it in. */
void
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

void
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
