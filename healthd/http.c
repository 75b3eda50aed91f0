/*
 * The HTTP side: libmicrohttpd in its external epoll mode, driven from
 * our loop, so that the endpoints and the job's view share one thread.
 *
 * libmicrohttpd bounds what it can: connections (CONN_MAX), the memory of
 * one (CONN_MEMORY: headers beyond it get 431) and idle time.  What it
 * cannot bound is a client that keeps a connection busy by trickling a
 * byte a second: each request must arrive whole within REQUEST_MS of the
 * connection's start or of its previous answer (Apache's mod_reqtimeout
 * idea), or the socket is shut down under libmicrohttpd, which then closes
 * it as a connection that failed.  REQUEST_MS is longer than the idle
 * timeout, so that a keep-alive connection merely waiting for its next
 * scrape is closed quietly by libmicrohttpd, and only a trickler is
 * caught, and logged, here.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <microhttpd.h>

#include "healthd.h"
#include "msg.h"
#include "nelem.h"
#include "netlisten.h"
#include "ratelim.h"

#define CONN_MAX	1000
#define CONN_MEMORY	(16 * 1024)
#define IDLE_S		10
#define REQUEST_MS	15000

struct conn {
	TAILQ_ENTRY(conn)	 entry;		/* while a request is awaited */
	struct MHD_Connection	*c;
	long long		 deadline;
	bool			 queued;
};
TAILQ_HEAD(connq, conn);

struct http {
	struct MHD_Daemon	*d;
	struct loop		*lp;
	struct watch		 w;
	struct view		*v;
	bool			 verbose;
	struct connq		 waiting;	/* by deadline */
	struct MHD_Response	*not_found, *bad_method;
	struct ratelim		 logrl;
};

/* "addr:port" of the client, for log lines that must name it. */
static const char *
peer_of(struct MHD_Connection *c)
{
	static char peer[80];
	const union MHD_ConnectionInfo *ci;
	struct sockaddr_storage ss = { 0 };
	char ip[64];

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || ci->client_addr == NULL)
		return "?";
	memcpy(&ss, ci->client_addr, ci->client_addr->sa_family == AF_INET6 ?
	    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	net_addr_fmt(&ss, ip, sizeof(ip), peer, sizeof(peer));
	return peer;
}

/* ---- request deadlines ---- */

static void
await_request(struct http *h, struct conn *cn)
{
	if (cn->queued)
		TAILQ_REMOVE(&h->waiting, cn, entry);
	cn->deadline = mono_ms() + REQUEST_MS;
	TAILQ_INSERT_TAIL(&h->waiting, cn, entry);
	cn->queued = true;
}

static void
request_arrived(struct http *h, struct conn *cn)
{
	if (cn->queued)
		TAILQ_REMOVE(&h->waiting, cn, entry);
	cn->queued = false;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode what)
{
	struct http *h = cls;
	struct conn *cn = *socket_context;

	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		/* Without memory for its deadline, no connection. */
		if ((cn = calloc(1, sizeof(*cn))) == NULL) {
			const union MHD_ConnectionInfo *ci;

			ci = MHD_get_connection_info(c,
			    MHD_CONNECTION_INFO_CONNECTION_FD);
			if (ci != NULL)
				shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		cn->c = c;
		*socket_context = cn;
		await_request(h, cn);
		return;
	}
	if (cn == NULL)
		return;
	request_arrived(h, cn);
	free(cn);
	*socket_context = NULL;
}

static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **req,
    enum MHD_RequestTerminationCode why)
{
	struct conn *cn = conn_of(c);

	(void)req;
	/* A keep-alive connection now waits for its next request. */
	if (cn != NULL && why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		await_request(cls, cn);
}

static long long
expire_requests(struct http *h, long long now)
{
	const union MHD_ConnectionInfo *ci;
	struct conn *cn;

	while ((cn = TAILQ_FIRST(&h->waiting)) != NULL && cn->deadline <= now) {
		TAILQ_REMOVE(&h->waiting, cn, entry);
		cn->queued = false;
		if (ratelim_allow(&h->logrl))
			warn_msg("HTTP: %s: no whole request within %d s: "
			    "dropped", peer_of(cn->c), REQUEST_MS / 1000);
		ci = MHD_get_connection_info(cn->c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci != NULL)
			shutdown(ci->connect_fd, SHUT_RDWR);
	}
	return cn != NULL ? cn->deadline : LLONG_MAX;
}

/* ---- answers ---- */

static enum MHD_Result
answer(struct MHD_Connection *c, unsigned code, const char *type,
    const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ok;

	r = MHD_create_response_from_buffer(len, (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ok = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result
answer_text(struct MHD_Connection *c, unsigned code, const char *line)
{
	char body[256];
	int n;

	n = snprintf(body, sizeof(body), "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof(body))
		n = sizeof(body) - 1;
	return answer(c, code, "text/plain; charset=utf-8", body, n);
}

static enum MHD_Result
healthz(struct http *h, struct MHD_Connection *c)
{
	char reason[160];

	if (view_health(h->v, reason, sizeof(reason)) == HEALTHY)
		return answer_text(c, MHD_HTTP_OK, reason);
	return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, reason);
}

static enum MHD_Result
status(struct http *h, struct MHD_Connection *c)
{
	const char *body;
	size_t len;

	if ((body = view_status(h->v, &len)) == NULL)
		return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "the job's state is unreadable");
	return answer(c, MHD_HTTP_OK, "application/json", body, len);
}

static enum MHD_Result
metrics(struct http *h, struct MHD_Connection *c)
{
	const char *body;
	size_t len;

	if ((body = view_metrics(h->v, &len)) == NULL)
		return MHD_NO;
	return answer(c, MHD_HTTP_OK, "text/plain; version=0.0.4; "
	    "charset=utf-8", body, len);
}

static const struct {
	const char *path;
	enum MHD_Result (*fn)(struct http *, struct MHD_Connection *);
} routes[] = {
	{ "/healthz", healthz },
	{ "/status", status },
	{ "/metrics", metrics },
};

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_size, void **req)
{
	static int headers_seen;
	struct http *h = cls;
	struct conn *cn;
	size_t i;

	(void)version;
	(void)upload_data;
	/*
	 * libmicrohttpd 0.9.7x closes a connection whose answer was queued
	 * in the first call, before it knows the request is whole: answer
	 * in the second, so that keep-alive holds.
	 */
	if (*req == NULL) {
		*req = &headers_seen;
		return MHD_YES;
	}
	if (*upload_size != 0) {
		*upload_size = 0;	/* a body is not for us: skipped */
		return MHD_YES;
	}
	/* Only now, body included: a body can trickle in as headers can. */
	if ((cn = conn_of(c)) != NULL)
		request_arrived(h, cn);
	if (h->verbose)
		info_msg("HTTP: %s %s", method, url);
	for (i = 0; i < NELEM(routes); i++) {
		if (strcmp(url, routes[i].path) != 0)
			continue;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return MHD_queue_response(c,
			    MHD_HTTP_METHOD_NOT_ALLOWED, h->bad_method);
		return routes[i].fn(h, c);
	}
	return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, h->not_found);
}

/* libmicrohttpd's own complaints: bad requests, resources. */
static void
on_log(void *cls, const char *fmt, va_list ap)
{
	struct http *h = cls;
	char line[512], *html, *end;
	size_t n;

	if (!ratelim_allow(&h->logrl))
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	/* Its canned answer's HTML says nothing the status code does not. */
	if ((html = strstr(line, " ('<html>")) != NULL &&
	    (end = strstr(html, "</html>')")) != NULL)
		memmove(html, end + 9, strlen(end + 9) + 1);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	warn_msg("HTTP: %s", line);
}

static struct MHD_Response *
fixed(const char *body, const char *allow)
{
	struct MHD_Response *r;

	r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/plain; charset=utf-8");
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	return r;
}

static void
on_ready(struct watch *w, uint32_t events)
{
	struct http *h = w->ctx;

	(void)events;
	MHD_run(h->d);
}

struct http *
http_start(struct loop *lp, int listenfd, struct view *v, bool verbose)
{
	const union MHD_DaemonInfo *di;
	struct http *h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->lp = lp;
	h->v = v;
	h->verbose = verbose;
	h->logrl.what = "HTTP warnings";
	TAILQ_INIT(&h->waiting);
	h->not_found = fixed("not found: try /healthz, /status or /metrics\n",
	    NULL);
	h->bad_method = fixed("method not allowed: GET or HEAD\n",
	    "GET, HEAD");
	if (h->not_found == NULL || h->bad_method == NULL)
		goto fail;
	h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_TURBO |
	    MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, h,
	    MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
	    MHD_OPTION_LISTEN_SOCKET, listenfd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_MAX,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_S,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_END);
	if (h->d == NULL)
		goto fail;
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	h->w = (struct watch){ .fd = di->epoll_fd, .fn = on_ready, .ctx = h };
	if (loop_add(lp, &h->w, EPOLLIN) == -1)
		goto fail;
	return h;
fail:
	http_stop(h);
	return NULL;
}

long long
http_run(struct http *h, long long now)
{
	MHD_UNSIGNED_LONG_LONG ms;
	long long next;

	next = expire_requests(h, now);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES) {
		/* libmicrohttpd has work to do at once (or soon). */
		if (ms == 0) {
			MHD_run(h->d);
			if (MHD_get_timeout(h->d, &ms) != MHD_YES)
				ms = LLONG_MAX - now;
		}
		if ((long long)ms < next - now)
			next = now + (long long)ms;
	}
	return ratelim_tick(&h->logrl, now, next);
}

void
http_stop(struct http *h)
{
	if (h == NULL)
		return;
	if (h->d != NULL)
		MHD_stop_daemon(h->d);
	if (h->not_found != NULL)
		MHD_destroy_response(h->not_found);
	if (h->bad_method != NULL)
		MHD_destroy_response(h->bad_method);
	free(h);
}
