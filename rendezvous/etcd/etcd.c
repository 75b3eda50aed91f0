#include <sys/queue.h>

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etcd.h"
#include "msg.h"

#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	2000
#define CONNECT_MS	2000
#define REPLY_MAX	(64u << 20)	/* a range of every key of a big job */

struct req {
	struct etcd		*e;
	CURL			*h;
	char			*path, *body;
	bool			 stream;
	etcd_reply_fn		*fn;
	etcd_msg_fn		*msg;
	etcd_end_fn		*end;
	void			*ctx;
	char			*buf;
	size_t			 len, cap;
	unsigned		 ep;		/* endpoint of this attempt */
	unsigned		 backoff_ms;
	long long		 retry_at;	/* waiting to be sent again */
	bool			 failed;	/* the stream's reply was bad */
	bool			 waiting;	/* on e->waiting, not active */
	char			 why[CURL_ERROR_SIZE + 64];
	char			 errbuf[CURL_ERROR_SIZE];
	TAILQ_ENTRY(req)	 entry;
};
TAILQ_HEAD(reqlist, req);

struct etcd {
	struct loop		*lp;
	struct etcd_conf	 conf;
	CURLM			*multi;
	struct watch		 curl_timer, retry_timer;
	struct reqlist		 active, waiting;
	unsigned		 cur;		/* endpoint calls go to */
	unsigned		 npending;
	bool			 outage;
	char			 last_why[CURL_ERROR_SIZE + 64];
};

struct sockwatch {
	struct watch	 w;
	struct etcd	*e;
};

static void	start(struct req *r);

const char *
etcd_endpoint(const struct etcd *e)
{
	return e->conf.endpoints[e->cur];
}

unsigned
etcd_pending(const struct etcd *e)
{
	return e->npending;
}

/* ---- libcurl on our loop ---- */

static void	check_done(struct etcd *e);

static void
on_sock(struct watch *w, uint32_t events)
{
	struct sockwatch *sw = w->ctx;
	struct etcd *e = sw->e;
	int mask = 0, running;

	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	curl_multi_socket_action(e->multi, w->fd, mask, &running);
	check_done(e);
}

static int
sock_cb(CURL *h, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct etcd *e = userp;
	struct sockwatch *sw = socketp;
	uint32_t ev = 0;

	(void)h;
	if (what == CURL_POLL_REMOVE) {
		if (sw != NULL) {
			loop_del(e->lp, &sw->w);
			curl_multi_assign(e->multi, s, NULL);
			free(sw);
		}
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= EPOLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= EPOLLOUT;
	if (sw == NULL) {
		if ((sw = calloc(1, sizeof(*sw))) == NULL)
			return -1;
		sw->e = e;
		sw->w = (struct watch){ .fd = s, .fn = on_sock, .ctx = sw };
		if (loop_add(e->lp, &sw->w, ev) == -1) {
			free(sw);
			return -1;
		}
		curl_multi_assign(e->multi, s, sw);
		return 0;
	}
	return loop_mod(e->lp, &sw->w, ev);
}

static int
timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct etcd *e = userp;

	(void)multi;
	return timer_arm_ms(e->curl_timer.fd, timeout_ms);
}

static void
on_curl_timer(struct watch *w, uint32_t events)
{
	struct etcd *e = w->ctx;
	int running;

	(void)events;
	timer_ack(w->fd);
	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(e);
}

/* ---- requests ---- */

static void
req_free(struct req *r)
{
	if (r->h != NULL) {
		curl_multi_remove_handle(r->e->multi, r->h);
		curl_easy_cleanup(r->h);
	}
	free(r->path);
	free(r->body);
	free(r->buf);
	free(r);
}

static void
rearm_retry(struct etcd *e)
{
	struct req *r;
	long long at = -1, now = mono_ms();

	TAILQ_FOREACH(r, &e->waiting, entry)
		if (at == -1 || r->retry_at < at)
			at = r->retry_at;
	timer_arm_ms(e->retry_timer.fd, at == -1 ? -1 : at > now ? at - now :
	    0);
}

static void
on_retry_timer(struct watch *w, uint32_t events)
{
	struct etcd *e = w->ctx;
	struct req *r, *next;
	long long now = mono_ms();

	(void)events;
	timer_ack(w->fd);
	TAILQ_FOREACH_SAFE(r, &e->waiting, entry, next)
		if (r->retry_at <= now) {
			TAILQ_REMOVE(&e->waiting, r, entry);
			r->waiting = false;
			start(r);
		}
	rearm_retry(e);
}

/* The stream's lines, each a JSON object, as they come. */
static void
stream_lines(struct req *r)
{
	json_t *j, *res;
	json_error_t je;
	char *nl;
	size_t n;

	while (!r->failed && (nl = memchr(r->buf, '\n', r->len)) != NULL) {
		n = nl - r->buf + 1;
		j = json_loadb(r->buf, n - 1, 0, &je);
		memmove(r->buf, r->buf + n, r->len - n);
		r->len -= n;
		if (j == NULL) {
			snprintf(r->why, sizeof(r->why), "%s: bad JSON in a "
			    "stream: %s (column %d)", r->e->conf.endpoints[r->ep],
			    je.text, je.column);
			r->failed = true;
			break;
		}
		if ((res = json_object_get(j, "result")) != NULL) {
			if (!r->msg(r->ctx, res)) {
				snprintf(r->why, sizeof(r->why), "ended by "
				    "its reader");
				r->failed = true;
			}
		} else {
			snprintf(r->why, sizeof(r->why), "%s: stream error: "
			    "%.200s", r->e->conf.endpoints[r->ep],
			    json_string_value(json_object_get(j, "error")) ?
			    json_string_value(json_object_get(j, "error")) :
			    "no result");
			r->failed = true;
		}
		json_decref(j);
	}
}

static size_t
on_data(char *p, size_t size, size_t nmemb, void *userp)
{
	struct req *r = userp;
	size_t n = size * nmemb, cap;
	char *nb;

	if (r->len + n > REPLY_MAX) {
		snprintf(r->why, sizeof(r->why), "reply over %u bytes",
		    REPLY_MAX);
		r->failed = true;
		return 0;
	}
	if (r->len + n + 1 > r->cap) {
		cap = r->cap == 0 ? 4096 : r->cap;
		while (cap < r->len + n + 1)
			cap *= 2;
		if ((nb = realloc(r->buf, cap)) == NULL)
			return 0;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	r->buf[r->len] = '\0';
	if (r->stream) {
		stream_lines(r);
		if (r->failed)
			return 0;
	}
	return n;
}

static void
start(struct req *r)
{
	struct etcd *e = r->e;
	char url[512];
	CURLMcode mc;

	r->ep = e->cur;
	r->len = 0;
	r->failed = false;
	r->why[0] = r->errbuf[0] = '\0';
	snprintf(url, sizeof(url), "%s%s", e->conf.endpoints[r->ep], r->path);
	if (r->h == NULL && (r->h = curl_easy_init()) == NULL)
		goto fail;
	curl_easy_reset(r->h);
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_MS);
	curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, r->stream ? 0L :
	    (long)e->conf.call_timeout_ms);
	/* A member that vanished without a FIN is found by the kernel. */
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPIDLE, 2L);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPINTVL, 1L);
	curl_easy_setopt(r->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (e->conf.cacert != NULL)
		curl_easy_setopt(r->h, CURLOPT_CAINFO, e->conf.cacert);
	if (e->conf.cert != NULL)
		curl_easy_setopt(r->h, CURLOPT_SSLCERT, e->conf.cert);
	if (e->conf.key != NULL)
		curl_easy_setopt(r->h, CURLOPT_SSLKEY, e->conf.key);
	if ((mc = curl_multi_add_handle(e->multi, r->h)) != CURLM_OK) {
		warn_msg("etcd: %s: %s", r->path, curl_multi_strerror(mc));
		goto fail;
	}
	TAILQ_INSERT_TAIL(&e->active, r, entry);
	return;
fail:
	/* Out of memory in curl: try again later, as for a network fault. */
	r->retry_at = mono_ms() + BACKOFF_MAX_MS;
	r->waiting = true;
	TAILQ_INSERT_TAIL(&e->waiting, r, entry);
	rearm_retry(e);
}

/* The member failed us: try the next one, after a pause that grows. */
static void
retry(struct req *r)
{
	struct etcd *e = r->e;

	/* Each new kind of failure once, not each retry of a long outage. */
	if ((!e->outage || strcmp(r->why, e->last_why) != 0) &&
	    e->conf.nendpoints > 1)
		warn_msg("etcd: %s: %s; trying %s", e->conf.endpoints[r->ep],
		    r->why, e->conf.endpoints[(r->ep + 1) %
		    e->conf.nendpoints]);
	else if (!e->outage || strcmp(r->why, e->last_why) != 0)
		warn_msg("etcd: %s: %s; retrying", e->conf.endpoints[r->ep],
		    r->why);
	strlcpy(e->last_why, r->why, sizeof(e->last_why));
	e->outage = true;
	if (e->cur == r->ep)
		e->cur = (e->cur + 1) % e->conf.nendpoints;
	r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_MIN_MS :
	    r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    r->backoff_ms * 2;
	r->retry_at = mono_ms() + r->backoff_ms +
	    arc4random_uniform(r->backoff_ms / 4 + 1);
	curl_multi_remove_handle(e->multi, r->h);
	r->waiting = true;
	TAILQ_INSERT_TAIL(&e->waiting, r, entry);
	rearm_retry(e);
}

static void
finish_call(struct req *r, CURLcode rc, long http)
{
	struct etcd *e = r->e;
	json_error_t je;
	json_t *j = NULL;
	char err[512];

	if (rc == CURLE_OK && http > 0 && http < 500)
		j = json_loadb(r->buf != NULL ? r->buf : "", r->len, 0, &je);
	if (rc != CURLE_OK || http >= 500 || http == 0 || j == NULL) {
		if (rc != CURLE_OK && !r->failed)
			snprintf(r->why, sizeof(r->why), "%s", r->errbuf[0] ?
			    r->errbuf : curl_easy_strerror(rc));
		else if (http >= 500 || http == 0)
			snprintf(r->why, sizeof(r->why), "HTTP %ld %.200s",
			    http, r->buf != NULL ? r->buf : "");
		else if (!r->failed)
			snprintf(r->why, sizeof(r->why), "reply to %s is not "
			    "JSON: %s (column %d)", r->path, je.text,
			    je.column);
		/* A newline in a proxy's page would break the log's line. */
		r->why[strcspn(r->why, "\r\n")] = '\0';
		retry(r);
		return;
	}
	if (e->outage)
		info_msg("etcd: %s answers", e->conf.endpoints[r->ep]);
	e->outage = false;
	e->npending--;
	curl_multi_remove_handle(e->multi, r->h);
	if (http != 200) {
		snprintf(err, sizeof(err), "etcd %s: HTTP %ld: %.300s", r->path,
		    http, json_string_value(json_object_get(j, "message")) ?
		    json_string_value(json_object_get(j, "message")) :
		    "no message");
		r->fn(r->ctx, NULL, err);
	} else
		r->fn(r->ctx, j, NULL);
	json_decref(j);
	req_free(r);
}

static void
finish_stream(struct req *r, CURLcode rc, long http)
{
	char why[sizeof(r->why)];

	if (r->failed)
		strlcpy(why, r->why, sizeof(why));
	else if (rc != CURLE_OK)
		snprintf(why, sizeof(why), "%s: %s", r->e->conf.endpoints[r->ep],
		    r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
	else
		snprintf(why, sizeof(why), "%s: stream ended (HTTP %ld)",
		    r->e->conf.endpoints[r->ep], http);
	why[strcspn(why, "\r\n")] = '\0';
	if (rc != CURLE_OK && r->e->cur == r->ep)
		r->e->cur = (r->e->cur + 1) % r->e->conf.nendpoints;
	r->end(r->ctx, why);
	req_free(r);
}

static void
check_done(struct etcd *e)
{
	struct req *r;
	CURLMsg *m;
	long http;
	int left;

	while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		http = 0;
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &http);
		TAILQ_REMOVE(&e->active, r, entry);
		if (r->stream)
			finish_stream(r, m->data.result, http);
		else
			finish_call(r, m->data.result, http);
	}
}

/*
 * Start r from the loop, not here: a call made from inside one of curl's
 * callbacks (a watch's message) may not add a handle to the multi handle
 * (CURLM_RECURSIVE_API_CALL).
 */
static void
defer(struct req *r)
{
	r->retry_at = mono_ms();
	r->waiting = true;
	TAILQ_INSERT_TAIL(&r->e->waiting, r, entry);
	rearm_retry(r->e);
}

static struct req *
req_new(struct etcd *e, const char *path, json_t *body)
{
	struct req *r;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		json_decref(body);
		return NULL;
	}
	r->e = e;
	r->path = strdup(path);
	r->body = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (r->path == NULL || r->body == NULL) {
		req_free(r);
		return NULL;
	}
	return r;
}

int
etcd_call(struct etcd *e, const char *path, json_t *body, etcd_reply_fn *fn,
    void *ctx)
{
	struct req *r;

	if ((r = req_new(e, path, body)) == NULL)
		return -1;
	r->fn = fn;
	r->ctx = ctx;
	e->npending++;
	defer(r);
	return 0;
}

struct etcd_stream *
etcd_stream_open(struct etcd *e, const char *path, json_t *body,
    etcd_msg_fn *msg, etcd_end_fn *end, void *ctx)
{
	struct req *r;

	if ((r = req_new(e, path, body)) == NULL)
		return NULL;
	r->stream = true;
	r->msg = msg;
	r->end = end;
	r->ctx = ctx;
	defer(r);
	return (struct etcd_stream *)r;
}

void
etcd_stream_close(struct etcd_stream *s)
{
	struct req *r = (struct req *)s;

	if (r == NULL)
		return;
	/* Waiting for its start, or running. */
	if (r->waiting)
		TAILQ_REMOVE(&r->e->waiting, r, entry);
	else
		TAILQ_REMOVE(&r->e->active, r, entry);
	req_free(r);
}

struct etcd *
etcd_new(struct loop *lp, const struct etcd_conf *conf, char *err,
    size_t errlen)
{
	struct etcd *e;

	if (conf->nendpoints == 0) {
		snprintf(err, errlen, "no etcd endpoint");
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->multi = curl_multi_init()) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(e);
		return NULL;
	}
	e->lp = lp;
	e->conf = *conf;
	TAILQ_INIT(&e->active);
	TAILQ_INIT(&e->waiting);
	e->curl_timer = (struct watch){ .fn = on_curl_timer, .ctx = e };
	e->retry_timer = (struct watch){ .fn = on_retry_timer, .ctx = e };
	if ((e->curl_timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    (e->retry_timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(lp, &e->curl_timer, EPOLLIN) == -1 ||
	    loop_add(lp, &e->retry_timer, EPOLLIN) == -1) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		return NULL;
	}
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return e;
}

void
etcd_free(struct etcd *e)
{
	struct req *r;

	if (e == NULL)
		return;
	while ((r = TAILQ_FIRST(&e->active)) != NULL) {
		TAILQ_REMOVE(&e->active, r, entry);
		req_free(r);
	}
	while ((r = TAILQ_FIRST(&e->waiting)) != NULL) {
		TAILQ_REMOVE(&e->waiting, r, entry);
		req_free(r);
	}
	curl_multi_cleanup(e->multi);
	loop_del(e->lp, &e->curl_timer);
	loop_del(e->lp, &e->retry_timer);
	close(e->curl_timer.fd);
	close(e->retry_timer.fd);
	free(e);
}
