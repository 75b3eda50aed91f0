/*
 * esv-rdzv: the rendezvous server of esv.  This file is the transport:
 * options, sockets, the event loop; rdzv_server.c decides everything.
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

#include "confvalue.h"
#include "loop.h"
#include "msg.h"
#include "netlisten.h"
#include "rdzv_server.h"
#include "rdzvconf.h"
#include "rdzvproto.h"

#define OUT_MAX		(64 * 1024)	/* queued for a peer that is slow */
#define LINGER_MS	1000		/* after ERR, for the peer to read it */
#define LISTEN_MAX	16
#define FD_RESERVE	32		/* fds besides connections */

struct conn {
	struct watch		 w;
	struct rdzv_sconn	*sc;	/* NULL once the server let go */
	TAILQ_ENTRY(conn)	 entry;	/* closing, or graveyard */
	char			*out;
	size_t			 outlen;
	bool			 overflow, closing, shut, on_list, want_out;
	long long		 linger_until;
};
TAILQ_HEAD(connq, conn);

static struct {
	struct loop		 lp;
	struct rdzv_server	*srv;
	struct watch		 ls[LISTEN_MAX], sigw, timerw;
	int			 nls, spare_fd;
	unsigned		 nconns, max_conns;	/* fds for peers */
	long long		 idle_ms, idle_since;
	const char		*token_file;
	bool			 no_token;	/* --allow-no-token */
	struct connq		 closing, graveyard;
	bool			 quit;
} g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-rdzv [-v] [--listen ADDR:PORT]... "
	    "[--listen-fd N]\n"
	    "                --token-file FILE | --allow-no-token\n"
	    "                [--lease DURATION] [--heartbeat DURATION] "
	    "[--max-clients N]\n"
	    "                "
	    "[--max-jobs N] [--max-nodes N]\n"
	    "                [--max-unauth N] [--max-unauth-per-addr N] "
	    "[--auth-timeout DURATION]\n"
	    "                [--recovery-timeout DURATION] "
	    "[--idle-exit DURATION]\n"
	    "                [--only-job RUN_ID] [--parent PID] "
	    "[--help] [--version]\n"
	    "A DURATION is 250ms, 1.5s, 2m or 1h; a bare number is milliseconds "
	    "(seconds\nfor --idle-exit).\n"
	    "Exit status: 0 stopped by SIGTERM or SIGINT, idle, or --parent "
	    "gone; 100 usage or\nconfiguration error, 111 system error.\n");
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

/*
 * A duration as every esv program takes one ("250ms", "1.5s", "2m"); a
 * bare number keeps this option's own unit, bare_ms, as it always had.
 */
static long long
dur_arg(const char *opt, const char *arg, long long bare_ms, long long lo,
    long long hi)
{
	long long ms;

	if (arg[0] != '\0' && strspn(arg, "0123456789") == strlen(arg))
		ms = num_arg(opt, arg, 0, LLONG_MAX / bare_ms) * bare_ms;
	else
		ms = parse_duration_ms(arg);
	if (ms < lo || ms > hi)
		diex(ESV_EXIT_USAGE, "%s: %s: not a duration in %lld ms..%lld s",
		    opt, arg, lo, hi / 1000);
	return ms;
}

static void
conn_events(struct conn *c, bool out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &c->w };

	if (c->want_out == out)
		return;
	c->want_out = out;
	if (out)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(g.lp.epfd, EPOLL_CTL_MOD, c->w.fd, &ev) == -1)
		warn_sys("epoll_ctl");
}

/*
 * Freed only after the current batch of events: a later event of the
 * batch may still point at it (it then sees fd -1).
 */
static void
conn_destroy(struct conn *c, const char *why)
{
	if (c->sc != NULL)
		rdzv_server_lost(g.srv, c->sc, why, mono_ms());
	c->sc = NULL;
	if (c->on_list)
		TAILQ_REMOVE(&g.closing, c, entry);
	loop_del(&g.lp, &c->w);
	close(c->w.fd);
	c->w.fd = -1;
	TAILQ_INSERT_TAIL(&g.graveyard, c, entry);
	if (--g.nconns == 0)
		g.idle_since = mono_ms();
}

/* 0: all written (or queued), -1: the peer is gone. */
static int
conn_flush(struct conn *c)
{
	ssize_t n;

	while (c->outlen > 0) {
		n = send(c->w.fd, c->out, c->outlen, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n == -1)
			return -1;
		memmove(c->out, c->out + n, c->outlen - n);
		c->outlen -= n;
	}
	conn_events(c, c->outlen > 0);
	if (c->outlen == 0 && c->closing && !c->shut) {
		/* EOF to the peer; its own EOF (or the linger) ends it. */
		shutdown(c->w.fd, SHUT_WR);
		c->shut = true;
	}
	return 0;
}

static int
op_send(void *ctx, void *conn, const char *line, size_t len)
{
	struct conn *c = conn;
	char *nb;

	(void)ctx;
	if (c->overflow || c->w.fd == -1) {
		errno = EPIPE;
		return -1;
	}
	if (c->outlen + len > OUT_MAX ||
	    (nb = realloc(c->out, c->outlen + len)) == NULL) {
		c->overflow = true;
		errno = ENOBUFS;
		return -1;
	}
	c->out = nb;
	memcpy(c->out + c->outlen, line, len);
	c->outlen += len;
	if (conn_flush(c) == -1) {
		c->overflow = true;
		return -1;
	}
	return 0;
}

static void
op_close(void *ctx, void *conn, bool linger)
{
	struct conn *c = conn;

	(void)ctx;
	c->sc = NULL;
	if (!linger) {
		/* Our ERR is out if the socket took it; no slot held. */
		(void)conn_flush(c);
		conn_destroy(c, NULL);
		return;
	}
	if (c->overflow) {
		conn_destroy(c, NULL);
		return;
	}
	c->closing = true;
	c->linger_until = mono_ms() + LINGER_MS;
	TAILQ_INSERT_TAIL(&g.closing, c, entry);
	c->on_list = true;
	if (conn_flush(c) == -1)
		conn_destroy(c, NULL);
}

static void
on_conn(struct watch *w, uint32_t events)
{
	struct conn *c = w->ctx;
	char buf[4096], why[128];
	ssize_t n;

	if (w->fd == -1)
		return;
	if ((events & EPOLLOUT) && conn_flush(c) == -1) {
		snprintf(why, sizeof(why), "write: %s", strerror(errno));
		conn_destroy(c, why);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	n = read(w->fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	if (n == -1) {
		snprintf(why, sizeof(why), "read: %s", strerror(errno));
		conn_destroy(c, why);
	} else if (n == 0)
		conn_destroy(c, "eof");
	else if (c->sc != NULL)
		rdzv_server_input(g.srv, c->sc, buf, n, mono_ms());
}

static void
refuse_fd(int fd, const struct sockaddr_storage *ss)
{
	static const char err[] = "ERR limit too many connections\n";
	char ip[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 16];

	net_addr_fmt(ss, ip, sizeof(ip), peer, sizeof(peer));
	rdzv_server_warn(g.srv, ip, mono_ms(), "%s: refused: %u connections",
	    peer, g.nconns);
	(void)!send(fd, err, sizeof(err) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* Out of fds: the spare one lets us accept, say why, and hang up. */
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
		refuse_fd(fd, &ss);
	g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void
conn_new(int fd, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 16];
	struct conn *c;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		warn_sys("accept");
		close(fd);
		return;
	}
	c->w.fd = fd;
	c->w.fn = on_conn;
	c->w.ctx = c;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (loop_add(&g.lp, &c->w, EPOLLIN) == -1) {
		warn_sys("epoll_ctl");
		close(fd);
		free(c);
		return;
	}
	g.nconns++;
	net_addr_fmt(ss, ip, sizeof(ip), peer, sizeof(peer));
	if ((c->sc = rdzv_server_accept(g.srv, c, peer, ip, mono_ms())) ==
	    NULL)
		conn_destroy(c, NULL);
}

static void
on_listen(struct watch *w, uint32_t events)
{
	struct sockaddr_storage ss;
	socklen_t sl;
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
		if (g.nconns >= g.max_conns)
			refuse_fd(fd, &ss);
		else
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
	g.ls[g.nls].fd = fd;
	g.ls[g.nls].fn = on_listen;
	g.ls[g.nls].ctx = NULL;
	if (loop_add(&g.lp, &g.ls[g.nls], EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
	g.nls++;
}

static void
load_token(char *token, size_t len, bool fatal)
{
	char err[512];

	if (rdzv_token_load(g.token_file, token, len, err, sizeof(err)) == 0)
		return;
	if (fatal)
		diex(ESV_EXIT_USAGE, "token: %s", err);
	warn_msg("token: %s; keeping the old one", err);
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo sis[4], si;
	char token[RDZV_TOKEN_MAX + 1] = "";
	int k, n;

	(void)events;
	n = signals_read(w->fd, sis, 4);
	for (k = 0; k < n; k++) {
		si = sis[k];
		if (si.ssi_signo != SIGHUP) {
			g.quit = true;
			continue;
		}
		if (g.no_token)
			continue;
		load_token(token, sizeof(token), false);
		if (token[0] != '\0') {
			rdzv_server_set_token(g.srv, token);
			info_msg("token reloaded");
		}
		explicit_bzero(token, sizeof(token));
	}
}

static void
on_timer(struct watch *w, uint32_t events)
{
	(void)events;
	timer_ack(w->fd);
}

/*
 * Enough fds for both pools (and the closes lingering), or as many as
 * the hard limit allows.
 */
static void
raise_nofile(struct rdzv_server_conf *conf)
{
	struct rlimit rl;
	rlim_t want;
	unsigned capped;

	g.max_conns = conf->max_clients + conf->max_unauth;
	want = (rlim_t)g.max_conns + FD_RESERVE;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		die(ESV_EXIT_SYSTEM, "getrlimit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		die(ESV_EXIT_SYSTEM, "setrlimit");
	if (rl.rlim_cur < want) {
		capped = rl.rlim_cur > 2 * FD_RESERVE ?
		    rl.rlim_cur - FD_RESERVE : FD_RESERVE;
		if (capped > conf->max_unauth + 1)
			capped -= conf->max_unauth;
		else
			capped = 1;
		warn_msg("--max-clients %u: only %llu fds: capped to %u",
		    conf->max_clients, (unsigned long long)rl.rlim_cur,
		    capped);
		conf->max_clients = capped;
		g.max_conns = capped + conf->max_unauth;
	}
}

static void
setup_loop(void)
{
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	if ((g.timerw.fd = timer_open(CLOCK_MONOTONIC)) == -1)
		die(ESV_EXIT_SYSTEM, "timerfd");
	g.timerw.fn = on_timer;
	if (loop_add(&g.lp, &g.timerw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
	if ((g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	TAILQ_INIT(&g.closing);
	TAILQ_INIT(&g.graveyard);
}

/* The transport's own deadlines: lingering closes and idle exit. */
static long long
transport_tick(long long now, long long next)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&g.closing)) != NULL &&
	    c->linger_until <= now)
		conn_destroy(c, NULL);
	if (c != NULL && c->linger_until < next)
		next = c->linger_until;
	if (g.idle_ms > 0 && g.nconns == 0) {
		if (now - g.idle_since >= g.idle_ms) {
			info_msg("no connection for %lld s: exiting",
			    g.idle_ms / 1000);
			g.quit = true;
		} else if (g.idle_since + g.idle_ms < next)
			next = g.idle_since + g.idle_ms;
	}
	return next;
}

static void
run(void)
{
	long long now, next;
	struct conn *c;

	while (!g.quit) {
		now = mono_ms();
		next = transport_tick(now, rdzv_server_tick(g.srv, now));
		if (g.quit)
			break;
		if (timer_arm_ms(g.timerw.fd, next > now ? next - now : 0) ==
		    -1)
			die(ESV_EXIT_SYSTEM, "timerfd_settime");
		if (loop_once(&g.lp, -1) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
		while ((c = TAILQ_FIRST(&g.graveyard)) != NULL) {
			TAILQ_REMOVE(&g.graveyard, c, entry);
			free(c->out);
			free(c);
		}
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "listen-fd", required_argument, NULL, 'L' },
		{ "token-file", required_argument, NULL, 't' },
		{ "allow-no-token", no_argument, NULL, 'N' },
		{ "heartbeat", required_argument, NULL, 'H' },
		{ "lease", required_argument, NULL, 'E' },
		{ "max-clients", required_argument, NULL, 'c' },
		{ "max-jobs", required_argument, NULL, 'j' },
		{ "max-nodes", required_argument, NULL, 'n' },
		{ "recovery-timeout", required_argument, NULL, 'r' },
		{ "max-unauth", required_argument, NULL, 'u' },
		{ "max-unauth-per-addr", required_argument, NULL, 'a' },
		{ "auth-timeout", required_argument, NULL, 'T' },
		{ "idle-exit", required_argument, NULL, 'i' },
		{ "only-job", required_argument, NULL, 'o' },
		{ "parent", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rdzv_server_conf conf = { .heartbeat_ms = 0,
	    .lease_ms = RDZV_LEASE_ESV_MS,
	    .max_jobs = 1024, .max_nodes = 8192, .recovery_ms = 5000,
	    .max_clients = 4096, .max_unauth = 128, .max_unauth_per_addr = 16,
	    .auth_ms = 2000 };
	struct rdzv_server_ops ops = { op_send, op_close, NULL };
	const char *listens[LISTEN_MAX];
	char token[RDZV_TOKEN_MAX + 1];
	int ch, nlisten = 0, lfd = -1, i;
	pid_t parent = 0;

	while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (nlisten == LISTEN_MAX)
				diex(ESV_EXIT_USAGE, "too many --listen");
			listens[nlisten++] = optarg;
			break;
		case 'L':
			lfd = num_arg("--listen-fd", optarg, 0, INT_MAX);
			break;
		case 't':
			g.token_file = optarg;
			break;
		case 'N':
			g.no_token = true;
			break;
		case 'H':
			conf.heartbeat_ms = dur_arg("--heartbeat", optarg, 1,
			    10, 3600000);
			break;
		case 'E':
			conf.lease_ms = dur_arg("--lease", optarg, 1, 100,
			    3600000);
			break;
		case 'c':
			conf.max_clients = num_arg("--max-clients", optarg, 1,
			    1000000);
			break;
		case 'u':
			conf.max_unauth = num_arg("--max-unauth", optarg, 1,
			    100000);
			break;
		case 'a':
			conf.max_unauth_per_addr = num_arg(
			    "--max-unauth-per-addr", optarg, 1, 100000);
			break;
		case 'T':
			conf.auth_ms = dur_arg("--auth-timeout", optarg, 1, 10,
			    3600000);
			break;
		case 'j':
			conf.max_jobs = num_arg("--max-jobs", optarg, 1,
			    1000000);
			break;
		case 'n':
			conf.max_nodes = num_arg("--max-nodes", optarg, 1,
			    100000);
			break;
		case 'r':
			conf.recovery_ms = dur_arg("--recovery-timeout",
			    optarg, 1, 0, 86400000);
			break;
		case 'i':
			g.idle_ms = dur_arg("--idle-exit", optarg, 1000, 0,
			    (long long)INT_MAX / 1000 * 1000);
			break;
		case 'o':
			if (!rdzv_name_ok(optarg))
				diex(ESV_EXIT_USAGE, "--only-job %s: not a run "
				    "id (1-%d characters of A-Z a-z 0-9 . _ : "
				    "@ + -)", optarg, RDZV_NAME_MAX);
			conf.only_job = optarg;
			break;
		case 'P':
			parent = num_arg("--parent", optarg, 2, INT_MAX);
			break;
		case 'v':
			conf.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-rdzv %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc || (g.token_file == NULL) == !g.no_token) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	/*
	 * The server an esv-supervise hosts for its job goes with it, SIGKILL
	 * included: the kernel's signal when the parent dies, and a parent
	 * gone already before that was asked for.
	 */
	if (parent != 0 && (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
	    getppid() != parent))
		return ESV_EXIT_OK;
	/*
	 * Without a token every session key comes from the empty one: any
	 * client that reaches us can join any job, as with torch's c10d.
	 */
	if (g.no_token) {
		token[0] = '\0';
		warn_msg("--allow-no-token: joins are not authenticated: anyone "
		    "who reaches this server can join a job or break its rounds");
	} else
		load_token(token, sizeof(token), true);
	/* Several heartbeats a lease: one lost line costs no node. */
	if (conf.heartbeat_ms == 0)
		conf.heartbeat_ms = conf.lease_ms / 5;
	conf.lease_slack_ms = rdzv_fence_grace_ms(conf.lease_ms) / 2;
	if (conf.heartbeat_ms > conf.lease_ms / 2)
		warn_msg("--heartbeat %u ms is above half the lease (%u ms): "
		    "a node may be dropped for one lost heartbeat",
		    conf.heartbeat_ms, conf.lease_ms);
	raise_nofile(&conf);
	setup_loop();
	g.srv = rdzv_server_new(&conf, &ops, token, mono_ms());
	explicit_bzero(token, sizeof(token));
	if (g.srv == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	if (lfd != -1)
		net_listen_fd(lfd, add_listener);
	for (i = 0; i < nlisten; i++)
		net_listen(listens[i], add_listener);
	if (lfd == -1 && nlisten == 0)
		net_listen("*:29400", add_listener);
	fflush(stdout);
	g.idle_since = mono_ms();
	run();
	for (i = 0; i < g.nls; i++)
		close(g.ls[i].fd);
	return ESV_EXIT_OK;
}
