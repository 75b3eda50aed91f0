/*
 * One node's part of a rendezvous held in etcd: what esv-rdzv decides for
 * every node of a job, decided here by the node that leads (holds h/lead)
 * against a shared keyspace, with etcd's transactions as the only
 * arbiter.  The layout and its rules are in esv-rdzv-etcd(8).
 *
 * The node keeps a copy of the keys it watches (one range, then one
 * watch): every key of the job while it leads, h/ alone while it
 * follows.  The leader takes each decision from its copy and writes it
 * with a compare on what it saw; a write that loses a race is dropped and
 * the decision taken again once the copy has caught up with the winner.
 */
#ifndef ESV_ETCD_NODE_H
#define ESV_ETCD_NODE_H

#include <stdbool.h>

#include "etcd.h"
#include "rdzvproto.h"

struct node;

struct node_ops {
	/* Say m to the supervisor. */
	void	(*say)(void *ctx, const struct rdzv_msg *m);
	/* The node has let go of everything (node_shutdown): exit. */
	void	(*gone)(void *ctx);
	/*
	 * The lease may run out while the workers run: they must stop now
	 * (esv-rdzv-etcd hangs up on the supervisor, which kills them).
	 */
	void	(*fence)(void *ctx);
	void	*ctx;
};

struct node	*node_new(struct etcd *e, struct loop *lp, const char *prefix,
		    const char *run_id, unsigned ttl_ms,
		    const struct node_ops *ops);
void		 node_free(struct node *);

/* What the supervisor says (lib/rdzvproto.h). */
void		 node_join(struct node *, const struct rdzv_join *j);
void		 node_barrier(struct node *, unsigned round);
void		 node_close_job(struct node *);
/*
 * The supervisor is gone or let go: finish what is being written, revoke
 * the lease (every key of ours goes at once) and call ops->gone.
 */
void		 node_shutdown(struct node *);
/*
 * The supervisor hung up by itself (it exited): workers of a round it
 * had not finished are gone, and the round is marked left before the
 * lease is revoked, so that it restarts on every node at once rather
 * than wait in the exit barrier as for a node gone silent.
 */
void		 node_hangup(struct node *);
/*
 * Fence (ops->fence) if the workers run and the lease may run out within
 * the fence's grace: on every wake of the loop, before anything else, so
 * that a process back from a stop acts on nothing first.  True if it
 * fenced, now or before.
 */
bool		 node_fence_check(struct node *);
/*
 * When this node gives up its lease unless a keep-alive is answered
 * first (CLOCK_MONOTONIC ms): it fences then, a grace before etcd may
 * expire the lease (a quarter grace after node_late_fence).  0 while it
 * has no lease to give up.
 */
long long	 node_lease_end(const struct node *);
/*
 * The supervisor stops the workers itself a grace before node_lease_end
 * (it reads it in our PINGs), and its guardian a quarter grace before:
 * ours is only the last fence, just before etcd may expire the lease.
 */
void		 node_late_fence(struct node *);

#endif
