#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "freeport.h"

/* Bind port 0 and read back the port the kernel chose. */
unsigned
rdzv_free_port(const struct lookup_answer *a)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned port = 0;
	int fd;

	if (a->n == 0)
		return 0;
	fd = socket(a->addr[0].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return 0;
	if (bind(fd, (const struct sockaddr *)&a->addr[0], a->len[0]) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	return port;
}
