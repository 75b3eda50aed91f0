/*
 * --state-file: the counts as esv-control(5)'s supervise/store, rewritten
 * (temp + rename) when they change, at most every STATE_EVERY_MS so that
 * a burst of SETs costs one write.  When the next write is due: LLONG_MAX
 * if nothing changed.  A failed write (a full disk) is tried again then;
 * the store serves on regardless.
 */
#ifndef ESV_STATEFILE_H
#define ESV_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>

#include <netinet/in.h>

/* The state file follows the counts at most this often. */
#define STATE_EVERY_MS	500

struct statefile {
	const char	*path;		/* NULL: none is written */
	char		 listen_name[INET6_ADDRSTRLEN + 16];
	size_t		 said_keys, said_conns, said_waiting;
	long long	 said_ms;
	bool		 said, warned;
};

/* keys, conns, waiting: the counts now. */
long long statefile_tick(struct statefile *sf, long long now, size_t keys,
	    unsigned conns, size_t waiting);

#endif
