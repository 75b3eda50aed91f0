/*
 * The rendezvous as esv-supervise sees it: one interface, several backends
 * ("static" here; "esv" talking to esv-rdzv and "etcd" come later).
 *
 * A round is asynchronous: rdzv_join() starts it, and the backend calls
 * the done callback from the supervisor's event loop when the round
 * completes (static: at once, from inside rdzv_join).  A backend that
 * talks to a server adds its fds to the loop itself and calls
 * membership_changed when nodes wait to join a running round.
 */
#ifndef ESV_RDZV_H
#define ESV_RDZV_H

#include <stdbool.h>

#include "config.h"
#include "loop.h"
#include "ranks.h"

struct rdzv_round {
	unsigned		round;		/* 0, 1, ... */
	struct rank_assignment	ranks;
	char			master_addr[256];
	unsigned		master_port;
	bool			use_agent_store;	/* an agent hosts the store */
};

struct rdzv;

struct rdzv_callbacks {
	void	(*done)(void *ctx, const struct rdzv_round *r);
	void	(*failed)(void *ctx, const char *why);
	void	(*membership_changed)(void *ctx);
	void	*ctx;
};

struct rdzv_backend {
	const char	*name;
	int	(*open)(struct rdzv *rz, char *err, size_t errlen);
	int	(*join)(struct rdzv *rz);
	unsigned (*nodes_waiting)(struct rdzv *rz);
	void	(*close)(struct rdzv *rz, bool job_over);
};

struct rdzv {
	const struct rdzv_backend	*be;
	const struct job_config		*cfg;
	struct loop			*loop;
	struct rdzv_callbacks		 cb;
	unsigned			 rounds;
	void				*priv;
};

/* Pick the backend named by cfg->rdzv_backend.  0, or -1 with err set. */
int	rdzv_open(struct rdzv *rz, const struct job_config *cfg,
	    struct loop *lp, const struct rdzv_callbacks *cb,
	    char *err, size_t errlen);
int	rdzv_join(struct rdzv *rz);
unsigned rdzv_nodes_waiting(struct rdzv *rz);
void	rdzv_close(struct rdzv *rz, bool job_over);

/* A TCP port free on addr now (bind port 0); 0 on error. */
unsigned rdzv_free_port(const char *addr);

#endif
