/*
 * Our lines out, sealed under the session's key and counted for the
 * lease (send_msg); the connection's close, and its loss: a connection
 * lost is tried again with backoff, unless the lease is over, which
 * fences the workers first (conn_lost).
 *
 * May call esv_lease.c only (esv_int.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "esv_int.h"
#include "msg.h"

void
watch_events(struct esv *e)
{
	uint32_t ev = EPOLLIN;

	if (e->conn == C_CONNECTING || e->outlen > 0)
		ev |= EPOLLOUT;
	loop_mod(e->rz->loop, &e->w, ev);
}

void
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

void
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
void
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

void
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

/* Reconnect later, unless nothing is wanted of the server. */
void
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
