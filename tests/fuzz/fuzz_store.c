/*
 * esv-stored's protocol engine (store/store.c) driven by the input as a
 * script of connections and the bytes they send, in either dialect, with
 * no sockets.  The store may get any bytes in any split; it must answer
 * only connections that are open, never after it closed one, and free
 * everything it holds (the leak check at store_free).
 *
 * Each step: one op byte (high bits: connection 0..7), then its operands.
 *	0 connect		1 bytes: length, bytes
 *	2 the peer goes away	3 VALIDATE (the newer dialect's hello)
 *	4 a request built from the next bytes: command, key byte, value byte
 *	5 the transport's output fills up (ops->full) or, if full, drains:
 *	  the store is called again with no bytes, as esv-stored does
 */
#include <string.h>

#include "../../store/store.h"
#include "fuzz.h"

#define NCONN	8

struct fconn {
	struct store_conn	*sc;
	bool			 open, closed;	/* closed: by the store */
	bool			 full;
	size_t			 got;
};

static struct fconn conns[NCONN];

static int
fake_send(void *ctx, void *conn, const void *buf, size_t len)
{
	struct fconn *c = conn;

	(void)ctx;
	(void)buf;
	CHECK(c->open && !c->closed);
	CHECK(len > 0);
	c->got += len;
	return c->got > (1u << 20) ? -1 : 0;
}

static bool
fake_full(void *ctx, void *conn)
{
	struct fconn *c = conn;

	(void)ctx;
	return c->full;
}

static void
fake_close(void *ctx, void *conn)
{
	struct fconn *c = conn;

	(void)ctx;
	CHECK(c->open && !c->closed);
	c->closed = true;
}

static void
put_str(uint8_t *buf, size_t *n, const char *s, size_t len)
{
	uint64_t l = len;

	memcpy(buf + *n, &l, 8);
	memcpy(buf + *n + 8, s, len);
	*n += 8 + len;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "/a", "/b", "init/", "" };
	static const char *const vals[] = { "1", "-7", "x", "" };
	struct store_ops ops = { fake_send, fake_close, NULL, fake_full };
	struct store_conf conf;
	struct store *st;
	struct fconn *c;
	uint8_t req[64];
	size_t i = 0, len, n;
	uint8_t op;

	store_conf_default(&conf);
	/* Small limits, so that the fuzzer reaches them. */
	conf.max_key = 64;
	conf.max_value = 256;
	conf.max_request = 1024;
	conf.max_nkeys = 8;
	conf.max_keys = 16;
	conf.max_waiters = 8;
	conf.max_conn_waiters = 2;
	conf.max_queue = 3;
	/* Room for a few input buffers and keys: refusals are reached. */
	conf.max_bytes = 6 * 4096;
	CHECK((st = store_new(&conf, &ops)) != NULL);
	memset(conns, 0, sizeof(conns));
	while (i < size) {
		op = data[i++];
		c = &conns[op >> 5];
		if ((op & 7) != 0 && (!c->open || c->closed)) {
			if (c->open && c->closed) {
				/* The transport lets go of what the store closed. */
				store_lost(st, c->sc);
				memset(c, 0, sizeof(*c));
			}
			continue;
		}
		switch (op & 7) {
		case 0:
			if (c->open)
				break;
			memset(c, 0, sizeof(*c));
			c->open = true;
			CHECK((c->sc = store_accept(st, c, "fuzz:1")) != NULL);
			break;
		case 1:
			if (i >= size)
				break;
			len = data[i++];
			len = len < size - i ? len : size - i;
			store_input(st, c->sc, data + i, len);
			i += len;
			break;
		case 2:
			store_lost(st, c->sc);
			memset(c, 0, sizeof(*c));
			break;
		case 3:
			store_input(st, c->sc, "\x00\xce\xf7\x85\x3c", 5);
			break;
		case 5:
			c->full = !c->full;
			if (!c->full)
				store_input(st, c->sc, NULL, 0);
			break;
		default:
			if (i + 3 > size) {
				i = size;
				break;
			}
			n = 0;
			req[n++] = data[i] % 17;
			put_str(req, &n, keys[data[i + 1] & 3],
			    strlen(keys[data[i + 1] & 3]));
			if (data[i + 1] & 4)
				put_str(req, &n, vals[data[i + 2] & 3],
				    strlen(vals[data[i + 2] & 3]));
			store_input(st, c->sc, req, n);
			i += 3;
			break;
		}
		CHECK(store_nwaiting(st) <= NCONN);
		CHECK(store_mem_used(st) <= conf.max_bytes);
	}
	for (n = 0; n < NCONN; n++)
		if (conns[n].open)
			store_lost(st, conns[n].sc);
	store_free(st);
	return 0;
}
