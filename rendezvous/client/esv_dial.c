/*
 * Reaching esv-rdzv: its name looked up in a child (lookup.h), a
 * non-blocking connect to the next of its addresses, and, when the
 * endpoint is on this host and free, an esv-rdzv of our own started on
 * it first (rdzv_host.c).  For etcd, the "connection" is a fresh
 * esv-rdzv-etcd (esv_etcd.c).
 *
 * May call esv_etcd.c, esv_conn.c and esv_lease.c (esv_int.h): a failed
 * attempt is a connection lost (conn_lost), which schedules the next.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "esv_int.h"
#include "msg.h"
#include "rdzv_host.h"

/* Our endpoint is local and free: host the server (torch's is_host). */
static void
maybe_host(struct esv *e)
{
	struct rdzv_host_args ha = { e->token_path, e->cfg->run_id,
	    e->log_path };
	char err[256];
	int r;

	if (!e->may_host || e->host_pid != 0 || e->rz->stopping)
		return;
	r = rdzv_host_try(&e->peer, &ha, &e->host_pid, err, sizeof(err));
	if (r == -1)
		warn_msg("rendezvous: %s", err);
	else if (r == 1) {
		info_msg("rendezvous: hosting esv-rdzv on %s (pid %d); this "
		    "node is the job's single point of failure for joins",
		    e->endpoint, (int)e->host_pid);
		if (e->rz->cb.host_changed != NULL)
			e->rz->cb.host_changed(e->rz->cb.ctx, 0, e->host_pid);
	}
}

/* The endpoint's addresses are known: connect to the next of them. */
static void
conn_connect(struct esv *e)
{
	const struct sockaddr_storage *sa;
	socklen_t len;
	int fd, r;

	maybe_host(e);
	e->peer_next %= e->peer.n;
	sa = &e->peer.addr[e->peer_next];
	len = e->peer.len[e->peer_next++];
	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		conn_lost(e, strerror(errno));
		return;
	}
	if (connect(fd, (const struct sockaddr *)sa, len) == -1 &&
	    errno != EINPROGRESS) {
		r = errno;
		close(fd);
		conn_lost(e, strerror(r));
		return;
	}
	e->w.fd = fd;
	e->conn = C_CONNECTING;
	if (loop_add(e->rz->loop, &e->w, EPOLLIN | EPOLLOUT) == -1) {
		r = errno;
		close(fd);
		e->conn = C_DOWN;
		conn_lost(e, strerror(r));
		return;
	}
	e->last_rx = mono_ms();
	rearm(e);
}

static void
on_lookup(struct watch *w, uint32_t events)
{
	struct esv *e = w->ctx;
	int r;

	(void)events;
	if ((r = lookup_read(w->fd, &e->peer)) == 0)
		return;
	loop_del(e->rz->loop, w);
	close(w->fd);
	w->fd = -1;
	e->conn = C_DOWN;
	if (r == 1 && e->peer.n > 0)
		conn_connect(e);
	else
		conn_lost(e, e->peer.err);
}

/*
 * A numeric endpoint is connected to at once; a name is looked up by a
 * child first (lookup.h), since DNS may take seconds the loop has not
 * got, and anew for every connection, so that a moved server is found.
 */
void
conn_start(struct esv *e)
{
	int fd;

	e->reconnect_at = 0;
	if (e->via_helper) {
		helper_start(e);
		return;
	}
	if (lookup_numeric(e->host, e->port, &e->peer)) {
		conn_connect(e);
		return;
	}
	if (e->lookup_pid != 0) {
		/* The last resolver is not reaped yet: its pid is still ours. */
		e->reconnect_at = mono_ms() + BACKOFF_MIN_MS;
		rearm(e);
		return;
	}
	if ((e->lookup_pid = lookup_start(e->host, e->port, &fd)) == -1) {
		e->lookup_pid = 0;
		conn_lost(e, strerror(errno));
		return;
	}
	e->lw = (struct watch){ .fd = fd, .fn = on_lookup, .ctx = e };
	if (loop_add(e->rz->loop, &e->lw, EPOLLIN) == -1) {
		kill(e->lookup_pid, SIGKILL);
		close(fd);
		e->lw.fd = -1;
		conn_lost(e, strerror(errno));
		return;
	}
	e->conn = C_RESOLVING;
	e->last_rx = mono_ms();
	rearm(e);
}
