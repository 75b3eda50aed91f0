/*
 * SO_PEERCRED is for UNIX sockets only; for TCP the kernel keeps the uid
 * of each socket, and sock_diag hands it out for an exact 4-tuple.
 *
 * The query is synchronous on purpose: it is answered by this host's
 * kernel within the sendmsg/recvmsg pair (no other process, no network is
 * involved, it looks one socket up in a hash), so it costs microseconds
 * and cannot stall the event loop as a blocking call on a peer would.
 * SO_RCVTIMEO bounds it anyway, should a kernel ever fail to answer.
 * One netlink socket serves every query (a socket per accept cost more
 * than the query); sequence numbers keep a late answer from being taken
 * for the next one's.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "sockdiag.h"

static int	nlfd = -1;
static unsigned	nlseq;

static int
nl_open(void)
{
	struct timeval tv = { .tv_sec = 1 };

	if (nlfd != -1)
		return nlfd;
	if ((nlfd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
	    NETLINK_SOCK_DIAG)) == -1)
		return -1;
	if (setsockopt(nlfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ==
	    -1) {
		close(nlfd);
		nlfd = -1;
	}
	return nlfd;
}

/* An address and port of ss as sock_diag wants them; false if v6. */
static bool
as_v4(const struct sockaddr_storage *ss, __be32 *a, __be16 *port)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;

	if (ss->ss_family == AF_INET) {
		*a = s4->sin_addr.s_addr;
		*port = s4->sin_port;
		return true;
	}
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(a, &s6->sin6_addr.s6_addr[12], 4);
		*port = s6->sin6_port;
		return true;
	}
	return false;
}

int
sockdiag_peer_uid(int fd, uid_t *uid)
{
	struct {
		struct nlmsghdr		nh;
		struct inet_diag_req_v2	r;
	} req = { 0 };
	union {
		struct nlmsghdr	nh;
		char		buf[1024];
	} resp;
	struct sockaddr_storage me, peer;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct inet_diag_msg *m;
	struct nlmsgerr *err;
	socklen_t sl;
	ssize_t n;
	int nfd, rc = -1;
	bool v4;

	sl = sizeof(me);
	if (getsockname(fd, (struct sockaddr *)&me, &sl) == -1)
		return -1;
	sl = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &sl) == -1)
		return -1;
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;	/* one socket, no dump */
	req.nh.nlmsg_seq = ++nlseq;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* The peer's socket: its source is our peer, its destination us. */
	v4 = as_v4(&peer, &req.r.id.idiag_src[0], &req.r.id.idiag_sport) &&
	    as_v4(&me, &req.r.id.idiag_dst[0], &req.r.id.idiag_dport);
	if (v4)
		req.r.sdiag_family = AF_INET;
	else {
		req.r.sdiag_family = AF_INET6;
		memcpy(req.r.id.idiag_src, &((struct sockaddr_in6 *)&peer)->
		    sin6_addr, 16);
		req.r.id.idiag_sport = ((struct sockaddr_in6 *)&peer)->
		    sin6_port;
		memcpy(req.r.id.idiag_dst, &((struct sockaddr_in6 *)&me)->
		    sin6_addr, 16);
		req.r.id.idiag_dport = ((struct sockaddr_in6 *)&me)->sin6_port;
	}
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if ((nfd = nl_open()) == -1)
		return -1;
	if (sendto(nfd, &req, sizeof(req), 0, (struct sockaddr *)&nl,
	    sizeof(nl)) == -1)
		goto out;
	for (;;) {
		n = recv(nfd, &resp, sizeof(resp), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto out;
		if (!NLMSG_OK(&resp.nh, (size_t)n)) {
			errno = EPROTO;
			goto out;
		}
		if (resp.nh.nlmsg_seq == req.nh.nlmsg_seq)
			break;
	}
	if (resp.nh.nlmsg_type == NLMSG_ERROR) {
		err = NLMSG_DATA(&resp.nh);
		if (resp.nh.nlmsg_len < NLMSG_LENGTH(sizeof(*err))) {
			errno = EPROTO;
			goto out;
		}
		/* Not a socket of this host: the peer is remote. */
		if (err->error == -ENOENT)
			rc = 0;
		else
			errno = -err->error;
		goto out;
	}
	if (resp.nh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    resp.nh.nlmsg_len < NLMSG_LENGTH(sizeof(*m))) {
		errno = EPROTO;
		goto out;
	}
	m = NLMSG_DATA(&resp.nh);
	*uid = m->idiag_uid;
	return 1;
out:
	/* A timeout or worse: a fresh socket next time. */
	if (rc == -1) {
		int e = errno;

		close(nlfd);
		nlfd = -1;
		errno = e;
	}
	return rc;
}
