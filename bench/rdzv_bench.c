/*
 * rdzv_bench --endpoint HOST:PORT --token-file F --nodes K --run-id ID
 *            [--nproc N] [--timeout S]
 * rdzv_bench --etcd URLS --helper PATH --nodes K --run-id ID
 *            [--lease-ttl DUR] [--settle MS] [--nproc N] [--timeout S]
 *
 * A light load generator for esv-rdzv: K client processes, one per node,
 * each on its own TCP connection, join one round of run ID with
 * min = max = K and last call 0, so the round completes at the K-th join.
 *
 * Every child is forked and waiting on one pipe before any connects; the
 * parent closes the pipe to release all K at once.  Each then connects,
 * reads the greeting and sends its JOIN, so the server sees a burst, the
 * hard case.  Each child stamps CLOCK_MONOTONIC just before it writes its
 * JOIN and just after the read that completed its ROUND line, and sends
 * both stamps and its ranks to the parent in one record over a shared
 * pipe (one write below PIPE_BUF: atomic).  The children stay connected,
 * answering PINGs, until the parent has every record, so no node leaves
 * while the server is still sending rounds.
 *
 * With --etcd, each child is one node of the etcd backend as esv-supervise
 * runs it: it starts the helper (esv-rdzv-etcd) with its end of a socket
 * pair as fd 3 and reads the helper's greeting before the release, so the
 * helper's lease, first read and watch are made outside the timed part
 * (--settle MS more, after the last greeting, gives etcd time to finish
 * them); the JOIN and the wait for ROUND are as above.  The helper's
 * VmRSS is read at ROUND and its VmHWM before the child hangs up; then the
 * child closes the socket and gives the helper 5 s to revoke its lease and
 * exit 0, or counts it failed.
 *
 * The parent checks the group ranks are a permutation of 0..K-1 with one
 * round number and the sizes K and K*nproc, and prints one line:
 *
 *   nodes=K last_join_to_last_done_ms=... first_join_to_last_done_ms=...
 *   join_spread_ms=... done_spread_ms=... ok=1
 *
 * with --etcd also helper_rss_max_kib, helper_rss_median_kib (VmRSS at
 * ROUND), helper_hwm_max_kib (VmHWM at the hang-up), helper_anon_max_kib
 * and helper_pss_max_kib (RssAnon and Pss at ROUND), helper_exit_max_ms
 * (socket closed to helper reaped) and helpers_failed, before ok=1 (ok=0
 * if a helper failed).
 *
 * "done" is a ROUND received; the spreads are last minus first of the
 * joins and of the ROUNDs.  Exit 0, or 1 when any client or helper failed
 * or timed out (each failure on stderr), 100 usage, 111 system error.
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdzvproto.h"

#define MAX_NODES	8192
#define PEER_PORT	29500	/* what each node offers as MASTER_PORT */
#define HELPER_EXIT_MS	5000	/* to revoke the lease and exit */

extern char **environ;

enum phase { PH_READY, PH_ROUND, PH_EXIT, PH_FAIL };

/* One child's report; well below PIPE_BUF, so each write is atomic. */
struct report {
	uint32_t	node;
	uint32_t	phase;
	int64_t		t_join, t_done;
	int64_t		exit_ns;	/* hang-up to helper reaped */
	uint32_t	rss_kib, anon_kib, pss_kib, hwm_kib;	/* helper's */
	struct rdzv_round_msg round;
	char		why[256];
};

struct opts {
	const char	*endpoint;
	const char	*etcd, *helper, *lease_ttl;	/* --etcd mode */
	const char	*run_id;
	unsigned	 nodes, nproc, timeout_s, settle_ms;
	char		 token[RDZV_TOKEN_MAX + 1];
	struct sockaddr_storage addr;
	socklen_t	 addrlen;
};

/* The pipes every child shares with the parent. */
struct pipes {
	int	report[2];	/* children -> parent records */
	int	go[2];		/* parent closes [1]: send JOIN */
	int	done[2];	/* parent closes [1]: hang up and exit */
};

/*
 * A child's connection: a line reader over a blocking socket; every line
 * after the greeting sealed under the session key (esv-rdzv(8)).
 */
struct conn {
	int	fd;
	char	buf[2 * RDZV_LINE_MAX];
	size_t	len;
	int64_t	t_read;		/* stamp of the last read */
	bool	keyed;
	uint8_t	key[RDZV_KEY_LEN];
	uint64_t seq_in, seq_out;
	char	cnonce[RDZV_NONCE_LEN + 1];
	pid_t	helper;		/* --etcd: the helper at the other end */
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t k;

	while (n > 0) {
		if ((k = write(fd, c, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += k;
		n -= k;
	}
	return 0;
}

static void __attribute__((noreturn))
child_exit(int fd, struct report *r, const char *fmt, ...)
{
	va_list ap;

	r->phase = PH_FAIL;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	write_all(fd, r, sizeof(*r));
	_exit(1);
}

/*
 * The next complete line into m; 0, or -1 with why set (EOF, read error,
 * a line the protocol does not know).
 */
static int
conn_next(struct conn *c, struct rdzv_msg *m, char *why, size_t whylen)
{
	char line[RDZV_LINE_MAX + 1], err[128];
	char *nl;
	size_t n;
	ssize_t k;

	while ((nl = memchr(c->buf, '\n', c->len)) == NULL) {
		if (c->len == sizeof(c->buf)) {
			snprintf(why, whylen, "line too long from server");
			return -1;
		}
		k = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		c->t_read = now_ns();
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(why, whylen, "%s", k == 0 ? "EOF from server" :
			    strerror(errno));
			return -1;
		}
		c->len += k;
	}
	n = nl - c->buf + 1;
	if (n > RDZV_LINE_MAX) {
		snprintf(why, whylen, "line too long from server");
		return -1;
	}
	memcpy(line, c->buf, n);
	line[n] = '\0';
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
	if ((c->keyed ? rdzv_msg_parse_sealed(line, m, c->key,
	    RDZV_TO_CLIENT, c->seq_in++, err, sizeof(err)) :
	    rdzv_msg_parse(line, m, err, sizeof(err))) == -1) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(why, whylen, "bad line from server: %s: %.60s", err,
		    line);
		return -1;
	}
	return 0;
}

static int
conn_send(struct conn *c, const struct rdzv_msg *m)
{
	char line[RDZV_LINE_MAX];
	int n;

	if ((n = rdzv_msg_format_sealed(line, sizeof(line), m, c->key,
	    RDZV_TO_SERVER, c->seq_out++)) == -1) {
		errno = EINVAL;
		return -1;
	}
	return write_all(c->fd, line, n);
}

static void
make_join(const struct opts *o, unsigned node, const struct conn *c,
    struct rdzv_msg *m)
{
	struct rdzv_join *j = &m->u.join;

	memset(m, 0, sizeof(*m));
	m->verb = RV_JOIN;
	j->version = RDZV_PROTO_VERSION;
	strlcpy(j->run_id, o->run_id, sizeof(j->run_id));
	snprintf(j->node_id, sizeof(j->node_id), "node-%05u", node);
	strlcpy(j->cnonce, c->cnonce, sizeof(j->cnonce));
	j->nproc = o->nproc;
	j->min_nodes = j->max_nodes = o->nodes;
	j->last_call_ms = 0;
	strlcpy(j->role, "default", sizeof(j->role));
	strlcpy(j->addr, "127.0.0.1", sizeof(j->addr));
	j->port = PEER_PORT;
	j->state = RS_NEW;
	j->round = 0;
}

/*
 * Block until the parent closes the write end of fd; answer PINGs if
 * connected (poll skips a negative fd).
 */
static void
child_wait(struct conn *c, int fd, int out, struct report *r)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
	    { .fd = c->fd, .events = POLLIN } };
	struct rdzv_msg m;
	char why[256];

	for (;;) {
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			child_exit(out, r, "poll: %s", strerror(errno));
		}
		if (pfd[0].revents != 0)
			return;
		if (pfd[1].revents == 0)
			continue;
		if (conn_next(c, &m, why, sizeof(why)) == -1)
			child_exit(out, r, "%s", why);
		if (m.verb == RV_PING && conn_send(c, &m) == -1)
			child_exit(out, r, "write: %s", strerror(errno));
	}
}

/* The greeting: any line but a HELLO of our version is a failure. */
static void
read_hello(struct conn *c, int out, struct report *r, struct rdzv_msg *m)
{
	char why[256];

	if (conn_next(c, m, why, sizeof(why)) == -1)
		child_exit(out, r, "greeting: %s", why);
	if (m->verb != RV_HELLO || m->u.hello.version != RDZV_PROTO_VERSION)
		child_exit(out, r, "greeting: not ESV-RDZV %d",
		    RDZV_PROTO_VERSION);
}

static void
tcp_connect(const struct opts *o, struct conn *c, int out, struct report *r)
{
	struct rdzv_msg m;
	int one = 1;

	if ((c->fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1)
		child_exit(out, r, "socket: %s", strerror(errno));
	if (connect(c->fd, (const struct sockaddr *)&o->addr, o->addrlen) ==
	    -1)
		child_exit(out, r, "connect: %s", strerror(errno));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	read_hello(c, out, r, &m);
	rdzv_nonce(c->cnonce);
	rdzv_session_key(o->token, m.u.hello.nonce, c->cnonce, c->key);
	c->keyed = true;
}

/*
 * Start the helper as esv-supervise does: its end of a socket pair as fd
 * 3, and read its greeting.  It seals nothing before our JOIN, whose
 * cnonce gives the key, but the key is made now, under the empty token of
 * a private socket, so that the JOIN is all that is left for the go.
 */
static void
helper_start(const struct opts *o, struct conn *c, int out, struct report *r)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t dfl;
	struct rdzv_msg m;
	char *argv[9];
	int sv[2], e, a = 0, fd;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		child_exit(out, r, "socketpair: %s", strerror(errno));
	/* dup2 onto itself would leave close-on-exec set. */
	if (sv[1] == 3) {
		if ((fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 4)) == -1)
			child_exit(out, r, "fcntl: %s", strerror(errno));
		close(sv[1]);
		sv[1] = fd;
	}
	argv[a++] = (char *)o->helper;
	argv[a++] = "--endpoints";
	argv[a++] = (char *)o->etcd;
	argv[a++] = "--run-id";
	argv[a++] = (char *)o->run_id;
	if (o->lease_ttl != NULL) {
		argv[a++] = "--lease-ttl";
		argv[a++] = (char *)o->lease_ttl;
	}
	argv[a] = NULL;
	/* Our SIGPIPE is ignored; the helper gets the default, as from
	 * esv-supervise.  Its stdout is nobody's: our parent's reader must
	 * see EOF when we are done even if a helper lingers. */
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	if ((e = posix_spawn_file_actions_init(&fa)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, sv[1], 3)) != 0 ||
	    (e = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null",
	    O_WRONLY, 0)) != 0 ||
	    (e = posix_spawnattr_init(&attr)) != 0 ||
	    (e = posix_spawnattr_setsigdefault(&attr, &dfl)) != 0 ||
	    (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF)) != 0 ||
	    (e = posix_spawn(&c->helper, o->helper, &fa, &attr, argv,
	    environ)) != 0)
		child_exit(out, r, "%s: %s", o->helper, strerror(e));
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(sv[1]);
	c->fd = sv[0];
	read_hello(c, out, r, &m);
	rdzv_nonce(c->cnonce);
	rdzv_session_key("", m.u.hello.nonce, c->cnonce, c->key);
	c->keyed = true;
}

/* A field of /proc/PID/<file> in KiB; 0 if unknown. */
static uint32_t
proc_kib(pid_t pid, const char *file, const char *field)
{
	char path[64], line[256];
	size_t len = strlen(field);
	unsigned long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			v = strtoul(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return (uint32_t)v;
}

/*
 * Hang up and give the helper HELPER_EXIT_MS to revoke its lease and exit
 * 0 (esv-rdzv-etcd(8)); a helper that does not is killed and a failure.
 */
static void
helper_stop(struct conn *c, int out, struct report *r)
{
	struct pollfd pfd = { .events = POLLIN };
	int64_t t0;
	int status, k;

	r->hwm_kib = proc_kib(c->helper, "status", "VmHWM");
	t0 = now_ns();
	close(c->fd);
	c->fd = -1;
	if ((pfd.fd = (int)syscall(SYS_pidfd_open, c->helper, 0)) == -1)
		child_exit(out, r, "pidfd_open: %s", strerror(errno));
	while ((k = poll(&pfd, 1, HELPER_EXIT_MS - (int)((now_ns() - t0) /
	    1000000))) == -1 && errno == EINTR)
		;
	if (k == 0) {
		kill(c->helper, SIGKILL);
		waitpid(c->helper, NULL, 0);
		child_exit(out, r, "helper %d did not exit within %d ms of the "
		    "hang-up", (int)c->helper, HELPER_EXIT_MS);
	}
	while (waitpid(c->helper, &status, 0) == -1)
		if (errno != EINTR)
			child_exit(out, r, "waitpid: %s", strerror(errno));
	r->exit_ns = now_ns() - t0;
	close(pfd.fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		child_exit(out, r, "helper %d: %s %d", (int)c->helper,
		    WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ?
		    WEXITSTATUS(status) : WTERMSIG(status));
}

static void __attribute__((noreturn))
child(const struct opts *o, const struct pipes *p, unsigned node)
{
	struct report r = { .node = node, .phase = PH_READY };
	struct conn c = { .fd = -1, .helper = -1 };
	struct rdzv_msg m;
	char why[256];
	int out = p->report[1];

	/*
	 * Connect only once released: the server drops a connection that
	 * has not joined within 3 heartbeats, which forking K clients can
	 * take longer than.  A helper is ours alone and waits (3 of its
	 * heartbeats: --lease-ttl), so it is started before.
	 */
	if (o->etcd != NULL)
		helper_start(o, &c, out, &r);
	if (write_all(out, &r, sizeof(r)) == -1)
		_exit(1);
	child_wait(&c, p->go[0], out, &r);
	if (o->etcd == NULL)
		tcp_connect(o, &c, out, &r);
	make_join(o, node, &c, &m);
	r.t_join = now_ns();
	if (conn_send(&c, &m) == -1)
		child_exit(out, &r, "JOIN: %s", strerror(errno));
	for (;;) {
		if (conn_next(&c, &m, why, sizeof(why)) == -1)
			child_exit(out, &r, "waiting for ROUND: %s", why);
		if (m.verb == RV_ROUND)
			break;
		switch (m.verb) {
		case RV_PING:
			if (conn_send(&c, &m) == -1)
				child_exit(out, &r, "write: %s",
				    strerror(errno));
			break;
		case RV_JOINED:
		case RV_WAITING:
		case RV_MEMBER:
			break;
		case RV_ERR:
			child_exit(out, &r, "ERR %s %s", m.u.err.code,
			    m.u.err.text);
		default:
			child_exit(out, &r, "unexpected message %d before "
			    "ROUND", (int)m.verb);
		}
	}
	r.t_done = c.t_read;
	/*
	 * Most of a helper's VmRSS is shared library pages (libcurl and
	 * its TLS libraries), the same pages in every helper: RssAnon is
	 * its own, Pss its share of everything.
	 */
	if (c.helper != -1) {
		r.rss_kib = proc_kib(c.helper, "status", "VmRSS");
		r.anon_kib = proc_kib(c.helper, "status", "RssAnon");
		r.pss_kib = proc_kib(c.helper, "smaps_rollup", "Pss");
	}
	r.round = m.u.round;
	r.phase = PH_ROUND;
	if (write_all(out, &r, sizeof(r)) == -1)
		_exit(1);
	child_wait(&c, p->done[0], out, &r);
	if (c.helper != -1)
		helper_stop(&c, out, &r);
	r.phase = PH_EXIT;
	if (write_all(out, &r, sizeof(r)) == -1)
		_exit(1);
	_exit(0);
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: rdzv_bench --endpoint HOST:PORT --token-file F "
	    "--nodes K --run-id ID [--nproc N] [--timeout S]\n"
	    "       rdzv_bench --etcd URLS --helper PATH --nodes K --run-id ID "
	    "[--lease-ttl DUR]\n"
	    "                  [--settle MS] [--nproc N] [--timeout S]\n");
	exit(100);
}

static unsigned
number(const char *s, long long lo, long long hi, const char *what)
{
	const char *errstr;
	long long v;

	v = strtonum(s, lo, hi, &errstr);
	if (errstr != NULL) {
		warnx("%s %s: %s (%lld..%lld)", what, s, errstr, lo, hi);
		usage();
	}
	return (unsigned)v;
}

static void
resolve(struct opts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char host[256], *colon;
	int e;

	if (strlcpy(host, o->endpoint, sizeof(host)) >= sizeof(host) ||
	    (colon = strrchr(host, ':')) == NULL)
		usage();
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	if ((e = getaddrinfo(host, colon + 1, &hints, &ai)) != 0)
		errx(111, "%s: %s", o->endpoint, gai_strerror(e));
	memcpy(&o->addr, ai->ai_addr, ai->ai_addrlen);
	o->addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
}

static void
parse_args(int argc, char *argv[], struct opts *o)
{
	static const struct option lo[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "token-file", required_argument, NULL, 't' },
		{ "nodes", required_argument, NULL, 'k' },
		{ "run-id", required_argument, NULL, 'r' },
		{ "nproc", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "etcd", required_argument, NULL, 'E' },
		{ "helper", required_argument, NULL, 'H' },
		{ "lease-ttl", required_argument, NULL, 'L' },
		{ "settle", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *token_file = NULL;
	char err[256];
	int c;

	o->nproc = 1;
	o->timeout_s = 60;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'e': o->endpoint = optarg; break;
		case 't': token_file = optarg; break;
		case 'k': o->nodes = number(optarg, 1, MAX_NODES, "nodes");
			break;
		case 'r': o->run_id = optarg; break;
		case 'n': o->nproc = number(optarg, 1, 4096, "nproc"); break;
		case 'T': o->timeout_s = number(optarg, 1, 3600, "timeout");
			break;
		case 'E': o->etcd = optarg; break;
		case 'H': o->helper = optarg; break;
		case 'L': o->lease_ttl = optarg; break;
		case 'S': o->settle_ms = number(optarg, 0, 600000, "settle");
			break;
		default: usage();
		}
	}
	if (optind != argc || o->nodes == 0 || o->run_id == NULL ||
	    (o->etcd == NULL ? o->endpoint == NULL || token_file == NULL ||
	    o->helper != NULL || o->lease_ttl != NULL :
	    o->helper == NULL || o->endpoint != NULL || token_file != NULL))
		usage();
	if (!rdzv_name_ok(o->run_id))
		errx(100, "run id %s: not a protocol name", o->run_id);
	if (o->etcd != NULL)
		return;
	if (rdzv_token_load(token_file, o->token, sizeof(o->token), err,
	    sizeof(err)) == -1)
		errx(100, "%s", err);
	resolve(o);
}

/*
 * Read records until want of them are in phase ph (counted in *got) or
 * a child failed (every child, if all) or the deadline passed.  Returns
 * the number of failures.
 */
static unsigned
collect(int fd, enum phase ph, struct report *reps, unsigned want,
    unsigned *got, int64_t deadline, bool all)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct report r;
	unsigned failed = 0;
	size_t have = 0;
	ssize_t k;
	int64_t left;

	while (*got + failed < want && (all || failed == 0)) {
		if ((left = (deadline - now_ns()) / 1000000) <= 0)
			break;
		if (poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : left) <= 0)
			continue;
		k = read(fd, (char *)&r + have, sizeof(r) - have);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			warnx("every client is gone, %u of %u reported",
			    *got, want);
			return failed + 1;
		}
		if ((have += k) < sizeof(r))
			continue;
		have = 0;
		if (r.node >= want)
			errx(111, "bad record from a client");
		if (r.phase == PH_FAIL) {
			r.why[sizeof(r.why) - 1] = '\0';
			warnx("node %u: %s", r.node, r.why);
			failed++;
		} else if (r.phase == ph) {
			reps[r.node] = r;
			(*got)++;
		}
	}
	return failed;
}

/* The ranks a well-behaved server hands out; 0, or -1 with a warning. */
static int
check_ranks(const struct opts *o, const struct report *reps)
{
	unsigned char *seen;
	unsigned i, g;
	int bad = 0;

	if ((seen = calloc(o->nodes, 1)) == NULL)
		err(111, NULL);
	for (i = 0; i < o->nodes; i++) {
		const struct rdzv_round_msg *m = &reps[i].round;

		g = m->group_rank;
		if (m->group_world_size != o->nodes || g >= o->nodes ||
		    seen[g] || m->round != reps[0].round.round ||
		    m->world_size != o->nodes * o->nproc ||
		    m->base_rank != g * o->nproc) {
			warnx("node %u: bad ROUND: round %u group rank %u of "
			    "%u, base rank %u of %u", i, m->round, g,
			    m->group_world_size, m->base_rank, m->world_size);
			bad = 1;
		} else
			seen[g] = 1;
	}
	free(seen);
	return bad ? -1 : 0;
}

static int
by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The helpers' memory and hang-up times, and the verdict, ending the line. */
static void
report_helpers(const struct opts *o, const struct report *reps,
    unsigned failed)
{
	uint32_t *rss, hwm = 0, anon = 0, pss = 0;
	int64_t exit_max = 0;
	unsigned i;

	if ((rss = calloc(o->nodes, sizeof(*rss))) == NULL)
		err(111, NULL);
	for (i = 0; i < o->nodes; i++) {
		rss[i] = reps[i].rss_kib;
		if (reps[i].hwm_kib > hwm)
			hwm = reps[i].hwm_kib;
		if (reps[i].anon_kib > anon)
			anon = reps[i].anon_kib;
		if (reps[i].pss_kib > pss)
			pss = reps[i].pss_kib;
		if (reps[i].exit_ns > exit_max)
			exit_max = reps[i].exit_ns;
	}
	qsort(rss, o->nodes, sizeof(*rss), by_u32);
	printf(" helper_rss_max_kib=%u helper_rss_median_kib=%.1f "
	    "helper_hwm_max_kib=%u helper_anon_max_kib=%u helper_pss_max_kib=%u "
	    "helper_exit_max_ms=%.3f helpers_failed=%u ok=%d\n",
	    rss[o->nodes - 1], o->nodes % 2 ? rss[o->nodes / 2] :
	    (rss[o->nodes / 2 - 1] + rss[o->nodes / 2]) / 2.0, hwm, anon, pss,
	    exit_max / 1e6, failed, failed == 0);
	free(rss);
}

static void
report(const struct opts *o, const struct report *reps, unsigned failed)
{
	int64_t first_join = INT64_MAX, last_join = 0;
	int64_t first_done = INT64_MAX, last_done = 0;
	unsigned i;

	for (i = 0; i < o->nodes; i++) {
		if (reps[i].t_join < first_join)
			first_join = reps[i].t_join;
		if (reps[i].t_join > last_join)
			last_join = reps[i].t_join;
		if (reps[i].t_done < first_done)
			first_done = reps[i].t_done;
		if (reps[i].t_done > last_done)
			last_done = reps[i].t_done;
	}
	printf("nodes=%u last_join_to_last_done_ms=%.3f "
	    "first_join_to_last_done_ms=%.3f join_spread_ms=%.3f "
	    "done_spread_ms=%.3f", o->nodes,
	    (last_done - last_join) / 1e6, (last_done - first_join) / 1e6,
	    (last_join - first_join) / 1e6, (last_done - first_done) / 1e6);
	if (o->etcd != NULL)
		report_helpers(o, reps, failed);
	else
		printf(" ok=%d\n", failed == 0);
}

static void
pipe_or_die(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) == -1)
		err(111, "pipe2");
}

/* Fork the K children; the parent keeps only its ends of the pipes. */
static void
start_children(const struct opts *o, struct pipes *p, pid_t *pids)
{
	unsigned i;

	for (i = 0; i < o->nodes; i++) {
		if ((pids[i] = fork()) == -1)
			err(111, "fork");
		if (pids[i] == 0) {
			close(p->report[0]);
			close(p->go[1]);
			close(p->done[1]);
			child(o, p, i);
		}
	}
	close(p->report[1]);
	close(p->go[0]);
	close(p->done[0]);
}

/* Release the children and reap them; kill the ones that hang. */
static void
stop_children(const struct opts *o, struct pipes *p, pid_t *pids,
    int hard)
{
	unsigned i;

	/* A child still writing a report must not block on a full pipe. */
	close(p->report[0]);
	if (p->go[1] != -1)
		close(p->go[1]);
	if (p->done[1] != -1)
		close(p->done[1]);
	for (i = 0; i < o->nodes; i++) {
		if (hard)
			kill(pids[i], SIGKILL);
		while (waitpid(pids[i], NULL, 0) == -1 && errno == EINTR)
			;
	}
}

int
main(int argc, char *argv[])
{
	struct opts o = { .endpoint = NULL };
	struct pipes p;
	struct report *reps;
	unsigned got = 0, failed, hfailed = 0;
	int64_t deadline;
	pid_t *pids;

	parse_args(argc, argv, &o);
	/* A client that dies must not take the parent with it. */
	signal(SIGPIPE, SIG_IGN);
	if ((reps = calloc(o.nodes, sizeof(*reps))) == NULL ||
	    (pids = calloc(o.nodes, sizeof(*pids))) == NULL)
		err(111, NULL);
	pipe_or_die(p.report);
	pipe_or_die(p.go);
	pipe_or_die(p.done);
	deadline = now_ns() + (int64_t)o.timeout_s * 1000000000;
	start_children(&o, &p, pids);

	failed = collect(p.report[0], PH_READY, reps, o.nodes, &got,
	    deadline, false);
	if (failed == 0 && got == o.nodes) {
		/* The helpers' leases, reads and watches on their way. */
		if (o.settle_ms > 0)
			poll(NULL, 0, o.settle_ms);
		close(p.go[1]);
		p.go[1] = -1;
		got = 0;
		failed = collect(p.report[0], PH_ROUND, reps, o.nodes, &got,
		    deadline, false);
	}
	if (failed == 0 && got < o.nodes) {
		warnx("timeout: %u of %u clients %s after %u s", o.nodes - got,
		    o.nodes, p.go[1] == -1 ? "got no ROUND" : "not started",
		    o.timeout_s);
		failed = 1;
	}
	if (failed == 0 && check_ranks(&o, reps) == -1)
		failed = 1;
	if (failed == 0) {
		/* Every node hangs up; each helper has its own 5 s. */
		close(p.done[1]);
		p.done[1] = -1;
		got = 0;
		hfailed = collect(p.report[0], PH_EXIT, reps, o.nodes, &got,
		    now_ns() + (HELPER_EXIT_MS + 5000) * 1000000LL, true);
		if (got + hfailed < o.nodes) {
			warnx("timeout: %u of %u clients not done %d ms after "
			    "the hang-up", o.nodes - got - hfailed, o.nodes,
			    HELPER_EXIT_MS + 5000);
			hfailed = o.nodes - got;
		}
		report(&o, reps, hfailed);
	}
	stop_children(&o, &p, pids, failed != 0 || hfailed != 0);
	free(reps);
	free(pids);
	return failed != 0 || hfailed != 0;
}
