/*
 * A client of etcd's v3 JSON gateway (POST /v3/..., JSON bodies, bytes in
 * base64, int64s as strings) on esv's own event loop: libcurl's multi
 * interface, its sockets and its timer watched by lib/loop.c, so that no
 * request ever blocks the loop (names are resolved by curl's threaded
 * resolver).
 *
 * Calls are retried, with backoff and on the next endpoint, when the
 * transport fails, the member answers 5xx or its reply is not JSON: the
 * caller sees a reply or a refusal (4xx with etcd's message), never a
 * dropped connection.  Streams (watch) end instead, and the caller opens
 * them again from the revision it has seen.
 */
#ifndef ESV_ETCD_H
#define ESV_ETCD_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "loop.h"

#define ETCD_MAX_ENDPOINTS	16

struct etcd_conf {
	char		*endpoints[ETCD_MAX_ENDPOINTS];	/* http(s)://host:port */
	unsigned	 nendpoints;
	const char	*cacert, *cert, *key;	/* TLS; NULL: none */
	unsigned	 call_timeout_ms;	/* one attempt of a call */
};

struct etcd;
struct etcd_stream;

/*
 * The reply of a call: reply is the decoded JSON body (borrowed for the
 * callback), or NULL with err ("etcd: 404 lease not found").
 */
typedef void	etcd_reply_fn(void *ctx, json_t *reply, const char *err);
/*
 * One message of a stream ({"result":{...}} unwrapped to its result).
 * False ends the stream (the end callback follows, from the loop): a
 * stream must not be closed from inside its own callback.
 */
typedef bool	etcd_msg_fn(void *ctx, json_t *result);
/* The stream is over (the member went, or answered an error). */
typedef void	etcd_end_fn(void *ctx, const char *why);

struct etcd	*etcd_new(struct loop *lp, const struct etcd_conf *conf,
		    char *err, size_t errlen);
void		 etcd_free(struct etcd *);

/* POST body (taken over) to path; fn is called once, from the loop. */
int		 etcd_call(struct etcd *, const char *path, json_t *body,
		    etcd_reply_fn *fn, void *ctx);
/* Calls not yet answered. */
unsigned	 etcd_pending(const struct etcd *);

struct etcd_stream *etcd_stream_open(struct etcd *, const char *path,
		    json_t *body, etcd_msg_fn *msg, etcd_end_fn *end,
		    void *ctx);
/*
 * Close a stream; its end callback is not called.  Never from the
 * stream's own callback (it would be freed under etcd.c): its msg
 * callback ends it by returning false.
 */
void		 etcd_stream_close(struct etcd_stream *);

/* The endpoint calls go to now ("http://127.0.0.1:2379"). */
const char	*etcd_endpoint(const struct etcd *);

/* JSON helpers for etcd's conventions. */
json_t		*etcd_b64(const char *s, size_t len);	/* a bytes field */
/* A bytes field decoded into buf (NUL-terminated); its length, or -1. */
int		 etcd_unb64(json_t *field, char *buf, size_t len);
/* An int64 field: a string or a number; absent means 0 (etcd omits
 * zeros).  -1 if present but not an integer. */
int		 etcd_int(json_t *obj, const char *name, long long *out);

#endif
