#include <stdio.h>
#include <string.h>

#include "nelem.h"
#include "rdzv.h"

extern const struct rdzv_backend rdzv_static_backend;
extern const struct rdzv_backend rdzv_esv_backend;
extern const struct rdzv_backend rdzv_etcd_backend;

static const struct rdzv_backend *const backends[] = {
	&rdzv_static_backend,
	&rdzv_esv_backend,
	&rdzv_etcd_backend,
};

int
rdzv_open(struct rdzv *rz, const struct rdzv_params *cfg, struct loop *lp,
    const struct rdzv_callbacks *cb, char *err, size_t errlen)
{
	size_t i;

	memset(rz, 0, sizeof(*rz));
	rz->cfg = cfg;
	rz->loop = lp;
	rz->cb = *cb;
	for (i = 0; i < NELEM(backends); i++)
		if (strcmp(backends[i]->name, cfg->rdzv_backend) == 0)
			rz->be = backends[i];
	if (rz->be == NULL) {
		snprintf(err, errlen, "rdzv_backend: %s: unknown backend",
		    cfg->rdzv_backend);
		return -1;
	}
	return rz->be->open(rz, err, errlen);
}

int
rdzv_join(struct rdzv *rz)
{
	return rz->be->join(rz);
}

void
rdzv_leave(struct rdzv *rz)
{
	if (rz->be->leave != NULL)
		rz->be->leave(rz);
}

int
rdzv_barrier(struct rdzv *rz, unsigned timeout_ms)
{
	if (rz->be->barrier == NULL || timeout_ms == 0) {
		rz->cb.barrier_done(rz->cb.ctx, true);
		return 0;
	}
	return rz->be->barrier(rz, timeout_ms);
}

void
rdzv_status(struct rdzv *rz, struct rdzv_status *st)
{
	memset(st, 0, sizeof(*st));
	if (rz->be != NULL && rz->be->status != NULL)
		rz->be->status(rz, st);
}

bool
rdzv_child_exited(struct rdzv *rz, pid_t pid, int status)
{
	if (pid <= 0 || rz->be == NULL || rz->be->child_exited == NULL)
		return false;
	return rz->be->child_exited(rz, pid, status);
}

void
rdzv_close(struct rdzv *rz, bool job_over)
{
	if (rz->be != NULL && rz->be->close != NULL)
		rz->be->close(rz, job_over);
}

void
rdzv_check(struct rdzv *rz)
{
	if (rz->be != NULL && rz->be->check != NULL)
		rz->be->check(rz);
}
