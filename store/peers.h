/*
 * Who may connect to esv-stored (esv-stored(8)'s trust model): a peer on
 * this host must be of the job's uid or root; any other must be a node of
 * the round, named in --allow-file, re-read on SIGHUP.
 */
#ifndef ESV_PEERS_H
#define ESV_PEERS_H

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <stdbool.h>
#include <stddef.h>

#define ALLOW_MAX	4096

struct peers {
	uid_t		 uid;		/* the job's */
	const char	*allow_file;	/* NULL: any remote address may */
	struct in6_addr	 allow[ALLOW_MAX];
	size_t		 nallow;
};

/* The address of ss as IPv6, IPv4 mapped: one form to compare. */
void	peer_addr(const struct sockaddr_storage *ss, struct in6_addr *a);
bool	peers_allowed(const struct peers *p, const struct in6_addr *a);
/*
 * May the peer of socket fd, at address ip, connect?  NULL, or why not
 * (in why).  *local: its socket is one of this host's.
 */
const char *peers_trusted(const struct peers *p, int fd,
	    const struct in6_addr *ip, bool *local, char *why, size_t wl);
/*
 * Read --allow-file again.  True if the set was replaced: the caller then
 * closes the connections of addresses it no longer names.
 */
bool	peers_load(struct peers *p);

#endif
