#include <sys/prctl.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lookup.h"
#include "msg.h"

bool
lookup_numeric(const char *host, unsigned port, struct lookup_answer *a)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->addr[0];
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->addr[0];

	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		a->len[0] = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		a->len[0] = sizeof(*sin6);
	} else
		return false;
	a->n = 1;
	return true;
}

void
lookup_now(const char *host, unsigned port, struct lookup_answer *a)
{
	struct addrinfo hints, *res, *ai;
	char serv[8];
	int r;

	if (lookup_numeric(host, port, a))
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(serv, sizeof(serv), "%u", port);
	if ((r = getaddrinfo(host, serv, &hints, &res)) != 0) {
		snprintf(a->err, sizeof(a->err), "%s: %s", host,
		    r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return;
	}
	for (ai = res; ai != NULL && a->n < LOOKUP_MAX; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(a->addr[0]))
			continue;
		memcpy(&a->addr[a->n], ai->ai_addr, ai->ai_addrlen);
		a->len[a->n++] = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	if (a->n == 0)
		snprintf(a->err, sizeof(a->err), "%s: no IPv4 or IPv6 address",
		    host);
}

pid_t
lookup_start(const char *host, unsigned port, int *fd)
{
	struct lookup_answer a;
	int p[2], e;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		/* Nothing of the parent's but the pipe: no lock, no socket. */
		if (dup2(p[1], 3) == -1)
			_exit(ESV_EXIT_SYSTEM);
		closefrom(4);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		lookup_now(host, port, &a);
		/* Under PIPE_BUF: one write, whole or not at all. */
		_exit(write(3, &a, sizeof(a)) == (ssize_t)sizeof(a) ?
		    ESV_EXIT_OK : ESV_EXIT_SYSTEM);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

int
lookup_read(int fd, struct lookup_answer *a)
{
	ssize_t n;
	unsigned i;

	n = read(fd, a, sizeof(*a));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n != (ssize_t)sizeof(*a)) {
		memset(a, 0, sizeof(*a));
		snprintf(a->err, sizeof(a->err), "the resolver exited without "
		    "an answer");
		return -1;
	}
	/* Our own child's bytes, but checked as any others. */
	a->err[sizeof(a->err) - 1] = '\0';
	if (a->n > LOOKUP_MAX)
		a->n = 0;
	for (i = 0; i < a->n; i++)
		if (a->len[i] != (a->addr[i].ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) ||
		    (a->addr[i].ss_family != AF_INET &&
		    a->addr[i].ss_family != AF_INET6)) {
			a->n = 0;
			snprintf(a->err, sizeof(a->err), "the resolver's answer "
			    "is malformed");
		}
	return 1;
}
