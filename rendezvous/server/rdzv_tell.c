/*
 * What a job tells its nodes: JOINED, WAITING, the round's members and
 * its ROUND.  Messages only: rdzv_job.c decides when, this file what they
 * say, and it calls nothing above rdzv_wire.c.
 */
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "ranks.h"
#include "rdzv_server_int.h"

void
tell_n(struct rdzv_server *srv, struct rdzv_sconn *sc, enum rdzv_verb v,
    unsigned n)
{
	struct rdzv_msg m = { .verb = v };

	m.u.n = n;
	srv_send(srv, sc, &m);
}

void
tell_joined(struct rdzv_server *srv, struct node *nd)
{
	struct rdzv_msg m = { .verb = RV_JOINED };
	struct job *job = nd->job;

	m.u.joined.round = job->round;
	m.u.joined.participants = job->count[NS_JOINED];
	m.u.joined.waiting = job->count[NS_WAITING];
	srv_send(srv, nd->sc, &m);
}

void
tell_waiting(struct rdzv_server *srv, struct job *job)
{
	struct node *nd;

	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_RUNNING)
			tell_n(srv, nd->sc, RV_WAITING, job->count[NS_WAITING]);
}

/*
 * Past this many nodes a round's addresses would not fit what a
 * connection may have queued: group rank 0 is then told none, and its
 * agent store lets any host in, as it says.
 */
#define MEMBERS_MAX	200

static bool
numeric(const char *a)
{
	struct in6_addr buf;

	return inet_pton(AF_INET, a, &buf) == 1 ||
	    inet_pton(AF_INET6, a, &buf) == 1;
}

/*
 * To the node of group rank 0, before its ROUND: the addresses of the
 * round's nodes, for its agent store (esv-stored --allow-file).  Both
 * the one a node connects to us from and the one it gave, if numeric:
 * a host with two networks may reach the store by either.
 */
void
tell_members(struct rdzv_server *srv, struct node *to, struct node **nodes,
    unsigned n, unsigned round)
{
	struct rdzv_msg m = { .verb = RV_MEMBER };
	unsigned i;

	if (n > MEMBERS_MAX) {
		info_msg("job %s: round %u: %u nodes, more than %d: their "
		    "addresses are not sent", to->job->run_id, round, n,
		    MEMBERS_MAX);
		return;
	}
	m.u.member.round = round;
	for (i = 0; i < n; i++) {
		if (rdzv_addr_ok(nodes[i]->sc->ip)) {
			strlcpy(m.u.member.addr, nodes[i]->sc->ip,
			    sizeof(m.u.member.addr));
			srv_send(srv, to->sc, &m);
		}
		if (numeric(nodes[i]->addr) &&
		    strcmp(nodes[i]->addr, nodes[i]->sc->ip) != 0) {
			strlcpy(m.u.member.addr, nodes[i]->addr,
			    sizeof(m.u.member.addr));
			srv_send(srv, to->sc, &m);
		}
	}
}

void
tell_round(struct rdzv_server *srv, struct node *nd,
    const struct rank_assignment *ra, const struct node *master)
{
	struct rdzv_msg m = { .verb = RV_ROUND };
	struct rdzv_round_msg *r = &m.u.round;

	r->round = nd->job->round;
	r->group_rank = ra->group_rank;
	r->group_world_size = ra->group_world_size;
	r->base_rank = ra->base_rank;
	r->world_size = ra->world_size;
	r->base_role_rank = ra->base_role_rank;
	r->role_world_size = ra->role_world_size;
	strlcpy(r->master_addr, master->addr, sizeof(r->master_addr));
	r->master_port = master->port;
	nd->assigned = *r;
	srv_send(srv, nd->sc, &m);
}

/* As tell_members, again: the round's nodes are those that run it. */
void
tell_members_again(struct rdzv_server *srv, struct job *job, struct node *to)
{
	struct node *nd, **nodes;
	unsigned n = 0;

	if ((nodes = calloc(job->nnodes + 1, sizeof(*nodes))) == NULL)
		return;
	RB_FOREACH(nd, nodetree, &job->nodes)
		if (nd->status == NS_RUNNING && nd->round == job->round &&
		    n <= job->nnodes)
			nodes[n++] = nd;
	tell_members(srv, to, nodes, n, job->round);
	free(nodes);
}
