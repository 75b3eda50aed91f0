/*
 * The workers' lease and its fence, and the one timer's next expiry
 * (rearm), which every layer calls when it moves a deadline.
 *
 * The workers hold their ranks only under a lease (fencing): the
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
 *
 * Calls no other file of the backend (esv_int.h): it is the bottom.
 */
#include <stdio.h>
#include <time.h>

#include "esv_int.h"
#include "msg.h"

/* The wall-clock time of the monotonic time t, "HH:MM:SS.mmm" UTC. */
void
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
void
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
bool
lease_runs(const struct esv *e)
{
	return e->live && !e->fenced && e->lease_ms > 0;
}

/* When the server may give the ranks away (see the top of the file). */
long long
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
bool
lease_over(const struct esv *e, long long now)
{
	return lease_runs(e) && now >= lease_end(e) - e->grace_ms;
}

void
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
bool
hold_conn(const struct esv *e)
{
	return e->live && !e->via_helper && e->lease_ms > 0;
}

/* The server is gone after three of its heartbeats without a line. */
long long
silence_ms(const struct esv *e)
{
	return 3 * (long long)(e->srv_hb_ms > e->hb_ms ? e->srv_hb_ms :
	    e->hb_ms);
}

void
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

/* The server has our first n lines of this connection: renew. */
void
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
