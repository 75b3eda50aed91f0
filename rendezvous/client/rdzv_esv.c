/*
 * The "esv" rendezvous backend: one TCP connection to esv-rdzv for the
 * life of the job (protocol: esv-rdzv(8), lib/rdzvproto.h).  The server
 * pushes what torch's agents poll for (a node waiting, a node lost), so a
 * membership change reaches the supervisor in one round trip.
 *
 * The connection is the node's liveness: losing it must not touch the
 * workers at once.  We reconnect with backoff and tell the server what we
 * run, so a restarted server rebuilds the round from its nodes.  But the
 * workers hold their ranks only under a lease (esv_lease.c).
 *
 * The "etcd" backend is the same, with esv-rdzv-etcd as the server
 * (esv_etcd.c).
 *
 * This file is the top of both (esv_int.h names the layers): the
 * backends' operations (rdzv.h), struct esv made and freed, and the one
 * timer's deadlines (on_timer).  It may call every layer below it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "esv_int.h"
#include "msg.h"
#include "rdzv_host.h"

#define HOST_STOP_MS	2000	/* for our esv-rdzv to go on SIGTERM */

static void
on_timer(struct watch *w, uint32_t events)
{
	struct esv *e = w->ctx;
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	/* An acknowledgement that came while we were late counts. */
	if (lease_over(e, now)) {
		lease_check(e, true);
		now = mono_ms();
	}
	if (e->want == W_ROUND && now >= e->join_deadline) {
		fail(e, "no round within join_timeout (%u s): %u node(s) had "
		    "joined, %u needed", e->cfg->rdzv.join_timeout_ms / 1000,
		    e->participants, e->cfg->nnodes_min);
		return;
	}
	if (e->want == W_BARRIER && now >= e->barrier_deadline &&
	    e->peer_lost) {
		struct rdzv_msg close = { .verb = RV_CLOSE };

		/* The job failed here: it is over for every node. */
		send_msg(e, &close);
		fail(e, "exit barrier timed out after %u ms, waiting for a node "
		    "of round %u that was lost before it said it had finished: "
		    "the job's work is not known to be done",
		    e->cfg->rdzv.exit_barrier_ms, e->cur.round);
		return;
	}
	if (e->want == W_BARRIER && now >= e->barrier_deadline) {
		warn_msg("rendezvous: exit barrier timed out after %u ms: "
		    "other nodes are still running", e->cfg->rdzv.exit_barrier_ms);
		e->want = W_NOTHING;
		rearm(e);
		e->rz->cb.barrier_done(e->rz->cb.ctx, false);
		return;
	}
	if (e->conn == C_DOWN) {
		if (e->want != W_NOTHING && now >= e->reconnect_at)
			conn_start(e);
		else
			rearm(e);
		return;
	}
	if (e->conn == C_RESOLVING) {
		if (now >= e->last_rx + LOOKUP_MS)
			conn_lost(e, "name lookup timed out");
		else
			rearm(e);
		return;
	}
	if (e->conn != C_UP && now >= e->last_rx + GREETING_MS) {
		conn_lost(e, "no greeting from the server");
		return;
	}
	if (e->hb_ms > 0 && !hold_conn(e) &&
	    now >= e->last_rx + silence_ms(e)) {
		conn_lost(e, "heartbeat lost");
		return;
	}
	if (e->conn == C_UP && now >= e->last_tx + e->hb_ms)
		send_ping(e);
	rearm(e);
}

/* What both backends of this file need. */
static struct esv *
esv_new(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	struct esv *e;
	char hn[256], nonce[RDZV_NONCE_LEN + 1];
	const char *id;

	if (!rdzv_name_ok(cfg->run_id) || !rdzv_name_ok(cfg->role)) {
		snprintf(err, errlen, "rdzv_id %s, role %s: names for the "
		    "rendezvous are 1-%d characters of A-Z a-z 0-9 . _ : @ + -",
		    cfg->run_id, cfg->role, RDZV_NAME_MAX);
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rz->priv = e;
	e->rz = rz;
	e->cfg = cfg;
	e->w = (struct watch){ .fd = -1, .fn = on_socket, .ctx = e };
	e->lw.fd = -1;
	e->lease_ms = rdzv_lease_ms(&cfg->rdzv, 0);
	e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
	/* At start-up, before the loop runs: a name may wait on DNS. */
	if (cfg->local_addr[0] != '\0')
		lookup_now(cfg->local_addr, 0, &e->local);
	e->tw = (struct watch){ .fn = on_timer, .ctx = e };
	if ((e->tw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(rz->loop, &e->tw, EPOLLIN) == -1) {
		snprintf(err, errlen, "unable to create a timer: %s",
		    strerror(errno));
		return NULL;
	}
	rdzv_nonce(nonce);
	strlcpy(e->instance, nonce, sizeof(e->instance));
	id = getenv("ESV_RDZV_NODE_ID");
	if (id != NULL && *id != '\0') {
		/* Tests: two supervisors with one node id, on purpose. */
		if (!rdzv_name_ok(id)) {
			snprintf(err, errlen, "ESV_RDZV_NODE_ID %s: not a name "
			    "for the rendezvous", id);
			return NULL;
		}
		strlcpy(e->node_id, id, sizeof(e->node_id));
		return e;
	}
	if (gethostname(hn, sizeof(hn)) == -1 || !rdzv_name_ok(hn))
		strlcpy(hn, "node", sizeof(hn));
	/*
	 * torch's descriptor shape, host_pid_N, with N random for the life
	 * of this supervisor: containers repeat host names and pids (a pid
	 * namespace of their own), and the server rebuilds a round from
	 * node ids after its restart, so the id must not change while we
	 * live.
	 */
	if ((size_t)snprintf(e->node_id, sizeof(e->node_id), "%.100s_%d_%08x",
	    hn, (int)getpid(), arc4random()) >= sizeof(e->node_id))
		strlcpy(e->node_id, "node", sizeof(e->node_id));
	return e;
}

static int
esv_open(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	struct rdzv_host_args ha;
	struct esv *e;

	if ((e = esv_new(rz, err, errlen)) == NULL)
		return -1;
	if (pathf(e->log_path, sizeof(e->log_path), "%s/%s", cfg->jobdir,
	    ESV_RDZV_LOG) == -1) {
		snprintf(err, errlen, "%s: JOBDIR path too long", cfg->jobdir);
		return -1;
	}
	rdzv_host_lease(e->lease_ms);
	if (cfg->standalone) {
		ha = (struct rdzv_host_args){ e->token_path, cfg->run_id,
		    e->log_path };
		if (pathf(e->token_path, sizeof(e->token_path), "%s/%s",
		    cfg->jobdir, ESV_RDZV_TOKEN) == -1 ||
		    rdzv_host_private(&ha, &e->port, &e->host_pid, err,
		    errlen) == -1)
			return -1;
		strlcpy(e->host, "127.0.0.1", sizeof(e->host));
		e->may_host = true;
	} else {
		strlcpy(e->host, cfg->rdzv_host, sizeof(e->host));
		e->port = cfg->rdzv_port;
		strlcpy(e->token_path, cfg->rdzv.token_file,
		    sizeof(e->token_path));
		e->may_host = cfg->rdzv.is_host != 0;
	}
	if (e->token_path[0] == '\0') {
		/* torch's c10d has no token either; say once what that means. */
		e->token[0] = '\0';
		warn_msg("rendezvous: no token_file: joins to %s:%u are not "
		    "authenticated (as torch's c10d): anyone who reaches it can "
		    "join job %s or break its rounds; give every node rdzv_conf "
		    "token_file=FILE (see esv-rdzv(8))", e->host, e->port,
		    cfg->run_id);
	} else if (rdzv_token_load(e->token_path, e->token, sizeof(e->token),
	    err, errlen) == -1)
		return -1;
	snprintf(e->endpoint, sizeof(e->endpoint), strchr(e->host, ':') ?
	    "[%s]:%u" : "%s:%u", e->host, e->port);
	return 0;
}

static int
esv_join(struct rdzv *rz)
{
	struct esv *e = rz->priv;

	e->want = W_ROUND;
	e->live = e->fenced = false;	/* the workers are gone */
	e->join_deadline = mono_ms() + e->cfg->rdzv.join_timeout_ms;
	e->participants = e->waiting = 0;
	info_msg("rendezvous: joining job %s at %s: waiting for a round of "
	    "%u to %u nodes, %u s at most (join_timeout)", e->cfg->run_id,
	    e->endpoint, e->cfg->nnodes_min, e->cfg->nnodes_max,
	    e->cfg->rdzv.join_timeout_ms / 1000);
	if (e->conn == C_UP)
		send_join(e);
	else if (e->conn == C_DOWN && e->reconnect_at == 0)
		conn_start(e);
	rearm(e);
	return 0;
}

static void
esv_leave(struct rdzv *rz)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_LEAVE };

	if (e->want == W_NOTHING && e->conn == C_DOWN)
		return;
	send_msg(e, &m);
	e->want = W_NOTHING;
	e->live = false;
	conn_close(e);
	e->reconnect_at = 0;
	rearm(e);
	rz->cb.status_changed(rz->cb.ctx);
}

static int
esv_barrier(struct rdzv *rz, unsigned timeout_ms)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_BARRIER };

	e->want = W_BARRIER;
	e->live = false;
	e->peer_lost = false;
	e->barrier_deadline = mono_ms() + timeout_ms;
	info_msg("rendezvous: round %u done here: waiting in its exit barrier "
	    "for the other nodes, %u ms at most (exit_barrier_timeout)",
	    e->cur.round, timeout_ms);
	m.u.n = e->cur.round;
	send_msg(e, &m);
	rearm(e);
	return 0;
}

/* Before worker exits are judged (rdzv_check). */
static void
esv_check(struct rdzv *rz)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return;
	lease_check(e, true);
	rearm(e);
}

static void
esv_status(struct rdzv *rz, struct rdzv_status *st)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return;
	strlcpy(st->endpoint, e->endpoint, sizeof(st->endpoint));
	st->connected = e->conn == C_UP;
	st->nodes_waiting = e->waiting;
	st->participants = e->participants;
	st->host_pid = e->host_pid;
	st->lookup_pid = e->lookup_pid;
	st->helper_pid = e->helper_pid;
}

static bool
esv_child_exited(struct rdzv *rz, pid_t pid, int status)
{
	struct esv *e = rz->priv;

	if (e == NULL)
		return false;
	if (pid == e->lookup_pid) {
		e->lookup_pid = 0;
		return true;
	}
	if (pid == e->helper_pid) {
		if (status != 0)
			warn_msg("rendezvous: esv-rdzv-etcd (pid %d) exited "
			    "(status 0x%x)", (int)pid, status);
		e->helper_pid = 0;
		return true;
	}
	if (pid != e->host_pid)
		return false;
	warn_msg("rendezvous: hosted esv-rdzv (pid %d) exited (status 0x%x)",
	    (int)e->host_pid, status);
	e->host_pid = 0;
	if (rz->cb.host_changed != NULL)
		rz->cb.host_changed(rz->cb.ctx, pid, 0);
	return true;
}

/*
 * Our esv-rdzv goes with us, a private one or the job's: the other nodes
 * needed it until the exit barrier released them all (or timed out), or
 * the job ended here by a failure or a signal, which ends it for them
 * too (as torch's store on the host).  Left running, it would hold the
 * port and the job's settings for the next job on this host.  Waited for,
 * a bounded while, so that nothing of ours outlives the supervisor.
 */
static void
host_stop(struct esv *e)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long long deadline = mono_ms() + HOST_STOP_MS;

	kill(e->host_pid, SIGTERM);
	while (waitpid(e->host_pid, NULL, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			kill(e->host_pid, SIGKILL);
			waitpid(e->host_pid, NULL, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	if (e->rz->cb.host_changed != NULL)
		e->rz->cb.host_changed(e->rz->cb.ctx, e->host_pid, 0);
	e->host_pid = 0;
}

static void
esv_close(struct rdzv *rz, bool job_over)
{
	struct esv *e = rz->priv;
	struct rdzv_msg m = { .verb = RV_CLOSE };

	if (e == NULL)
		return;
	if (job_over)
		send_msg(e, &m);
	conn_close(e);
	if (e->helper_pid != 0)
		helper_wait(e);
	if (e->host_pid != 0)
		host_stop(e);
	loop_del(rz->loop, &e->tw);
	close(e->tw.fd);
	explicit_bzero(e->token, sizeof(e->token));
	free(e);
	rz->priv = NULL;
}

/*
 * etcd: the first member's address is looked up now, before the loop
 * runs, for the route MASTER_ADDR is taken from; esv-rdzv-etcd's curl
 * resolves names on its own thread.
 */
static int
etcd_open(struct rdzv *rz, char *err, size_t errlen)
{
	const struct rdzv_params *cfg = rz->cfg;
	char first[300], host[256], why[256];
	const char *hs;
	unsigned port;
	struct esv *e;

	if ((e = esv_new(rz, err, errlen)) == NULL)
		return -1;
	e->via_helper = true;
	/* etcd's lease; its grace is the time the workers get, once lost. */
	e->lease_ms = rdzv_lease_ms(&cfg->rdzv, 1);
	e->grace_ms = rdzv_fence_grace_ms(e->lease_ms);
	e->token[0] = '\0';
	strlcpy(e->endpoint, cfg->rdzv_endpoints, sizeof(e->endpoint));
	strlcpy(first, cfg->rdzv_endpoints, sizeof(first));
	first[strcspn(first, ",")] = '\0';
	hs = strstr(first, "://") != NULL ? strstr(first, "://") + 3 : first;
	((char *)hs)[strcspn(hs, "/")] = '\0';
	if (cfg->local_addr[0] == '\0' && endpoint_parse(hs, 2379, host,
	    sizeof(host), &port, why, sizeof(why)) == 0)
		lookup_now(host, port, &e->peer);
	return 0;
}

const struct rdzv_backend rdzv_etcd_backend = {
	.name = "etcd",
	.open = etcd_open,
	.join = esv_join,
	.leave = esv_leave,
	.barrier = esv_barrier,
	.status = esv_status,
	.child_exited = esv_child_exited,
	.close = esv_close,
	.check = esv_check,
};

const struct rdzv_backend rdzv_esv_backend = {
	.name = "esv",
	.open = esv_open,
	.join = esv_join,
	.leave = esv_leave,
	.barrier = esv_barrier,
	.status = esv_status,
	.child_exited = esv_child_exited,
	.close = esv_close,
	.check = esv_check,
};
