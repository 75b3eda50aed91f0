/*
 * The "esv" rendezvous backend: one TCP connection to esv-rdzv for the
 * life of the job (protocol: esv-rdzv(8), lib/rdzvproto.h).  The server
 * pushes what torch's agents poll for (a node waiting, a node lost), so a
 * membership change reaches the supervisor in one round trip.
 *
 * The connection is the node's liveness: losing it must not touch the
 * workers at once.  We reconnect with backoff and tell the server what we
 * run, so a restarted server rebuilds the round from its nodes.
 *
 * But the workers hold their ranks only under a lease (fencing): the
 * server acknowledges our lines in its PINGs, and we renew the lease to
 * the send time of the newest acknowledged line.  The server's lease for
 * us runs from its receipt of that line, so ours ends first.  When ours
 * is about to end, the workers are stopped (SIGTERM at lease - grace,
 * SIGKILL at lease - grace/2), before the server may give their ranks
 * away (at lease + grace/2 after its receipt of our last line).
 * While they may live, we never hang up ourselves (the server takes EOF
 * for a node that stopped them): the connection goes with the fence.
 *
 * On etcd the lease is the same, with esv-rdzv-etcd as the server: it
 * acknowledges our lines, revokes the etcd lease when we have said
 * nothing for three of its heartbeats (its TTL), and tells, in the same
 * PINGs, when it gives the etcd lease up unless etcd answers a
 * keep-alive first (a quarter grace before etcd may expire it).  The
 * workers' lease ends at the earlier of the two; our fence runs a grace
 * before that end, our guardian kills at a quarter grace before it, and
 * esv-rdzv-etcd's revocation comes at the end or later, etcd's expiry
 * later still.  The order matters because each later step gives the
 * ranks away: the guardian is the backstop for a supervisor that is
 * stopped and cannot fence, so it must act before the revocation that a
 * stopped supervisor brings on, and it must not act before our own
 * fence, which stops the workers more gently.  The end esv-rdzv-etcd
 * tells is its own clock's (one host, CLOCK_MONOTONIC): a PING that
 * waited in the socket while we were stopped says no more than it said
 * when it was sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "freeport.h"
#include "msg.h"
#include "progpath.h"
#include "rdzv.h"
#include "rdzv_host.h"
#include "rdzvproto.h"

#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	2000
/*
 * Only a connection that served this long resets the backoff: one the
 * server refuses or drops at once (a node id in use) must not reconnect
 * at BACKOFF_MIN_MS for ever.
 */
#define STABLE_MS	(5 * BACKOFF_MAX_MS)
#define OUT_MAX		4096
#define GREETING_MS	3000	/* to connect and be greeted */
#define LOOKUP_MS	30000	/* a resolver's own retries fit in */
#define HOST_STOP_MS	2000	/* for our esv-rdzv to go on SIGTERM */
#define SENT_RING	64	/* send times of our last lines */

enum conn_state { C_DOWN, C_RESOLVING, C_CONNECTING, C_GREETING, C_UP };

/* What the supervisor asked of the rendezvous last. */
enum want { W_NOTHING, W_ROUND, W_RUNNING, W_BARRIER };

struct esv {
	struct rdzv		*rz;
	const struct rdzv_params	*cfg;
	char			 token[RDZV_TOKEN_MAX + 1];
	char			 token_path[PATH_MAX];
	char			 log_path[PATH_MAX];	/* its log */
	char			 node_id[RDZV_NAME_MAX + 1];
	/*
	 * This supervisor's, for its life: the start of every cnonce, so
	 * that the server tells our reconnection (which replaces our stale
	 * connection) from another node that presents our node id (refused
	 * while ours lives).
	 */
	char			 instance[RDZV_INSTANCE_LEN + 1];
	char			 host[256];
	unsigned		 port;
	char			 endpoint[300];
	bool			 may_host;
	pid_t			 host_pid;
	/*
	 * The etcd backend: the same protocol to esv-rdzv-etcd, a child on
	 * the other end of a socketpair, which speaks to etcd for us.
	 */
	bool			 via_helper;
	pid_t			 helper_pid;
	/* The endpoint's addresses, looked up anew for every connection. */
	struct lookup_answer	 peer;
	unsigned		 peer_next;
	pid_t			 lookup_pid;	/* until reaped */
	struct watch		 lw;
	/* local_addr, looked up at start-up (none: numeric from the socket) */
	struct lookup_answer	 local;

	enum conn_state		 conn;
	struct watch		 w, tw;
	char			 cnonce[RDZV_NONCE_LEN + 1];
	uint8_t			 key[RDZV_KEY_LEN];	/* of this connection */
	uint64_t		 seq_in, seq_out;
	bool			 proven;	/* a line of the server's held */
	unsigned		 hb_ms;		/* our PINGs */
	unsigned		 srv_hb_ms;	/* the server's */
	char			 in[RDZV_LINE_MAX];
	size_t			 inlen;
	char			 out[OUT_MAX];
	size_t			 outlen;
	long long		 last_rx, last_tx, reconnect_at;
	long long		 up_since;	/* accepted by the server */
	unsigned		 backoff_ms;
	bool			 outage_logged;
	bool			 dup_logged;	/* "duplicate" said */
	bool			 ever_up;	/* a connection was ever proven */
	/*
	 * In read_lines: a callback it makes (a membership change) may reap
	 * workers, whose reaping asks us to read first (rdzv_check); the
	 * lines already read must be taken in order, and e->in is in use.
	 */
	bool			 reading;

	/* The lease (see the top of the file); times are mono_ms. */
	unsigned		 lease_ms, grace_ms;
	long long		 sent_at[SENT_RING];	/* by seq_out */
	long long		 renewed;
	long long		 etcd_end;	/* esv-rdzv-etcd's, 0: none */
	long long		 told;		/* the kill time, to cb.lease */
	/*
	 * Workers may run under our ranks: from a ROUND until the
	 * supervisor, their stop over, joins again, waits in the barrier
	 * or leaves.
	 */
	bool			 live;
	bool			 fenced;	/* this round's fence is done */
	/*
	 * A JOIN running on a new connection, not acknowledged yet: a
	 * RESTART before its acknowledgement says the server does not hold
	 * us as a member, and its acknowledgements renew nothing.
	 */
	bool			 probation, outcast;
	uint64_t		 probation_seq;
	long long		 join_sent;	/* of the last JOIN new */

	enum want		 want;
	long long		 join_deadline, barrier_deadline;
	/* LOST: a node of our round was lost before it had finished. */
	bool			 peer_lost;
	/*
	 * Round numbers keep a late message from acting twice: a JOIN new
	 * is answered by JOINED <round>, and only that round's ROUND is
	 * taken; a RESTART of a round we joined or ran is old news.
	 */
	bool			 join_pending;	/* JOIN new sent, no JOINED */
	bool			 joined;	/* JOINED joined_round came */
	unsigned		 joined_round;
	bool			 ran;		/* cur is a round we ran */
	struct rdzv_round_msg	 cur;
	char			 my_addr[RDZV_ADDR_MAX + 1];
	unsigned		 my_port;
	unsigned		 waiting, participants;
	/* MEMBER lines of members_round, one address a line (rdzv_round). */
	char			 members[24 * 1024];
	size_t			 mlen;
	unsigned		 members_round;
	bool			 members_lost;	/* did not fit */
};

static void	conn_lost(struct esv *e, const char *why);
static void	rearm(struct esv *e);
static void	read_lines(struct esv *e);
static void	read_lines_now(struct esv *e);
static bool	lease_runs(const struct esv *e);
static long long lease_end(const struct esv *e);
static bool	lease_over(const struct esv *e, long long now);
static void	lease_fence(struct esv *e, long long now);

static void
watch_events(struct esv *e)
{
	uint32_t ev = EPOLLIN;

	if (e->conn == C_CONNECTING || e->outlen > 0)
		ev |= EPOLLOUT;
	loop_mod(e->rz->loop, &e->w, ev);
}

static void
flush_out(struct esv *e)
{
	ssize_t n;

	while (e->outlen > 0) {
		n = send(e->w.fd, e->out, e->outlen, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n == -1) {
			conn_lost(e, strerror(errno));
			return;
		}
		memmove(e->out, e->out + n, e->outlen - n);
		e->outlen -= n;
	}
	watch_events(e);
}

static void
send_msg(struct esv *e, const struct rdzv_msg *m)
{
	char line[RDZV_LINE_MAX];
	int n;

	if (e->conn != C_UP)
		return;
	if ((n = rdzv_msg_format_sealed(line, sizeof(line), m, e->key,
	    RDZV_TO_SERVER, e->seq_out)) == -1) {
		warn_msg("rendezvous: unable to format a message");
		return;
	}
	e->sent_at[e->seq_out % SENT_RING] = mono_ms();
	e->seq_out++;
	if (e->outlen + n > sizeof(e->out)) {
		conn_lost(e, "server does not read");
		return;
	}
	memcpy(e->out + e->outlen, line, n);
	e->outlen += n;
	e->last_tx = mono_ms();
	flush_out(e);
}

/*
 * To esv-rdzv-etcd, the count of its lines we have: it tells us the end
 * of its etcd lease only if we say one (an older supervisor's parser
 * would refuse the field).  esv-rdzv is sent none, as ever.
 */
static void
send_ping(struct esv *e)
{
	struct rdzv_msg ping = { .verb = RV_PING };

	if (e->via_helper) {
		ping.u.ping.has_ack = true;
		ping.u.ping.acked = e->seq_in > INT_MAX ? INT_MAX :
		    (unsigned)e->seq_in;
	}
	send_msg(e, &ping);
}

/*
 * The address our packets to a would leave from: a UDP socket connected
 * there sends nothing, but the kernel picks the route and the source.
 */
static void
route_to(const struct lookup_answer *a, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	void *ad;
	int fd;

	buf[0] = '\0';
	if (a->n == 0 || (fd = socket(a->addr[0].ss_family, SOCK_DGRAM |
	    SOCK_CLOEXEC, 0)) == -1)
		return;
	if (connect(fd, (const struct sockaddr *)&a->addr[0], a->len[0]) ==
	    0 && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		ad = ss.ss_family == AF_INET6 ?
		    (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
		    (void *)&((struct sockaddr_in *)&ss)->sin_addr;
		inet_ntop(ss.ss_family, ad, buf, len);
	}
	close(fd);
}

/* MASTER_ADDR as the other nodes reach us: the address that reaches the
 * server (for etcd: its first member), unless local_addr says otherwise. */
static void
pick_master(struct esv *e)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct lookup_answer mine;
	void *a;

	if (e->cfg->local_addr[0] != '\0')
		strlcpy(e->my_addr, e->cfg->local_addr, sizeof(e->my_addr));
	else if (e->via_helper)
		route_to(&e->peer, e->my_addr, sizeof(e->my_addr));
	else if (getsockname(e->w.fd, (struct sockaddr *)&ss, &sl) == 0) {
		a = ss.ss_family == AF_INET6 ?
		    (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
		    (void *)&((struct sockaddr_in *)&ss)->sin_addr;
		inet_ntop(ss.ss_family, a, e->my_addr, sizeof(e->my_addr));
	}
	if (e->my_addr[0] == '\0')
		strlcpy(e->my_addr, "127.0.0.1", sizeof(e->my_addr));
	if (e->cfg->local_addr[0] == '\0')
		lookup_numeric(e->my_addr, 0, &mine);
	if (e->rz->offer_port != 0) {
		e->my_port = e->rz->offer_port;
		return;
	}
	if ((e->my_port = rdzv_free_port(e->cfg->local_addr[0] != '\0' ?
	    &e->local : &mine)) == 0) {
		warn_msg("rendezvous: no free port on %s (local_addr)",
		    e->my_addr);
		e->my_port = e->cfg->master_port;
	}
}

static void
send_join(struct esv *e)
{
	const struct rdzv_params *cfg = e->cfg;
	struct rdzv_msg m = { .verb = RV_JOIN };
	struct rdzv_join *j = &m.u.join;

	j->version = RDZV_PROTO_VERSION;
	strlcpy(j->run_id, cfg->run_id, sizeof(j->run_id));
	strlcpy(j->node_id, e->node_id, sizeof(j->node_id));
	strlcpy(j->cnonce, e->cnonce, sizeof(j->cnonce));
	j->nproc = cfg->nproc_per_node;
	j->min_nodes = cfg->nnodes_min;
	j->max_nodes = cfg->nnodes_max;
	j->last_call_ms = cfg->rdzv.last_call_ms;
	strlcpy(j->role, cfg->role, sizeof(j->role));
	if (e->want == W_ROUND || e->my_port == 0)
		pick_master(e);
	strlcpy(j->addr, e->my_addr, sizeof(j->addr));
	j->port = e->my_port;
	j->state = e->want == W_RUNNING ? RS_RUNNING :
	    e->want == W_BARRIER ? RS_DONE : RS_NEW;
	if (j->state == RS_NEW) {
		/* The first round we may join: one we have not run. */
		j->round = e->ran ? e->cur.round + 1 : 0;
		e->join_sent = mono_ms();
		e->join_pending = true;
		e->joined = false;
	} else {
		j->round = e->cur.round;
		j->group_rank = e->cur.group_rank;
		j->group_world_size = e->cur.group_world_size;
		if (j->state == RS_RUNNING && e->live) {
			e->probation = true;
			e->probation_seq = e->seq_out;
		}
	}
	send_msg(e, &m);
}

static void
conn_close(struct esv *e)
{
	if (e->conn == C_DOWN)
		return;
	if (e->conn == C_RESOLVING) {
		/* Reaped by the supervisor, through esv_child_exited. */
		kill(e->lookup_pid, SIGKILL);
		loop_del(e->rz->loop, &e->lw);
		close(e->lw.fd);
		e->lw.fd = -1;
		e->conn = C_DOWN;
		return;
	}
	loop_del(e->rz->loop, &e->w);
	close(e->w.fd);
	e->w.fd = -1;
	e->conn = C_DOWN;
	e->inlen = e->outlen = 0;
	e->join_pending = e->joined = e->proven = false;
	e->probation = e->outcast = false;
	explicit_bzero(e->key, sizeof(e->key));
	e->up_since = 0;
}

/*
 * When to try again: exponential, capped, with jitter so that nodes cut
 * off together do not come back in step.  Restarts from the minimum only
 * after a connection that served STABLE_MS.
 */
static void
backoff_next(struct esv *e, long long up_since)
{
	unsigned jitter;

	if (up_since != 0 && mono_ms() - up_since >= STABLE_MS)
		e->backoff_ms = 0;
	if (e->backoff_ms == 0)
		e->backoff_ms = BACKOFF_MIN_MS;
	/* A server back before the lease ends must find us in time. */
	if (lease_runs(e) && e->backoff_ms > e->grace_ms)
		e->backoff_ms = e->grace_ms > BACKOFF_MIN_MS ? e->grace_ms :
		    BACKOFF_MIN_MS;
	jitter = arc4random_uniform(e->backoff_ms / 4 + 1);
	e->reconnect_at = mono_ms() + e->backoff_ms + jitter;
	e->backoff_ms = e->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    e->backoff_ms * 2;
}

/* The wall-clock time of the monotonic time t, "HH:MM:SS.mmm" UTC. */
static void
wall_of(long long t, char *buf, size_t len)
{
	double w = wall_now() + (t - mono_ms()) / 1000.0;
	time_t sec = (time_t)w;
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03d UTC", tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (int)((w - (double)sec) * 1000));
}

/*
 * The workers' lease ends at kill_at: stop them now, SIGKILL then at the
 * latest, before the server may give their ranks to another node.
 */
static void
fence(struct esv *e, long long kill_at, const char *why)
{
	char at[32];

	if (!e->live || e->fenced)
		return;
	e->fenced = true;
	wall_of(kill_at, at, sizeof(at));
	warn_msg("rendezvous: %s: the lease of the workers' ranks ends at %s "
	    "(in %lld ms): stopping the workers now, SIGKILL then", why, at,
	    kill_at > mono_ms() ? kill_at - mono_ms() : 0);
	if (e->want == W_RUNNING)
		e->want = W_NOTHING;
	if (e->rz->cb.fenced != NULL)
		e->rz->cb.fenced(e->rz->cb.ctx, kill_at);
	else
		e->rz->cb.membership_changed(e->rz->cb.ctx);
}

/* Reconnect later, unless nothing is wanted of the server. */
static void
conn_lost(struct esv *e, const char *why)
{
	long long up_since = e->up_since;
	char at[32], what[300];
	bool over;

	conn_close(e);
	if (e->via_helper && e->live) {
		/*
		 * esv-rdzv-etcd exits when our etcd lease may run out, and
		 * revokes it on its way out: the other nodes go on without
		 * ours, whose workers must be gone within the grace.
		 */
		over = lease_over(e, mono_ms());
		e->want = W_NOTHING;	/* first: the fence may join again */
		snprintf(what, sizeof(what), "esv-rdzv-etcd lost (%s)", why);
		if (over)
			lease_fence(e, mono_ms());
		else
			fence(e, mono_ms() + e->grace_ms, what);
		rearm(e);
		return;
	}
	/* Woken from a stall past the lease: the hang-up is old news. */
	over = lease_over(e, mono_ms());
	if (e->outage_logged && !over)
		;
	else if (!e->ever_up)
		warn_msg("rendezvous: cannot reach the rendezvous at %s (%s): "
		    "retrying", e->endpoint, why);
	else if (over)
		warn_msg("rendezvous: connection to %s lost (%s), and the "
		    "workers' lease is over: reconnecting", e->endpoint, why);
	else if (e->live && !e->fenced && !e->via_helper) {
		wall_of(lease_end(e) - e->grace_ms / 2, at, sizeof(at));
		warn_msg("rendezvous: connection to %s lost (%s): the workers "
		    "run until their lease ends at %s, reconnecting",
		    e->endpoint, why, at);
	} else
		warn_msg("rendezvous: connection to %s lost (%s): "
		    "reconnecting", e->endpoint, why);
	e->outage_logged = true;
	if (over)
		lease_fence(e, mono_ms());
	backoff_next(e, up_since);
	e->rz->cb.status_changed(e->rz->cb.ctx);
	rearm(e);
}

static void
fail(struct esv *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
fail(struct esv *e, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	e->want = W_NOTHING;
	conn_close(e);
	rearm(e);
	e->rz->cb.failed(e->rz->cb.ctx, why);
}

/* A ROUND we may act on: the ranks it gives fit in its world. */
static bool
round_sane(struct esv *e, const struct rdzv_round_msg *m)
{
	unsigned n = e->cfg->nproc_per_node;

	if ((unsigned long long)m->base_rank + n <= m->world_size &&
	    (unsigned long long)m->base_role_rank + n <= m->role_world_size)
		return true;
	warn_msg("rendezvous: %s: ROUND %u gives ranks %u..%u of %u (role "
	    "%u..%u of %u) for %u workers: not starting them", e->endpoint,
	    m->round, m->base_rank, m->base_rank + n - 1, m->world_size,
	    m->base_role_rank, m->base_role_rank + n - 1, m->role_world_size,
	    n);
	return false;
}

/* An address of a node of round, ahead of its ROUND. */
static void
on_member(struct esv *e, unsigned round, const char *addr)
{
	size_t n = strlen(addr);

	if (round != e->members_round || e->mlen == 0) {
		e->mlen = 0;
		e->members[0] = '\0';
		e->members_lost = false;
		e->members_round = round;
	}
	if (e->mlen + n + 2 > sizeof(e->members)) {
		e->members_lost = true;
		return;
	}
	memcpy(e->members + e->mlen, addr, n);
	e->mlen += n;
	e->members[e->mlen++] = '\n';
	e->members[e->mlen] = '\0';
}

static void
on_round(struct esv *e, const struct rdzv_round_msg *m)
{
	struct rdzv_round r;

	/* A round newer than ours: ours is over (its RESTART was lost). */
	if (e->want == W_RUNNING && m->round > e->cur.round) {
		info_msg("rendezvous: round %u assigned while running round "
		    "%u", m->round, e->cur.round);
		e->want = W_NOTHING;
		e->rz->cb.membership_changed(e->rz->cb.ctx);
		return;
	}
	if (e->want != W_ROUND || e->join_pending || !e->joined ||
	    m->round != e->joined_round)
		return;
	if (!round_sane(e, m)) {
		conn_lost(e, "inconsistent ROUND");
		return;
	}
	e->want = W_RUNNING;
	e->cur = *m;
	e->ran = true;
	e->live = true;
	e->fenced = false;
	e->probation = e->outcast = false;	/* a member again */
	/* Our JOIN was received before this was sent: that renews. */
	if (e->join_sent > e->renewed)
		e->renewed = e->join_sent;
	e->participants = e->waiting = 0;
	memset(&r, 0, sizeof(r));
	r.round = m->round;
	r.ranks.group_rank = m->group_rank;
	r.ranks.group_world_size = m->group_world_size;
	r.ranks.local_world_size = e->cfg->nproc_per_node;
	r.ranks.base_rank = m->base_rank;
	r.ranks.world_size = m->world_size;
	r.ranks.base_role_rank = m->base_role_rank;
	r.ranks.role_world_size = m->role_world_size;
	strlcpy(r.master_addr, m->master_addr, sizeof(r.master_addr));
	r.master_port = m->master_port;
	r.use_agent_store = false;
	if (e->mlen > 0 && !e->members_lost && e->members_round == m->round)
		r.members = e->members;
	e->rz->rounds++;
	rearm(e);
	e->rz->cb.done(e->rz->cb.ctx, &r);
}

static void
on_restart(struct esv *e, unsigned round)
{
	if (e->probation)
		e->outcast = true;
	if (e->want == W_RUNNING && round > e->cur.round) {
		e->want = W_NOTHING;
		e->rz->cb.membership_changed(e->rz->cb.ctx);
		/* Its workers had all succeeded: it went to the barrier. */
		if (e->want == W_BARRIER)
			on_restart(e, round);
	} else if (e->want == W_BARRIER && round > e->cur.round) {
		/*
		 * Our round was restarted while we waited in its barrier (or
		 * were away): it can pass no more.  Our success counts for a
		 * round that is gone: we join the next, as every node does.
		 */
		info_msg("rendezvous: round %u, which this node finished, was "
		    "superseded by round %u: joining it", e->cur.round, round);
		e->want = W_NOTHING;
		rearm(e);
		e->rz->cb.membership_changed(e->rz->cb.ctx);
	} else if (e->want == W_ROUND && !e->join_pending &&
	    (!e->joined || round > e->joined_round)) {
		/*
		 * Only a RESTART of a round newer than the one we joined: one
		 * sent before our JOIN arrived is answered by that JOIN.
		 */
		send_join(e);
	}
}

/* The server has our first n lines of this connection: renew. */
static void
on_ack(struct esv *e, unsigned n)
{
	long long t;

	if (n == 0 || n > e->seq_out ||
	    e->seq_out - n >= SENT_RING)
		return;
	if (e->probation && n > e->probation_seq)
		e->probation = false;
	if (e->outcast)
		return;
	t = e->sent_at[(n - 1) % SENT_RING];
	if (t > e->renewed)
		e->renewed = t;
}

static void
on_err(struct esv *e, const char *code, const char *text)
{
	/*
	 * Our node id is in use by a live connection of another supervisor:
	 * it may be one that has just died (the server notices within its
	 * heartbeats), so retry with backoff, saying so once; join_timeout
	 * bounds the wait.
	 */
	if (strcmp(code, "duplicate") == 0) {
		if (!e->dup_logged)
			warn_msg("rendezvous: esv-rdzv at %s refused node id "
			    "%s: %s; retrying", e->endpoint, e->node_id, text);
		e->dup_logged = e->outage_logged = true;
		conn_lost(e, code);
		return;
	}
	/*
	 * A closed job is an answer: its barrier did not pass for us (a
	 * round of ours that passed is answered RELEASE), so there is
	 * nothing to reconnect for (esv-supervise(8), "Exit barrier").
	 */
	if (strcmp(code, "closed") == 0 && (e->want == W_BARRIER ||
	    e->want == W_RUNNING)) {
		fail(e, "esv-rdzv at %s: %s, and its exit barrier did not pass "
		    "for round %u of this node", e->endpoint, text,
		    e->cur.round);
		return;
	}
	/* Refusals that retrying cannot cure end the join. */
	if (e->want == W_ROUND && strcmp(code, "limit") != 0) {
		fail(e, "esv-rdzv at %s refused us: %s %s", e->endpoint, code,
		    text);
		return;
	}
	warn_msg("rendezvous: esv-rdzv at %s: %s %s", e->endpoint, code, text);
	conn_lost(e, code);
}

static void
on_greeting(struct esv *e, const struct rdzv_msg *m)
{
	if (m->verb != RV_HELLO || m->u.hello.version != RDZV_PROTO_VERSION) {
		warn_msg("rendezvous: %s does not speak esv-rdzv protocol %d",
		    e->endpoint, RDZV_PROTO_VERSION);
		conn_lost(e, "wrong protocol");
		return;
	}
	rdzv_nonce(e->cnonce);
	memcpy(e->cnonce, e->instance, RDZV_INSTANCE_LEN);
	rdzv_session_key(e->token, m->u.hello.nonce, e->cnonce, e->key);
	e->seq_in = e->seq_out = 0;
	e->proven = false;
	e->hb_ms = e->srv_hb_ms = m->u.hello.heartbeat_ms;
	e->etcd_end = 0;
	if (e->via_helper) {
		/*
		 * esv-rdzv-etcd hangs up, and revokes, three of its
		 * heartbeats after our last line.  Our PINGs, ten a lease,
		 * keep a stall of ours under a second harmless, as on esv.
		 */
		e->lease_ms = 3 * e->srv_hb_ms;
		e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
		if (e->hb_ms > e->lease_ms / 10 && e->lease_ms >= 100)
			e->hb_ms = e->lease_ms / 10;
	} else {
		/* The shorter of ours and the server's; a few PINGs each. */
		e->lease_ms = rdzv_lease_ms(&e->cfg->rdzv, 0);
		if (m->u.hello.lease_ms > 0 && m->u.hello.lease_ms < e->lease_ms)
			e->lease_ms = m->u.hello.lease_ms;
		e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
		/*
		 * A stall of ours is harmless while shorter than the lease
		 * less the grace less our heartbeat (esv_check): ten a lease
		 * keeps that above 1 s with the defaults.
		 */
		if (e->hb_ms > e->lease_ms / 10 && e->lease_ms >= 100)
			e->hb_ms = e->lease_ms / 10;
	}
	e->conn = C_UP;
	/*
	 * Someone else serves the endpoint: if that server goes, its
	 * operator will want the port back, not find us on it.
	 */
	if (e->host_pid == 0 && e->cfg->rdzv.is_host != 1 &&
	    !e->cfg->standalone)
		e->may_host = false;
	if (e->want != W_NOTHING) {
		send_join(e);
		/* Our count says we read the lease end: ask for it now. */
		if (e->via_helper)
			send_ping(e);
	}
	e->rz->cb.status_changed(e->rz->cb.ctx);
}

/*
 * A line that is not sealed under our key is from no one who knows the
 * token: a server with another token, or not esv-rdzv at all.  Nothing
 * it says is acted on.
 */
static void
unproven(struct esv *e, char *line, const char *why)
{
	struct rdzv_msg m;
	char err[64];
	bool err_line;

	err_line = rdzv_msg_parse(line, &m, err, sizeof(err)) == 0 &&
	    m.verb == RV_ERR;
	if (!e->proven && err_line && strcmp(m.u.err.code, "limit") == 0)
		warn_msg("rendezvous: %s is busy (ERR %s %s): retrying",
		    e->endpoint, m.u.err.code, m.u.err.text);
	else if (!e->proven && err_line)
		warn_msg("rendezvous: %s refused us without proving it knows "
		    "the token (ERR %s %s): a wrong token_file, or not "
		    "esv-rdzv; not trusted, retrying", e->endpoint,
		    m.u.err.code, m.u.err.text);
	else if (!e->proven)
		warn_msg("rendezvous: %s failed to prove it knows the token "
		    "(%s): not trusted, retrying", e->endpoint, why);
	else
		warn_msg("rendezvous: a line from %s failed its seal (%s), "
		    "altered on its way: not trusted, reconnecting",
		    e->endpoint, why);
	conn_lost(e, e->proven ? "line altered" : "server not proven");
}

static void
on_line(struct esv *e, char *line)
{
	struct rdzv_msg m;
	char why[256], copy[RDZV_LINE_MAX];

	e->last_rx = mono_ms();
	if (e->conn == C_GREETING) {
		if (rdzv_msg_parse(line, &m, why, sizeof(why)) == -1) {
			warn_msg("rendezvous: %s: bad greeting: %s",
			    e->endpoint, why);
			conn_lost(e, "bad greeting");
			return;
		}
		on_greeting(e, &m);
		return;
	}
	strlcpy(copy, line, sizeof(copy));
	if (rdzv_msg_parse_sealed(line, &m, e->key, RDZV_TO_CLIENT,
	    e->seq_in, why, sizeof(why)) == -1) {
		if (strcmp(why, "bad MAC") == 0 ||
		    strncmp(why, "not sealed", 10) == 0)
			unproven(e, copy, why);
		else {
			warn_msg("rendezvous: %s: bad message: %s",
			    e->endpoint, why);
			conn_lost(e, "bad message");
		}
		return;
	}
	e->seq_in++;
	/* An ERR first is a refusal: not connected again, no backoff reset. */
	if (!e->proven && m.verb != RV_ERR) {
		e->up_since = mono_ms();
		e->dup_logged = false;
		if (e->outage_logged)
			info_msg("rendezvous: connected to %s%s", e->endpoint,
			    e->ever_up ? " again" : "");
		e->ever_up = true;
		e->outage_logged = false;
	}
	e->proven = true;
	switch (m.verb) {
	case RV_JOINED:
		/* The round we are in, as our JOIN or the wait list got us. */
		if (e->want == W_ROUND) {
			e->join_pending = false;
			e->joined = true;
			e->joined_round = m.u.joined.round;
		}
		e->participants = m.u.joined.participants;
		e->waiting = m.u.joined.waiting;
		e->rz->cb.status_changed(e->rz->cb.ctx);
		break;
	case RV_MEMBER:
		on_member(e, m.u.member.round, m.u.member.addr);
		break;
	case RV_ROUND:
		on_round(e, &m.u.round);
		break;
	case RV_RESTART:
		on_restart(e, m.u.n);
		break;
	case RV_WAITING:
		e->waiting = m.u.n;
		e->rz->cb.status_changed(e->rz->cb.ctx);
		break;
	case RV_RELEASE:
		if (e->want != W_BARRIER)
			break;
		e->want = W_NOTHING;
		rearm(e);
		info_msg("rendezvous: exit barrier passed: every node has "
		    "finished");
		e->rz->cb.barrier_done(e->rz->cb.ctx, true);
		break;
	case RV_LOST:
		if (e->want != W_BARRIER || m.u.n != e->cur.round ||
		    e->peer_lost)
			break;
		e->peer_lost = true;
		warn_msg("rendezvous: a node of round %u was lost before it "
		    "said it had finished: the exit barrier waits for it, %lld "
		    "ms more at most (exit_barrier_timeout); if it is not back "
		    "by then, the job's work is not known to be done and this "
		    "node exits 1", e->cur.round, e->barrier_deadline >
		    mono_ms() ? e->barrier_deadline - mono_ms() : 0);
		break;
	case RV_CLOSED:
		if (e->want == W_ROUND)
			fail(e, "job %s was closed while this node waited to "
			    "join", e->cfg->run_id);
		else if (e->want == W_BARRIER)
			fail(e, "job %s was closed before its exit barrier "
			    "passed for round %u", e->cfg->run_id,
			    e->cur.round);
		break;
	case RV_ERR:
		on_err(e, m.u.err.code, m.u.err.text);
		break;
	case RV_PING:
		if (m.u.ping.has_ack)
			on_ack(e, m.u.ping.acked);
		/* Only esv-rdzv-etcd, on our host, may say when etcd's ends. */
		if (m.u.ping.has_end && e->via_helper)
			e->etcd_end = m.u.ping.lease_end;
		break;
	default:
		warn_msg("rendezvous: %s: unexpected message: %s", e->endpoint,
		    line);
		break;
	}
}

/* At most 16 reads a wake-up: a talkative server cannot starve the loop. */
static void
read_lines(struct esv *e)
{
	if (e->reading)
		return;
	e->reading = true;
	read_lines_now(e);
	e->reading = false;
}

static void
read_lines_now(struct esv *e)
{
	char buf[4096], *nl;
	size_t off, take;
	ssize_t n;
	int reads;

	for (reads = 0; reads < 16; reads++) {
		n = recv(e->w.fd, buf, sizeof(buf), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_lost(e, n == 0 ? "closed by the server" :
			    strerror(errno));
			return;
		}
		for (off = 0; off < (size_t)n && e->conn != C_DOWN; off += take) {
			nl = memchr(buf + off, '\n', n - off);
			take = nl != NULL ? (size_t)(nl - (buf + off)) + 1 :
			    (size_t)n - off;
			if (e->inlen + take > sizeof(e->in)) {
				conn_lost(e, "line too long from the server");
				return;
			}
			memcpy(e->in + e->inlen, buf + off, take);
			e->inlen += take;
			if (nl == NULL)
				break;
			e->in[e->inlen - 1] = '\0';
			e->inlen = 0;
			on_line(e, e->in);
		}
		if (e->conn == C_DOWN)
			return;
	}
}

static void
on_socket(struct watch *w, uint32_t events)
{
	struct esv *e = w->ctx;
	socklen_t sl = sizeof(int);
	int err = 0;

	if (e->conn == C_CONNECTING) {
		if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &sl) == -1)
			err = errno;
		if (err != 0) {
			conn_lost(e, strerror(err));
			return;
		}
		e->conn = C_GREETING;
		e->last_rx = mono_ms();
		watch_events(e);
		rearm(e);
		return;
	}
	if (events & EPOLLIN)
		read_lines(e);
	else if (events & (EPOLLERR | EPOLLHUP)) {
		conn_lost(e, "connection reset");
		return;
	}
	if (e->conn != C_DOWN && (events & EPOLLOUT))
		flush_out(e);
	/* What was read may have moved every deadline (greeting, pings). */
	if (e->conn != C_DOWN)
		rearm(e);
}

/* Our endpoint is local and free: host the server (torch's is_host). */
static void
maybe_host(struct esv *e)
{
	struct rdzv_host_args ha = { e->token_path, e->cfg->run_id,
	    e->log_path };
	char err[256];
	int r;

	if (!e->may_host || e->host_pid != 0 || e->rz->stopping)
		return;
	r = rdzv_host_try(&e->peer, &ha, &e->host_pid, err, sizeof(err));
	if (r == -1)
		warn_msg("rendezvous: %s", err);
	else if (r == 1) {
		info_msg("rendezvous: hosting esv-rdzv on %s (pid %d); this "
		    "node is the job's single point of failure for joins",
		    e->endpoint, (int)e->host_pid);
		if (e->rz->cb.host_changed != NULL)
			e->rz->cb.host_changed(e->rz->cb.ctx, 0, e->host_pid);
	}
}

/* The endpoint's addresses are known: connect to the next of them. */
static void
conn_connect(struct esv *e)
{
	const struct sockaddr_storage *sa;
	socklen_t len;
	int fd, r;

	maybe_host(e);
	e->peer_next %= e->peer.n;
	sa = &e->peer.addr[e->peer_next];
	len = e->peer.len[e->peer_next++];
	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		conn_lost(e, strerror(errno));
		return;
	}
	if (connect(fd, (const struct sockaddr *)sa, len) == -1 &&
	    errno != EINPROGRESS) {
		r = errno;
		close(fd);
		conn_lost(e, strerror(r));
		return;
	}
	e->w.fd = fd;
	e->conn = C_CONNECTING;
	if (loop_add(e->rz->loop, &e->w, EPOLLIN | EPOLLOUT) == -1) {
		r = errno;
		close(fd);
		e->conn = C_DOWN;
		conn_lost(e, strerror(r));
		return;
	}
	e->last_rx = mono_ms();
	rearm(e);
}

static void
on_lookup(struct watch *w, uint32_t events)
{
	struct esv *e = w->ctx;
	int r;

	(void)events;
	if ((r = lookup_read(w->fd, &e->peer)) == 0)
		return;
	loop_del(e->rz->loop, w);
	close(w->fd);
	w->fd = -1;
	e->conn = C_DOWN;
	if (r == 1 && e->peer.n > 0)
		conn_connect(e);
	else
		conn_lost(e, e->peer.err);
}

/*
 * A numeric endpoint is connected to at once; a name is looked up by a
 * child first (lookup.h), since DNS may take seconds the loop has not
 * got, and anew for every connection, so that a moved server is found.
 */
/* The etcd backend's "connection": a fresh esv-rdzv-etcd. */
static void
helper_start(struct esv *e)
{
	const struct rdzv_conf *rc = &e->cfg->rdzv;
	char path[PATH_MAX], ttl[32];
	char *argv[20];
	int a = 0, sv[2], r;

	if (e->helper_pid != 0) {
		/* The last one revokes its lease first: its pid is ours yet. */
		e->reconnect_at = mono_ms() + BACKOFF_MIN_MS;
		rearm(e);
		return;
	}
	prog_path("esv-rdzv-etcd", "rendezvous", "ESV_RDZV_ETCD", path,
	    sizeof(path));
	snprintf(ttl, sizeof(ttl), "%ums", rdzv_lease_ms(rc, 1));
	argv[a++] = path;
	argv[a++] = "--endpoints";
	argv[a++] = (char *)e->cfg->rdzv_endpoints;
	argv[a++] = "--run-id";
	argv[a++] = (char *)e->cfg->run_id;
	argv[a++] = "--prefix";
	argv[a++] = (char *)rc->prefix;
	argv[a++] = "--lease-ttl";
	argv[a++] = ttl;
	if (rc->cacert[0] != '\0') {
		argv[a++] = "--cacert";
		argv[a++] = (char *)rc->cacert;
	}
	if (rc->cert[0] != '\0') {
		argv[a++] = "--cert";
		argv[a++] = (char *)rc->cert;
		argv[a++] = "--key";
		argv[a++] = (char *)rc->key;
	}
	argv[a] = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1) {
		conn_lost(e, strerror(errno));
		return;
	}
	r = prog_spawn(argv, sv[1], true, &e->helper_pid);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		e->helper_pid = 0;
		warn_msg("rendezvous: %s: %s", path, strerror(r));
		conn_lost(e, "esv-rdzv-etcd did not start");
		return;
	}
	e->w.fd = sv[0];
	e->conn = C_GREETING;
	if (loop_add(e->rz->loop, &e->w, EPOLLIN) == -1) {
		r = errno;
		close(sv[0]);
		e->conn = C_DOWN;
		conn_lost(e, strerror(r));
		return;
	}
	e->last_rx = mono_ms();
	rearm(e);
}

static void
conn_start(struct esv *e)
{
	int fd;

	e->reconnect_at = 0;
	if (e->via_helper) {
		helper_start(e);
		return;
	}
	if (lookup_numeric(e->host, e->port, &e->peer)) {
		conn_connect(e);
		return;
	}
	if (e->lookup_pid != 0) {
		/* The last resolver is not reaped yet: its pid is still ours. */
		e->reconnect_at = mono_ms() + BACKOFF_MIN_MS;
		rearm(e);
		return;
	}
	if ((e->lookup_pid = lookup_start(e->host, e->port, &fd)) == -1) {
		e->lookup_pid = 0;
		conn_lost(e, strerror(errno));
		return;
	}
	e->lw = (struct watch){ .fd = fd, .fn = on_lookup, .ctx = e };
	if (loop_add(e->rz->loop, &e->lw, EPOLLIN) == -1) {
		kill(e->lookup_pid, SIGKILL);
		close(fd);
		e->lw.fd = -1;
		conn_lost(e, strerror(errno));
		return;
	}
	e->conn = C_RESOLVING;
	e->last_rx = mono_ms();
	rearm(e);
}

static long long
earliest(long long a, long long b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

/* Our workers' lease is running (and not fenced yet). */
static bool
lease_runs(const struct esv *e)
{
	return e->live && !e->fenced && e->lease_ms > 0;
}

/* When the server may give the ranks away (see the top of the file). */
static long long
lease_end(const struct esv *e)
{
	long long end = e->renewed + e->lease_ms;

	if (e->etcd_end != 0 && e->etcd_end < end)
		end = e->etcd_end;
	return end;
}

/*
 * Has the lease run out by the clock?  Judge it only after taking in
 * what the server has sent (lease_check): after a stall of ours, its
 * acknowledgements wait in the socket.
 */
static bool
lease_over(const struct esv *e, long long now)
{
	return lease_runs(e) && now >= lease_end(e) - e->grace_ms;
}

static void
lease_fence(struct esv *e, long long now)
{
	char why[400];

	if (e->etcd_end != 0 && e->etcd_end < e->renewed + e->lease_ms)
		snprintf(why, sizeof(why), "esv-rdzv-etcd's lease in etcd "
		    "is not renewed (no keep-alive answered)");
	else
		snprintf(why, sizeof(why), "no acknowledgement from %s for "
		    "%lld ms", e->via_helper ? "esv-rdzv-etcd" : e->endpoint,
		    now - e->renewed);
	/*
	 * SIGKILL half a grace before the end: with the half the server
	 * adds, a timer of ours that is late by up to a grace (a loaded
	 * host) does no harm.
	 */
	fence(e, lease_end(e) - e->grace_ms / 2, why);
}

/*
 * Read what the server sent, then judge the lease.  Reading first is
 * safe however late we are (a stall: SIGSTOP, a host that lost its CPU):
 * an acknowledgement renews only to the send time of the line it
 * acknowledges (on_ack), a time of our own clock that was true when we
 * sent it, and the server's lease for us runs from its receipt of that
 * line, which is later.  So an acknowledgement read a second late
 * extends our lease no further than an early read would have: never
 * past the server's.  What it must not do is make us judge by the clock
 * first and fence a lease the server renewed while we slept.  A RESTART
 * or a hang-up read here ends the round before any worker exit that
 * followed it is judged (rdzv_check).
 */
static void
lease_check(struct esv *e, bool read_first)
{
	if (read_first && e->conn == C_UP)
		read_lines(e);
	if (lease_over(e, mono_ms()))
		lease_fence(e, mono_ms());
}

/*
 * Tell the supervisor (its guardian) when the workers must be dead
 * unless renewed: a quarter grace after the fence's SIGKILL, so that
 * the backstop does not race a supervisor that is only busy, and still
 * three quarters of a grace before the server may give the ranks away.
 * A fenced lease keeps its time; no lease, 0.
 */
static void
lease_tell(struct esv *e)
{
	long long end = 0;

	if (lease_runs(e))
		end = lease_end(e) - e->grace_ms / 4;
	else if (e->live && e->fenced)
		end = e->told;
	if (end == e->told)
		return;
	e->told = end;
	if (e->rz->cb.lease != NULL)
		e->rz->cb.lease(e->rz->cb.ctx, end);
}

/*
 * While workers may run under our ranks, silence does not make us hang
 * up: the server would take our EOF for a node whose workers are gone.
 */
static bool
hold_conn(const struct esv *e)
{
	return e->live && !e->via_helper && e->lease_ms > 0;
}

/* The server is gone after three of its heartbeats without a line. */
static long long
silence_ms(const struct esv *e)
{
	return 3 * (long long)(e->srv_hb_ms > e->hb_ms ? e->srv_hb_ms :
	    e->hb_ms);
}

static void
rearm(struct esv *e)
{
	long long at = 0, now = mono_ms();

	if (e->conn == C_DOWN && e->want != W_NOTHING)
		at = e->reconnect_at != 0 ? e->reconnect_at : now;
	if (lease_runs(e))
		at = earliest(at, lease_end(e) - e->grace_ms);
	if (e->conn != C_DOWN && e->conn != C_RESOLVING && e->hb_ms > 0) {
		if (!hold_conn(e))
			at = earliest(at, e->last_rx + silence_ms(e));
		if (e->conn == C_UP)
			at = earliest(at, e->last_tx + e->hb_ms);
	}
	if (e->conn == C_CONNECTING || e->conn == C_GREETING)
		at = earliest(at, e->last_rx + GREETING_MS);
	if (e->conn == C_RESOLVING)
		at = earliest(at, e->last_rx + LOOKUP_MS);
	if (e->want == W_ROUND)
		at = earliest(at, e->join_deadline);
	if (e->want == W_BARRIER)
		at = earliest(at, e->barrier_deadline);
	timer_arm_ms(e->tw.fd, at == 0 ? -1 : (at > now ? at - now : 0));
	lease_tell(e);
}

static void
on_timer(struct watch *w, uint32_t events)
{
	struct esv *e = w->ctx;
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	/* An acknowledgement that came while we were late counts. */
	if (lease_over(e, now)) {
		lease_check(e, true);
		now = mono_ms();
	}
	if (e->want == W_ROUND && now >= e->join_deadline) {
		fail(e, "no round within join_timeout (%u s): %u node(s) had "
		    "joined, %u needed", e->cfg->rdzv.join_timeout_ms / 1000,
		    e->participants, e->cfg->nnodes_min);
		return;
	}
	if (e->want == W_BARRIER && now >= e->barrier_deadline &&
	    e->peer_lost) {
		struct rdzv_msg close = { .verb = RV_CLOSE };

		/* The job failed here: it is over for every node. */
		send_msg(e, &close);
		fail(e, "exit barrier timed out after %u ms, waiting for a node "
		    "of round %u that was lost before it said it had finished: "
		    "the job's work is not known to be done",
		    e->cfg->rdzv.exit_barrier_ms, e->cur.round);
		return;
	}
	if (e->want == W_BARRIER && now >= e->barrier_deadline) {
		warn_msg("rendezvous: exit barrier timed out after %u ms: "
		    "other nodes are still running", e->cfg->rdzv.exit_barrier_ms);
		e->want = W_NOTHING;
		rearm(e);
		e->rz->cb.barrier_done(e->rz->cb.ctx, false);
		return;
	}
	if (e->conn == C_DOWN) {
		if (e->want != W_NOTHING && now >= e->reconnect_at)
			conn_start(e);
		else
			rearm(e);
		return;
	}
	if (e->conn == C_RESOLVING) {
		if (now >= e->last_rx + LOOKUP_MS)
			conn_lost(e, "name lookup timed out");
		else
			rearm(e);
		return;
	}
	if (e->conn != C_UP && now >= e->last_rx + GREETING_MS) {
		conn_lost(e, "no greeting from the server");
		return;
	}
	if (e->hb_ms > 0 && !hold_conn(e) &&
	    now >= e->last_rx + silence_ms(e)) {
		conn_lost(e, "heartbeat lost");
		return;
	}
	if (e->conn == C_UP && now >= e->last_tx + e->hb_ms)
		send_ping(e);
	rearm(e);
}

/* What both backends of this file need. */
static struct esv *
esv_new(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	struct esv *e;
	char hn[256], nonce[RDZV_NONCE_LEN + 1];
	const char *id;

	if (!rdzv_name_ok(cfg->run_id) || !rdzv_name_ok(cfg->role)) {
		snprintf(err, errlen, "rdzv_id %s, role %s: names for the "
		    "rendezvous are 1-%d characters of A-Z a-z 0-9 . _ : @ + -",
		    cfg->run_id, cfg->role, RDZV_NAME_MAX);
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rz->priv = e;
	e->rz = rz;
	e->cfg = cfg;
	e->w = (struct watch){ .fd = -1, .fn = on_socket, .ctx = e };
	e->lw.fd = -1;
	e->lease_ms = rdzv_lease_ms(&cfg->rdzv, 0);
	e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
	/* At start-up, before the loop runs: a name may wait on DNS. */
	if (cfg->local_addr[0] != '\0')
		lookup_now(cfg->local_addr, 0, &e->local);
	e->tw = (struct watch){ .fn = on_timer, .ctx = e };
	if ((e->tw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(rz->loop, &e->tw, EPOLLIN) == -1) {
		snprintf(err, errlen, "unable to create a timer: %s",
		    strerror(errno));
		return NULL;
	}
	rdzv_nonce(nonce);
	strlcpy(e->instance, nonce, sizeof(e->instance));
	id = getenv("ESV_RDZV_NODE_ID");
	if (id != NULL && *id != '\0') {
		/* Tests: two supervisors with one node id, on purpose. */
		if (!rdzv_name_ok(id)) {
			snprintf(err, errlen, "ESV_RDZV_NODE_ID %s: not a name "
			    "for the rendezvous", id);
			return NULL;
		}
		strlcpy(e->node_id, id, sizeof(e->node_id));
		return e;
	}
	if (gethostname(hn, sizeof(hn)) == -1 || !rdzv_name_ok(hn))
		strlcpy(hn, "node", sizeof(hn));
	/*
	 * torch's descriptor shape, host_pid_N, with N random for the life
	 * of this supervisor: containers repeat host names and pids (a pid
	 * namespace of their own), and the server rebuilds a round from
	 * node ids after its restart, so the id must not change while we
	 * live.
	 */
	if ((size_t)snprintf(e->node_id, sizeof(e->node_id), "%.100s_%d_%08x",
	    hn, (int)getpid(), arc4random()) >= sizeof(e->node_id))
		strlcpy(e->node_id, "node", sizeof(e->node_id));
	return e;
}

static int
esv_open(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	struct rdzv_host_args ha;
	struct esv *e;

	if ((e = esv_new(rz, err, errlen)) == NULL)
		return -1;
	if (pathf(e->log_path, sizeof(e->log_path), "%s/%s", cfg->jobdir,
	    ESV_RDZV_LOG) == -1) {
		snprintf(err, errlen, "%s: JOBDIR path too long", cfg->jobdir);
		return -1;
	}
	rdzv_host_lease(e->lease_ms);
	if (cfg->standalone) {
		ha = (struct rdzv_host_args){ e->token_path, cfg->run_id,
		    e->log_path };
		if (pathf(e->token_path, sizeof(e->token_path), "%s/%s",
		    cfg->jobdir, ESV_RDZV_TOKEN) == -1 ||
		    rdzv_host_private(&ha, &e->port, &e->host_pid, err,
		    errlen) == -1)
			return -1;
		strlcpy(e->host, "127.0.0.1", sizeof(e->host));
		e->may_host = true;
	} else {
		strlcpy(e->host, cfg->rdzv_host, sizeof(e->host));
		e->port = cfg->rdzv_port;
		strlcpy(e->token_path, cfg->rdzv.token_file,
		    sizeof(e->token_path));
		e->may_host = cfg->rdzv.is_host != 0;
	}
	if (e->token_path[0] == '\0') {
		/* torch's c10d has no token either; say once what that means. */
		e->token[0] = '\0';
		warn_msg("rendezvous: no token_file: joins to %s:%u are not "
		    "authenticated (as torch's c10d): anyone who reaches it can "
		    "join job %s or break its rounds; give every node rdzv_conf "
		    "token_file=FILE (see esv-rdzv(8))", e->host, e->port,
		    cfg->run_id);
	} else if (rdzv_token_load(e->token_path, e->token, sizeof(e->token),
	    err, errlen) == -1)
		return -1;
	snprintf(e->endpoint, sizeof(e->endpoint), strchr(e->host, ':') ?
	    "[%s]:%u" : "%s:%u", e->host, e->port);
	return 0;
}

static int
esv_join(struct rdzv *rz)
{
	struct esv *e = rz->priv;

	e->want = W_ROUND;
	e->live = e->fenced = false;	/* the workers are gone */
	e->join_deadline = mono_ms() + e->cfg->rdzv.join_timeout_ms;
	e->participants = e->waiting = 0;
	info_msg("rendezvous: joining job %s at %s: waiting for a round of "
	    "%u to %u nodes, %u s at most (join_timeout)", e->cfg->run_id,
	    e->endpoint, e->cfg->nnodes_min, e->cfg->nnodes_max,
	    e->cfg->rdzv.join_timeout_ms / 1000);
	if (e->conn == C_UP)
		send_join(e);
	else if (e->conn == C_DOWN && e->reconnect_at == 0)
		conn_start(e);
	rearm(e);
	return 0;
}

static void
esv_leave(struct rdzv *rz)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_LEAVE };

	if (e->want == W_NOTHING && e->conn == C_DOWN)
		return;
	send_msg(e, &m);
	e->want = W_NOTHING;
	e->live = false;
	conn_close(e);
	e->reconnect_at = 0;
	rearm(e);
	rz->cb.status_changed(rz->cb.ctx);
}

static int
esv_barrier(struct rdzv *rz, unsigned timeout_ms)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_BARRIER };

	e->want = W_BARRIER;
	e->live = false;
	e->peer_lost = false;
	e->barrier_deadline = mono_ms() + timeout_ms;
	info_msg("rendezvous: round %u done here: waiting in its exit barrier "
	    "for the other nodes, %u ms at most (exit_barrier_timeout)",
	    e->cur.round, timeout_ms);
	m.u.n = e->cur.round;
	send_msg(e, &m);
	rearm(e);
	return 0;
}

/* Before worker exits are judged (rdzv_check). */
static void
esv_check(struct rdzv *rz)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return;
	lease_check(e, true);
	rearm(e);
}

static void
esv_status(struct rdzv *rz, struct rdzv_status *st)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return;
	strlcpy(st->endpoint, e->endpoint, sizeof(st->endpoint));
	st->connected = e->conn == C_UP;
	st->nodes_waiting = e->waiting;
	st->participants = e->participants;
	st->host_pid = e->host_pid;
	st->lookup_pid = e->lookup_pid;
	st->helper_pid = e->helper_pid;
}

static bool
esv_child_exited(struct rdzv *rz, pid_t pid, int status)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return false;
	if (pid == e->lookup_pid) {
		e->lookup_pid = 0;
		return true;
	}
	if (pid == e->helper_pid) {
		if (status != 0)
			warn_msg("rendezvous: esv-rdzv-etcd (pid %d) exited "
			    "(status 0x%x)", (int)pid, status);
		e->helper_pid = 0;
		return true;
	}
	if (pid != e->host_pid)
		return false;
	warn_msg("rendezvous: hosted esv-rdzv (pid %d) exited (status 0x%x)",
	    (int)e->host_pid, status);
	e->host_pid = 0;
	if (rz->cb.host_changed != NULL)
		rz->cb.host_changed(rz->cb.ctx, pid, 0);
	return true;
}

/*
 * The loop is over: wait, a bounded while, for esv-rdzv-etcd to write
 * the CLOSE and revoke the lease (it gives up after 3 s), so that the
 * job is out of etcd when the supervisor's exit says it is over, and no
 * process of ours outlives it.
 */
static void
helper_wait(struct esv *e)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long long deadline = mono_ms() + 4000;

	while (waitpid(e->helper_pid, NULL, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			kill(e->helper_pid, SIGKILL);
			waitpid(e->helper_pid, NULL, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	e->helper_pid = 0;
}

/*
 * Our esv-rdzv goes with us, a private one or the job's: the other nodes
 * needed it until the exit barrier released them all (or timed out), or
 * the job ended here by a failure or a signal, which ends it for them
 * too (as torch's store on the host).  Left running, it would hold the
 * port and the job's settings for the next job on this host.  Waited for,
 * a bounded while, so that nothing of ours outlives the supervisor.
 */
static void
host_stop(struct esv *e)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long long deadline = mono_ms() + HOST_STOP_MS;

	kill(e->host_pid, SIGTERM);
	while (waitpid(e->host_pid, NULL, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			kill(e->host_pid, SIGKILL);
			waitpid(e->host_pid, NULL, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	if (e->rz->cb.host_changed != NULL)
		e->rz->cb.host_changed(e->rz->cb.ctx, e->host_pid, 0);
	e->host_pid = 0;
}

static void
esv_close(struct rdzv *rz, bool job_over)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_CLOSE };

	if (e == NULL)
		return;
	if (job_over)
		send_msg(e, &m);
	conn_close(e);
	if (e->helper_pid != 0)
		helper_wait(e);
	if (e->host_pid != 0)
		host_stop(e);
	loop_del(rz->loop, &e->tw);
	close(e->tw.fd);
	explicit_bzero(e->token, sizeof(e->token));
	free(e);
	rz->priv = NULL;
}

/*
 * etcd: the first member's address is looked up now, before the loop
 * runs, for the route MASTER_ADDR is taken from; esv-rdzv-etcd's curl
 * resolves names on its own thread.
 */
static int
etcd_open(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	char first[300], host[256], why[256];
	const char *hs;
	unsigned port;
	struct esv *e;

	if ((e = esv_new(rz, err, errlen)) == NULL)
		return -1;
	e->via_helper = true;
	/* etcd's lease; its grace is the time the workers get, once lost. */
	e->lease_ms = rdzv_lease_ms(&cfg->rdzv, 1);
	e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
	e->token[0] = '\0';
	strlcpy(e->endpoint, cfg->rdzv_endpoints, sizeof(e->endpoint));
	strlcpy(first, cfg->rdzv_endpoints, sizeof(first));
	first[strcspn(first, ",")] = '\0';
	hs = strstr(first, "://") != NULL ? strstr(first, "://") + 3 : first;
	((char *)hs)[strcspn(hs, "/")] = '\0';
	if (cfg->local_addr[0] == '\0' && endpoint_parse(hs, 2379, host,
	    sizeof(host), &port, why, sizeof(why)) == 0)
		lookup_now(host, port, &e->peer);
	return 0;
}

const struct rdzv_backend rdzv_etcd_backend = {
	.name = "etcd",
	.open = etcd_open,
	.join = esv_join,
	.leave = esv_leave,
	.barrier = esv_barrier,
	.status = esv_status,
	.child_exited = esv_child_exited,
	.close = esv_close,
	.check = esv_check,
};

const struct rdzv_backend rdzv_esv_backend = {
	.name = "esv",
	.open = esv_open,
	.join = esv_join,
	.leave = esv_leave,
	.barrier = esv_barrier,
	.status = esv_status,
	.child_exited = esv_child_exited,
	.close = esv_close,
	.check = esv_check,
};
