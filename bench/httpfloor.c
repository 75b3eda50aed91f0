/*
 * httpfloor: the bare libmicrohttpd server of bench/healthd.sh, the floor
 * for esv-healthd.  It answers every GET with 200 and "ok\n" and reads no
 * job, so wrk against it loads the machine as wrk against esv-healthd
 * does, with nothing of esv's in the way.
 *
 *	httpfloor [--close]
 *
 * It listens on 127.0.0.1 at a free port, prints the port on a line of
 * its own, and serves until a signal kills it.  The daemon's flags are
 * esv-healthd's (epoll, turbo, one thread), and it queues the answer in
 * the second call of the request handler, as esv-healthd does, so
 * connections are kept alive.  With --close it queues the answer in the
 * first call, as esv-healthd did before 6105043: libmicrohttpd 0.9.75
 * then answers "Connection: close" and every request costs a connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

static int close_each;
static struct MHD_Response *ok;

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_size, void **req)
{
	static int seen;

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)upload_data;
	(void)upload_size;
	if (!close_each && *req == NULL) {
		*req = &seen;
		return MHD_YES;
	}
	return MHD_queue_response(c, MHD_HTTP_OK, ok);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd, one = 1;

	close_each = argc > 1 && strcmp(argv[1], "--close") == 0;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, SOMAXCONN) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1) {
		perror("httpfloor: socket");
		return 111;
	}
	ok = MHD_create_response_from_buffer(3, "ok\n",
	    MHD_RESPMEM_PERSISTENT);
	if (ok == NULL || MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, 1000U,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
	    MHD_OPTION_END) == NULL) {
		fprintf(stderr, "httpfloor: unable to start the daemon\n");
		return 111;
	}
	printf("%u\n", ntohs(sin.sin_port));
	fflush(stdout);
	for (;;)
		pause();
}
