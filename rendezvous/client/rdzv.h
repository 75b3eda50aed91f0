/*
 * The rendezvous as esv-supervise sees it: one interface, several backends
 * ("static"; "esv" talking to esv-rdzv; "etcd" talking to etcd through
 * esv-rdzv-etcd, with esv-rdzv's protocol).
 *
 * A round is asynchronous: rdzv_join() starts it, and the backend calls
 * the done callback from the supervisor's event loop when the round
 * completes (static: at once, from inside rdzv_join).  A backend that
 * talks to a server adds its fds to the loop itself and calls
 * membership_changed when the running round must be given up (a node
 * arrived, left or failed), fenced when the lease of its ranks runs out,
 * failed when no round can be had, and
 * barrier_done when every node's group has finished (or the barrier
 * timed out).  Backends without a barrier call barrier_done at once.
 */
#ifndef ESV_RDZV_H
#define ESV_RDZV_H

#include <stdbool.h>
#include <sys/types.h>

#include "loop.h"
#include "lookup.h"
#include "ranks.h"
#include "rdzvconf.h"

/*
 * What a rendezvous needs to know of the job; esv-supervise fills it from
 * its configuration (esv-job.ini(5)), and it must outlive the rendezvous.
 */
struct rdzv_params {
	const char	*rdzv_backend;	/* "static", "esv" or "etcd" */
	const char	*run_id, *role;
	unsigned	 nproc_per_node;
	unsigned	 nnodes_min, nnodes_max;
	unsigned	 node_rank;		/* static */
	const char	*rdzv_host;		/* esv: the endpoint */
	const char	*rdzv_endpoints;	/* etcd: URL[,URL...] */
	unsigned	 rdzv_port;
	struct rdzv_conf rdzv;
	const char	*local_addr;		/* "": the address that reaches
						 * the server */
	const char	*master_addr;		/* static */
	unsigned	 master_port;
	bool		 master_port_set;
	bool		 standalone;		/* a private esv-rdzv */
	const char	*jobdir;
};

struct rdzv_round {
	unsigned		round;		/* 0, 1, ... */
	struct rank_assignment	ranks;
	char			master_addr[256];
	unsigned		master_port;
	bool			use_agent_store;	/* an agent hosts the store */
	/*
	 * The round's nodes' addresses, one a line (the agent store lets
	 * them in), held by the backend until its next round; NULL if the
	 * backend does not know them.
	 */
	const char		*members;
};

struct rdzv;

struct rdzv_callbacks {
	void	(*done)(void *ctx, const struct rdzv_round *r);
	void	(*failed)(void *ctx, const char *why);
	void	(*membership_changed)(void *ctx);
	/*
	 * The lease of the workers' ranks runs out (the rendezvous has not
	 * acknowledged us): stop them at once, with SIGKILL at kill_at_ms
	 * (mono_ms) at the latest, and join again, as for a membership
	 * change.  NULL: membership_changed.
	 */
	void	(*fenced)(void *ctx, long long kill_at_ms);
	void	(*barrier_done)(void *ctx, bool released);
	void	(*status_changed)(void *ctx);	/* rdzv_status() moved */
	/*
	 * A hosted esv-rdzv was started (started > 0) or is gone and reaped
	 * (gone > 0), so that the supervisor's guardian kills it with the
	 * job.  May be NULL.
	 */
	void	(*host_changed)(void *ctx, pid_t gone, pid_t started);
	/*
	 * The time (mono_ms) by which the workers must be dead unless the
	 * lease is renewed again, told at every renewal; 0: no lease runs
	 * (no workers, or no lease).  The supervisor's guardian kills them
	 * then, should the supervisor be stopped.  May be NULL.
	 */
	void	(*lease)(void *ctx, long long kill_at_ms);
	void	*ctx;
};

/* What the control directory shows of the rendezvous. */
struct rdzv_status {
	char		endpoint[300];	/* "" for static */
	bool		connected;
	unsigned	nodes_waiting;
	unsigned	participants;	/* joined the round being gathered */
	pid_t		host_pid;	/* esv-rdzv child we host, or 0 */
	pid_t		lookup_pid;	/* a name lookup's child, or 0 */
	pid_t		helper_pid;	/* esv-rdzv-etcd, or 0 */
};

struct rdzv_backend {
	const char	*name;
	int	(*open)(struct rdzv *rz, char *err, size_t errlen);
	int	(*join)(struct rdzv *rz);
	void	(*leave)(struct rdzv *rz);
	int	(*barrier)(struct rdzv *rz, unsigned timeout_ms);
	void	(*status)(struct rdzv *rz, struct rdzv_status *st);
	/* A child was reaped: true if it was the backend's. */
	bool	(*child_exited)(struct rdzv *rz, pid_t pid, int status);
	void	(*close)(struct rdzv *rz, bool job_over);
	/* Take in what the server said, judge the lease (may be NULL). */
	void	(*check)(struct rdzv *rz);
};

struct rdzv {
	const struct rdzv_backend	*be;
	const struct rdzv_params	*cfg;
	struct loop			*loop;
	struct rdzv_callbacks		 cb;
	unsigned			 rounds;
	/*
	 * The port of a socket the caller holds and listens on, to offer as
	 * MASTER_PORT at the next join (the workers' store, served by the
	 * node of group rank 0); 0: the backend picks a free one, as before.
	 */
	unsigned			 offer_port;
	/*
	 * The supervisor is stopping (a signal, its exit): nothing is
	 * started anew, not a hosted esv-rdzv that someone (Slurm on a
	 * cancel) has just killed.
	 */
	bool				 stopping;
	void				*priv;
};

/* Pick the backend named by cfg->rdzv_backend.  0, or -1 with err set. */
int	rdzv_open(struct rdzv *rz, const struct rdzv_params *cfg,
	    struct loop *lp, const struct rdzv_callbacks *cb,
	    char *err, size_t errlen);
int	rdzv_join(struct rdzv *rz);
/* The group went down by operator command: give up our place. */
void	rdzv_leave(struct rdzv *rz);
/* The group succeeded: wait (asynchronously) for the other nodes. */
int	rdzv_barrier(struct rdzv *rz, unsigned timeout_ms);
void	rdzv_status(struct rdzv *rz, struct rdzv_status *st);
/* A child was reaped: true if it was the backend's (a hosted esv-rdzv,
 * a name lookup). */
bool	rdzv_child_exited(struct rdzv *rz, pid_t pid, int status);
/*
 * job_over: the job ended here (success or final failure), refuse joins.
 * Releases what the backend holds; only rdzv_status may follow.
 */
void	rdzv_close(struct rdzv *rz, bool job_over);
/*
 * Before worker exits are judged: the rendezvous takes in what its
 * server sent (a RESTART, acknowledgements, its hang-up) and judges the
 * lease, so that exits after the end of the round (a supervisor woken
 * from a stall) are seen as the membership stop they are.
 */
void	rdzv_check(struct rdzv *rz);

#endif
