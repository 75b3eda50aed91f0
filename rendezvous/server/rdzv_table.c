/* The tables of esv-rdzv: jobs by run id, nodes by node id. */
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "rdzv_server_int.h"

static int
node_cmp(struct node *a, struct node *b)
{
	return strcmp(a->id, b->id);
}
RB_GENERATE(nodetree, node, rb, node_cmp)

static int
job_cmp(struct job *a, struct job *b)
{
	return strcmp(a->run_id, b->run_id);
}
RB_GENERATE(jobtree, job, rb, job_cmp)

struct job *
job_find(struct rdzv_server *srv, const char *run_id)
{
	struct job key;

	strlcpy(key.run_id, run_id, sizeof(key.run_id));
	return RB_FIND(jobtree, &srv->jobs, &key);
}

struct node *
node_find(struct job *job, const char *id)
{
	struct node key;

	strlcpy(key.id, id, sizeof(key.id));
	return RB_FIND(nodetree, &job->nodes, &key);
}

void
set_status(struct node *nd, enum node_status st)
{
	nd->job->count[nd->status]--;
	nd->job->count[st]++;
	nd->status = st;
}

/* The record of j's node, created or refreshed, on sc. */
struct node *
node_set(struct job *job, struct rdzv_sconn *sc, struct node *nd,
    const struct rdzv_join *j, enum node_status st)
{
	if (nd == NULL) {
		if ((nd = calloc(1, sizeof(*nd))) == NULL)
			return NULL;
		nd->job = job;
		nd->status = st;
		strlcpy(nd->id, j->node_id, sizeof(nd->id));
		RB_INSERT(nodetree, &job->nodes, nd);
		job->count[st]++;
		job->nnodes++;
	}
	nd->sc = sc;
	sc->node = nd;
	nd->nproc = j->nproc;
	nd->port = j->port;
	nd->released = false;
	strlcpy(nd->role, j->role, sizeof(nd->role));
	strlcpy(nd->addr, j->addr, sizeof(nd->addr));
	set_status(nd, st);
	return nd;
}

void
node_free(struct job *job, struct node *nd)
{
	RB_REMOVE(nodetree, &job->nodes, nd);
	job->count[nd->status]--;
	job->nnodes--;
	if (nd->sc->node == nd)
		nd->sc->node = NULL;
	free(nd);
}

static void
job_free(struct rdzv_server *srv, struct job *job)
{
	struct node *nd;

	while ((nd = RB_MIN(nodetree, &job->nodes)) != NULL)
		node_free(job, nd);
	if (job->closed)
		TAILQ_REMOVE(&srv->closed_jobs, job, closed_entry);
	RB_REMOVE(jobtree, &srv->jobs, job);
	srv->njobs--;
	free(job->lost);
	free(job);
}

void
jobs_free(struct rdzv_server *srv)
{
	struct job *job;

	while ((job = RB_MIN(jobtree, &srv->jobs)) != NULL)
		job_free(srv, job);
}

/* A closed job is kept to refuse late joiners until its slot is needed. */
void
job_gc(struct rdzv_server *srv, struct job *job)
{
	if (job->nnodes == 0 && !job->closed) {
		info_msg("job %s: deleted: no nodes left", job->run_id);
		job_free(srv, job);
	}
}

static int
evict(struct rdzv_server *srv)
{
	struct job *job;

	TAILQ_FOREACH(job, &srv->closed_jobs, closed_entry)
		if (job->nnodes == 0) {
			info_msg("job %s: evicted", job->run_id);
			job_free(srv, job);
			return 0;
		}
	return -1;
}

struct job *
job_create(struct rdzv_server *srv, const char *run_id)
{
	struct job *job;

	if (srv->njobs >= srv->conf.max_jobs && evict(srv) == -1)
		return NULL;
	if ((job = calloc(1, sizeof(*job))) == NULL)
		return NULL;
	RB_INIT(&job->nodes);
	strlcpy(job->run_id, run_id, sizeof(job->run_id));
	job->deadline = -1;
	RB_INSERT(jobtree, &srv->jobs, job);
	srv->njobs++;
	return job;
}

struct job *
job_create_for(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct rdzv_join *j)
{
	struct job *job;

	if ((job = job_create(srv, j->run_id)) == NULL) {
		srv_refuse(srv, sc, "limit", "too many jobs");
		return NULL;
	}
	job->min = j->min_nodes;
	job->max = j->max_nodes;
	job->last_call_ms = j->last_call_ms;
	if (j->state == RS_NEW) {
		info_msg("job %s: created: min:max %u:%u, last call %u ms",
		    job->run_id, job->min, job->max, job->last_call_ms);
		return job;
	}
	/* This server restarted under a running job: rebuild the round. */
	job->phase = JP_RECOVERING;
	job->round = j->round;
	job->expect_n = j->group_world_size;
	job->deadline = srv->now + srv->conf.recovery_ms;
	info_msg("job %s: created: recovering round %u of %u nodes",
	    job->run_id, job->round, job->expect_n);
	return job;
}

