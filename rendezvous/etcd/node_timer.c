/*
 * When the node's one timer is to fire next: the watch's retry, the
 * keep-alive, the lease's TTL, the fence, or on the way out its deadline
 * alone.  Read from the node's fields; it calls nothing of the node.
 */
#include "node_int.h"
#include "rdzvconf.h"

/*
 * The supervisor runs workers with ranks of ours: it was told a round
 * (RUNNING), or came back with one it runs (REATTACH).  In the exit
 * barrier they have all finished.
 */
bool
workers_run(const struct node *n)
{
	return n->phase == PH_RUNNING || (n->phase == PH_REATTACH &&
	    n->me.state == RS_RUNNING);
}

/*
 * etcd expires the lease no sooner than lease_ok_at + ttl_ms; the
 * workers are to be dead by then, so they are stopped a grace earlier
 * (SIGTERM, then SIGKILL at the grace's end: rdzv_fence_grace_ms).  A
 * supervisor that fences by our end itself (node_late_fence) does so a
 * grace before it, and its guardian a quarter grace before it: our
 * giving up, a hang-up and a revocation, must come after both, and
 * still before etcd may expire the lease, or a node cut off from etcd
 * would restart its workers sooner than it has to.
 */
long long
fence_at(const struct node *n)
{
	unsigned g = rdzv_fence_grace_ms(n->ttl_ms);

	return n->lease_ok_at + n->ttl_ms - (n->late_fence ? g / 4 : g);
}

/*
 * The keep-alive's period: etcd's clients send one a third of a TTL.
 * While workers run, the end we tell the supervisor (node_lease_end) is
 * what its guardian kills them by, a quarter grace early, if it stops:
 * at a third, that kill could come 1.13 s into a stall with the defaults
 * (2 s TTL, its fifth as grace), too near the second in which a stall
 * is to cost nothing (issue 41).  A quarter makes it 1.3 s.
 */
long long
keepalive_due(const struct node *n)
{
	return n->lease_ok_at + n->ttl_ms / (workers_run(n) ? 4 : 3);
}

void
rearm(struct node *n)
{
	long long at = -1, now = mono_ms(), t;

	/* On the way out the only deadline is the way out's. */
	if (n->shutting) {
		timer_arm_ms(n->timer.fd, n->shutdown_by > now ?
		    n->shutdown_by - now : 0);
		return;
	}
#define SOONER(x) do { t = (x); if (at == -1 || t < at) at = t; } while (0)
	if (n->watch_at != 0)
		SOONER(n->watch_at);
	if (n->lease != 0 && !n->keepalive_asked)
		SOONER(keepalive_due(n));
	if (n->lease != 0 && !n->doubt_logged)
		SOONER(n->lease_ok_at + n->ttl_ms);
	if (n->lease == 0 && !n->lease_asked)
		SOONER(now + WATCH_RETRY_MS);
	/* Even if etcd never answers: the calls in flight just hang. */
	if (workers_run(n) && !n->fenced)
		SOONER(fence_at(n));
#undef SOONER
	timer_arm_ms(n->timer.fd, at == -1 ? -1 : at > now ? at - now : 0);
}
