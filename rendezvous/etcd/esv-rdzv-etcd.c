/*
 * esv-rdzv-etcd: one node's rendezvous on etcd.  esv-supervise starts it
 * for a job whose backend is etcd and speaks to it, over the socket it
 * hands down as fd 3, the esv-rdzv protocol it speaks to esv-rdzv: the
 * supervisor has one rendezvous client whatever the backend, and libcurl
 * and TLS stay out of it.  This file is the supervisor's side (the line
 * protocol and the loop); node*.c decide (node_int.h names their layers),
 * etcd.c talks to etcd.
 *
 * Its life is the socket's: when the supervisor closes it, or stops
 * talking for three heartbeats (it was stopped or is wedged), the lease
 * is revoked, so that the other nodes go on without this one at once.
 * A close is told from a silence: a supervisor that closed the socket
 * has exited, and its unfinished round is marked left first, so that
 * the exit barrier does not wait for it as for a node that may be back.
 * The other way round, when the lease may run out under running workers
 * (etcd out of reach), it hangs up on the supervisor: the supervisor
 * kills the workers of a rendezvous it has lost, and their ranks are
 * free before etcd can give them to anyone (esv-rdzv-etcd(8), Fencing).
 * But a supervisor that is stopped hears neither: so our PINGs tell it
 * both ends, which lines of its we have (our hang-up runs from them) and
 * when we give the lease up, and it stops the workers before either, or
 * its guardian does for it.
 */
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confvalue.h"
#include "etcd.h"
#include "loop.h"
#include "msg.h"
#include "node.h"
#include "rdzvconf.h"
#include "rdzvproto.h"

#define OUT_MAX		(64 * 1024)

static struct {
	struct loop	 lp;
	struct watch	 sigw, sock, timer;
	struct etcd	*etcd;
	struct node	*node;
	char		 nonce[RDZV_NONCE_LEN + 1];
	uint8_t		 key[RDZV_KEY_LEN];
	bool		 keyed;
	uint64_t	 seq_in, seq_out;
	char		 in[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];
	size_t		 inlen;
	char		 out[OUT_MAX];
	size_t		 outlen;
	unsigned	 hb_ms;
	long long	 last_rx, last_tx;
	/*
	 * The supervisor's PINGs carry a count: it reads the lease end in
	 * ours (lib/rdzvproto.h); an older one would refuse the field.
	 */
	bool		 sup_counts;
	long long	 told_end;	/* the last lease end in a PING */
	bool		 closing;	/* the supervisor is gone */
	int		 status;
} g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-rdzv-etcd --endpoints URL[,URL...] [--prefix "
	    "PATH] [--lease-ttl DURATION]\n"
	    "                [--cacert FILE] [--cert FILE] [--key FILE] "
	    "[--help] [--version]\n"
	    "Started by esv-supervise with its socket as fd 3; not for use "
	    "on its own.\n"
	    "The lease (default 2s, or etcd's minimum if longer): while "
	    "workers run, no keep-alive\nanswered for the lease less a "
	    "fifth hangs up on the supervisor, which stops them.\nA "
	    "supervisor whose PINGs carry a count is told in ours when the "
	    "lease is given up\n(a twentieth before its end) and stops them "
	    "itself before that, or its guardian\ndoes if it is stopped.\n"
	    "TLS files beside an http:// endpoint are refused.\n"
	    "Exit status: 0 the supervisor let go, 100 usage error, 111 "
	    "system error.\n");
}

static void	link_close(const char *why);
static void	gone(void *ctx);

static void
flush_out(void)
{
	ssize_t n;

	while (g.outlen > 0) {
		n = send(g.sock.fd, g.out, g.outlen, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		/* The supervisor hung up while we wrote: a hang-up like EOF. */
		if (n == -1 && (errno == EPIPE || errno == ECONNRESET)) {
			if (g.node != NULL)
				node_hangup(g.node);
			link_close(NULL);
			return;
		}
		if (n == -1) {
			link_close(strerror(errno));
			return;
		}
		memmove(g.out, g.out + n, g.outlen - n);
		g.outlen -= n;
	}
	if (!g.closing)
		loop_mod(&g.lp, &g.sock, EPOLLIN | (g.outlen > 0 ? EPOLLOUT :
		    0));
}

static void
send_line(const char *line, int n)
{
	if (g.closing || n <= 0)
		return;
	if (g.outlen + n > sizeof(g.out)) {
		link_close("the supervisor does not read");
		return;
	}
	memcpy(g.out + g.outlen, line, n);
	g.outlen += n;
	g.last_tx = mono_ms();
	flush_out();
}

static void
say(void *ctx, const struct rdzv_msg *m)
{
	char line[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];

	(void)ctx;
	if (!g.keyed)
		return;
	send_line(line, rdzv_msg_format_sealed(line, sizeof(line), m, g.key,
	    RDZV_TO_CLIENT, g.seq_out++));
}

/*
 * Our PING acknowledges the supervisor's lines, as esv-rdzv's does: it
 * renews its workers' lease to the send time of the newest one, which
 * we received, and we hang up no sooner than three heartbeats after
 * that.  It also says when we give the etcd lease up unless etcd
 * answers a keep-alive first: the supervisor and its guardian stop the
 * workers by the earlier of the two ends.  The end is a time of the
 * monotonic clock we share with the supervisor, on one host: a line
 * that waits in the socket while it is stopped is still true when it
 * is read.
 */
static void
send_ping(void)
{
	struct rdzv_msg ping = { .verb = RV_PING };
	long long end = node_lease_end(g.node);

	ping.u.ping.has_ack = true;
	ping.u.ping.acked = g.seq_in > INT_MAX ? INT_MAX : (unsigned)g.seq_in;
	if (g.sup_counts && end > 0) {
		ping.u.ping.has_end = true;
		ping.u.ping.lease_end = end;
	}
	if (g.sup_counts)
		g.told_end = end;
	say(NULL, &ping);
}

static void
fence(void *ctx)
{
	(void)ctx;
	/* node_lease.c said why; the hang-up is what stops the workers. */
	link_close(NULL);
}

static void
gone(void *ctx)
{
	(void)ctx;
	g.status = ESV_EXIT_OK;
	/* Out of the loop: main frees what is left. */
	g.closing = true;
}

/* The supervisor is gone, or wronged us: let go of the job. */
static void
link_close(const char *why)
{
	if (g.closing)
		return;
	if (why != NULL)
		warn_msg("supervisor link: %s: leaving the rendezvous", why);
	g.closing = true;
	loop_del(&g.lp, &g.sock);
	close(g.sock.fd);
	g.sock.fd = -1;
	if (g.node != NULL)
		node_shutdown(g.node);
	else
		gone(NULL);
}

static void	rearm(void);

static void
on_line(char *line)
{
	char mac[RDZV_MAC_LEN + 1], why[256];
	struct rdzv_msg m;

	g.last_rx = mono_ms();
	if (!g.keyed) {
		/*
		 * The first line is a JOIN that names the client's nonce:
		 * the session key comes from it, then its seal is checked.
		 * The socket is ours alone, so the token is the empty one.
		 */
		if (rdzv_unseal_split(line, mac) == -1 ||
		    rdzv_msg_parse(line, &m, why, sizeof(why)) == -1 ||
		    m.verb != RV_JOIN) {
			link_close("the first line is not a sealed JOIN");
			return;
		}
		rdzv_session_key("", g.nonce, m.u.join.cnonce, g.key);
		if (!rdzv_seal_ok(line, mac, g.key, RDZV_TO_SERVER, 0)) {
			link_close("bad seal on the first line");
			return;
		}
		g.keyed = true;
		g.seq_in = 1;
	} else if (rdzv_msg_parse_sealed(line, &m, g.key, RDZV_TO_SERVER,
	    g.seq_in, why, sizeof(why)) == -1) {
		warn_msg("supervisor link: line %llu: %s",
		    (unsigned long long)g.seq_in, why);
		link_close("bad line");
		return;
	} else
		g.seq_in++;
	switch (m.verb) {
	case RV_JOIN:
		node_join(g.node, &m.u.join);
		break;
	case RV_BARRIER:
		node_barrier(g.node, m.u.n);
		break;
	case RV_CLOSE:
		node_close_job(g.node);
		break;
	case RV_LEAVE:
		/* Our place goes with the lease, when the socket closes. */
		break;
	case RV_PING:
		/*
		 * Answered at once: a supervisor back from a stall renews
		 * within a round trip, not at our next heartbeat.
		 */
		if (m.u.ping.has_ack && !g.sup_counts) {
			g.sup_counts = true;
			node_late_fence(g.node);
		}
		send_ping();
		break;
	default:
		warn_msg("supervisor link: unexpected %s", line);
		break;
	}
}

static void
on_sock(struct watch *w, uint32_t events)
{
	char buf[4096], *nl;
	size_t off, take;
	ssize_t n;

	if (events & EPOLLOUT)
		flush_out();
	if (g.closing || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	n = recv(w->fd, buf, sizeof(buf), 0);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/*
		 * It hung up (it exited): not a silence, which may end.  An
		 * exit that left our lines unread is a reset, not an EOF.
		 */
		if ((n == 0 || errno == ECONNRESET) && g.node != NULL)
			node_hangup(g.node);
		link_close(NULL);
		return;
	}
	for (off = 0; off < (size_t)n && !g.closing; off += take) {
		nl = memchr(buf + off, '\n', n - off);
		take = nl != NULL ? (size_t)(nl - (buf + off)) + 1 :
		    (size_t)n - off;
		if (g.inlen + take > sizeof(g.in)) {
			link_close("line too long");
			return;
		}
		memcpy(g.in + g.inlen, buf + off, take);
		g.inlen += take;
		if (nl == NULL)
			break;
		g.in[g.inlen - 1] = '\0';
		g.inlen = 0;
		on_line(g.in);
	}
	/* A JOIN keys the link: its PINGs are due from now on. */
	rearm();
}

static void
rearm(void)
{
	long long now = mono_ms(), at;

	if (g.closing)
		return;
	/*
	 * Before the JOIN there is no session key and no PING can be sent:
	 * a deadline for one would fire at once, again and again.
	 */
	at = g.last_rx + 3LL * g.hb_ms;
	if (g.keyed && g.last_tx + g.hb_ms < at)
		at = g.last_tx + g.hb_ms;
	timer_arm_ms(g.timer.fd, at > now ? at - now : 0);
}

static void
on_timer(struct watch *w, uint32_t events)
{
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	if (g.closing)
		return;
	if (now >= g.last_rx + 3LL * g.hb_ms) {
		link_close("no word from the supervisor for three heartbeats");
		return;
	}
	if (g.keyed && now >= g.last_tx + g.hb_ms)
		send_ping();
	rearm();
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo si[8];
	int i, n;

	(void)events;
	n = signals_read(w->fd, si, 8);
	for (i = 0; i < n; i++)
		if (si[i].ssi_signo == SIGTERM || si[i].ssi_signo == SIGINT)
			link_close("stopped by a signal");
}

static long long
dur_arg(const char *opt, const char *arg, long long lo, long long hi)
{
	long long ms = parse_duration_ms(arg);

	if (ms < lo || ms > hi)
		diex(ESV_EXIT_USAGE, "%s: %s: not a duration in %lld ms..%lld s",
		    opt, arg, lo, hi / 1000);
	return ms;
}

static void
endpoints_arg(struct etcd_conf *c, char *arg)
{
	char *ep, *save;

	for (ep = strtok_r(arg, ",", &save); ep != NULL;
	    ep = strtok_r(NULL, ",", &save)) {
		if (strncmp(ep, "http://", 7) != 0 &&
		    strncmp(ep, "https://", 8) != 0)
			diex(ESV_EXIT_USAGE, "--endpoints: %s: not http:// or "
			    "https://", ep);
		if (c->nendpoints == ETCD_MAX_ENDPOINTS)
			diex(ESV_EXIT_USAGE, "--endpoints: more than %d",
			    ETCD_MAX_ENDPOINTS);
		ep[strcspn(ep, "/") + 2 + strcspn(ep + strcspn(ep, "/") + 2,
		    "/")] = '\0';
		c->endpoints[c->nendpoints++] = ep;
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "endpoints", required_argument, NULL, 'e' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "run-id", required_argument, NULL, 'r' },
		{ "lease-ttl", required_argument, NULL, 't' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct etcd_conf ec = { .call_timeout_ms = 5000 };
	struct node_ops ops = { say, gone, fence, NULL };
	struct rdzv_msg hello = { .verb = RV_HELLO };
	const char *prefix = "/esv", *run_id = NULL;
	unsigned ttl_ms = RDZV_LEASE_ETCD_MS;
	struct epoll_event ev;
	unsigned i;
	char line[RDZV_LINE_MAX], err[256];
	int ch;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'e':
			endpoints_arg(&ec, optarg);
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'r':
			run_id = optarg;
			break;
		case 't':
			ttl_ms = dur_arg("--lease-ttl", optarg, 1000,
			    3600000);
			break;
		case 'C':
			ec.cacert = optarg;
			break;
		case 'c':
			ec.cert = optarg;
			break;
		case 'k':
			ec.key = optarg;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-rdzv-etcd %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc || ec.nendpoints == 0 || run_id == NULL ||
	    !rdzv_name_ok(run_id) || prefix[0] != '/') {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	/* TLS is the only authentication etcd has: never drop it silently. */
	for (i = 0; i < ec.nendpoints; i++)
		if ((ec.cacert != NULL || ec.cert != NULL || ec.key != NULL) &&
		    strncmp(ec.endpoints[i], "http://", 7) == 0)
			diex(ESV_EXIT_USAGE, "--endpoints: %s: plaintext, but "
			    "--cacert, --cert or --key asks for TLS: use "
			    "https://", ec.endpoints[i]);
	if (fcntl(3, F_SETFD, FD_CLOEXEC) == -1)
		die(ESV_EXIT_USAGE, "fd 3 (the supervisor's socket)");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		diex(ESV_EXIT_SYSTEM, "curl_global_init failed");
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	if ((g.etcd = etcd_new(&g.lp, &ec, err, sizeof(err))) == NULL)
		diex(ESV_EXIT_SYSTEM, "%s", err);
	if ((g.node = node_new(g.etcd, &g.lp, strcmp(prefix, "/") == 0 ? "" :
	    prefix, run_id, ttl_ms, &ops)) == NULL)
		die(ESV_EXIT_SYSTEM, "node");
	/* The supervisor is wedged if it says nothing for a lease's TTL. */
	g.hb_ms = ttl_ms / 3;
	g.sock = (struct watch){ .fd = 3, .fn = on_sock };
	g.timer = (struct watch){ .fn = on_timer };
	if ((g.timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&g.lp, &g.timer, EPOLLIN) == -1 ||
	    loop_add(&g.lp, &g.sock, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "loop");
	rdzv_nonce(g.nonce);
	hello.u.hello.version = RDZV_PROTO_VERSION;
	strlcpy(hello.u.hello.nonce, g.nonce, sizeof(hello.u.hello.nonce));
	hello.u.hello.heartbeat_ms = g.hb_ms;
	g.last_rx = mono_ms();
	send_line(line, rdzv_msg_format(line, sizeof(line), &hello));
	rearm();
	g.status = -1;
	while (g.status == -1) {
		/*
		 * Wait without taking the events (they are level-triggered),
		 * then look at the lease before any handler runs: back from
		 * a stop, a line of the supervisor's or a reply of etcd's
		 * must not be acted on by a node whose lease may be gone.
		 */
		if (epoll_wait(g.lp.epfd, &ev, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			die(ESV_EXIT_SYSTEM, "epoll_wait");
		}
		if (!g.closing)
			node_fence_check(g.node);
		if (g.status == -1 && loop_once(&g.lp, 0) == -1 &&
		    errno != EINTR)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
		/* A keep-alive answered moves the end: said at once. */
		if (g.status == -1 && !g.closing && g.keyed && g.sup_counts &&
		    node_lease_end(g.node) != g.told_end)
			send_ping();
	}
	node_free(g.node);
	etcd_free(g.etcd);
	curl_global_cleanup();
	return g.status;
}
