/*
 * The esv-rdzv state machine (rendezvous/server/rdzv_server.c, rdzv_job.c) driven
 * by the input as a script of connections, bytes, sealed lines, losses and
 * the passing of time, with no sockets.  The harness keeps each fake
 * client's session (it reads the server's greeting, makes the key a JOIN
 * announces and seals what it sends), so that the fuzzer plays nodes that
 * know the token as well as strangers.
 *
 * Each step: one byte op (high bits: connection 0..7), then its operands.
 *	0 connect		1 raw bytes: length, bytes
 *	2 JOIN built from 6 bytes	3 sealed line: length, text
 *	4 lose the connection	5 time passes: 10 ms x byte
 */
#include <string.h>

#include "../../rendezvous/server/rdzv_server.h"
#include "fuzz.h"
#include "rdzvproto.h"

#define TOKEN	"fuzz-token-0123456789abcdef"
#define NCONN	8

struct fconn {
	struct rdzv_sconn	*sc;
	bool			 open;
	char			 nonce[RDZV_NONCE_LEN + 1];
	char			 cnonce[RDZV_NONCE_LEN + 1];
	uint8_t			 key[RDZV_KEY_LEN];
	uint64_t		 seq_out;
	unsigned		 lines;
};

static struct fconn conns[NCONN];

static int
fake_send(void *ctx, void *conn, const char *line, size_t len)
{
	struct fconn *c = conn;
	struct rdzv_msg m;
	char err[256], copy[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];

	(void)ctx;
	CHECK(c->open);
	CHECK(len > 0 && line[len - 1] == '\n' && memchr(line, '\n', len - 1)
	    == NULL);
	CHECK(len <= sizeof(copy) - 1);
	if (c->lines++ == 0) {
		memcpy(copy, line, len - 1);
		copy[len - 1] = '\0';
		CHECK(rdzv_msg_parse(copy, &m, err, sizeof(err)) == 0 &&
		    m.verb == RV_HELLO);
		strlcpy(c->nonce, m.u.hello.nonce, sizeof(c->nonce));
	}
	return 0;
}

static void
fake_close(void *ctx, void *conn, bool linger)
{
	struct fconn *c = conn;

	(void)ctx;
	(void)linger;
	CHECK(c->open);
	c->open = false;
	c->sc = NULL;
}

static void
say(struct rdzv_server *srv, struct fconn *c, const char *bytes, size_t n,
    long long now)
{
	if (c->open)
		rdzv_server_input(srv, c->sc, bytes, n, now);
}

static void
say_sealed(struct rdzv_server *srv, struct fconn *c, const char *text,
    long long now)
{
	char line[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];
	int n;

	if ((n = rdzv_seal(line, sizeof(line), text, c->key, RDZV_TO_SERVER,
	    c->seq_out++)) > 0)
		say(srv, c, line, (size_t)n, now);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *runs[] = { "job", "other" }, *roles[] = { "default",
	    "trainer" };
	struct rdzv_server_conf conf = { .heartbeat_ms = 100, .max_jobs = 4,
	    .max_nodes = 8, .recovery_ms = 1000, .max_clients = 6,
	    .max_unauth = 4, .max_unauth_per_addr = 3, .auth_ms = 300 };
	struct rdzv_server_ops ops = { fake_send, fake_close, NULL };
	struct rdzv_server *srv;
	char text[RDZV_LINE_MAX + 1], peer[32], ip[16];
	long long now = 1000;
	size_t i = 0, n;
	struct fconn *c;
	uint8_t op;

	memset(conns, 0, sizeof(conns));
	CHECK((srv = rdzv_server_new(&conf, &ops, TOKEN, now)) != NULL);
	while (i < size) {
		op = data[i++];
		c = &conns[op >> 5];
		switch (op & 7) {
		case 0:
			if (c->open)
				break;
			memset(c, 0, sizeof(*c));
			c->open = true;
			snprintf(ip, sizeof(ip), "10.0.0.%u", (op >> 5) % 3);
			snprintf(peer, sizeof(peer), "%s:%u", ip, 4000 + (op >> 5));
			if ((c->sc = rdzv_server_accept(srv, c, peer, ip, now)) ==
			    NULL)
				c->open = false;
			break;
		case 1:
			if (i >= size)
				break;
			n = data[i++];
			n = n < size - i ? n : size - i;
			say(srv, c, (const char *)data + i, n, now);
			i += n;
			break;
		case 2:
			if (i + 6 > size || !c->open || c->nonce[0] == '\0')
				break;
			snprintf(c->cnonce, sizeof(c->cnonce), "%032x",
			    (unsigned)(op >> 5) * 2654435761u);
			rdzv_session_key(TOKEN, c->nonce, c->cnonce, c->key);
			c->seq_out = 0;
			snprintf(text, sizeof(text), "JOIN 3 %s n%u %s %u %u %u %u "
			    "%s 10.0.0.%u %u new %u", runs[data[i] & 1],
			    data[i] % 5, c->cnonce, 1 + data[i + 1] % 4,
			    1 + data[i + 2] % 3, 1 + data[i + 2] % 3 + data[i + 3] % 3,
			    data[i + 3] * 10u, roles[data[i + 4] & 1], data[i] % 5,
			    29500 + data[i + 4] % 3, data[i + 5] % 4);
			say_sealed(srv, c, text, now);
			i += 6;
			break;
		case 3:
			if (i >= size)
				break;
			n = data[i++];
			n = n < size - i ? n : size - i;
			n = n < sizeof(text) - 1 ? n : sizeof(text) - 1;
			memcpy(text, data + i, n);
			text[n] = '\0';
			i += n;
			if (strchr(text, '\n') == NULL)
				say_sealed(srv, c, text, now);
			break;
		case 4:
			if (c->open) {
				rdzv_server_lost(srv, c->sc, "eof", now);
				c->open = false;
				c->sc = NULL;
			}
			break;
		default:
			if (i < size)
				now += 10 * data[i++];
			CHECK(rdzv_server_tick(srv, now) >= now);
		}
	}
	rdzv_server_free(srv);
	return 0;
}
