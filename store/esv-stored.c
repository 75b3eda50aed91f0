/*
 * esv-stored: a TCPStore server that torch's workers use as their own
 * (esv-stored(8)).  This file is the transport: options, sockets, the
 * event loop; store.c speaks the protocol.
 */
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

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

#include "ctlschema.h"
#include "kvfile.h"
#include "loop.h"
#include "msg.h"
#include "netlisten.h"
#include "ratelim.h"
#include "store.h"

#define LISTEN_MAX	16
#define FD_RESERVE	32		/* fds besides connections */
#define READ_CHUNK	(64 * 1024)
/* The state file follows the counts at most this often. */
#define STATE_EVERY_MS	500

struct conn {
	struct watch		 w;
	struct store_conn	*sc;
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
	unsigned		 nconns, max_conns;
	size_t			 out_max;
	struct connq		 graveyard;
	/* Let go of by the store: hung up once the batch is over. */
	TAILQ_HEAD(, conn)	 closing;
	/*
	 * Replies queued in this batch: sent once it is over, one send()
	 * for all a connection got (a GET's length and value, a WAIT's
	 * wake-up among them) rather than one per piece.
	 */
	TAILQ_HEAD(, conn)	 flushq;
	bool			 quit;
	/* --state-file: what it says, and when it was last written. */
	const char		*state_file;
	char			 listen_name[INET6_ADDRSTRLEN + 16];
	size_t			 said_keys, said_conns, said_waiting;
	long long		 said_ms;
	bool			 said, state_warned;
} g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-stored [--listen ADDR:PORT]... [--listen-fd N] "
	    "[--max-conns N]\n"
	    "                  [--max-key BYTES] [--max-value BYTES] "
	    "[--max-request BYTES]\n"
	    "                  [--max-keys N] [--max-waiters N] [--parent PID]\n"
	    "                  [--state-file PATH] [--help] [--version]\n"
	    "Serves torch's TCPStore protocol (torch 1.13's and the newer "
	    "dialect) on\nADDR:PORT (\"*:PORT\" every address; port 0 a free "
	    "one, printed as\n\"listening ADDR:PORT\").\n"
	    "Exit status: 0 stopped by SIGTERM or SIGINT, 100 usage error, "
	    "111 system error.\n");
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

static void
conn_events(struct conn *c, bool out)
{
	if (c->want_out == out)
		return;
	c->want_out = out;
	if (loop_mod(&g.lp, &c->w, EPOLLIN | (out ? EPOLLOUT : 0)) == -1)
		warn_sys("epoll_ctl");
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
	loop_del(&g.lp, &c->w);
	close(c->w.fd);
	c->w.fd = -1;
	TAILQ_INSERT_TAIL(&g.graveyard, c, entry);
	g.nconns--;
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
	conn_events(c, c->outlen > 0);
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
		if ((nb = realloc(c->out, cap)) == NULL)
			return -1;
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
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	n = read(w->fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	if (n <= 0) {
		conn_destroy(c);
		return;
	}
	store_input(g.st, c->sc, buf, n);
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
	char ip[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 16];
	struct conn *c;
	int one = 1;

	net_addr_fmt(ss, ip, sizeof(ip), peer, sizeof(peer));
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		refuse(fd, ss, "out of memory");
		return;
	}
	c->w = (struct watch){ .fd = fd, .fn = on_conn, .ctx = c };
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((c->sc = store_accept(g.st, c, peer)) == NULL ||
	    loop_add(&g.lp, &c->w, EPOLLIN) == -1) {
		if (c->sc != NULL)
			store_lost(g.st, c->sc);
		free(c);
		refuse(fd, ss, "out of memory");
		return;
	}
	g.nconns++;
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
		strlcpy(g.listen_name, name, sizeof(g.listen_name));
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
}

/*
 * --state-file: the counts as esv-control(5)'s supervise/store, rewritten
 * (temp + rename) when they change, at most every STATE_EVERY_MS so that
 * a burst of SETs costs one write.  When the next write is due: LLONG_MAX
 * if nothing changed.  A failed write (a full disk) is tried again then;
 * the store serves on regardless.
 */
static long long
state_tick(long long now)
{
	size_t keys = store_nkeys(g.st), waiting = store_nwaiting(g.st);
	struct kvbuf kb = { 0 };

	if (g.state_file == NULL || (g.said && keys == g.said_keys &&
	    g.nconns == g.said_conns && waiting == g.said_waiting))
		return LLONG_MAX;
	if (g.said && now - g.said_ms < STATE_EVERY_MS)
		return g.said_ms + STATE_EVERY_MS;
	kv_add(&kb, ctl_store_key(SK_LISTEN), g.listen_name);
	kv_addf(&kb, ctl_store_key(SK_PID), "%d", (int)getpid());
	kv_addf(&kb, ctl_store_key(SK_KEYS), "%zu", keys);
	kv_addf(&kb, ctl_store_key(SK_CONNECTIONS), "%u", g.nconns);
	kv_addf(&kb, ctl_store_key(SK_WAITING), "%zu", waiting);
	kv_addf(&kb, ctl_store_key(SK_UPDATED), "%.3f", wall_now());
	g.said_ms = now;
	if (kv_write_at(&kb, AT_FDCWD, g.state_file) == -1) {
		if (!g.state_warned)
			warn_sys("%s: unable to write (again every %d ms, "
			    "said once)", g.state_file, STATE_EVERY_MS);
		g.state_warned = true;
		kv_free(&kb);
		return now + STATE_EVERY_MS;
	}
	kv_free(&kb);
	g.said = true;
	g.said_keys = keys;
	g.said_conns = g.nconns;
	g.said_waiting = waiting;
	return LLONG_MAX;
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
		{ "parent", required_argument, NULL, 'P' },
		{ "state-file", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_ops ops = { op_send, op_close, NULL };
	struct store_conf conf;
	const char *listens[LISTEN_MAX];
	int ch, nlisten = 0, lfd = -1, i;
	pid_t parent = 0;
	long long now, next, due;
	struct conn *c;

	store_conf_default(&conf);
	g.max_conns = 4096;
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
		case 'P':
			parent = num_arg("--parent", optarg, 2, INT_MAX);
			break;
		case 'S':
			g.state_file = optarg;
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
	/* A MULTI_GET of max_nkeys values may be that big; no more. */
	g.out_max = conf.max_request + conf.max_value + 64;
	raise_nofile();
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	if ((g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	TAILQ_INIT(&g.graveyard);
	TAILQ_INIT(&g.closing);
	TAILQ_INIT(&g.flushq);
	g.refusals.what = "refused connections";
	g.timerw = (struct watch){ .fn = on_timer };
	if ((g.timerw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&g.lp, &g.timerw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "timerfd");
	if ((g.st = store_new(&conf, &ops)) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	if (lfd != -1)
		net_listen_fd(lfd, add_listener);
	for (i = 0; i < nlisten; i++)
		net_listen(listens[i], add_listener);
	fflush(stdout);
	while (!g.quit) {
		now = mono_ms();
		next = ratelim_tick(&g.refusals, now, LLONG_MAX);
		if ((due = state_tick(now)) < next)
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
			free(c->out);
			free(c);
		}
	}
	store_free(g.st);
	return ESV_EXIT_OK;
}
