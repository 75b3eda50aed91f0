/*
 * The protocol's verbs: our JOIN (with the address and port the other
 * nodes will reach our workers at), and the server's MEMBER, ROUND,
 * RESTART and ERR, taken by the round numbers that keep a late message
 * from acting twice; a join or a barrier that fails for good (fail).
 * RELEASE, LOST and CLOSED are short enough to be taken where a line is
 * read (esv_lines.c, on_line).
 *
 * May call esv_conn.c and esv_lease.c (esv_int.h): the verbs answer
 * through the connection and move the lease, never read a line.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "esv_int.h"
#include "freeport.h"
#include "msg.h"

/*
 * The address our packets to a would leave from: a UDP socket connected
 * there sends nothing, but the kernel picks the route and the source.
 */
static void
route_to(const struct lookup_answer *a, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	void *ad;
	int fd;

	buf[0] = '\0';
	if (a->n == 0 || (fd = socket(a->addr[0].ss_family, SOCK_DGRAM |
	    SOCK_CLOEXEC, 0)) == -1)
		return;
	if (connect(fd, (const struct sockaddr *)&a->addr[0], a->len[0]) ==
	    0 && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		ad = ss.ss_family == AF_INET6 ?
		    (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
		    (void *)&((struct sockaddr_in *)&ss)->sin_addr;
		inet_ntop(ss.ss_family, ad, buf, len);
	}
	close(fd);
}

/* MASTER_ADDR as the other nodes reach us: the address that reaches the
 * server (for etcd: its first member), unless local_addr says otherwise. */
static void
pick_master(struct esv *e)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct lookup_answer mine;
	void *a;

	if (e->cfg->local_addr[0] != '\0')
		strlcpy(e->my_addr, e->cfg->local_addr, sizeof(e->my_addr));
	else if (e->via_helper)
		route_to(&e->peer, e->my_addr, sizeof(e->my_addr));
	else if (getsockname(e->w.fd, (struct sockaddr *)&ss, &sl) == 0) {
		a = ss.ss_family == AF_INET6 ?
		    (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
		    (void *)&((struct sockaddr_in *)&ss)->sin_addr;
		inet_ntop(ss.ss_family, a, e->my_addr, sizeof(e->my_addr));
	}
	if (e->my_addr[0] == '\0')
		strlcpy(e->my_addr, "127.0.0.1", sizeof(e->my_addr));
	if (e->cfg->local_addr[0] == '\0')
		lookup_numeric(e->my_addr, 0, &mine);
	if (e->rz->offer_port != 0) {
		e->my_port = e->rz->offer_port;
		return;
	}
	if ((e->my_port = rdzv_free_port(e->cfg->local_addr[0] != '\0' ?
	    &e->local : &mine)) == 0) {
		warn_msg("rendezvous: no free port on %s (local_addr)",
		    e->my_addr);
		e->my_port = e->cfg->master_port;
	}
}

void
send_join(struct esv *e)
{
	const struct rdzv_params *cfg = e->cfg;
	struct rdzv_msg m = { .verb = RV_JOIN };
	struct rdzv_join *j = &m.u.join;

	j->version = RDZV_PROTO_VERSION;
	strlcpy(j->run_id, cfg->run_id, sizeof(j->run_id));
	strlcpy(j->node_id, e->node_id, sizeof(j->node_id));
	strlcpy(j->cnonce, e->cnonce, sizeof(j->cnonce));
	j->nproc = cfg->nproc_per_node;
	j->min_nodes = cfg->nnodes_min;
	j->max_nodes = cfg->nnodes_max;
	j->last_call_ms = cfg->rdzv.last_call_ms;
	strlcpy(j->role, cfg->role, sizeof(j->role));
	if (e->want == W_ROUND || e->my_port == 0)
		pick_master(e);
	strlcpy(j->addr, e->my_addr, sizeof(j->addr));
	j->port = e->my_port;
	j->state = e->want == W_RUNNING ? RS_RUNNING :
	    e->want == W_BARRIER ? RS_DONE : RS_NEW;
	if (j->state == RS_NEW) {
		/* The first round we may join: one we have not run. */
		j->round = e->ran ? e->cur.round + 1 : 0;
		e->join_sent = mono_ms();
		e->join_pending = true;
		e->joined = false;
	} else {
		j->round = e->cur.round;
		j->group_rank = e->cur.group_rank;
		j->group_world_size = e->cur.group_world_size;
		if (j->state == RS_RUNNING && e->live) {
			e->probation = true;
			e->probation_seq = e->seq_out;
		}
	}
	send_msg(e, &m);
}

void
fail(struct esv *e, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	e->want = W_NOTHING;
	conn_close(e);
	rearm(e);
	e->rz->cb.failed(e->rz->cb.ctx, why);
}

/* A ROUND we may act on: the ranks it gives fit in its world. */
static bool
round_sane(struct esv *e, const struct rdzv_round_msg *m)
{
	unsigned n = e->cfg->nproc_per_node;

	if ((unsigned long long)m->base_rank + n <= m->world_size &&
	    (unsigned long long)m->base_role_rank + n <= m->role_world_size)
		return true;
	warn_msg("rendezvous: %s: ROUND %u gives ranks %u..%u of %u (role "
	    "%u..%u of %u) for %u workers: not starting them", e->endpoint,
	    m->round, m->base_rank, m->base_rank + n - 1, m->world_size,
	    m->base_role_rank, m->base_role_rank + n - 1, m->role_world_size,
	    n);
	return false;
}

/* An address of a node of round, ahead of its ROUND. */
void
on_member(struct esv *e, unsigned round, const char *addr)
{
	size_t n = strlen(addr);

	if (round != e->members_round || e->mlen == 0) {
		e->mlen = 0;
		e->members[0] = '\0';
		e->members_lost = false;
		e->members_round = round;
	}
	if (e->mlen + n + 2 > sizeof(e->members)) {
		e->members_lost = true;
		return;
	}
	memcpy(e->members + e->mlen, addr, n);
	e->mlen += n;
	e->members[e->mlen++] = '\n';
	e->members[e->mlen] = '\0';
}

void
on_round(struct esv *e, const struct rdzv_round_msg *m)
{
	struct rdzv_round r;

	/* A round newer than ours: ours is over (its RESTART was lost). */
	if (e->want == W_RUNNING && m->round > e->cur.round) {
		info_msg("rendezvous: round %u assigned while running round "
		    "%u", m->round, e->cur.round);
		e->want = W_NOTHING;
		e->rz->cb.membership_changed(e->rz->cb.ctx);
		return;
	}
	if (e->want != W_ROUND || e->join_pending || !e->joined ||
	    m->round != e->joined_round)
		return;
	if (!round_sane(e, m)) {
		conn_lost(e, "inconsistent ROUND");
		return;
	}
	e->want = W_RUNNING;
	e->cur = *m;
	e->ran = true;
	e->live = true;
	e->fenced = false;
	e->probation = e->outcast = false;	/* a member again */
	/* Our JOIN was received before this was sent: that renews. */
	if (e->join_sent > e->renewed)
		e->renewed = e->join_sent;
	e->participants = e->waiting = 0;
	memset(&r, 0, sizeof(r));
	r.round = m->round;
	r.ranks.group_rank = m->group_rank;
	r.ranks.group_world_size = m->group_world_size;
	r.ranks.local_world_size = e->cfg->nproc_per_node;
	r.ranks.base_rank = m->base_rank;
	r.ranks.world_size = m->world_size;
	r.ranks.base_role_rank = m->base_role_rank;
	r.ranks.role_world_size = m->role_world_size;
	strlcpy(r.master_addr, m->master_addr, sizeof(r.master_addr));
	r.master_port = m->master_port;
	r.use_agent_store = false;
	if (e->mlen > 0 && !e->members_lost && e->members_round == m->round)
		r.members = e->members;
	e->rz->rounds++;
	rearm(e);
	e->rz->cb.done(e->rz->cb.ctx, &r);
}

void
on_restart(struct esv *e, unsigned round)
{
	if (e->probation)
		e->outcast = true;
	if (e->want == W_RUNNING && round > e->cur.round) {
		e->want = W_NOTHING;
		e->rz->cb.membership_changed(e->rz->cb.ctx);
		/* Its workers had all succeeded: it went to the barrier. */
		if (e->want == W_BARRIER)
			on_restart(e, round);
	} else if (e->want == W_BARRIER && round > e->cur.round) {
		/*
		 * Our round was restarted while we waited in its barrier (or
		 * were away): it can pass no more.  Our success counts for a
		 * round that is gone: we join the next, as every node does.
		 */
		info_msg("rendezvous: round %u, which this node finished, was "
		    "superseded by round %u: joining it", e->cur.round, round);
		e->want = W_NOTHING;
		rearm(e);
		e->rz->cb.membership_changed(e->rz->cb.ctx);
	} else if (e->want == W_ROUND && !e->join_pending &&
	    (!e->joined || round > e->joined_round)) {
		/*
		 * Only a RESTART of a round newer than the one we joined: one
		 * sent before our JOIN arrived is answered by that JOIN.
		 */
		send_join(e);
	}
}

void
on_err(struct esv *e, const char *code, const char *text)
{
	/*
	 * Our node id is in use by a live connection of another supervisor:
	 * it may be one that has just died (the server notices within its
	 * heartbeats), so retry with backoff, saying so once; join_timeout
	 * bounds the wait.
	 */
	if (strcmp(code, "duplicate") == 0) {
		if (!e->dup_logged)
			warn_msg("rendezvous: esv-rdzv at %s refused node id "
			    "%s: %s; retrying", e->endpoint, e->node_id, text);
		e->dup_logged = e->outage_logged = true;
		conn_lost(e, code);
		return;
	}
	/*
	 * A closed job is an answer: its barrier did not pass for us (a
	 * round of ours that passed is answered RELEASE), so there is
	 * nothing to reconnect for (esv-supervise(8), "Exit barrier").
	 */
	if (strcmp(code, "closed") == 0 && (e->want == W_BARRIER ||
	    e->want == W_RUNNING)) {
		fail(e, "esv-rdzv at %s: %s, and its exit barrier did not pass "
		    "for round %u of this node", e->endpoint, text,
		    e->cur.round);
		return;
	}
	/* Refusals that retrying cannot cure end the join. */
	if (e->want == W_ROUND && strcmp(code, "limit") != 0) {
		fail(e, "esv-rdzv at %s refused us: %s %s", e->endpoint, code,
		    text);
		return;
	}
	warn_msg("rendezvous: esv-rdzv at %s: %s %s", e->endpoint, code, text);
	conn_lost(e, code);
}
