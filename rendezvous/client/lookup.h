/*
 * Name lookups off the event loop.  getaddrinfo() may wait on DNS for
 * many seconds, and no loop of esv may wait; a numeric address needs no
 * resolver at all.  So a lookup of a name is made by a child process,
 * which writes the answer to a pipe the loop watches and exits (OpenBSD's
 * ntpd resolves in a process of its own the same way).  The caller reaps
 * the child like any other: lookup_start() gives its pid.
 */
#ifndef ESV_LOOKUP_H
#define ESV_LOOKUP_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#define LOOKUP_MAX	8	/* addresses kept of an answer */

struct lookup_answer {
	unsigned		n;	/* 0: failed, err says why */
	struct sockaddr_storage	addr[LOOKUP_MAX];
	socklen_t		len[LOOKUP_MAX];
	char			err[128];
};

/*
 * host as a numeric IPv4 or IPv6 address, port set: true and *a holds it.
 * False for a name (no lookup is made).
 */
bool	lookup_numeric(const char *host, unsigned port,
	    struct lookup_answer *a);

/*
 * Start a child that resolves host:port for TCP.  Its pid, with *fd the
 * pipe's non-blocking, close-on-exec read end to watch; -1 with errno.
 */
pid_t	lookup_start(const char *host, unsigned port, int *fd);

/*
 * Read the answer once *fd is readable: 1 with *a set (a->n may be 0,
 * a->err then says why), 0 not yet, -1 the child ended without one (a->err
 * set).  After 1 or -1 the caller closes fd.
 */
int	lookup_read(int fd, struct lookup_answer *a);

/*
 * The blocking lookup itself, for start-up (before the loop runs) and for
 * the child: a->n addresses, or 0 with a->err.
 */
void	lookup_now(const char *host, unsigned port, struct lookup_answer *a);

#endif
