/*
 * esv-stored: a TCPStore server that torch's workers use as their own
 * (esv-stored(8)).  This file is the transport: options, sockets, the
 * event loop, each connection's output and timeout; store.c speaks the
 * protocol (store_int.h names its parts), peers.c says who may connect,
 * statefile.c writes --state-file.
 */
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "msg.h"
#include "netlisten.h"
#include "peers.h"
#include "ratelim.h"
#include "statefile.h"
#include "store.h"

#define LISTEN_MAX	16
#define FD_RESERVE	32		/* fds besides connections */
#define READ_CHUNK	(64 * 1024)
/*
 * Replies queued past this, the connection's next requests wait unread:
 * one that does not read its replies holds at most one reply more.
 */
#define OUT_PAUSE	(256 * 1024)
/* An output buffer this big is given back once it has drained. */
#define OUT_KEEP	(64 * 1024)

struct conn {
	struct watch		 w;
	struct store_conn	*sc;
	struct in6_addr		 ip;		/* v4 as ::ffff:a.b.c.d */
	char			 peer[INET6_ADDRSTRLEN + 16];
	bool			 local;		/* a socket of this host */
	TAILQ_ENTRY(conn)	 all;
	/* A request under way (or none yet): closed at its deadline. */
	TAILQ_ENTRY(conn)	 timed_entry;
	long long		 deadline;
	unsigned long		 nreq;
	bool			 timed, paused;
	TAILQ_ENTRY(conn)	 entry;		/* the graveyard */
	TAILQ_ENTRY(conn)	 closing_entry;
	TAILQ_ENTRY(conn)	 flush_entry;
	char			*out;
	size_t			 outlen, outcap;
	bool			 closing, want_out, to_flush;
};
TAILQ_HEAD(connq, conn);

static struct {
	struct loop		 lp;
	struct store		*st;
	struct watch		 ls[LISTEN_MAX], sigw, timerw;
	/* A storm of connections is said in a few lines a second. */
	struct ratelim		 refusals;
	int			 nls, spare_fd;
	unsigned		 nconns, max_conns, max_per_addr;
	size_t			 out_max, max_bytes, out_used;
	long long		 request_ms;
	struct connq		 graveyard, all, timed;
	/* Who may connect (the round's nodes), re-read on SIGHUP. */
	struct peers		 peers;
	bool			 reload;
	/* Let go of by the store: hung up once the batch is over. */
	TAILQ_HEAD(, conn)	 closing;
	/*
	 * Replies queued in this batch: sent once it is over, one send()
	 * for all a connection got (a GET's length and value, a WAIT's
	 * wake-up among them) rather than one per piece.
	 */
	TAILQ_HEAD(, conn)	 flushq;
	bool			 quit;
	/* SIGUSR1: leave once no client is left (esv-stored(8)). */
	bool			 drain;
	struct statefile	 state;
} g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-stored [--listen ADDR:PORT]... [--listen-fd N] "
	    "[--allow-file PATH]\n"
	    "                  [--max-conns N] [--max-conns-per-addr N] "
	    "[--request-timeout MS]\n"
	    "                  [--max-key BYTES] [--max-value BYTES] "
	    "[--max-request BYTES]\n"
	    "                  [--max-keys N] [--max-waiters N] "
	    "[--max-conn-waiters N]\n"
	    "                  [--max-bytes BYTES] [--max-queue N] "
	    "[--parent PID]\n"
	    "                  [--state-file PATH] [--help] [--version]\n"
	    "Serves torch's TCPStore protocol (torch 1.13's and the newer "
	    "dialect) on\nADDR:PORT (\"*:PORT\" every address; port 0 a free "
	    "one, printed as\n\"listening ADDR:PORT\").  A peer on this host "
	    "must run as this uid or root;\na remote one must be named in "
	    "--allow-file (re-read on SIGHUP) if given.\n"
	    "SIGUSR1: exit once no client is connected.\n"
	    "Exit status: 0 stopped by SIGTERM or SIGINT (or SIGUSR1), 100 "
	    "usage error, 111 system error.\n");
}

static long long
num_arg(const char *opt, const char *arg, long long lo, long long hi)
{
	const char *errstr;
	long long v;

	v = strtonum(arg, lo, hi, &errstr);
	if (errstr != NULL)
		diex(ESV_EXIT_USAGE, "%s: %s: %s (%lld..%lld)", opt, arg,
		    errstr, lo, hi);
	return v;
}

static bool
op_full(void *ctx, void *conn)
{
	struct conn *c = conn;

	(void)ctx;
	return c->outlen >= OUT_PAUSE;
}

/*
 * Readable unless its replies are not being read (backpressure);
 * writable while output waits.
 */
static void
conn_events(struct conn *c)
{
	bool out = c->outlen > 0, paused = c->outlen >= OUT_PAUSE;

	if (c->want_out == out && c->paused == paused)
		return;
	c->want_out = out;
	c->paused = paused;
	if (loop_mod(&g.lp, &c->w, (paused ? 0 : EPOLLIN) |
	    (out ? EPOLLOUT : 0)) == -1)
		warn_sys("epoll_ctl");
}

static void
timed_stop(struct conn *c)
{
	if (c->timed)
		TAILQ_REMOVE(&g.timed, c, timed_entry);
	c->timed = false;
}

/* All deadlines are now + one timeout: the list stays in their order. */
static void
timed_start(struct conn *c, long long now)
{
	timed_stop(c);
	c->deadline = now + g.request_ms;
	c->timed = true;
	TAILQ_INSERT_TAIL(&g.timed, c, timed_entry);
}

/*
 * A connection owes us something while it has sent no request yet, or
 * part of one, or has replies it does not read; it must make progress
 * (a request done, reply bytes taken) within --request-timeout.  One
 * that owes nothing is never timed: idle between requests, or parked in
 * a WAIT, as workers are for minutes.
 */
static void
conn_retime(struct conn *c, bool progress)
{
	unsigned long nreq;
	bool partial;

	if (c->sc == NULL || c->closing)
		return;
	nreq = store_conn_progress(c->sc, &partial);
	if (nreq != c->nreq)
		progress = true;
	c->nreq = nreq;
	if (nreq > 0 && !partial && c->outlen == 0)
		timed_stop(c);
	else if (progress || !c->timed)
		timed_start(c, mono_ms());
}

/* Freed after the batch of events: a later one may still name it. */
static void
conn_destroy(struct conn *c)
{
	if (c->sc != NULL)
		store_lost(g.st, c->sc);
	c->sc = NULL;
	if (c->closing)
		TAILQ_REMOVE(&g.closing, c, closing_entry);
	c->closing = false;
	if (c->to_flush)
		TAILQ_REMOVE(&g.flushq, c, flush_entry);
	c->to_flush = false;
	timed_stop(c);
	TAILQ_REMOVE(&g.all, c, all);
	loop_del(&g.lp, &c->w);
	close(c->w.fd);
	c->w.fd = -1;
	TAILQ_INSERT_TAIL(&g.graveyard, c, entry);
	g.nconns--;
}

static void
out_free(struct conn *c)
{
	store_mem_give(g.st, c->outcap);
	g.out_used -= c->outcap;
	free(c->out);
	c->out = NULL;
	c->outcap = 0;
}

/* 0: all written or queued; -1: the peer is gone. */
static int
conn_flush(struct conn *c)
{
	ssize_t n;
	size_t off = 0;

	while (off < c->outlen) {
		n = send(c->w.fd, c->out + off, c->outlen - off, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		off += n;
	}
	memmove(c->out, c->out + off, c->outlen - off);
	c->outlen -= off;
	/* A big reply gone: its memory goes back to the budget. */
	if (c->outlen == 0 && c->outcap > OUT_KEEP)
		out_free(c);
	if (c->paused && c->outlen < OUT_PAUSE && !c->closing &&
	    c->sc != NULL) {
		/* Room again: the requests it sent meanwhile are served. */
		store_input(g.st, c->sc, NULL, 0);
	}
	conn_retime(c, off > 0);
	conn_events(c);
	return 0;
}

static int
op_send(void *ctx, void *conn, const void *buf, size_t len)
{
	struct conn *c = conn;
	size_t cap;
	char *nb;

	(void)ctx;
	if (c->outlen + len > g.out_max)
		return -1;
	if (c->outlen + len > c->outcap) {
		for (cap = c->outcap > 0 ? c->outcap : 4096;
		    cap < c->outlen + len; cap *= 2)
			;
		/*
		 * Replies are memory too: the budget has them.  Small ones
		 * (a worker's counters and ids) always pass, so that no
		 * reader of big values can starve the workers; big ones
		 * may take half the budget at most, so that values keep
		 * the rest.
		 */
		if (cap > OUT_KEEP && (g.out_used + cap - c->outcap >
		    g.max_bytes / 2 || !store_mem_take(g.st, cap - c->outcap)))
			return -1;
		if (cap <= OUT_KEEP)
			store_mem_force(g.st, cap - c->outcap);
		if ((nb = realloc(c->out, cap)) == NULL) {
			store_mem_give(g.st, cap - c->outcap);
			return -1;
		}
		g.out_used += cap - c->outcap;
		c->out = nb;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, buf, len);
	c->outlen += len;
	if (!c->to_flush && !c->want_out) {
		c->to_flush = true;
		TAILQ_INSERT_TAIL(&g.flushq, c, flush_entry);
	}
	return 0;
}

static void
op_close(void *ctx, void *conn)
{
	struct conn *c = conn;

	(void)ctx;
	/*
	 * Not from here: the store may be in the middle of this
	 * connection's input, or of another's that woke it.
	 */
	if (!c->closing && c->w.fd != -1) {
		c->closing = true;
		TAILQ_INSERT_TAIL(&g.closing, c, closing_entry);
	}
}

static void
on_conn(struct watch *w, uint32_t events)
{
	struct conn *c = w->ctx;
	static char buf[READ_CHUNK];
	ssize_t n;

	if (w->fd == -1)
		return;
	if ((events & EPOLLOUT) && conn_flush(c) == -1) {
		conn_destroy(c);
		return;
	}
	if (w->fd == -1 || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	/* Paused: its input waits in the kernel (a stale event of the
	 * batch may still say EPOLLIN); a hang-up ends it. */
	if (c->outlen >= OUT_PAUSE) {
		if (events & (EPOLLHUP | EPOLLERR))
			conn_destroy(c);
		else
			conn_events(c);
		return;
	}
	n = read(w->fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	if (n <= 0) {
		conn_destroy(c);
		return;
	}
	store_input(g.st, c->sc, buf, n);
	/*
	 * A reply queued is flushed after this batch of events, and the
	 * flush retimes the connection (the requests done count as progress
	 * there too): timing it here as well would cost a clock read and a
	 * list insert per request for nothing.
	 */
	if (!c->to_flush)
		conn_retime(c, false);
	if (c->outlen >= OUT_PAUSE)
		conn_events(c);
}

static void
refuse(int fd, const struct sockaddr_storage *ss, const char *why)
{
	char ip[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 16];

	net_addr_fmt(ss, ip, sizeof(ip), peer, sizeof(peer));
	if (ratelim_allow(&g.refusals))
		warn_msg("%s: refused: %s", peer, why);
	close(fd);
}

/* Out of fds: the spare one lets us accept and hang up with a word. */
static void
shed(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	if (g.spare_fd != -1)
		close(g.spare_fd);
	fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd != -1)
		refuse(fd, &ss, "out of file descriptors");
	g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void
conn_new(int fd, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN], why[128];
	const char *no;
	struct conn *c, *o;
	unsigned same = 0;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		refuse(fd, ss, "out of memory");
		return;
	}
	c->w = (struct watch){ .fd = fd, .fn = on_conn, .ctx = c };
	net_addr_fmt(ss, ip, sizeof(ip), c->peer, sizeof(c->peer));
	peer_addr(ss, &c->ip);
	if ((no = peers_trusted(&g.peers, fd, &c->ip, &c->local, why,
	    sizeof(why))) != NULL) {
		free(c);
		refuse(fd, ss, no);
		return;
	}
	/*
	 * The cap is for other hosts: this host's peers are the job's own
	 * uid (or root), every local worker among them, from one address.
	 */
	TAILQ_FOREACH(o, &g.all, all)
		if (!c->local && memcmp(&o->ip, &c->ip, sizeof(c->ip)) == 0)
			same++;
	if (same >= g.max_per_addr) {
		free(c);
		snprintf(why, sizeof(why), "%u connections from %s already "
		    "(--max-conns-per-addr)", same, ip);
		refuse(fd, ss, why);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((c->sc = store_accept(g.st, c, c->peer)) == NULL ||
	    loop_add(&g.lp, &c->w, EPOLLIN) == -1) {
		if (c->sc != NULL)
			store_lost(g.st, c->sc);
		free(c);
		refuse(fd, ss, "out of memory");
		return;
	}
	TAILQ_INSERT_TAIL(&g.all, c, all);
	timed_start(c, mono_ms());
	g.nconns++;
}

/* Connections past their request's deadline go, said rate-limited. */
static long long
expire(long long now)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&g.timed)) != NULL && c->deadline <= now) {
		if (ratelim_allow(&g.refusals))
			warn_msg("%s: %s within %lld ms (--request-timeout): "
			    "closing the connection", c->peer, c->outlen > 0 ?
			    "its replies not read" : "no complete request",
			    g.request_ms);
		conn_destroy(c);
	}
	return c != NULL ? c->deadline : LLONG_MAX;
}

/*
 * --allow-file read again: connections from addresses it no longer names
 * are closed, as a node that left the round has no business in its store.
 */
static void
allow_load(void)
{
	struct conn *c, *next;

	if (!peers_load(&g.peers))
		return;
	for (c = TAILQ_FIRST(&g.all); c != NULL; c = next) {
		next = TAILQ_NEXT(c, all);
		if (!c->local && !peers_allowed(&g.peers, &c->ip)) {
			warn_msg("%s: no longer a node of the round: "
			    "closing the connection", c->peer);
			conn_destroy(c);
		}
	}
}

static void
on_listen(struct watch *w, uint32_t events)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char why[64];
	int fd, i;

	(void)events;
	/* A bounded batch, so that a connection storm cannot starve I/O. */
	for (i = 0; i < 64; i++) {
		sl = sizeof(ss);
		fd = accept4(w->fd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE) {
				shed(w->fd);
				continue;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				warn_sys("accept");
			return;
		}
		if (g.nconns >= g.max_conns) {
			snprintf(why, sizeof(why), "%u connections already",
			    g.nconns);
			refuse(fd, &ss, why);
		} else
			conn_new(fd, &ss);
	}
}

static void
add_listener(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN], name[INET6_ADDRSTRLEN + 16];

	if (g.nls == LISTEN_MAX)
		diex(ESV_EXIT_USAGE, "more than %d listening sockets",
		    LISTEN_MAX);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		die(ESV_EXIT_SYSTEM, "getsockname");
	net_addr_fmt(&ss, ip, sizeof(ip), name, sizeof(name));
	printf("listening %s\n", name);
	if (g.nls == 0)
		strlcpy(g.state.listen_name, name, sizeof(g.state.listen_name));
	g.ls[g.nls] = (struct watch){ .fd = fd, .fn = on_listen };
	if (loop_add(&g.lp, &g.ls[g.nls], EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
	g.nls++;
}

static void
on_timer(struct watch *w, uint32_t events)
{
	(void)events;
	timer_ack(w->fd);
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo si[4];
	int i, n;

	(void)events;
	n = signals_read(w->fd, si, 4);
	for (i = 0; i < n; i++)
		if (si[i].ssi_signo == SIGTERM || si[i].ssi_signo == SIGINT)
			g.quit = true;
		else if (si[i].ssi_signo == SIGUSR1)
			g.drain = true;
		else if (si[i].ssi_signo == SIGHUP)
			g.reload = true;
}

/* As many fds as the hard limit allows; fewer connections if it is low. */
static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		die(ESV_EXIT_SYSTEM, "getrlimit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		die(ESV_EXIT_SYSTEM, "setrlimit");
	if (rl.rlim_cur < (rlim_t)g.max_conns + FD_RESERVE) {
		warn_msg("--max-conns %u: only %llu fds: capped to %llu",
		    g.max_conns, (unsigned long long)rl.rlim_cur,
		    (unsigned long long)(rl.rlim_cur > 2 * FD_RESERVE ?
		    rl.rlim_cur - FD_RESERVE : FD_RESERVE));
		g.max_conns = rl.rlim_cur > 2 * FD_RESERVE ?
		    rl.rlim_cur - FD_RESERVE : FD_RESERVE;
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "listen-fd", required_argument, NULL, 'L' },
		{ "max-conns", required_argument, NULL, 'c' },
		{ "max-key", required_argument, NULL, 'k' },
		{ "max-value", required_argument, NULL, 'v' },
		{ "max-request", required_argument, NULL, 'r' },
		{ "max-keys", required_argument, NULL, 'K' },
		{ "max-waiters", required_argument, NULL, 'w' },
		{ "max-conn-waiters", required_argument, NULL, 'W' },
		{ "max-bytes", required_argument, NULL, 'B' },
		{ "max-queue", required_argument, NULL, 'Q' },
		{ "max-conns-per-addr", required_argument, NULL, 'A' },
		{ "request-timeout", required_argument, NULL, 'T' },
		{ "allow-file", required_argument, NULL, 'a' },
		{ "parent", required_argument, NULL, 'P' },
		{ "state-file", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_ops ops = { op_send, op_close, NULL, op_full };
	struct store_conf conf;
	const char *listens[LISTEN_MAX];
	int ch, nlisten = 0, lfd = -1, i;
	pid_t parent = 0;
	long long now, next, due;
	struct conn *c;
	sigset_t sigs;

	store_conf_default(&conf);
	g.max_conns = 4096;
	/* Room for every worker of a big node (two each in torch 1.13). */
	g.max_per_addr = 512;
	g.request_ms = 10000;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (nlisten == LISTEN_MAX)
				diex(ESV_EXIT_USAGE, "too many --listen");
			listens[nlisten++] = optarg;
			break;
		case 'L':
			lfd = num_arg("--listen-fd", optarg, 0, INT_MAX);
			break;
		case 'c':
			g.max_conns = num_arg("--max-conns", optarg, 1,
			    1000000);
			break;
		case 'k':
			conf.max_key = num_arg("--max-key", optarg, 1,
			    1 << 30);
			break;
		case 'v':
			conf.max_value = num_arg("--max-value", optarg, 0,
			    1LL << 32);
			break;
		case 'r':
			conf.max_request = num_arg("--max-request", optarg, 64,
			    1LL << 34);
			break;
		case 'K':
			conf.max_keys = num_arg("--max-keys", optarg, 1,
			    1LL << 32);
			break;
		case 'w':
			conf.max_waiters = num_arg("--max-waiters", optarg, 1,
			    1LL << 32);
			break;
		case 'W':
			conf.max_conn_waiters = num_arg("--max-conn-waiters",
			    optarg, 1, 1LL << 32);
			break;
		case 'B':
			conf.max_bytes = num_arg("--max-bytes", optarg,
			    1 << 20, 1LL << 40);
			break;
		case 'Q':
			conf.max_queue = num_arg("--max-queue", optarg, 1,
			    1LL << 32);
			break;
		case 'A':
			g.max_per_addr = num_arg("--max-conns-per-addr", optarg,
			    1, 1000000);
			break;
		case 'T':
			g.request_ms = num_arg("--request-timeout", optarg, 1,
			    86400000);
			break;
		case 'a':
			g.peers.allow_file = optarg;
			break;
		case 'P':
			parent = num_arg("--parent", optarg, 2, INT_MAX);
			break;
		case 'S':
			g.state.path = optarg;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-stored %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc || (lfd == -1 && nlisten == 0)) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	/*
	 * The store of one attempt of esv-supervise's workers goes with it,
	 * SIGKILL included: the kernel's signal when the parent dies, and a
	 * parent gone already before that was asked for.
	 */
	if (parent != 0 && (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
	    getppid() != parent))
		return ESV_EXIT_OK;
	g.max_bytes = conf.max_bytes;
	/* A MULTI_GET of max_nkeys values may be that big; no more. */
	g.out_max = conf.max_request + conf.max_value + 64;
	raise_nofile();
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) == -1 ||
	    signalfd(g.sigw.fd, &sigs, SFD_NONBLOCK | SFD_CLOEXEC) == -1)
		die(ESV_EXIT_SYSTEM, "signalfd");
	if ((g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	TAILQ_INIT(&g.graveyard);
	TAILQ_INIT(&g.all);
	TAILQ_INIT(&g.timed);
	g.peers.uid = geteuid();
	TAILQ_INIT(&g.closing);
	TAILQ_INIT(&g.flushq);
	g.refusals.what = "refused connections";
	g.timerw = (struct watch){ .fn = on_timer };
	if ((g.timerw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&g.lp, &g.timerw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "timerfd");
	if ((g.st = store_new(&conf, &ops)) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	allow_load();
	if (lfd != -1)
		net_listen_fd(lfd, add_listener);
	for (i = 0; i < nlisten; i++)
		net_listen(listens[i], add_listener);
	fflush(stdout);
	while (!g.quit) {
		if (g.drain && g.nconns == 0)
			break;
		if (g.reload) {
			g.reload = false;
			allow_load();
		}
		now = mono_ms();
		next = expire(now);
		next = ratelim_tick(&g.refusals, now, next);
		if ((due = statefile_tick(&g.state, now, store_nkeys(g.st),
		    g.nconns, store_nwaiting(g.st))) < next)
			next = due;
		if (timer_arm_ms(g.timerw.fd, next == LLONG_MAX ? -1 :
		    next > now ? next - now : 0) == -1)
			die(ESV_EXIT_SYSTEM, "timerfd_settime");
		if (loop_once(&g.lp, -1) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
		while ((c = TAILQ_FIRST(&g.flushq)) != NULL) {
			TAILQ_REMOVE(&g.flushq, c, flush_entry);
			c->to_flush = false;
			if (conn_flush(c) == -1 && !c->closing) {
				/* The peer is gone: its EOF would say so too. */
				c->closing = true;
				TAILQ_INSERT_TAIL(&g.closing, c, closing_entry);
			}
		}
		while ((c = TAILQ_FIRST(&g.closing)) != NULL)
			conn_destroy(c);
		while ((c = TAILQ_FIRST(&g.graveyard)) != NULL) {
			TAILQ_REMOVE(&g.graveyard, c, entry);
			out_free(c);
			free(c);
		}
	}
	store_free(g.st);
	return ESV_EXIT_OK;
}
