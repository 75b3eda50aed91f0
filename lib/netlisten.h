/* The sockets of the esv daemons that listen on TCP: esv-rdzv, esv-healthd. */
#ifndef ESV_NETLISTEN_H
#define ESV_NETLISTEN_H

#include <sys/socket.h>

#include <stddef.h>

/* "a.b.c.d:port" or "[v6]:port" into peer, the bare address into ip. */
void	net_addr_fmt(const struct sockaddr_storage *ss, char *ip, size_t il,
	    char *peer, size_t pl);
/*
 * Listen as --listen arg says ("addr:port", "[v6]:port", "*:port"),
 * handing each socket (non-blocking, close-on-exec) to add.  Exits 100
 * on a bad arg, 111 if nothing could be bound.
 */
void	net_listen(const char *arg, void (*add)(int fd));
/*
 * A socket bound and listening already (--listen-fd N, from whoever
 * started us, so that no other process can take the port in between):
 * made non-blocking and close-on-exec and handed to add.  Exits 100 if
 * fd is not a listening socket.
 */
void	net_listen_fd(int fd, void (*add)(int fd));

#endif
