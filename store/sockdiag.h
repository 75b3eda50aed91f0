/*
 * Who is at the other end of an accepted TCP connection, when that end is
 * on this host: the kernel's sock_diag netlink interface, as ss -e shows.
 */
#ifndef ESV_SOCKDIAG_H
#define ESV_SOCKDIAG_H

#include <sys/types.h>

/*
 * The uid owning the peer's socket of connection fd: 1 and *uid if the
 * peer is a socket of this network namespace, 0 if it is not (a remote
 * host), -1 and errno on failure.
 */
int	sockdiag_peer_uid(int fd, uid_t *uid);

#endif
