/*
 * The floor under a TCPStore server on this machine: one epoll thread
 * that reads torch 1.13's SET, GET, ADD and GETNUMKEYS and answers each
 * with a fixed reply, keeping nothing (GET: 16 bytes of 'v'; ADD and
 * GETNUMKEYS: 0).  No store, no limits, no log: what a server costs when
 * it does nothing but the system calls, so that store_load's figures for
 * esv-stored and torch's server can be read against what the kernel and
 * the load generator leave.  A bench tool, not a server.
 *
 *	store_floor		prints "listening 127.0.0.1:PORT"
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SET = 0, GET = 2, ADD = 3, NUMKEYS = 6 };

struct conn {
	int	 fd;
	size_t	 len;
	char	 in[1 << 16];
	char	 out[1 << 16];
};

/* Bytes of the complete request at p, 0 if it is not all there yet. */
static size_t
request(const char *p, size_t n, int *cmd)
{
	uint64_t l1, l2;

	if (n < 1)
		return 0;
	*cmd = (unsigned char)p[0];
	if (*cmd == NUMKEYS)
		return 1;
	if (n < 9)
		return 0;
	memcpy(&l1, p + 1, 8);
	if (l1 > (1 << 15))
		errx(1, "a key of %llu bytes", (unsigned long long)l1);
	if (*cmd == GET)
		return n >= 9 + l1 ? 9 + l1 : 0;
	if (*cmd == ADD)
		return n >= 17 + l1 ? 17 + l1 : 0;
	if (*cmd != SET)
		errx(1, "command %d: not one the floor knows", *cmd);
	if (n < 17 + l1)
		return 0;
	memcpy(&l2, p + 9 + l1, 8);
	if (l2 > (1 << 15))
		errx(1, "a value of %llu bytes", (unsigned long long)l2);
	return n >= 17 + l1 + l2 ? 17 + l1 + l2 : 0;
}

static void
serve(struct conn *c)
{
	static const uint64_t vlen = 16;
	static const int64_t zero = 0;
	size_t off = 0, k, o = 0;
	ssize_t r;
	int cmd;

	if ((r = read(c->fd, c->in + c->len, sizeof(c->in) - c->len)) <= 0) {
		if (r == -1 && errno == EAGAIN)
			return;
		close(c->fd);
		free(c);
		return;
	}
	c->len += r;
	while ((k = request(c->in + off, c->len - off, &cmd)) > 0) {
		off += k;
		if (o + 24 > sizeof(c->out))
			errx(1, "too many replies in one read");
		if (cmd == GET) {
			memcpy(c->out + o, &vlen, 8);
			memset(c->out + o + 8, 'v', 16);
			o += 24;
		} else if (cmd != SET) {
			memcpy(c->out + o, &zero, 8);
			o += 8;
		}
	}
	memmove(c->in, c->in + off, c->len - off);
	c->len -= off;
	/* One outstanding request a client: the socket buffer takes it. */
	if (o > 0 && send(c->fd, c->out, o, MSG_NOSIGNAL) != (ssize_t)o)
		err(1, "send");
}

int
main(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t sl = sizeof(sa);
	struct epoll_event ev, evs[256];
	struct conn *c;
	int lfd, ep, fd, n, i, on = 1;

	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(lfd, 4096) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) == -1)
		err(1, "listen");
	printf("listening 127.0.0.1:%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		err(1, "epoll_ctl");
	for (;;) {
		if ((n = epoll_wait(ep, evs, 256, -1)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "epoll_wait");
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr != NULL) {
				serve(evs[i].data.ptr);
				continue;
			}
			if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
			    SOCK_CLOEXEC)) == -1)
				continue;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on,
			    sizeof(on));
			if ((c = calloc(1, sizeof(*c))) == NULL)
				err(1, NULL);
			c->fd = fd;
			ev = (struct epoll_event){ .events = EPOLLIN,
			    .data.ptr = c };
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
				err(1, "epoll_ctl");
		}
	}
}
