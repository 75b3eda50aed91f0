/*
 * torchrun's "static" rendezvous: every node knows its rank and the node
 * count, so a round needs no traffic at all.  MASTER_ADDR:MASTER_PORT is
 * where worker rank 0 will host the store (TORCHELASTIC_USE_AGENT_STORE
 * is False: no agent runs a store in this version).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "freeport.h"
#include "rdzv.h"

static int
static_open(struct rdzv *rz, char *err, size_t errlen)
{
	struct lookup_answer *a;

	if (rz->cfg->master_port_set || rz->cfg->nnodes_max != 1)
		return 0;
	/* At start-up: a name's lookup may wait on DNS, a round may not. */
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	lookup_now(rz->cfg->master_addr, 0, a);
	rz->priv = a;
	return 0;
}

static void
static_close(struct rdzv *rz, bool job_over)
{
	(void)job_over;
	free(rz->priv);
	rz->priv = NULL;
}

static int
static_join(struct rdzv *rz)
{
	const struct rdzv_params *cfg = rz->cfg;
	struct rdzv_round r;

	memset(&r, 0, sizeof(r));
	r.round = rz->rounds++;
	if (ranks_assign_static(cfg->node_rank, cfg->nnodes_max,
	    cfg->nproc_per_node, &r.ranks) == -1) {
		rz->cb.failed(rz->cb.ctx, "node rank out of range");
		return -1;
	}
	strlcpy(r.master_addr, cfg->master_addr, sizeof(r.master_addr));
	r.master_port = cfg->master_port;
	/*
	 * One node and no port asked for: pick a free one at every round, so
	 * two single-node jobs on a host never race for 29500 (torch's
	 * auto-standalone does the same).
	 */
	if (rz->offer_port != 0)
		r.master_port = rz->offer_port;
	else if (rz->priv != NULL) {
		r.master_port = rdzv_free_port(rz->priv);
		if (r.master_port == 0)
			r.master_port = cfg->master_port;
	}
	r.use_agent_store = false;
	rz->cb.done(rz->cb.ctx, &r);
	return 0;
}

const struct rdzv_backend rdzv_static_backend = {
	.name = "static",
	.open = static_open,
	.join = static_join,
	.close = static_close,
};
