/*
 * esv-supervise hosting an esv-rdzv child: privately for --standalone, or
 * for the whole job when the endpoint is an address of this host and
 * nothing listens there yet (torch's is_host).  The listening socket is
 * made here and handed down, so nobody can take the port in between.
 */
#ifndef ESV_RDZV_HOST_H
#define ESV_RDZV_HOST_H

#include <stddef.h>
#include <sys/types.h>

#include "lookup.h"

/* What a hosted esv-rdzv is started with. */
struct rdzv_host_args {
	const char	*tokenfile;	/* "": --allow-no-token */
	const char	*run_id;	/* the one job it serves */
	const char	*logpath;	/* its stdout and stderr, appended */
};

/*
 * --standalone: write a fresh token to ha->tokenfile (mode 0600), listen
 * on 127.0.0.1 at a free port and start esv-rdzv there.  0 with *port
 * and *pid set, or -1 with err set.
 */
int	rdzv_host_private(const struct rdzv_host_args *ha, unsigned *port,
	    pid_t *pid, char *err, size_t errlen);

/*
 * Listen on the first of the endpoint's addresses that is an address of
 * this host and free, and start esv-rdzv there.  1 hosting (*pid set), 0
 * not ours to host (not local, or already taken), -1 error (err set).
 */
int	rdzv_host_try(const struct lookup_answer *a,
	    const struct rdzv_host_args *ha, pid_t *pid, char *err,
	    size_t errlen);

/* The lease the servers started from now on give their nodes (0: theirs). */
void	rdzv_host_lease(unsigned ms);

#endif
