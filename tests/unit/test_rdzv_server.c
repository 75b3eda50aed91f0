/*
 * The esv-rdzv state machine driven by fake connections and a fake
 * clock: every assertion is on the lines a node would receive.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../rendezvous/server/rdzv_server.h"
#include "rdzvproto.h"

#define TOKEN	"test-token-0123456789"
#define HB	100
#define RECOVERY 1000
#define LEASE	2000	/* above RECOVERY: the lease is what holds */
#define NCONN	16
#define NLINES	128
#define MAX_CLIENTS	10
#define MAX_UNAUTH	6
#define MAX_UNAUTH_ADDR	4

struct fconn {
	struct rdzv_sconn	*sc;
	char			 nonce[RDZV_NONCE_LEN + 1];
	char			 cnonce[RDZV_NONCE_LEN + 1];
	uint8_t			 key[RDZV_KEY_LEN];
	bool			 keyed;		/* a JOIN went out: seal */
	uint64_t		 seq_in, seq_out;
	int			 ran;		/* last ROUND received, or -1 */
	char			 lines[NLINES][RDZV_LINE_MAX + 1];
	unsigned		 n, read;
	bool			 closed, stuck;
	bool			 joined;	/* advance() keeps it alive */
	bool			 silent;	/* ... unless set */
	bool			 pings;		/* record the server's PINGs */
	const char		*instance;	/* NULL: every test's one */
	/* MEMBER lines, kept apart ("round addr;..."), and when they came:
	 * the number of lines before them. */
	char			 members[512];
	int			 members_at;
};

struct fx {
	struct rdzv_server	*srv;
	long long		 now;
	unsigned		 min, max, last_call;
	struct fconn		 c[NCONN];
};

static int
fake_send(void *ctx, void *conn, const char *line, size_t len)
{
	struct fconn *c = conn;
	char mac[RDZV_MAC_LEN + 1];
	int round;

	(void)ctx;
	assert_false(c->closed);
	assert_true(len > 0 && line[len - 1] == '\n');
	if (c->stuck) {
		errno = ENOBUFS;	/* as esv-rdzv says a full queue */
		return -1;
	}
	assert_true(c->n < NLINES);
	memcpy(c->lines[c->n], line, len - 1);
	c->lines[c->n][len - 1] = '\0';
	/* Sealed lines are kept without their seal; others marked "!". */
	if (c->keyed && rdzv_unseal_split(c->lines[c->n], mac) == 0 &&
	    rdzv_seal_ok(c->lines[c->n], mac, c->key, RDZV_TO_CLIENT,
	    c->seq_in))
		c->seq_in++;
	else if (c->keyed) {
		snprintf(c->lines[c->n], sizeof(c->lines[c->n]), "!%.*s",
		    (int)len - 1, line);
	}
	if (sscanf(c->lines[c->n], "ROUND %d ", &round) == 1)
		c->ran = round;
	if (strncmp(c->lines[c->n], "MEMBER ", 7) == 0) {
		strlcat(c->members, c->lines[c->n] + 7, sizeof(c->members));
		strlcat(c->members, ";", sizeof(c->members));
		c->members_at = c->n;
		return 0;
	}
	if (!c->pings && strncmp(c->lines[c->n], "PING", 4) == 0 &&
	    (c->lines[c->n][4] == '\0' || c->lines[c->n][4] == ' '))
		return 0;
	c->n++;
	return 0;
}

static void
fake_close(void *ctx, void *conn, bool linger)
{
	struct fconn *c = conn;

	(void)ctx;
	(void)linger;
	assert_false(c->closed);
	c->closed = true;
	c->sc = NULL;
}

static unsigned fx_lease_ms;	/* the next fx_new's server's lease */

static struct fx *
fx_new(unsigned max_jobs)
{
	struct rdzv_server_conf conf = { .heartbeat_ms = HB,
	    .lease_ms = fx_lease_ms,
	    .max_jobs = max_jobs, .max_nodes = 16, .recovery_ms = RECOVERY,
	    .max_clients = MAX_CLIENTS, .max_unauth = MAX_UNAUTH,
	    .max_unauth_per_addr = MAX_UNAUTH_ADDR, .auth_ms = 3 * HB };
	struct rdzv_server_ops ops = { fake_send, fake_close, NULL };
	struct fx *fx;
	unsigned i;

	fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	fx->now = 1000;
	fx->min = 2;
	fx->max = 3;
	fx->srv = rdzv_server_new(&conf, &ops, TOKEN, fx->now);
	assert_non_null(fx->srv);
	for (i = 0; i < NCONN; i++)
		fx->c[i].ran = -1;
	return fx;
}

static int
setup(void **state)
{
	*state = fx_new(4);
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	rdzv_server_free(fx->srv);
	free(fx);
	return 0;
}

static const char *
next_line(struct fconn *c)
{
	return c->read < c->n ? c->lines[c->read++] : NULL;
}

static void
expect(struct fconn *c, const char *want)
{
	const char *got = next_line(c);

	if (got == NULL)
		fail_msg("expected \"%s\", got nothing", want);
	if (strncmp(got, want, strlen(want)) != 0)
		fail_msg("expected \"%s\", got \"%s\"", want, got);
}

static void
expect_none(struct fconn *c)
{
	const char *got = next_line(c);

	if (got != NULL)
		fail_msg("expected nothing, got \"%s\"", got);
}

static struct fconn *
fc_connect_from(struct fx *fx, unsigned i, const char *ip)
{
	struct fconn *c = &fx->c[i];
	struct rdzv_msg m;
	char err[256], peer[64];
	int ran = c->ran;

	memset(c, 0, sizeof(*c));
	c->ran = ran;	/* the node's memory outlives its connection */
	snprintf(peer, sizeof(peer), "%s:%u", ip, 4000 + i);
	c->sc = rdzv_server_accept(fx->srv, c, peer, ip, fx->now);
	assert_non_null(c->sc);
	assert_int_equal(rdzv_msg_parse(next_line(c), &m, err, sizeof(err)),
	    0);
	assert_int_equal(m.verb, RV_HELLO);
	assert_int_equal(m.u.hello.heartbeat_ms, HB);
	strlcpy(c->nonce, m.u.hello.nonce, sizeof(c->nonce));
	return c;
}

static struct fconn *
fc_connect(struct fx *fx, unsigned i)
{
	return fc_connect_from(fx, i, "10.0.0.9");
}

static void
say_raw(struct fx *fx, struct fconn *c, const char *bytes)
{
	assert_non_null(c->sc);
	rdzv_server_input(fx->srv, c->sc, bytes, strlen(bytes), fx->now);
}

/* The seal of line (no '\n') as the client's next line. */
static void
seal(struct fconn *c, const char *line, char *out, size_t len)
{
	char msg[RDZV_LINE_MAX + 32], mac[RDZV_MAC_LEN + 1];

	snprintf(msg, sizeof(msg), "%c %llu %s", RDZV_TO_SERVER,
	    (unsigned long long)c->seq_out++, line);
	rdzv_hmac_hex(c->key, RDZV_KEY_LEN, msg, mac);
	snprintf(out, len, "%s %s\n", line, mac);
}

/* A whole line goes sealed once the connection has a key. */
static void
say(struct fx *fx, struct fconn *c, const char *line)
{
	char text[RDZV_LINE_MAX], sealed[RDZV_LINE_MAX + 80];
	size_t n = strlen(line);

	if (!c->keyed || n == 0 || line[n - 1] != '\n' ||
	    memchr(line, '\n', n - 1) != NULL) {
		say_raw(fx, c, line);
		return;
	}
	snprintf(text, sizeof(text), "%.*s", (int)n - 1, line);
	seal(c, text, sealed, sizeof(sealed));
	say_raw(fx, c, sealed);
}

static void
lose(struct fx *fx, struct fconn *c)
{
	rdzv_server_lost(fx->srv, c->sc, "eof", fx->now);
	c->sc = NULL;
	c->closed = true;
}

/* Time passes in heartbeat steps; joined nodes ping as they should. */
static void
advance(struct fx *fx, long long ms)
{
	long long step;
	unsigned i;

	while (ms > 0) {
		step = ms < HB ? ms : HB;
		for (i = 0; i < NCONN; i++)
			if (fx->c[i].joined && !fx->c[i].silent &&
			    fx->c[i].sc != NULL)
				say(fx, &fx->c[i], "PING\n");
		fx->now += step;
		ms -= step;
		rdzv_server_tick(fx->srv, fx->now);
	}
}

/* The session key, as a client makes it on its first JOIN. */
static void
fc_key(struct fconn *c)
{
	if (c->keyed)
		return;
	rdzv_nonce(c->cnonce);
	/* One supervisor unless a test says: its reconnections replace. */
	memcpy(c->cnonce, c->instance != NULL ? c->instance :
	    "0123456789abcdef", RDZV_INSTANCE_LEN);
	rdzv_session_key(TOKEN, c->nonce, c->cnonce, c->key);
	c->keyed = true;
}

/*
 * JOIN with tail "new" asks for a round past the last this connection's
 * node ran, as the client does ("new N" to say otherwise).
 */
static void
join_full(struct fx *fx, struct fconn *c, const char *run, const char *node,
    unsigned nproc, const char *role, const char *tail)
{
	char line[RDZV_LINE_MAX], t[64];

	c->joined = true;
	fc_key(c);
	if (strcmp(tail, "new") == 0) {
		snprintf(t, sizeof(t), "new %d", c->ran + 1);
		tail = t;
	}
	snprintf(line, sizeof(line), "JOIN 3 %s %s %s %u %u %u %u %s %s %u "
	    "%s\n", run, node, c->cnonce, nproc, fx->min, fx->max,
	    fx->last_call, role, node, 29500, tail);
	say(fx, c, line);
}

/* Node "n<i>" on connection i, with its id as its address. */
static struct fconn *
join(struct fx *fx, unsigned i, const char *tail)
{
	char node[16];

	snprintf(node, sizeof(node), "n%u", i);
	if (fx->c[i].sc == NULL)
		fc_connect(fx, i);
	join_full(fx, &fx->c[i], "job", node, 4, "default", tail);
	return &fx->c[i];
}

/* n0 and n1 run round 0 of 2 nodes of 4 workers. */
static void
two_running(struct fx *fx)
{
	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	expect(join(fx, 1, "new"), "JOINED 0 2 0");
	expect(&fx->c[0], "ROUND 0 0 2 0 8 0 8 n0 29500");
	expect(&fx->c[1], "ROUND 0 1 2 4 8 4 8 n0 29500");
}

static void
test_min_completes(void **state)
{
	struct fx *fx = *state;

	fx->last_call = 0;
	/* Rank order is node-id order, not arrival order. */
	expect(join(fx, 1, "new"), "JOINED 0 1 0");
	expect_none(&fx->c[1]);
	expect(join(fx, 0, "new"), "JOINED 0 2 0");
	expect(&fx->c[0], "ROUND 0 0 2 0 8 0 8 n0 29500");
	expect(&fx->c[1], "ROUND 0 1 2 4 8 4 8 n0 29500");
	expect_none(&fx->c[0]);
	expect_none(&fx->c[1]);
}

/*
 * Group rank 0, and it only, is told the round's addresses before its
 * ROUND: each node's connection's, and the one it gave if numeric.
 */
static void
test_members(void **state)
{
	struct fx *fx = *state;
	struct fconn *c0, *c1;

	fx->last_call = 0;
	c0 = fc_connect_from(fx, 0, "10.0.0.1");
	c1 = fc_connect_from(fx, 1, "10.0.0.2");
	join_full(fx, c0, "job", "n0", 4, "default", "new");
	expect(c0, "JOINED 0 1 0");
	/* Its id is its address: numeric, and not the one it comes from. */
	join_full(fx, c1, "job", "192.168.1.2", 4, "default", "new");
	expect(c1, "JOINED 0 2 0");
	/* Rank order is node-id order: "192..." first. */
	expect(c1, "ROUND 0 0 2 0 8 0 8 192.168.1.2 29500");
	expect(c0, "ROUND 0 1 2 4 8 4 8 192.168.1.2 29500");
	assert_string_equal(c1->members,
	    "0 10.0.0.2;0 192.168.1.2;0 10.0.0.1;");
	/* After the greeting and JOINED, before ROUND. */
	assert_int_equal(c1->members_at, 2);
	assert_string_equal(c0->members, "");
}

static void
test_last_call(void **state)
{
	struct fx *fx = *state;

	fx->last_call = 1000;
	fx->max = 4;
	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	expect(join(fx, 1, "new"), "JOINED 0 2 0");
	advance(fx, 500);
	expect(join(fx, 2, "new"), "JOINED 0 3 0");
	advance(fx, 499);
	expect_none(&fx->c[0]);
	advance(fx, 1);
	expect(&fx->c[0], "ROUND 0 0 3 0 12 0 12 n0 29500");
	expect(&fx->c[1], "ROUND 0 1 3 4 12 4 12 n0 29500");
	expect(&fx->c[2], "ROUND 0 2 3 8 12 8 12 n0 29500");
}

static void
test_below_min_clears_deadline(void **state)
{
	struct fx *fx = *state;

	fx->last_call = 1000;
	join(fx, 0, "new");
	join(fx, 1, "new");
	advance(fx, 500);
	lose(fx, &fx->c[1]);
	advance(fx, 400);
	join(fx, 2, "new");
	advance(fx, 100);
	/* The old deadline is gone; the new one runs from the 2nd join. */
	expect(&fx->c[0], "JOINED 0 1 0");
	expect_none(&fx->c[0]);
	advance(fx, 899);
	expect_none(&fx->c[0]);
	advance(fx, 1);
	expect(&fx->c[0], "ROUND 0 0 2 0 8 0 8 n0 29500");
	expect(&fx->c[2], "JOINED 0 2 0");
	expect(&fx->c[2], "ROUND 0 1 2 4 8 4 8 n0 29500");
}

static void
test_max_completes_at_once(void **state)
{
	struct fx *fx = *state;

	fx->min = 1;
	fx->max = 2;
	fx->last_call = 60000;
	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	expect_none(&fx->c[0]);
	expect(join(fx, 1, "new"), "JOINED 0 2 0");
	expect(&fx->c[0], "ROUND 0 0 2");
	expect(&fx->c[1], "ROUND 0 1 2");
}

static void
test_roles(void **state)
{
	struct fx *fx = *state;

	fx->max = 3;
	fx->min = 3;
	fc_connect(fx, 0);
	fc_connect(fx, 1);
	fc_connect(fx, 2);
	join_full(fx, &fx->c[0], "job", "a", 2, "trainer", "new");
	join_full(fx, &fx->c[1], "job", "b", 1, "ps", "new");
	join_full(fx, &fx->c[2], "job", "c", 3, "trainer", "new");
	expect(&fx->c[0], "JOINED 0 1 0");
	expect(&fx->c[0], "ROUND 0 0 3 0 6 0 5 a 29500");
	expect(&fx->c[1], "JOINED 0 2 0");
	expect(&fx->c[1], "ROUND 0 1 3 2 6 0 1 a 29500");
	expect(&fx->c[2], "JOINED 0 3 0");
	expect(&fx->c[2], "ROUND 0 2 3 3 6 2 5 a 29500");
}

static void
test_scale_up(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	expect(join(fx, 2, "new"), "JOINED 1 1 0");
	expect(&fx->c[0], "RESTART 1");
	expect(&fx->c[1], "RESTART 1");
	/* Last call 0, yet a restarted round waits for its members. */
	expect(join(fx, 1, "new"), "JOINED 1 2 0");
	expect_none(&fx->c[1]);
	expect(join(fx, 0, "new"), "JOINED 1 3 0");
	expect(&fx->c[0], "ROUND 1 0 3 0 12 0 12 n0 29500");
	expect(&fx->c[1], "ROUND 1 1 3 4 12");
	expect(&fx->c[2], "ROUND 1 2 3 8 12");
}

static void
test_restart_waits_bounded(void **state)
{
	struct fx *fx = *state;

	fx->max = 4;
	two_running(fx);
	join(fx, 2, "new");
	expect(&fx->c[0], "RESTART 1");
	expect(&fx->c[1], "RESTART 1");
	expect(join(fx, 0, "new"), "JOINED 1 2 0");
	/* n1 never comes back but keeps its connection alive. */
	advance(fx, RECOVERY / 2);
	say(fx, &fx->c[1], "PING\n");
	expect_none(&fx->c[0]);
	advance(fx, RECOVERY / 2);
	expect(&fx->c[0], "ROUND 1 0 2 0 8");
	expect(&fx->c[2], "JOINED 1 1 0");
	expect(&fx->c[2], "ROUND 1 1 2 4 8");
	/* Late, it is a new member: one more round. */
	expect(join(fx, 1, "new"), "JOINED 2 1 0");
	expect(&fx->c[0], "RESTART 2");
	expect(&fx->c[2], "RESTART 2");
}

static void
test_wait_list(void **state)
{
	struct fx *fx = *state;

	fx->max = 2;
	two_running(fx);
	expect(join(fx, 2, "new"), "JOINED 0 0 1");
	expect(&fx->c[0], "WAITING 1");
	expect(&fx->c[1], "WAITING 1");
	expect(join(fx, 3, "new"), "JOINED 0 0 2");
	expect(&fx->c[0], "WAITING 2");
	lose(fx, &fx->c[3]);
	expect(&fx->c[0], "WAITING 1");
	expect(&fx->c[1], "WAITING 2");
	expect(&fx->c[1], "WAITING 1");
	/* A member dies: the survivor restarts, the waiter gets in. */
	lose(fx, &fx->c[0]);
	expect(&fx->c[1], "RESTART 1");
	expect(&fx->c[2], "JOINED 1 1 0");
	expect(join(fx, 1, "new"), "JOINED 1 2 0");
	expect(&fx->c[1], "ROUND 1 0 2 0 8 0 8 n1 29500");
	expect(&fx->c[2], "ROUND 1 1 2 4 8 4 8 n1 29500");
}

static void
test_node_loss(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	lose(fx, &fx->c[0]);
	expect(&fx->c[1], "RESTART 1");
	expect(join(fx, 1, "new"), "JOINED 1 1 0");
	expect_none(&fx->c[1]);
	expect(join(fx, 3, "new"), "JOINED 1 2 0");
	expect(&fx->c[1], "ROUND 1 0 2 0 8 0 8 n1 29500");
	expect(&fx->c[3], "ROUND 1 1 2 4 8 4 8 n1 29500");
}

static void
test_leave_and_rejoin(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "LEAVE\n");
	assert_false(fx->c[0].closed);
	expect(&fx->c[1], "RESTART 1");
	expect(join(fx, 1, "new"), "JOINED 1 1 0");
	expect(join(fx, 0, "new"), "JOINED 1 2 0");
	expect(&fx->c[0], "ROUND 1 0 2");
	expect(&fx->c[1], "ROUND 1 1 2");
}

static void
test_member_rejoins_new(void **state)
{
	struct fx *fx = *state;

	fx->max = 2;
	two_running(fx);
	/* n1's group failed: it joins anew, n0 must restart too. */
	expect(join(fx, 1, "new"), "JOINED 1 1 0");
	expect(&fx->c[0], "RESTART 1");
	expect(join(fx, 0, "new"), "JOINED 1 2 0");
	expect(&fx->c[0], "ROUND 1 0 2");
}

static void
test_barrier(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[1], "BARRIER 0\n");
	expect_none(&fx->c[1]);
	say(fx, &fx->c[1], "BARRIER 0\n");
	expect_none(&fx->c[1]);
	assert_false(fx->c[1].closed);
	say(fx, &fx->c[0], "BARRIER 0\n");
	expect(&fx->c[0], "RELEASE 0");
	expect(&fx->c[1], "RELEASE 0");
	/* A finished node that goes causes no restart. */
	lose(fx, &fx->c[1]);
	expect_none(&fx->c[0]);
}

/*
 * A running node that hangs up while the other waits in the barrier did
 * not finish: the round restarts on every node, the finished one too.
 */
static void
test_barrier_then_loss_restarts(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "BARRIER 0\n");
	expect_none(&fx->c[0]);
	lose(fx, &fx->c[1]);
	expect(&fx->c[0], "RESTART 1");
	expect(join(fx, 0, "new"), "JOINED 1 1 0");
}

/*
 * One whose lease runs out may have finished, its supervisor stopped:
 * the barrier waits for it (LOST), and passes when it says it finished.
 */
static void
test_barrier_then_silence_waits(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "BARRIER 0\n");
	fx->c[1].silent = true;
	advance(fx, 4 * HB);
	assert_true(fx->c[1].closed);
	expect(&fx->c[0], "LOST 0");
	expect_none(&fx->c[0]);
	expect(join(fx, 1, "done 0 1 2"), "RELEASE 0");
	expect(&fx->c[0], "RELEASE 0");
}

/* Back with its workers stopped, it restarts the round on every node. */
static void
test_barrier_then_silence_new(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "BARRIER 0\n");
	fx->c[1].silent = true;
	advance(fx, 4 * HB);
	expect(&fx->c[0], "LOST 0");
	expect(join(fx, 1, "new"), "JOINED 1 1 0");
	expect(&fx->c[0], "RESTART 1");
}

/*
 * While a node waits in the barrier of a current round, a newcomer does
 * not restart it: it waits.  A node that finished and went silent is
 * taken back, and one back after the barrier passed is released.
 */
static void
test_barrier_finishing_round(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "BARRIER 0\n");
	expect(join(fx, 2, "new"), "JOINED 0 0 1");
	expect_none(&fx->c[0]);
	expect(&fx->c[1], "WAITING 1");
	expect_none(&fx->c[1]);
	fx->c[0].silent = true;
	advance(fx, 4 * HB);
	assert_true(fx->c[0].closed);
	expect_none(&fx->c[1]);
	expect_none(join(fx, 0, "done 0 0 2"));
	say(fx, &fx->c[1], "BARRIER 0\n");
	expect(&fx->c[0], "RELEASE 0");
	expect(&fx->c[1], "RELEASE 0");
	lose(fx, &fx->c[0]);
	expect(join(fx, 0, "done 0 0 2"), "RELEASE 0");
	say(fx, &fx->c[1], "CLOSE\n");
	expect(&fx->c[2], "CLOSED");
	lose(fx, &fx->c[0]);
	expect(join(fx, 0, "done 0 0 2"), "RELEASE 0");
	/* Its round's barrier did not pass for a node running then. */
	expect(join(fx, 3, "running 0 1 2"), "ERR closed job job is closed");
}

static void
test_barrier_stale(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	say(fx, &fx->c[0], "BARRIER 3\n");
	expect(&fx->c[0], "ERR proto BARRIER 3");
	assert_true(fx->c[0].closed);
	expect(&fx->c[1], "RESTART 1");
}

static void
test_close(void **state)
{
	struct fx *fx = *state;

	fx->max = 2;
	two_running(fx);
	join(fx, 2, "new");
	expect(&fx->c[2], "JOINED 0 0 1");
	expect(&fx->c[0], "WAITING 1");
	expect(&fx->c[1], "WAITING 1");
	say(fx, &fx->c[0], "CLOSE\n");
	expect(&fx->c[2], "CLOSED");
	assert_true(fx->c[2].closed);
	expect_none(&fx->c[0]);
	expect_none(&fx->c[1]);
	assert_false(fx->c[0].closed);
	expect(join(fx, 3, "new"), "ERR closed job job is closed");
	assert_true(fx->c[3].closed);
	/* A member's group failing after the close: refused too. */
	expect(join(fx, 1, "new"), "ERR closed");
	assert_true(fx->c[1].closed);
	expect_none(&fx->c[0]);
	say(fx, &fx->c[0], "BARRIER 0\n");
	expect(&fx->c[0], "RELEASE 0");
}

static void
test_mismatch(void **state)
{
	struct fx *fx = *state;

	join(fx, 0, "new");
	fx->max = 4;
	expect(join(fx, 1, "new"), "ERR mismatch job job has min:max 2:3, "
	    "you asked 2:4");
	assert_true(fx->c[1].closed);
	fx->max = 3;
	fx->last_call = 5;
	expect(join(fx, 2, "new"), "ERR mismatch job job has last call 0 ms");
	expect(&fx->c[0], "JOINED 0 1 0");
	expect_none(&fx->c[0]);
	assert_false(fx->c[0].closed);
}

static void
test_bad_clients(void **state)
{
	struct fx *fx = *state;
	char big[RDZV_LINE_MAX + 8];
	struct fconn *c;

	fx->min = 1;
	fx->max = 1;
	c = join(fx, 0, "new");
	expect(c, "JOINED 0 1 0");
	expect(c, "ROUND 0 0 1 0 4 0 4 n0 29500");

	say(fx, fc_connect(fx, 1), "PING\n");
	expect(&fx->c[1], "ERR proto a sealed JOIN expected");
	assert_true(fx->c[1].closed);
	say(fx, fc_connect(fx, 2), "\x7f" "ELF garbage\n");
	expect(&fx->c[2], "ERR proto control or non-ASCII byte");
	rdzv_server_input(fx->srv, fc_connect(fx, 3)->sc, "JO\0IN\n", 6,
	    fx->now);
	expect(&fx->c[3], "ERR proto NUL byte in line");
	memset(big, 'A', sizeof(big));
	rdzv_server_input(fx->srv, fc_connect(fx, 4)->sc, big, sizeof(big),
	    fx->now);
	expect(&fx->c[4], "ERR toolong line 1 longer than 1024 bytes");
	assert_true(fx->c[4].closed);
	/* 1023 bytes and '\n' is the longest line there is. */
	memset(big, 'A', RDZV_LINE_MAX - 1);
	big[RDZV_LINE_MAX - 1] = '\n';
	rdzv_server_input(fx->srv, fc_connect(fx, 5)->sc, big, RDZV_LINE_MAX,
	    fx->now);
	expect(&fx->c[5], "ERR proto unknown verb");
	/* A server message from a client. */
	join(fx, 6, "new");
	expect(&fx->c[6], "JOINED 0 0 1");
	say(fx, &fx->c[6], "ROUND 0 0 1 0 4 0 4 a 1\n");
	expect(&fx->c[6], "ERR proto ROUND is not a client message");
	expect(c, "WAITING 1");
	expect(c, "WAITING 0");
	/* A bad token, another version, an unsealed JOIN. */
	fc_connect(fx, 7);
	say(fx, &fx->c[7], "JOIN 3 job x 00000000000000000000000000000000"
	    " 4 1 1 0 r a 1 new 0 0000000000000000000000000000000000000000"
	    "000000000000000000000000\n");
	expect(&fx->c[7], "ERR auth bad token");
	assert_true(fx->c[7].closed);
	fc_connect(fx, 8);
	say(fx, &fx->c[8], "JOIN 1 job x 00000000000000000000000000000000"
	    "00000000000000000000000000000000 4 1 1 0 r a 1 new\n");
	expect(&fx->c[8], "ERR version 1 not supported, this server speaks 3");
	fc_connect(fx, 9);
	say(fx, &fx->c[9], "JOIN 3 job x 00000000000000000000000000000000"
	    " 4 1 1 0 r a 1 new 0\n");
	expect(&fx->c[9], "ERR proto a sealed JOIN expected");
	/* The running node saw none of it. */
	expect_none(c);
	assert_false(c->closed);
}

static void
test_split_lines(void **state)
{
	struct fx *fx = *state;
	char text[RDZV_LINE_MAX], line[2 * RDZV_LINE_MAX];
	struct fconn *c = fc_connect(fx, 0);
	size_t i, n;

	fc_key(c);
	snprintf(text, sizeof(text), "JOIN 3 job n0 %s 4 2 3 0 r a 1 new 0",
	    c->cnonce);
	seal(c, text, line, sizeof(line));
	n = strlen(line);
	seal(c, "PING", line + n, sizeof(line) - n);
	for (i = 0; line[i] != '\0'; i++)
		rdzv_server_input(fx->srv, c->sc, &line[i], 1, fx->now);
	expect(c, "JOINED 0 1 0");
	expect_none(c);
	assert_false(c->closed);
}

static void
test_heartbeat(void **state)
{
	struct fx *fx = *state;
	struct fconn *n0 = &fx->c[0], *n1 = &fx->c[1], *quiet, *trickle;

	two_running(fx);
	n0->pings = n1->pings = n0->silent = n1->silent = true;
	quiet = fc_connect(fx, 5);
	trickle = fc_connect(fx, 6);
	advance(fx, HB);
	expect(n0, "PING");
	expect(n1, "PING");
	expect_none(quiet);
	say(fx, trickle, "J");
	say(fx, n0, "PING\n");
	/* A PING is acknowledged at once, not at the next heartbeat. */
	expect(n0, "PING");
	advance(fx, HB);
	say(fx, trickle, "O");
	say(fx, n0, "PI");
	advance(fx, HB);
	/* Not a JOIN within 3 heartbeats, trickle or not. */
	expect(quiet, "ERR proto no JOIN within 300 ms");
	assert_true(quiet->closed);
	assert_true(trickle->closed);
	/* n1 was silent for 3 heartbeats. */
	expect(n1, "PING");
	expect_none(n1);
	assert_true(n1->closed);
	expect(n0, "PING");
	expect(n0, "PING");
	expect(n0, "RESTART 1");
	assert_false(n0->closed);
	/* Its half line does not count as a sign of life. */
	advance(fx, HB);
	assert_true(n0->closed);
}

static void
test_not_reading(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	fx->c[1].stuck = true;
	lose(fx, &fx->c[0]);
	assert_true(fx->c[1].closed);
}

static void
test_reconnect(void **state)
{
	struct fx *fx = *state;
	struct fconn *old;

	two_running(fx);
	old = &fx->c[1];
	fc_connect(fx, 7);
	join_full(fx, &fx->c[7], "job", "n1", 4, "default", "running 0 1 2");
	assert_true(old->closed);
	expect_none(&fx->c[7]);
	expect_none(&fx->c[0]);
	say(fx, &fx->c[7], "BARRIER 0\n");
	say(fx, &fx->c[0], "BARRIER 0\n");
	expect(&fx->c[7], "RELEASE 0");
	/* Stale state: told to restart, and no member any more. */
	fc_connect(fx, 8);
	join_full(fx, &fx->c[8], "job", "n0", 4, "default", "running 5 0 2");
	expect(&fx->c[8], "RESTART 6");
	assert_true(fx->c[0].closed);
}

static void
test_replace_connection(void **state)
{
	struct fx *fx = *state;

	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	fc_connect(fx, 4);
	join_full(fx, &fx->c[4], "job", "n0", 4, "default", "new");
	assert_true(fx->c[0].closed);
	expect(&fx->c[4], "JOINED 0 1 0");
}

/* Another supervisor with n0's id: refused while n0 is connected. */
static void
test_duplicate_refused(void **state)
{
	struct fx *fx = *state;

	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	fc_connect(fx, 4);
	fx->c[4].instance = "fedcba9876543210";
	join_full(fx, &fx->c[4], "job", "n0", 4, "default", "new");
	expect(&fx->c[4], "ERR duplicate job job: node id n0 is in use by "
	    "10.0.0.9:4000, a live connection of another supervisor");
	assert_true(fx->c[4].closed);
	assert_false(fx->c[0].closed);
	expect_none(&fx->c[0]);
	/* Its connection gone, n0's id is free for anyone. */
	lose(fx, &fx->c[0]);
	fc_connect(fx, 5);
	fx->c[5].instance = "fedcba9876543210";
	join_full(fx, &fx->c[5], "job", "n0", 4, "default", "new");
	expect(&fx->c[5], "JOINED ");
	assert_false(fx->c[5].closed);
}

static void
test_recovery(void **state)
{
	struct fx *fx = *state;

	/* A restarted server: the nodes come back to round 3. */
	expect_none(join(fx, 1, "running 3 1 2"));
	assert_false(fx->c[1].closed);
	expect(join(fx, 2, "running 3 1 2"), "RESTART 4");
	expect(join(fx, 3, "running 2 0 2"), "RESTART 4");
	expect(join(fx, 4, "new"), "JOINED 3 0 1");
	join(fx, 0, "running 3 0 2");
	/* Both are back; the waiter fits: a new round. */
	expect(&fx->c[0], "RESTART 4");
	expect(&fx->c[1], "RESTART 4");
	expect(&fx->c[4], "JOINED 4 1 0");
}

static void
test_recovery_done(void **state)
{
	struct fx *fx = *state;

	expect_none(join(fx, 0, "done 3 0 2"));
	expect_none(join(fx, 1, "running 3 1 2"));
	say(fx, &fx->c[1], "BARRIER 3\n");
	expect(&fx->c[0], "RELEASE 3");
	expect(&fx->c[1], "RELEASE 3");
}

static void
test_recovery_timeout(void **state)
{
	struct fx *fx = *state;

	expect_none(join(fx, 0, "running 3 0 2"));
	advance(fx, RECOVERY - 1);
	expect_none(&fx->c[0]);
	advance(fx, 1);
	expect(&fx->c[0], "RESTART 4");
}

/*
 * A member told to restart that is not heard from may still run its
 * workers until its lease is over: the new round must not give its ranks
 * away before then, --recovery-timeout or not.
 */
static void
test_lease_holds_ranks(void **state)
{
	struct fx *fx;

	(void)state;
	fx_lease_ms = LEASE;
	fx = fx_new(4);
	fx_lease_ms = 0;
	two_running(fx);
	fx->c[1].silent = true;		/* cut off: n1 hears and says nothing */
	expect(join(fx, 2, "new"), "JOINED 1 1 0");
	expect(&fx->c[0], "RESTART 1");
	expect(join(fx, 0, "new"), "JOINED 1 2 0");
	advance(fx, RECOVERY);
	expect_none(&fx->c[0]);
	expect_none(&fx->c[2]);
	assert_false(fx->c[1].closed);
	/* n1's lease is over: it is dropped, and its ranks may go. */
	advance(fx, LEASE - RECOVERY);
	assert_true(fx->c[1].closed);
	expect(&fx->c[0], "ROUND 1 0 2 0 8 0 8 n0 29500");
	expect(&fx->c[2], "ROUND 1 1 2 4 8 4 8 n0 29500");
	rdzv_server_free(fx->srv);
	free(fx);
}

/* After a restart of the server, nobody's ranks go for a lease. */
static void
test_lease_after_restart(void **state)
{
	struct fx *fx;

	(void)state;
	fx_lease_ms = LEASE;
	fx = fx_new(4);
	fx_lease_ms = 0;
	/* Two nodes of round 3 come back as new (their workers failed). */
	fc_connect(fx, 0);
	join_full(fx, &fx->c[0], "job", "n0", 4, "default", "new 4");
	expect(&fx->c[0], "JOINED 4 1 0");
	fc_connect(fx, 1);
	join_full(fx, &fx->c[1], "job", "n1", 4, "default", "new 4");
	expect(&fx->c[1], "JOINED 4 2 0");
	expect_none(&fx->c[0]);
	advance(fx, LEASE - HB);
	expect_none(&fx->c[0]);
	advance(fx, HB);
	expect(&fx->c[0], "ROUND 4 0 2 0 8 0 8 n0 29500");
	rdzv_server_free(fx->srv);
	free(fx);
}

static void
test_limits(void **state)
{
	struct fx *fx = fx_new(2);

	(void)state;
	fx->min = 1;
	fx->max = 1;
	fc_connect(fx, 0);
	join_full(fx, &fx->c[0], "j1", "a", 1, "r", "new");
	expect(&fx->c[0], "JOINED 0 1 0");
	expect(&fx->c[0], "ROUND 0 0 1");
	fc_connect(fx, 1);
	join_full(fx, &fx->c[1], "j2", "a", 1, "r", "new");
	fc_connect(fx, 2);
	join_full(fx, &fx->c[2], "j3", "a", 1, "r", "new");
	expect(&fx->c[2], "ERR limit too many jobs");
	/* A closed job with no node left makes room. */
	say(fx, &fx->c[0], "CLOSE\n");
	fc_connect(fx, 3);
	join_full(fx, &fx->c[3], "j3", "a", 1, "r", "new");
	expect(&fx->c[3], "ERR limit too many jobs");
	lose(fx, &fx->c[0]);
	assert_int_equal(rdzv_server_njobs(fx->srv), 2);
	fc_connect(fx, 4);
	join_full(fx, &fx->c[4], "j3", "a", 1, "r", "new");
	expect(&fx->c[4], "JOINED 0 1 0");
	/* j1 was evicted: a JOIN to it creates it anew. */
	lose(fx, &fx->c[1]);
	assert_int_equal(rdzv_server_njobs(fx->srv), 1);
	fc_connect(fx, 5);
	fx->max = 17;
	join_full(fx, &fx->c[5], "j1", "a", 1, "r", "new");
	expect(&fx->c[5], "ERR limit max 17 above this server's limit of 16");
	rdzv_server_free(fx->srv);
	free(fx);
}

/*
 * A node's JOIN crossed the RESTART sent before it arrived, and the node
 * joined again on that RESTART: the second JOIN asks for the round the
 * first one got it into.  It is said the same answer again, never read
 * as its workers failing (which would open a round the others are not
 * told of while it runs the old one).
 */
static void
test_join_twice(void **state)
{
	struct fx *fx = *state;

	two_running(fx);
	expect(join(fx, 2, "new"), "JOINED 1 1 0");
	expect(&fx->c[0], "RESTART 1");
	expect(&fx->c[1], "RESTART 1");
	expect(join(fx, 0, "new"), "JOINED 1 2 0");
	expect(join(fx, 1, "new"), "JOINED 1 3 0");
	expect(&fx->c[0], "ROUND 1 0 3 0 12 0 12 n0 29500");
	expect(&fx->c[1], "ROUND 1 1 3 4 12 4 12 n0 29500");
	expect(&fx->c[2], "ROUND 1 2 3 8 12 8 12 n0 29500");
	/* n1 again, for round 1 (it has run round 0 only). */
	expect(join(fx, 1, "new 1"), "JOINED 1 ");
	expect(&fx->c[1], "ROUND 1 1 3 4 12 4 12 n0 29500");
	expect_none(&fx->c[0]);
	expect_none(&fx->c[1]);
	expect_none(&fx->c[2]);
	/* Its connection lost with the ROUND in it: the new one gets it. */
	fc_connect(fx, 5);
	join_full(fx, &fx->c[5], "job", "n1", 4, "default", "new 1");
	assert_true(fx->c[1].closed);
	expect(&fx->c[5], "JOINED 1 ");
	expect(&fx->c[5], "ROUND 1 1 3 4 12 4 12 n0 29500");
	expect_none(&fx->c[0]);
	expect_none(&fx->c[2]);
	/* Past round 1: its workers of round 1 failed. */
	join_full(fx, &fx->c[5], "job", "n1", 4, "default", "new 2");
	expect(&fx->c[5], "JOINED 2 1 0");
	expect(&fx->c[0], "RESTART 2");
	expect(&fx->c[2], "RESTART 2");
	/* In the round being gathered, a JOIN again is just as harmless. */
	join_full(fx, &fx->c[5], "job", "n1", 4, "default", "new 2");
	expect(&fx->c[5], "JOINED 2 1 0");
	expect_none(&fx->c[0]);
	expect_none(&fx->c[2]);
}

/* A job made anew by a restarted server numbers its rounds on. */
static void
test_rounds_never_reused(void **state)
{
	struct fx *fx = *state;

	expect(join(fx, 0, "new 6"), "JOINED 6 1 0");
	expect(join(fx, 1, "new 0"), "JOINED 6 2 0");
	expect(&fx->c[0], "ROUND 6 0 2");
}

/*
 * Connections yet to authenticate have a pool of their own: an address
 * holds MAX_UNAUTH_ADDR of it, all of them MAX_UNAUTH, a newcomer pushes
 * the oldest out, and nobody who has authenticated is touched.
 */
static void
test_unauth_pool(void **state)
{
	struct fx *fx = *state;
	char ip[32];
	unsigned i;

	fx->min = fx->max = 1;
	expect(join(fx, 0, "new"), "JOINED 0 1 0");
	expect(&fx->c[0], "ROUND 0 0 1");
	for (i = 1; i <= MAX_UNAUTH_ADDR; i++)
		fc_connect_from(fx, i, "10.6.6.6");
	for (i = 1; i <= MAX_UNAUTH_ADDR; i++)
		assert_false(fx->c[i].closed);
	/* One more from that address: its oldest goes. */
	fc_connect_from(fx, 5, "10.6.6.6");
	expect(&fx->c[1], "ERR limit too many connections yet to "
	    "authenticate");
	assert_true(fx->c[1].closed);
	assert_false(fx->c[2].closed);
	/* Other addresses fill the pool: the oldest of all goes. */
	fc_connect_from(fx, 6, "10.6.6.7");
	fc_connect_from(fx, 7, "10.6.6.8");
	assert_false(fx->c[2].closed);
	fc_connect_from(fx, 8, "10.6.6.9");
	assert_true(fx->c[2].closed);
	assert_false(fx->c[3].closed);
	/* A node still gets in, and does not count in the pool. */
	fc_connect_from(fx, 9, "10.6.6.6");
	assert_true(fx->c[3].closed);
	fx->min = fx->max = 2;
	join_full(fx, &fx->c[9], "other", "x", 1, "default", "new");
	expect(&fx->c[9], "JOINED 0 1 0");
	for (i = 0; i < 4; i++) {
		snprintf(ip, sizeof(ip), "10.7.0.%u", i);
		fc_connect_from(fx, 10 + i, ip);
	}
	assert_false(fx->c[9].closed);
	assert_false(fx->c[0].closed);
	/* The rest had their time to authenticate. */
	advance(fx, 3 * HB - 1);
	assert_false(fx->c[13].closed);
	advance(fx, 1);
	for (i = 4; i <= 13; i++)
		assert_true(i == 9 || fx->c[i].closed);
	expect(&fx->c[13], "ERR proto no JOIN within 300 ms");
	assert_false(fx->c[9].closed);
	assert_false(fx->c[0].closed);
}

/* Past max_clients authenticated connections, a good JOIN must wait. */
static void
test_max_clients(void **state)
{
	struct fx *fx = *state;
	unsigned i;

	fx->min = fx->max = 16;
	for (i = 0; i < MAX_CLIENTS; i++)
		expect(join(fx, i, "new"), "JOINED 0 ");
	expect(join(fx, MAX_CLIENTS, "new"), "ERR limit 10 nodes connected "
	    "already");
	assert_true(fx->c[MAX_CLIENTS].closed);
	lose(fx, &fx->c[0]);
	expect(join(fx, MAX_CLIENTS + 1, "new"), "JOINED 0 ");
}

#define T(f)	cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_min_completes),
		T(test_members),
		T(test_last_call),
		T(test_below_min_clears_deadline),
		T(test_max_completes_at_once),
		T(test_roles),
		T(test_scale_up),
		T(test_restart_waits_bounded),
		T(test_wait_list),
		T(test_node_loss),
		T(test_leave_and_rejoin),
		T(test_member_rejoins_new),
		T(test_barrier),
		T(test_barrier_then_loss_restarts),
		T(test_barrier_then_silence_waits),
		T(test_barrier_then_silence_new),
		T(test_barrier_finishing_round),
		T(test_barrier_stale),
		T(test_close),
		T(test_mismatch),
		T(test_bad_clients),
		T(test_split_lines),
		T(test_heartbeat),
		T(test_not_reading),
		T(test_reconnect),
		T(test_replace_connection),
		T(test_duplicate_refused),
		T(test_recovery),
		T(test_recovery_done),
		T(test_recovery_timeout),
		T(test_join_twice),
		T(test_rounds_never_reused),
		T(test_unauth_pool),
		T(test_max_clients),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_lease_holds_ranks),
		cmocka_unit_test(test_lease_after_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
