/*
 * The node's lease, which is all its liveness: the grant, the
 * keep-alives, the fence when it may run out while workers run, the
 * node's one timer (on_timer), and the way out: a round left marked,
 * then the lease revoked.  It may call the writes (node_txn.c), the copy
 * (node_watch.c, whose scope a lost lease narrows), what is said and the
 * layers below; the decisions above only through n->evaluate.
 */
#include <stdio.h>
#include <time.h>

#include "msg.h"
#include "node_int.h"

/*
 * Our lease is gone (expired while we were stopped or cut off): our keys
 * went with it and the others may run a round without us, so the
 * workers stop before anything else is done.
 */
static void
fence(struct node *n, const char *why)
{
	warn_msg("etcd: job %s: lease lost (%s)%s", n->me.run_id, why,
	    n->phase == PH_RUNNING ? ": stopping the workers" :
	    n->phase == PH_BARRIER ? ": back in the exit barrier with a new "
	    "one" : "");
	if (n->phase == PH_RUNNING) {
		say_n(n, RV_RESTART, n->cur + 1);
		n->phase = PH_IDLE;
	}
	/*
	 * Our exit key outlives the lease: the workers' success stands, and
	 * the round, if still current, takes us back as finished.
	 */
	if (n->phase == PH_BARRIER) {
		n->me.state = RS_DONE;
		n->phase = PH_REATTACH;
	}
	n->lease = 0;
	n->keepalive_asked = false;
	n->joined = n->waited = n->exited = n->wanted = n->fetched = 0;
	set_scope(n, false);
}

static void
on_grant(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	long long id, ttl;

	n->lease_asked = false;
	if (reply == NULL || etcd_int(reply, "ID", &id) == -1 || id == 0 ||
	    etcd_int(reply, "TTL", &ttl) == -1) {
		warn_msg("etcd: lease grant: %s", err != NULL ? err :
		    "no ID in the reply");
		rearm(n);
		return;
	}
	n->lease = id;
	n->lease_ok_at = n->lease_sent_at;
	n->doubt_logged = false;
	/*
	 * etcd's TTLs are whole seconds, and it raises one below its minimum
	 * (1.5 election timeouts, rounded up: 2 s by default): the lease
	 * that expires is the one etcd granted, and the fence keeps to it.
	 */
	if (ttl > 0 && ttl <= 3600 && ttl * 1000 > n->ttl_ms) {
		info_msg("etcd: lease TTL %lld s (%u ms asked; etcd's TTLs are "
		    "whole seconds, at least its minimum)", ttl, n->ttl_ms);
		n->ttl_ms = ttl * 1000;
	}
	n->evaluate(n);
	rearm(n);
}

void
lease_grant(struct node *n)
{
	n->lease_asked = true;
	n->lease_sent_at = mono_ms();
	if (etcd_call(n->e, "/v3/lease/grant", json_pack("{s:I}", "TTL",
	    (json_int_t)((n->ttl_ms + 999) / 1000)), on_grant, n) == -1)
		n->lease_asked = false;
}

static void
on_keepalive(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	json_t *res = json_object_get(reply, "result");
	long long id, ttl;

	n->keepalive_asked = false;
	if (reply == NULL) {
		warn_msg("etcd: lease keep-alive: %s", err);
		fence(n, err);
		rearm(n);
		return;
	}
	if (etcd_int(res, "ID", &id) == -1 || etcd_int(res, "TTL", &ttl) ==
	    -1 || id != n->lease)
		return;
	/* etcd answers a lease it has expired with no TTL. */
	if (ttl <= 0) {
		fence(n, "etcd expired it");
		rearm(n);
		return;
	}
	n->lease_ok_at = n->lease_sent_at;
	if (n->doubt_logged)
		info_msg("etcd: job %s: lease confirmed again", n->me.run_id);
	n->doubt_logged = false;
	n->evaluate(n);
	rearm(n);
}

static void
keepalive(struct node *n)
{
	char id[32];

	snprintf(id, sizeof(id), "%lld", n->lease);
	n->keepalive_asked = true;
	n->lease_sent_at = mono_ms();
	if (etcd_call(n->e, "/v3/lease/keepalive", json_pack("{s:s}", "ID", id),
	    on_keepalive, n) == -1)
		n->keepalive_asked = false;
}

static void
on_revoke(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;

	(void)reply;
	if (err != NULL)
		warn_msg("etcd: revoking the lease: %s", err);
	n->lease = 0;
	if (!n->gone) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
	}
}

static void
left_done(struct node *n, bool ok, json_t *reply)
{
	(void)ok;
	(void)reply;
	n->left = 0;
}

/*
 * Once, whatever etcd answers: the way out is bounded.  Only while the
 * round is still the current one, so that no later round is restarted
 * for a node of an older one.
 */
static void
left_put(struct node *n)
{
	struct state st;
	char key[512];

	state_read(n, &st);
	if (st.present && st.round + 1 == n->left && st.status ==
	    ST_RUNNING) {
		snprintf(key, sizeof(key), "r/%u/left/%s", st.round,
		    n->me.node_id);
		txn(n, json_pack("[o]", cmp_mod(n, "h/state", st.mod)),
		    json_pack("[o]", op_put(n, key, "", false)), left_done,
		    false);
	} else
		n->left = 0;
	state_done(&st);
}

void
shutdown_step(struct node *n)
{
	char id[32];

	if (n->busy || n->gone)
		return;
	if (n->close_wanted && n->lease != 0 && n->ready) {
		n->evaluate(n);
		if (n->busy)
			return;
	}
	if (n->lease == 0) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
		return;
	}
	if (n->left != 0 && n->ready) {
		left_put(n);
		if (n->busy)
			return;
	}
	snprintf(id, sizeof(id), "%lld", n->lease);
	n->busy = true;
	if (etcd_call(n->e, "/v3/lease/revoke", json_pack("{s:s}", "ID", id),
	    on_revoke, n) == -1) {
		n->gone = true;
		n->ops.gone(n->ops.ctx);
	}
}

void
node_late_fence(struct node *n)
{
	n->late_fence = true;
	rearm(n);
}

long long
node_lease_end(const struct node *n)
{
	if (n->lease == 0 || n->fenced || n->shutting || n->gone)
		return 0;
	return fence_at(n);
}

bool
node_fence_check(struct node *n)
{
	long long now = mono_ms(), end;
	double wend;
	time_t t;
	struct tm tm;
	char at[32];

	if (n->fenced)
		return true;
	if (n->shutting || n->gone || !workers_run(n) || now < fence_at(n))
		return false;
	end = n->lease_ok_at + n->ttl_ms;
	wend = wall_now() + (end - now) / 1000.0;
	t = (time_t)wend;
	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%H:%M:%S", &tm);
	warn_msg("etcd: job %s: lease may run out at %s.%03d UTC (no "
	    "keep-alive answered for %lld ms of its %u): fencing",
	    n->me.run_id, at, (int)((wend - (double)t) * 1000), now -
	    n->lease_ok_at, n->ttl_ms);
	n->fenced = true;
	n->phase = PH_IDLE;
	n->ops.fence(n->ops.ctx);
	return true;
}

void
on_timer(struct watch *w, uint32_t events)
{
	struct node *n = w->ctx;
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	/*
	 * A wake before the deadline (an expiry of a deadline armed before
	 * the shutdown): the timer is one-shot, so it is armed again, or
	 * the 3 s would never come.
	 */
	if (n->shutting) {
		if (n->gone)
			return;
		if (now >= n->shutdown_by) {
			warn_msg("etcd: no answer to the lease's revocation: "
			    "etcd expires it in %u ms", n->ttl_ms);
			n->gone = true;
			n->ops.gone(n->ops.ctx);
		} else
			rearm(n);
		return;
	}
	/*
	 * First the lease: after a stop (SIGSTOP, a frozen VM) this is what
	 * the mono clock tells first, and the workers must stop before we
	 * act on an old copy.
	 */
	if (node_fence_check(n))
		return;
	if (n->lease != 0 && now >= n->lease_ok_at + n->ttl_ms &&
	    !n->doubt_logged) {
		warn_msg("etcd: job %s: no keep-alive answered within the "
		    "lease's TTL: deciding nothing until etcd answers",
		    n->me.run_id);
		n->doubt_logged = true;
	}
	if (n->lease == 0 && !n->lease_asked)
		lease_grant(n);
	else if (n->lease != 0 && !n->keepalive_asked &&
	    now >= keepalive_due(n))
		keepalive(n);
	if (n->watch_at != 0 && now >= n->watch_at) {
		if (!n->ready && !n->ranging)
			sync_start(n);
		else if (n->ready && n->watch == NULL)
			watch_open(n);
	}
	rearm(n);
}
