/*
 * One node's part of a rendezvous held in etcd (node.h): the interface the
 * supervisor's messages come in by, and evaluate, which takes the node's
 * next step from its copy of the keys once nothing is in flight: its own
 * by its phase (node_join.c, node_barrier.c), then the leader's
 * (node_round.c).  The top of the layers node_int.h names: it may call
 * any of them, and they call it back only through n->evaluate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "node_int.h"

#define SHUTDOWN_MS	3000	/* to revoke the lease on the way out */

static void
evaluate(struct node *n)
{
	struct state st;

	if (node_fence_check(n) || !n->ready || n->busy || n->stale ||
	    n->lease == 0 || n->rev < n->need_rev)
		return;
	/*
	 * A lease not confirmed within its TTL may be gone (we were
	 * stopped, or etcd was out of reach): nothing is decided on it
	 * until etcd says.
	 */
	if (mono_ms() >= n->lease_ok_at + n->ttl_ms)
		return;
	state_read(n, &st);
	if (n->close_wanted)
		close_step(n, &st);
	else if (n->shutting)
		;
	else switch (n->phase) {
	case PH_JOINING:
		join_step(n, &st);
		break;
	case PH_REATTACH:
		reattach_step(n, &st);
		break;
	case PH_RUNNING:
		running_step(n, &st);
		break;
	case PH_BARRIER:
		barrier_step(n, &st);
		break;
	case PH_IDLE:
		break;
	}
	if (!n->busy && !n->shutting && !n->close_wanted)
		lead_step(n, &st);
	state_done(&st);
	if (n->shutting && !n->busy)
		shutdown_step(n);
}

struct node *
node_new(struct etcd *e, struct loop *lp, const char *prefix,
    const char *run_id, unsigned ttl_ms, const struct node_ops *ops)
{
	struct node *n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->e = e;
	n->lp = lp;
	n->ops = *ops;
	n->evaluate = evaluate;
	n->shutdown_step = shutdown_step;
	n->ttl_ms = ttl_ms;
	/* A supervisor back with running workers has until then. */
	n->lease_ok_at = mono_ms();
	n->told_waiting = -1;
	n->lastcall_gone = -1;
	RB_INIT(&n->kvs);
	snprintf(n->prefix, sizeof(n->prefix), "%s/%s/", prefix, run_id);
	n->timer = (struct watch){ .fn = on_timer, .ctx = n };
	if ((n->timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(lp, &n->timer, EPOLLIN) == -1) {
		free(n);
		return NULL;
	}
	lease_grant(n);
	sync_start(n);
	rearm(n);
	return n;
}

void
node_free(struct node *n)
{
	if (n == NULL)
		return;
	etcd_stream_close(n->watch);
	kv_clear(n);
	json_decref(n->steps);
	loop_del(n->lp, &n->timer);
	close(n->timer.fd);
	free(n);
}

void
node_join(struct node *n, const struct rdzv_join *j)
{
	n->me = *j;
	if (j->state == RS_NEW) {
		n->phase = PH_JOINING;
		n->target = j->round;
		n->told_joined = 0;
	} else {
		n->phase = PH_REATTACH;
		n->cur = j->round;
		n->group_rank = j->group_rank;
	}
	evaluate(n);
}

void
node_barrier(struct node *n, unsigned round)
{
	if (n->phase != PH_RUNNING || round != n->cur) {
		/* It crossed a RESTART on its way: that one decides. */
		if (round < n->cur || n->phase == PH_IDLE ||
		    n->phase == PH_JOINING)
			return;
		say_err(n, "proto", "BARRIER %u: not running that round",
		    round);
		return;
	}
	n->phase = PH_BARRIER;
	evaluate(n);
}

void
node_close_job(struct node *n)
{
	n->close_wanted = true;
	n->phase = PH_IDLE;
	evaluate(n);
}

void
node_hangup(struct node *n)
{
	if (!n->shutting && workers_run(n))
		n->left = n->cur + 1;
}

void
node_shutdown(struct node *n)
{
	if (n->shutting)
		return;
	n->shutting = true;
	n->shutdown_by = mono_ms() + SHUTDOWN_MS;
	rearm(n);
	shutdown_step(n);
}
