#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "utf8.h"
#include "wdchan.h"

/* Enough digits for an epoch time to the microsecond. */
#define DUMP_FLAGS	(JSON_COMPACT | JSON_REAL_PRECISION(16))

/* Takes the reference to o. */
static char *
dump_line(json_t *o)
{
	char *s, *line;
	size_t len;

	if (o == NULL)
		return NULL;
	s = json_dumps(o, DUMP_FLAGS);
	json_decref(o);
	if (s == NULL)
		return NULL;
	len = strlen(s);
	if ((line = realloc(s, len + 2)) == NULL) {
		free(s);
		return NULL;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	return line;
}

char *
wdchan_pids(const pid_t *pids, size_t n)
{
	json_t *a;
	size_t i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (json_array_append_new(a, json_integer(pids[i])) == -1) {
			json_decref(a);
			return NULL;
		}
	return dump_line(json_pack("{s:o}", "pids", a));
}

/* One sendmsg of len bytes with n fds (n may be 0); what was sent. */
static ssize_t
send_fds(int sock, const char *buf, size_t len, const int *fds, size_t n)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(WDCHAN_FDS_MAX * sizeof(int))];
	} cm;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (n > 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int
wdchan_send_pids(int sock, const pid_t *pids, const int *pidfds, size_t n)
{
	char *line;
	size_t len, off = 0, k;
	ssize_t w;
	int e = 0;

	if ((line = wdchan_pids(pids, n)) == NULL)
		return -1;
	len = strlen(line);	/* > n: a digit and a comma or bracket each */
	/* One byte per full batch of fds, the rest of the line with the last. */
	while (e == 0 && off < len) {
		k = n > WDCHAN_FDS_MAX ? WDCHAN_FDS_MAX : n;
		w = send_fds(sock, line + off, n > WDCHAN_FDS_MAX ? 1 :
		    len - off, pidfds, k);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1) {
			e = errno;
			break;
		}
		off += w;
		pidfds += k;
		n -= k;
	}
	free(line);
	if (e != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

char *
wdchan_expired(const struct wd_expired *e)
{
	return dump_line(json_pack("{s:{s:i,s:o,s:i,s:f,s:f,s:b}}", "expired",
	    "pid", (int)e->pid, "scope", json_text(e->scope),
	    "signal", e->signal,
	    "deadline", e->deadline, "lateness_ms", e->lateness_ms,
	    "sent", (int)e->sent));
}

char *
wdchan_status(const struct wd_status *st)
{
	return dump_line(json_pack("{s:f,s:I,s:I,s:I,s:I,s:I,s:i}",
	    "last_progress", st->last_progress,
	    "armed", (json_int_t)st->armed,
	    "requests", (json_int_t)st->requests,
	    "refused", (json_int_t)st->refused,
	    "expired", (json_int_t)st->expired,
	    "workers", (json_int_t)st->workers,
	    "pid", (int)st->pid));
}

static int
fail(char *err, size_t errlen, const char *what, const char *why)
{
	snprintf(err, errlen, "%s: %s", what, why);
	return -1;
}

static int
parse_pids(json_t *a, pid_t **pids, size_t *n, char *err, size_t errlen)
{
	json_int_t v;
	json_t *p;
	size_t i;

	if (!json_is_array(a))
		return fail(err, errlen, "pids", "not an array");
	*n = json_array_size(a);
	if ((*pids = calloc(*n > 0 ? *n : 1, sizeof(**pids))) == NULL)
		return fail(err, errlen, "pids", strerror(errno));
	json_array_foreach(a, i, p) {
		v = json_is_integer(p) ? json_integer_value(p) : 0;
		if (v <= 0 || v > INT_MAX) {
			free(*pids);
			*pids = NULL;
			snprintf(err, errlen, "pids: element %zu: not a pid", i);
			return -1;
		}
		(*pids)[i] = (pid_t)v;
	}
	return 0;
}

static int
parse_expired(json_t *o, struct wd_expired *e, char *err, size_t errlen)
{
	json_error_t je;
	const char *scope;
	json_int_t pid;
	int sent;

	if (json_unpack_ex(o, &je, 0, "{s:I,s:s,s:i,s:F,s:F,s:b!}",
	    "pid", &pid, "scope", &scope, "signal", &e->signal,
	    "deadline", &e->deadline, "lateness_ms", &e->lateness_ms,
	    "sent", &sent) == -1)
		return fail(err, errlen, "expired", je.text);
	if (pid <= 0 || pid > INT_MAX)
		return fail(err, errlen, "expired", "pid: not a pid");
	e->pid = (pid_t)pid;
	utf8_strlcpy(e->scope, scope, sizeof(e->scope));
	e->sent = sent != 0;
	return 0;
}

static json_t *
load_object(const char *line, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o;

	if ((o = json_loads(line, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		fail(err, errlen, "malformed JSON", je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		snprintf(err, errlen, "not an object");
		return NULL;
	}
	return o;
}

int
wdchan_parse_control(const char *line, pid_t **pids, size_t *n,
    struct wd_expired *e, char *err, size_t errlen)
{
	json_t *o, *v;
	int rc = -1;

	if ((o = load_object(line, err, errlen)) == NULL)
		return -1;
	if (json_object_size(o) != 1)
		snprintf(err, errlen, "want one of pids, expired");
	else if ((v = json_object_get(o, "pids")) != NULL)
		rc = parse_pids(v, pids, n, err, errlen) == 0 ? 'p' : -1;
	else if ((v = json_object_get(o, "expired")) != NULL)
		rc = parse_expired(v, e, err, errlen) == 0 ? 'e' : -1;
	else
		snprintf(err, errlen, "unknown message");
	json_decref(o);
	return rc;
}

/* Later fields may be added: they are ignored here. */
int
wdchan_parse_status(const char *line, struct wd_status *st, char *err,
    size_t errlen)
{
	json_int_t armed, requests, refused, expired, workers, pid;
	json_error_t je;
	const char *why;
	json_t *o;
	int rc = 0;

	if ((o = load_object(line, err, errlen)) == NULL)
		return -1;
	if (json_unpack(o, "{s:s}", "error", &why) == 0)
		rc = fail(err, errlen, "watchdog", why);
	else if (json_unpack_ex(o, &je, 0, "{s:F,s:I,s:I,s:I,s:I,s:I,s:I}",
	    "last_progress", &st->last_progress, "armed", &armed,
	    "requests", &requests, "refused", &refused, "expired", &expired,
	    "workers", &workers, "pid", &pid) == -1)
		rc = fail(err, errlen, "status", je.text);
	else if (armed < 0 || requests < 0 || refused < 0 || expired < 0 ||
	    workers < 0 || pid <= 0 || pid > INT_MAX)
		rc = fail(err, errlen, "status", "negative count or bad pid");
	else {
		st->armed = armed;
		st->requests = requests;
		st->refused = refused;
		st->expired = expired;
		st->workers = workers;
		st->pid = (pid_t)pid;
	}
	json_decref(o);
	return rc;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
connect_to(const char *sockpath)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, sockpath, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One line into buf, NUL-terminated, newline dropped: 0 or -1/errno. */
static int
read_line(int fd, char *buf, size_t size, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t len = 0;
	long long left;
	ssize_t r;
	char *nl;

	for (;;) {
		if ((left = deadline - now_ms()) <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			return -1;
		r = read(fd, buf + len, size - 1 - len);
		if (r == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r == -1)
			return -1;
		len += r;
		buf[len] = '\0';
		if ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			return 0;
		}
		if (r == 0 || len == size - 1) {
			errno = EPROTO;
			return -1;
		}
	}
}

int
wdchan_query(const char *sockpath, int timeout_ms, struct wd_status *st)
{
	static const char req[] = "status\n";
	long long deadline = now_ms() + timeout_ms;
	char line[1024], err[256];
	int fd, rc = -1, e;
	ssize_t w;

	if ((fd = connect_to(sockpath)) == -1)
		return -1;
	/* The request fits in an empty socket buffer: one send. */
	if ((w = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL)) !=
	    (ssize_t)sizeof(req) - 1) {
		if (w >= 0)
			errno = EIO;
		goto out;
	}
	if (read_line(fd, line, sizeof(line), deadline) == -1)
		goto out;
	if ((rc = wdchan_parse_status(line, st, err, sizeof(err))) == -1)
		errno = strstr(err, "permission denied") != NULL ? EACCES :
		    EPROTO;
out:
	e = errno;
	close(fd);
	errno = e;
	return rc;
}
