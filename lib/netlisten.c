/* The sockets of the esv daemons that listen on TCP: esv-rdzv, esv-healthd. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "netlisten.h"

void
net_addr_fmt(const struct sockaddr_storage *ss, char *ip, size_t il, char *peer,
    size_t pl)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;

	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		/* Dual-stack sockets show IPv4 peers as ::ffff:a.b.c.d. */
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], ip, il);
		snprintf(peer, pl, "%s:%u", ip, ntohs(s6->sin6_port));
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, il);
		snprintf(peer, pl, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &s4->sin_addr, ip, il);
		snprintf(peer, pl, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		strlcpy(ip, "?", il);
		strlcpy(peer, "?", pl);
	}
}

static int
bind_one(int family, const struct sockaddr *sa, socklen_t sl)
{
	int fd, one = 1, zero = 0;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
		    sa->sa_family == AF_INET6 &&
		    IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)
		    (const void *)sa)->sin6_addr) ? &zero : &one, sizeof(int));
	if (bind(fd, sa, sl) == -1 || listen(fd, SOMAXCONN) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
listen_wild(unsigned port, const char *arg, void (*add)(int))
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
	    .sin6_addr = IN6ADDR_ANY_INIT, .sin6_port = htons(port) };
	struct sockaddr_in s4 = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = htons(port) };
	int fd;

	/* One dual-stack socket, or IPv4 alone where there is no IPv6. */
	fd = bind_one(AF_INET6, (struct sockaddr *)&s6, sizeof(s6));
	if (fd == -1 && errno != EADDRINUSE && errno != EACCES)
		fd = bind_one(AF_INET, (struct sockaddr *)&s4, sizeof(s4));
	if (fd == -1)
		die(ESV_EXIT_SYSTEM, "listen %s", arg);
	add(fd);
}

void
net_listen(const char *arg, void (*add)(int))
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res, *ai;
	char host[256], port[8];
	const char *colon = strrchr(arg, ':'), *errstr;
	const char *orig = arg;
	long long pn;
	size_t hl;
	int fd, e, n = 0;

	if (colon == NULL)
		diex(ESV_EXIT_USAGE, "--listen %s: not ADDR:PORT", arg);
	hl = colon - arg;
	if (arg[0] == '[' && hl >= 2 && arg[hl - 1] == ']') {
		arg++;
		hl -= 2;
	} else if (memchr(arg, ':', hl) != NULL)
		diex(ESV_EXIT_USAGE, "--listen %s: put an IPv6 address in "
		    "brackets", orig);
	if (hl == 0 || hl >= sizeof(host))
		diex(ESV_EXIT_USAGE, "--listen %s: bad address", orig);
	memcpy(host, arg, hl);
	host[hl] = '\0';
	pn = strtonum(colon + 1, 0, 65535, &errstr);
	if (errstr != NULL || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		diex(ESV_EXIT_USAGE, "--listen %s: not a port in 0..65535",
		    orig);
	snprintf(port, sizeof(port), "%lld", pn);
	if (strcmp(host, "*") == 0) {
		listen_wild(pn, orig, add);
		return;
	}
	/* Start-up, before any loop runs: a lookup may wait here. */
	if ((e = getaddrinfo(host, port, &hints, &res)) != 0)
		diex(ESV_EXIT_USAGE, "--listen %s: %s", orig,
		    gai_strerror(e));
	for (ai = res; ai != NULL; ai = ai->ai_next)
		if ((fd = bind_one(ai->ai_family, ai->ai_addr,
		    ai->ai_addrlen)) != -1) {
			add(fd);
			n++;
		}
	freeaddrinfo(res);
	if (n == 0)
		die(ESV_EXIT_SYSTEM, "listen %s", orig);
}


void
net_listen_fd(int fd, void (*add)(int fd))
{
	int on = 0;
	socklen_t sl = sizeof(on);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &sl) == -1 || !on)
		diex(ESV_EXIT_USAGE, "--listen-fd %d: not a listening socket",
		    fd);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		die(ESV_EXIT_SYSTEM, "--listen-fd %d", fd);
	add(fd);
}
