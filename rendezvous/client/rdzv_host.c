#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atomicfile.h"
#include "progpath.h"
#include "rdzv_host.h"



/*
 * esv-rdzv on fd 3 = lfd, in a session of its own, belonging to the job
 * that hosts it: it serves that job's run id only, goes with this
 * supervisor (--parent: the kernel's parent-death signal, whatever kills
 * us), and holds none of our stdio, which may be a Slurm step's (that
 * step completes only when every holder has closed it): stdin is
 * /dev/null, stdout and stderr append to logpath.
 */
/*
 * The lease of the job's nodes, for the server we host (--lease).  Set
 * once at the start, before any server is hosted.
 */
static unsigned host_lease_ms;

void
rdzv_host_lease(unsigned ms)
{
	host_lease_ms = ms;
}

static int
spawn_server(int lfd, const struct rdzv_host_args *ha, pid_t *pid,
    char *err, size_t errlen)
{
	char path[PATH_MAX], parent[32], lease[32];
	char *argv[18];
	int a = 0, logfd, e;

	prog_path("esv-rdzv", "rendezvous", "ESV_RDZV", path, sizeof(path));
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	argv[a++] = path;
	argv[a++] = "--listen-fd";
	argv[a++] = "3";
	/* A node without a token hosts a server without one. */
	if (ha->tokenfile[0] == '\0')
		argv[a++] = "--allow-no-token";
	else {
		argv[a++] = "--token-file";
		argv[a++] = (char *)ha->tokenfile;
	}
	argv[a++] = "--only-job";
	argv[a++] = (char *)ha->run_id;
	argv[a++] = "--parent";
	argv[a++] = parent;
	if (host_lease_ms > 0) {
		snprintf(lease, sizeof(lease), "%ums", host_lease_ms);
		argv[a++] = "--lease";
		argv[a++] = lease;
	}
	argv[a] = NULL;
	if ((logfd = open(ha->logpath, O_WRONLY | O_APPEND | O_CREAT |
	    O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600)) == -1) {
		snprintf(err, errlen, "unable to open %s: %s", ha->logpath,
		    strerror(errno));
		return -1;
	}
	e = prog_spawn_logged(argv, lfd, logfd, pid);
	close(logfd);
	if (e != 0) {
		snprintf(err, errlen, "unable to start %s: %s", path,
		    strerror(e));
		return -1;
	}
	return 0;
}

static int
listen_on(const struct sockaddr *sa, socklen_t len)
{
	int fd, one = 1, e;

	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, len) == -1 || listen(fd, SOMAXCONN) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
rdzv_host_private(const struct rdzv_host_args *ha, unsigned *port,
    pid_t *pid, char *err, size_t errlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	unsigned char rnd[32];
	char token[2 * sizeof(rnd) + 2];
	size_t i;
	int fd, r;

	arc4random_buf(rnd, sizeof(rnd));
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	strlcat(token, "\n", sizeof(token));
	if (atomic_write(ha->tokenfile, token, strlen(token), 0600) == -1) {
		snprintf(err, errlen, "unable to write %s: %s", ha->tokenfile,
		    strerror(errno));
		return -1;
	}
	if ((fd = listen_on((struct sockaddr *)&sin, sizeof(sin))) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1) {
		snprintf(err, errlen, "unable to listen on 127.0.0.1: %s",
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	r = spawn_server(fd, ha, pid, err, errlen);
	close(fd);
	return r;
}

int
rdzv_host_try(const struct lookup_answer *a, const struct rdzv_host_args *ha,
    pid_t *pid, char *err, size_t errlen)
{
	unsigned i;
	int fd = -1, r;

	/* Not an address of ours (EADDRNOTAVAIL), or taken: a client only. */
	for (i = 0; i < a->n && fd == -1; i++)
		fd = listen_on((const struct sockaddr *)&a->addr[i], a->len[i]);
	if (fd == -1)
		return 0;
	r = spawn_server(fd, ha, pid, err, errlen);
	close(fd);
	return r == 0 ? 1 : -1;
}
