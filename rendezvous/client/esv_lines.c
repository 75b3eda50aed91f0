/*
 * The server's lines in: the socket's events, the greeting that opens a
 * session and sets its key and lease, the seal of every line after it,
 * and each proven line handed to what it says (esv_verbs.c).  A PING's
 * acknowledgement renews the lease (esv_lease.c).  Also lease_check:
 * what was sent is read before the lease is judged.
 *
 * May call esv_verbs.c, esv_conn.c and esv_lease.c (esv_int.h), never
 * back up to rdzv_esv.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "esv_int.h"
#include "msg.h"

static void	read_lines_now(struct esv *e);

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

void
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
void
lease_check(struct esv *e, bool read_first)
{
	if (read_first && e->conn == C_UP)
		read_lines(e);
	if (lease_over(e, mono_ms()))
		lease_fence(e, mono_ms());
}
