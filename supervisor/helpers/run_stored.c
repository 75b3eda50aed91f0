/*
 * The workers' store, served by the agent (agent_store, esv-job.ini(5)):
 * before each join this node binds a listening socket of its own and
 * offers its port as MASTER_PORT; if the round makes it group rank 0, a
 * fresh esv-stored serves that very socket for the attempt, so no other
 * process can take the port between its choice and its use, and no
 * attempt sees another's keys.  Every node's workers are told
 * TORCHELASTIC_USE_AGENT_STORE=True: nobody among them binds a port.
 *
 * The store lives until the job's last worker is done: after a failure
 * or a restart the attempt is over on every node and it goes with the
 * attempt's workers (finish_cleanup); after a success the other nodes'
 * workers may still use it, and it goes when the supervisor exits, after
 * the exit barrier (static: store_linger).  And with the supervisor,
 * whatever kills it (esv-stored --parent).
 *
 * Who may reach it (esv-stored(8), "Trust model"): a job of one node
 * listens on loopback only; a job of several accepts, besides this host's
 * processes of the job's uid, the round's nodes, which the rendezvous
 * names and this file hands on in supervise/store.allow.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "helpers.h"
#include "msg.h"
#include "progpath.h"

/* A job of one node: its workers are all here. */
static bool
one_node(const struct job_config *cfg)
{
	return cfg->standalone || cfg->nnodes_max == 1;
}

/*
 * A listening TCP socket on every address, [::] with v4 mapped if the
 * host has IPv6, else 0.0.0.0, as torch's own store binds; on 127.0.0.1
 * only if loopback.  -1, errno.
 */
static int
listen_any(unsigned port, unsigned *bound, bool loopback)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
	    .sin6_port = htons(port), .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in s4 = { .sin_family = AF_INET,
	    .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, off = 0, on = 1, e;

	if (loopback)
		s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd != -1 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
	    sizeof(off)) == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR,
	    &on, sizeof(on)) == -1 || bind(fd, (struct sockaddr *)&s6,
	    sizeof(s6)) == -1)) {
		e = errno;
		close(fd);
		fd = -1;
		/* In use is in use on v4 too: say so, not that v6 failed. */
		if (e == EADDRINUSE) {
			errno = e;
			return -1;
		}
	}
	if (fd == -1) {
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) ==
		    -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
		    sizeof(on)) == -1 || bind(fd, (struct sockaddr *)&s4,
		    sizeof(s4)) == -1)
			goto fail;
	}
	if (listen(fd, 4096) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		goto fail;
	*bound = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	errno = e;
	return -1;
}

/*
 * Before a join: the socket whose port this node offers.  A static job of
 * several nodes has its MASTER_PORT fixed: node 0 binds it, the others
 * offer nothing.  -1 (with a warning) if the port cannot be had.
 */
int
store_prepare(struct supervisor *sv)
{
	const struct job_config *cfg = sv->cfg;
	bool fixed = strcmp(cfg->rdzv_backend, "static") == 0 &&
	    (cfg->master_port_set || cfg->nnodes_max != 1);
	unsigned port = 0;

	sv->rdzv.rz.offer_port = 0;
	if (!cfg->agent_store)
		return 0;
	store_drop(&sv->st);
	if (fixed && cfg->node_rank != 0)
		return 0;
	if ((sv->st.fd = listen_any(fixed ? cfg->master_port : 0, &port,
	    one_node(cfg))) == -1) {
		warn_sys("agent store: unable to listen on port %u",
		    fixed ? cfg->master_port : 0);
		return -1;
	}
	sv->rdzv.rz.offer_port = port;
	return 0;
}

/* The socket of a join whose round another node serves. */
void
store_drop(struct store_run *st)
{
	if (st->fd != -1)
		close(st->fd);
	st->fd = -1;
}

/*
 * The round is known: group rank 0 serves its socket with a fresh
 * esv-stored; the others let theirs go.  -1 if it could not start.
 */
int
store_round(struct supervisor *sv)
{
	char path[PATH_MAX], parent[32], state[PATH_MAX], allow[PATH_MAX];
	char peraddr[32];
	char *argv[] = { path, "--listen-fd", "3", "--parent", parent,
	    "--max-conns-per-addr", peraddr, "--allow-file", allow,
	    "--state-file", state, NULL };
	const char *m = sv->rdzv.round.members;
	int e;

	if (!sv->cfg->agent_store)
		return 0;
	sv->rdzv.round.use_agent_store = true;
	if (sv->rdzv.round.ranks.group_rank != 0 || sv->st.fd == -1 ||
	    sv->rdzv.round.master_port != sv->rdzv.rz.offer_port) {
		store_drop(&sv->st);
		return 0;
	}
	/* Its predecessor not reaped yet: it goes now, reaped as a stray. */
	if (sv->st.pid > 0)
		kill(sv->st.pid, SIGKILL);
	sv->st.pid = 0;
	sv->st.stopping = false;
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	/* Another node's workers, two connections each in torch 1.13. */
	snprintf(peraddr, sizeof(peraddr), "%u", sv->cfg->nproc_per_node > 128 ?
	    4 * sv->cfg->nproc_per_node : 512);
	if (pathf(state, sizeof(state), "%s/%s", sv->cfg->jobdir,
	    ESV_STORE_STATE) == -1)
		argv[9] = NULL;		/* counts unsaid rather than no store */
	if (one_node(sv->cfg)) {
		/* Bound to 127.0.0.1: the workers must be told that. */
		strlcpy(sv->rdzv.round.master_addr, "127.0.0.1",
		    sizeof(sv->rdzv.round.master_addr));
		m = "";
	}
	/*
	 * The round's nodes, before esv-stored reads them: written whole
	 * (atomic_write), so a SIGHUP never finds half a list.  Unknown (a
	 * backend that does not say them): any remote host may connect.
	 */
	if (m == NULL) {
		memmove(&argv[7], &argv[9], 3 * sizeof(argv[0]));
		warn_msg("agent store: the %s rendezvous did not name round "
		    "%u's nodes: any host may connect",
		    sv->cfg->rdzv_backend, sv->rdzv.round.round);
	} else if (pathf(allow, sizeof(allow), "%s/%s", sv->cfg->jobdir,
	    ESV_STORE_ALLOW) == -1 || atomic_write(allow, m, strlen(m),
	    0644) == -1) {
		warn_sys("agent store: %s: unable to write the round's nodes",
		    allow);
		store_drop(&sv->st);
		return -1;
	}
	prog_path("esv-stored", "store", "ESV_STORED", path, sizeof(path));
	e = prog_spawn(argv, sv->st.fd, true, &sv->st.pid);
	store_drop(&sv->st);
	if (e != 0) {
		sv->st.pid = 0;
		warn_msg("agent store: unable to start %s: %s", path,
		    strerror(e));
		return -1;
	}
	snprintf(sv->st.where, sizeof(sv->st.where), "%s:%u",
	    sv->rdzv.round.master_addr, sv->rdzv.round.master_port);
	info_msg("agent store: esv-stored (pid %d) serves the workers at %s",
	    (int)sv->st.pid, sv->st.where);
	return 0;
}

/* The attempt is over: its store goes (reaped by store_exited). */
void
store_stop(struct store_run *st)
{
	if (st->pid > 0 && !st->stopping) {
		kill(st->pid, SIGTERM);
		st->stopping = true;
	}
	st->where[0] = '\0';
}

/*
 * The static backend has no exit barrier: after this node's workers
 * succeeded, the store it serves (node 0) stays for the other nodes'
 * workers until none of them is connected, exit_barrier_timeout at most
 * (esv-stored(8)).  True if it does: its exit, or the timer, ends the
 * wait (store_exited).
 */
bool
store_linger(struct supervisor *sv)
{
	if (sv->st.pid <= 0 || sv->st.stopping || one_node(sv->cfg) ||
	    strcmp(sv->cfg->rdzv_backend, "static") != 0 ||
	    sv->cfg->rdzv.exit_barrier_ms == 0 ||
	    kill(sv->st.pid, SIGUSR1) == -1)
		return false;
	sv->st.lingering = true;
	info_msg("agent store: kept for the other nodes' workers until none "
	    "is connected, %u ms at most (exit_barrier_timeout)",
	    sv->cfg->rdzv.exit_barrier_ms);
	return true;
}

/*
 * A child was reaped: STORE_NOT_OURS if it was not the store;
 * STORE_LINGER_OVER if it was the one store_linger kept, whose end the
 * group waits for.
 */
enum store_exit
store_exited(struct store_run *st, pid_t pid, int status)
{
	if (pid != st->pid || pid <= 0)
		return STORE_NOT_OURS;
	if (st->lingering) {
		st->pid = 0;
		st->lingering = false;
		st->where[0] = '\0';
		info_msg("agent store: no client left: it is gone");
		return STORE_LINGER_OVER;
	}
	if (!st->stopping)
		warn_msg("agent store: esv-stored (pid %d) ended (status 0x%x) "
		    "while the workers run: they will fail without it",
		    (int)pid, status);
	st->pid = 0;
	st->stopping = false;
	st->where[0] = '\0';
	return STORE_REAPED;
}
