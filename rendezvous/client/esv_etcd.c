/*
 * esv-rdzv-etcd, the etcd backend's server: a child of ours on the other
 * end of a socketpair, which speaks esv-rdzv's protocol to us and etcd's
 * to etcd (rendezvous/etcd/).  Started as the backend's connection
 * (helper_start, from conn_start), waited for, a bounded while, when the
 * rendezvous closes (helper_wait).  The lease it tells is esv_lease.c's.
 *
 * May call esv_conn.c and esv_lease.c (esv_int.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "esv_int.h"
#include "msg.h"
#include "progpath.h"

/* The etcd backend's "connection": a fresh esv-rdzv-etcd. */
void
helper_start(struct esv *e)
{
	const struct rdzv_conf *rc = &e->cfg->rdzv;
	char path[PATH_MAX], ttl[32];
	char *argv[20];
	int a = 0, sv[2], r;

	if (e->helper_pid != 0) {
		/* The last one revokes its lease first: its pid is ours yet. */
		e->reconnect_at = mono_ms() + BACKOFF_MIN_MS;
		rearm(e);
		return;
	}
	prog_path("esv-rdzv-etcd", "rendezvous", "ESV_RDZV_ETCD", path,
	    sizeof(path));
	snprintf(ttl, sizeof(ttl), "%ums", rdzv_lease_ms(rc, 1));
	argv[a++] = path;
	argv[a++] = "--endpoints";
	argv[a++] = (char *)e->cfg->rdzv_endpoints;
	argv[a++] = "--run-id";
	argv[a++] = (char *)e->cfg->run_id;
	argv[a++] = "--prefix";
	argv[a++] = (char *)rc->prefix;
	argv[a++] = "--lease-ttl";
	argv[a++] = ttl;
	if (rc->cacert[0] != '\0') {
		argv[a++] = "--cacert";
		argv[a++] = (char *)rc->cacert;
	}
	if (rc->cert[0] != '\0') {
		argv[a++] = "--cert";
		argv[a++] = (char *)rc->cert;
		argv[a++] = "--key";
		argv[a++] = (char *)rc->key;
	}
	argv[a] = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1) {
		conn_lost(e, strerror(errno));
		return;
	}
	r = prog_spawn(argv, sv[1], true, &e->helper_pid);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		e->helper_pid = 0;
		warn_msg("rendezvous: %s: %s", path, strerror(r));
		conn_lost(e, "esv-rdzv-etcd did not start");
		return;
	}
	e->w.fd = sv[0];
	e->conn = C_GREETING;
	if (loop_add(e->rz->loop, &e->w, EPOLLIN) == -1) {
		r = errno;
		close(sv[0]);
		e->conn = C_DOWN;
		conn_lost(e, strerror(r));
		return;
	}
	e->last_rx = mono_ms();
	rearm(e);
}

/*
 * The loop is over: wait, a bounded while, for esv-rdzv-etcd to write
 * the CLOSE and revoke the lease (it gives up after 3 s), so that the
 * job is out of etcd when the supervisor's exit says it is over, and no
 * process of ours outlives it.
 */
void
helper_wait(struct esv *e)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long long deadline = mono_ms() + 4000;

	while (waitpid(e->helper_pid, NULL, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			kill(e->helper_pid, SIGKILL);
			waitpid(e->helper_pid, NULL, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	e->helper_pid = 0;
}
