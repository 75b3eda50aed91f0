/*
 * The esv rendezvous backend as esv-supervise runs it
 * (rendezvous/client/rdzv_esv.c and its layers, esv_int.h): a real
 * connection on loopback to a fake esv-rdzv played by the input.  The
 * harness greets the client, reads the cnonce of its JOIN and makes the
 * session key, so that the fuzzer speaks as a server that knows the
 * token as well as one that does not.
 *
 * Each step: one byte op, then its operands.
 *	0 sealed line: length, text	1 raw bytes: length, bytes
 *	2 JOINED from 3 bytes		3 ROUND from 8 bytes
 *	4 RESTART/RELEASE from 2 bytes	5 the supervisor asks: 1 byte
 *	6 the server hangs up		7 ERR from 2 bytes
 * Everything the client says back must be one line sealed under the
 * session key in sequence, and whatever it reports to the supervisor
 * must hold together: a round's ranks within its sizes, a failure given
 * as one line.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/sockios.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "../../rendezvous/client/rdzv.h"
#include "fuzz.h"
#include "rdzvproto.h"

#define TOKEN	"fuzz-token-0123456789abcdef"
#define SNONCE	"0123456789abcdef0123456789abcdef"
#define NPROC	2

static struct loop lp;
static struct rdzv_params cfg;
static int lfd;

/* The fake server's side of one connection. */
static struct server {
	int		 fd;
	bool		 keyed;
	uint8_t		 key[RDZV_KEY_LEN];
	uint64_t	 seq_out, seq_in;
	char		 in[4 * RDZV_LINE_MAX];
	size_t		 inlen;
	unsigned	 joined_round;
} s;

static void
on_done(void *ctx, const struct rdzv_round *r)
{
	const struct rank_assignment *a = &r->ranks;

	(void)ctx;
	CHECK(a->local_world_size == NPROC);
	CHECK(a->group_rank < a->group_world_size);
	CHECK((unsigned long long)a->base_rank + NPROC <= a->world_size);
	CHECK((unsigned long long)a->base_role_rank + NPROC <=
	    a->role_world_size);
	CHECK(memchr(r->master_addr, '\0', sizeof(r->master_addr)) != NULL);
}

static void
on_failed(void *ctx, const char *why)
{
	(void)ctx;
	CHECK(why[0] != '\0' && strchr(why, '\n') == NULL);
}

static void
on_nothing(void *ctx)
{
	(void)ctx;
}

static void
on_fenced(void *ctx, long long kill_at_ms)
{
	(void)ctx;
	(void)kill_at_ms;
}

static void
on_barrier(void *ctx, bool released)
{
	(void)ctx;
	(void)released;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	char path[PATH_MAX];

	(void)argc;
	(void)argv;
	if (loop_init(&lp) == -1)
		abort();
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd == -1 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ==
	    -1 || listen(lfd, 64) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&addr, &len) == -1)
		abort();
	fuzz_put("token", (const uint8_t *)TOKEN "\n", sizeof(TOKEN));
	snprintf(path, sizeof(path), "%s/token", fuzz_dir());
	if (chmod(path, 0600) == -1)
		abort();

	cfg.rdzv_backend = "esv";
	cfg.rdzv_host = "127.0.0.1";
	cfg.rdzv_port = ntohs(addr.sin_port);
	rdzv_conf_defaults(&cfg.rdzv);
	strlcpy(cfg.rdzv.token_file, path, sizeof(cfg.rdzv.token_file));
	cfg.rdzv.is_host = 0;
	cfg.local_addr = "127.0.0.1";
	cfg.master_addr = "127.0.0.1";
	cfg.run_id = "job";
	cfg.role = "default";
	cfg.jobdir = fuzz_dir();
	cfg.nproc_per_node = NPROC;
	cfg.nnodes_min = 1;
	cfg.nnodes_max = 4;
	cfg.master_port = 29500;
	return 0;
}

/* Run the client until it has nothing left to do now. */
static void
pump(void)
{
	int turns;

	for (turns = 0; turns < 64 && loop_once(&lp, 0) > 0; turns++)
		;
}

/* Read what the client said; each line must be sealed, in sequence. */
static void
drain(void)
{
	char mac[RDZV_MAC_LEN + 1], *nl, *line;
	struct rdzv_msg m;
	char err[256];
	ssize_t n;

	if (s.fd == -1)
		return;
	while ((n = read(s.fd, s.in + s.inlen, sizeof(s.in) - 1 - s.inlen)) >
	    0) {
		s.inlen += n;
		s.in[s.inlen] = '\0';
		while ((nl = strchr(s.in, '\n')) != NULL) {
			*nl = '\0';
			line = s.in;
			CHECK(strlen(line) <= RDZV_LINE_MAX + RDZV_SEAL_LEN);
			if (!s.keyed) {
				/* The first line: a JOIN that names the cnonce. */
				char copy[RDZV_LINE_MAX + RDZV_SEAL_LEN + 1];

				strlcpy(copy, line, sizeof(copy));
				CHECK(rdzv_unseal_split(copy, mac) == 0);
				CHECK(rdzv_msg_parse(copy, &m, err, sizeof(err))
				    == 0 && m.verb == RV_JOIN);
				rdzv_session_key(TOKEN, SNONCE, m.u.join.cnonce,
				    s.key);
				s.keyed = true;
			}
			CHECK(rdzv_msg_parse_sealed(line, &m, s.key,
			    RDZV_TO_SERVER, s.seq_in, err, sizeof(err)) == 0);
			s.seq_in++;
			s.inlen -= nl + 1 - s.in;
			memmove(s.in, nl + 1, s.inlen);
		}
		CHECK(s.inlen < sizeof(s.in) - 1);
	}
	if (n == 0) {
		close(s.fd);
		s.fd = -1;
	}
}

/*
 * Wait until TCP has sent all we wrote (on loopback it is then in the
 * client's receive queue), so that one pump sees all of it: a small
 * segment may be held back for a moment (autocorking).
 */
static void
settle(void)
{
	int queued, spins;

	for (spins = 0; spins < 100000; spins++) {
		if (ioctl(s.fd, SIOCOUTQNSD, &queued) == -1 || queued == 0)
			return;
		sched_yield();
	}
}

static void
say(const char *bytes, size_t n)
{
	if (s.fd != -1 && n > 0 && send(s.fd, bytes, n, MSG_NOSIGNAL) > 0)
		settle();
	pump();
	drain();
}

static void
say_sealed(const char *text)
{
	char line[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];
	int n;

	if (s.keyed && (n = rdzv_seal(line, sizeof(line), text, s.key,
	    RDZV_TO_CLIENT, s.seq_out++)) > 0)
		say(line, (size_t)n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *errs[] = { "auth", "limit", "version", "full" };
	struct rdzv_callbacks cb = { .done = on_done, .failed = on_failed,
	    .membership_changed = on_nothing, .fenced = on_fenced,
	    .barrier_done = on_barrier, .status_changed = on_nothing };
	char text[RDZV_LINE_MAX + 1], err[256];
	struct rdzv_status st;
	struct rdzv rz;
	size_t i = 0, n;
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint8_t op;
	int fd, fl, one = 1;

	memset(&s, 0, sizeof(s));
	/* A client of an earlier run may have reconnected before it ended. */
	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) !=
	    -1)
		close(fd);
	CHECK(rdzv_open(&rz, &cfg, &lp, &cb, err, sizeof(err)) == 0);
	CHECK(rdzv_join(&rz) == 0);
	CHECK(poll(&pfd, 1, 10000) == 1);
	CHECK((s.fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) != -1);
	fl = fcntl(s.fd, F_GETFL);
	CHECK(fcntl(s.fd, F_SETFL, fl | O_NONBLOCK) == 0);
	/* Nagle would hold each line for the client's delayed ACK. */
	CHECK(setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ==
	    0);
	pump();
	snprintf(text, sizeof(text), "ESV-RDZV %d %s 1000 1500\n",
	    RDZV_PROTO_VERSION, SNONCE);
	say(text, strlen(text));
	/* Greeted while it wants a round, the client JOINs at once. */
	pfd.fd = s.fd;
	while (!s.keyed && s.fd != -1 && poll(&pfd, 1, 10000) == 1)
		drain();
	CHECK(s.keyed);

	while (i < size) {
		op = data[i++];
		switch (op & 7) {
		case 0:
		case 1:
			if (i >= size)
				break;
			n = data[i++];
			n = n < size - i ? n : size - i;
			n = n < sizeof(text) - 1 ? n : sizeof(text) - 1;
			memcpy(text, data + i, n);
			text[n] = '\0';
			i += n;
			if ((op & 7) == 1)
				say(text, n);
			else if (strchr(text, '\n') == NULL)
				say_sealed(text);
			break;
		case 2:
			if (i + 3 > size)
				break;
			s.joined_round = data[i] % 4;
			snprintf(text, sizeof(text), "JOINED %u %u %u",
			    s.joined_round, data[i + 1] % 5, data[i + 2] % 5);
			say_sealed(text);
			i += 3;
			break;
		case 3:
			if (i + 8 > size)
				break;
			snprintf(text, sizeof(text), "ROUND %u %u %u %u %u %u %u "
			    "127.0.0.%u %u", data[i] & 0x80 ? data[i] % 4 :
			    s.joined_round, data[i + 1] % 4, 1 + data[i + 2] % 4,
			    data[i + 3] % 9, 1 + data[i + 4] % 9, data[i + 5] % 9,
			    1 + data[i + 6] % 9, 1 + data[i + 7] % 3,
			    29500 + data[i + 7]);
			say_sealed(text);
			i += 8;
			break;
		case 4:
			if (i + 2 > size)
				break;
			snprintf(text, sizeof(text), "%s %u", data[i] & 1 ?
			    "RELEASE" : "RESTART", data[i + 1] % 5);
			say_sealed(text);
			i += 2;
			break;
		case 5:
			if (i >= size)
				break;
			switch (data[i++] % 4) {
			case 0:
				rdzv_join(&rz);
				break;
			case 1:
				rdzv_leave(&rz);
				break;
			case 2:
				rdzv_barrier(&rz, 60000);
				break;
			default:
				rdzv_status(&rz, &st);
				CHECK(memchr(st.endpoint, '\0',
				    sizeof(st.endpoint)) != NULL);
			}
			pump();
			drain();
			break;
		case 6:
			if (s.fd != -1) {
				close(s.fd);
				s.fd = -1;
			}
			pump();
			break;
		default:
			if (i + 2 > size)
				break;
			snprintf(text, sizeof(text), "ERR %s fuzz %u",
			    errs[data[i] % 4], data[i + 1]);
			say_sealed(text);
			i += 2;
		}
	}
	rdzv_close(&rz, size > 0 && data[0] & 0x80);
	pump();
	drain();
	if (s.fd != -1)
		close(s.fd);
	return 0;
}
