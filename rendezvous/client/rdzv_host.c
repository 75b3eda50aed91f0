#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atomicfile.h"
#include "progpath.h"
#include "rdzv_host.h"


/*
 * A hosted server outlives a supervisor killed by SIGKILL only until its
 * last client is gone: it must not linger as a stray daemon.
 */
#define HOST_IDLE_EXIT	"10"

/* The lease of the job's nodes, for the server we host (--lease). */
static unsigned host_lease_ms;

void
rdzv_host_lease(unsigned ms)
{
	host_lease_ms = ms;
}

/* esv-rdzv on fd 3 = lfd, its stdout onto our stderr, in its own session. */
static int
spawn_server(int lfd, const char *tokenfile, pid_t *pid, char *err,
    size_t errlen)
{
	char path[PATH_MAX], lease[32];
	char *argv[12];
	int a = 0;

	argv[a++] = path;
	argv[a++] = "--listen-fd";
	argv[a++] = "3";
	/* A node without a token hosts a server without one. */
	if (tokenfile[0] == '\0')
		argv[a++] = "--allow-no-token";
	else {
		argv[a++] = "--token-file";
		argv[a++] = (char *)tokenfile;
	}
	argv[a++] = "--idle-exit";
	argv[a++] = HOST_IDLE_EXIT;
	if (host_lease_ms > 0) {
		snprintf(lease, sizeof(lease), "%ums", host_lease_ms);
		argv[a++] = "--lease";
		argv[a++] = lease;
	}
	argv[a] = NULL;
	int e;

	prog_path("esv-rdzv", "rendezvous", "ESV_RDZV", path, sizeof(path));
	if ((e = prog_spawn(argv, lfd, true, pid)) != 0) {
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
rdzv_host_private(const char *tokenpath, unsigned *port, pid_t *pid,
    char *err, size_t errlen)
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
	if (atomic_write(tokenpath, token, strlen(token), 0600) == -1) {
		snprintf(err, errlen, "unable to write %s: %s", tokenpath,
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
	r = spawn_server(fd, tokenpath, pid, err, errlen);
	close(fd);
	return r;
}

int
rdzv_host_try(const struct lookup_answer *a, const char *tokenfile,
    pid_t *pid, char *err, size_t errlen)
{
	unsigned i;
	int fd = -1, r;

	/* Not an address of ours (EADDRNOTAVAIL), or taken: a client only. */
	for (i = 0; i < a->n && fd == -1; i++)
		fd = listen_on((const struct sockaddr *)&a->addr[i], a->len[i]);
	if (fd == -1)
		return 0;
	r = spawn_server(fd, tokenfile, pid, err, errlen);
	close(fd);
	return r == 0 ? 1 : -1;
}
