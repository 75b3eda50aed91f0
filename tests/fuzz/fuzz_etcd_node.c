/*
 * esv-rdzv-etcd's decisions (rendezvous/etcd/node*.c) driven by the input as
 * a script of etcd's replies, watch events and the supervisor's messages,
 * with no etcd and no network: the etcd calls node*.c make are queued
 * here, and the input answers them (with JSON it writes itself, or a
 * well-formed reply whose fields it picks), puts and deletes keys under
 * the job's prefix with values it writes or picks from esv's shapes, and
 * says JOIN, BARRIER and CLOSE.
 *
 * Checks: a stream is never closed from its own callback (etcd.c would go
 * on with it freed: it is ended by returning false); every message node*.c
 * say to the supervisor formats as one line of the protocol; every ROUND
 * has its ranks within its world.
 *
 * Each step: one op byte (low 4 bits), then its operands.
 * The keys are those of a follower's copy (h/) and of a leader's (all):
 * a lease of 7 in a key is the node's own when the script granted it 7.
 *
 *	0 answer the oldest call with raw JSON: length, bytes
 *	1 answer the oldest call well-formed: a byte of choices
 *	2 refuse the oldest call (an HTTP 4xx)
 *	3 put a key: key byte, value byte (or length and raw bytes)
 *	4 delete a key: key byte
 *	5 the watch: created / cancelled by compaction / ended
 *	6 JOIN: state, round, nproc, min, max
 *	7 BARRIER round     8 CLOSE     9 shutdown
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../rendezvous/etcd/etcd.h"
#include "../../rendezvous/etcd/node.h"
#include "fuzz.h"
#include "loop.h"
#include "rdzvproto.h"

#define PREFIX	"/esv/job/"

struct call {
	char			*path;
	json_t			*body;
	etcd_reply_fn		*fn;
	void			*ctx;
	TAILQ_ENTRY(call)	 entry;
};
TAILQ_HEAD(callq, call);

struct etcd_stream {
	etcd_msg_fn	*msg;
	etcd_end_fn	*end;
	void		*ctx;
};

static struct callq calls = TAILQ_HEAD_INITIALIZER(calls);
static struct etcd_stream *watch;
/* etcd.c frees a stream closed from its own callback under itself. */
static struct etcd_stream *in_msg;
static long long revision;
static bool said_gone;

int
etcd_call(struct etcd *e, const char *path, json_t *body, etcd_reply_fn *fn,
    void *ctx)
{
	struct call *c = calloc(1, sizeof(*c));

	(void)e;
	CHECK(c != NULL);
	c->path = strdup(path);
	c->body = body;
	c->fn = fn;
	c->ctx = ctx;
	TAILQ_INSERT_TAIL(&calls, c, entry);
	return 0;
}

struct etcd_stream *
etcd_stream_open(struct etcd *e, const char *path, json_t *body,
    etcd_msg_fn *msg, etcd_end_fn *end, void *ctx)
{
	(void)e;
	(void)path;
	json_decref(body);
	CHECK(watch == NULL);
	CHECK((watch = calloc(1, sizeof(*watch))) != NULL);
	watch->msg = msg;
	watch->end = end;
	watch->ctx = ctx;
	return watch;
}

void
etcd_stream_close(struct etcd_stream *s)
{
	if (s == NULL)
		return;
	CHECK(s == watch);
	CHECK(s != in_msg);
	free(watch);
	watch = NULL;
}

static void
call_free(struct call *c)
{
	free(c->path);
	json_decref(c->body);
	free(c);
}

static void
say(void *ctx, const struct rdzv_msg *m)
{
	char line[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2];
	uint8_t key[RDZV_KEY_LEN] = { 0 };
	const struct rdzv_round_msg *r = &m->u.round;

	(void)ctx;
	CHECK(rdzv_msg_format_sealed(line, sizeof(line), m, key,
	    RDZV_TO_CLIENT, 0) > 0);
	if (m->verb == RV_ROUND) {
		CHECK(r->group_rank < r->group_world_size);
		CHECK(r->base_rank < r->world_size);
		CHECK(r->base_role_rank < r->role_world_size);
	}
}

static void
gone(void *ctx)
{
	(void)ctx;
	said_gone = true;
}

/* The lease may run out (esv-rdzv-etcd hangs up): nothing more is decided. */
static void
fenced(void *ctx)
{
	(void)ctx;
}

/* Keys of esv's layout, with rounds and node ids the script picks. */
static void
pick_key(uint8_t b, char *key, size_t len)
{
	static const char *const ids[] = { "me_1_0", "n2_2_0", "n3_3_0",
	    "bad id" };
	const char *id = ids[(b >> 4) & 3];
	unsigned r = (b >> 6) & 1;

	switch (b & 15) {
	case 0: case 1:
		snprintf(key, len, PREFIX "h/state");
		break;
	case 2: case 3: case 4:
		snprintf(key, len, PREFIX "r/%u/join/%s", r, id);
		break;
	case 5:
		snprintf(key, len, PREFIX "r/%u/seq", r);
		break;
	case 6:
		snprintf(key, len, PREFIX "r/%u/lastcall", r);
		break;
	case 7: case 8:
		snprintf(key, len, PREFIX "a/%u/%s", r, id);
		break;
	case 9:
		snprintf(key, len, PREFIX "r/%u/exit/%s", r, id);
		break;
	case 10:
		snprintf(key, len, PREFIX "h/%s", (b & 16) ? "lead" :
		    (b & 32) ? "waiting" : "r/0/done");
		break;
	case 11:
		snprintf(key, len, PREFIX "%s/%s", (b & 64) ? "want" :
		    "waiting", id);
		break;
	case 12:
		snprintf(key, len, "/elsewhere/%s", id);
		break;
	default:
		snprintf(key, len, PREFIX "r/%u/%s", b >> 4, id);
		break;
	}
}

/* A value of esv's shapes, its fields picked by b. */
static void
pick_value(uint8_t b, uint8_t c, char *v, size_t len)
{
	static const char *const status[] = { "open", "running", "closed",
	    "what" };

	switch (b & 3) {
	case 0:
		snprintf(v, len, "{\"round\":%u,\"status\":\"%s\",\"min\":%u,"
		    "\"max\":%u,\"last_call_ms\":%u%s}", c & 1, status[(c >> 1) &
		    3], 1 + ((c >> 3) & 1), 1 + ((c >> 3) & 1) + ((c >> 4) & 3),
		    (c >> 6) * 1000, (b & 4) ? ",\"expect\":[\"me_1_0\","
		    "\"n2_2_0\"]" : "");
		break;
	case 1:
		snprintf(v, len, "{\"nproc\":%u,\"role\":\"%s\",\"addr\":"
		    "\"%s\",\"port\":%u}", c & 7, (c & 8) ? "trainer" :
		    "default", (c & 16) ? "10.0.0.1" : "a b", 29500 + (c >> 5));
		break;
	case 2:
		/* A place (a/R/<node>), sound or off by the bits of c. */
		snprintf(v, len, "{\"group_rank\":%u,\"group_world_size\":%u,"
		    "\"base_rank\":%u,\"world_size\":%u,\"base_role_rank\":0,"
		    "\"role_world_size\":%u,\"master_addr\":\"%s\","
		    "\"master_port\":%u}", c & 3, 1 + ((c >> 2) & 1), c & 1,
		    2 + ((c >> 3) & 1), 2, (c & 16) ? "10.0.0.1" : "a b",
		    (c & 32) ? 29500u : 70000u);
		break;
	default:
		snprintf(v, len, "%s", (c & 1) ? "" : (c & 2) ? "me_1_0" :
		    (c & 4) ? "{}" : (c & 8) ? "3" : "99999999999");
		break;
	}
}

/* As etcd.c ends a stream: the end callback, then it is gone. */
static void	end_watch(const char *why);

static void
deliver(json_t *res)
{
	bool go_on;

	in_msg = watch;
	go_on = watch->msg(watch->ctx, res);
	in_msg = NULL;
	if (!go_on)
		end_watch("ended by its reader");
}


static void
end_watch(const char *why)
{
	struct etcd_stream *w = watch;

	watch = NULL;
	w->end(w->ctx, why);
	free(w);
}

static json_t *
kv_json(const char *key, const char *val, uint8_t b)
{
	char lease[32];

	snprintf(lease, sizeof(lease), "%d", (b & 1) ? 7 : 8);
	revision++;
	return json_pack("{s:o, s:o, s:I, s:I, s:s}", "key", etcd_b64(key,
	    strlen(key)), "value", etcd_b64(val, strlen(val)),
	    "create_revision", (json_int_t)revision, "mod_revision",
	    (json_int_t)revision, "lease", lease);
}

static void
event(json_t *kv, bool del)
{
	json_t *ev, *res;
	char rev[32];

	if (watch == NULL) {
		json_decref(kv);
		return;
	}
	snprintf(rev, sizeof(rev), "%lld", revision);
	ev = json_pack("{s:o}", "kv", kv);
	if (del)
		json_object_set_new(ev, "type", json_string("DELETE"));
	res = json_pack("{s:{s:s}, s:[o]}", "header", "revision", rev,
	    "events", ev);
	deliver(res);
	json_decref(res);
}

/* A reply of the shape the call wants, its fields picked by b. */
static json_t *
good_reply(const struct call *c, uint8_t b)
{
	char rev[32];

	snprintf(rev, sizeof(rev), "%lld", revision + (b & 3));
	if (strcmp(c->path, "/v3/lease/grant") == 0)
		return json_pack("{s:s, s:s}", "ID", (b & 4) ? "7" : "0", "TTL",
		    "2");
	if (strcmp(c->path, "/v3/lease/keepalive") == 0)
		return (b & 4) ? json_pack("{s:{s:s, s:s}}", "result", "ID", "7",
		    "TTL", "2") : json_pack("{s:{s:s}}", "result", "ID", "7");
	/*
	 * A txn's responses as a join's (the version of seq third, the
	 * fresh join's nested txn first) and a wait's (a count second),
	 * whatever was asked: etcd omits zeros, and b picks odd values.
	 */
	if (strcmp(c->path, "/v3/kv/txn") == 0) {
		const char *n = (b & 8) ? "2" : (b & 16) ? "-1" : "x";
		json_t *join = json_pack("[{}, {s:{s:s}}, {s:{s:[{s:s}]}}]",
		    "response_range", "count", n, "response_range", "kvs",
		    "version", n);
		json_t *inner = (b & 64) ? json_deep_copy(join) :
		    json_pack("[{s:{s:b, s:o}}]", "response_txn", "succeeded",
		    (b & 128) != 0, "responses", json_deep_copy(join));

		json_array_set_new(join, 0, json_pack("{s:{s:b, s:o}}",
		    "response_txn", "succeeded", (b & 32) != 0, "responses",
		    inner));
		return json_pack("{s:{s:s}, s:b, s:o}", "header", "revision",
		    rev, "succeeded", (b & 4) != 0, "responses", join);
	}
	return json_pack("{s:{s:s}}", "header", "revision", rev);
}

static void
answer(json_t *reply, const char *err)
{
	struct call *c = TAILQ_FIRST(&calls);

	if (c == NULL) {
		json_decref(reply);
		return;
	}
	TAILQ_REMOVE(&calls, c, entry);
	c->fn(c->ctx, reply, reply == NULL ? err : NULL);
	json_decref(reply);
	call_free(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct node_ops ops = { say, gone, fenced, NULL };
	struct rdzv_msg m = { .verb = RV_JOIN };
	struct rdzv_join *j = &m.u.join;
	char key[256], val[1024];
	struct loop lp;
	struct node *n;
	struct call *c;
	json_error_t je;
	size_t i = 0, len;
	uint8_t op;

	revision = 1;
	said_gone = false;
	CHECK(loop_init(&lp) == 0);
	CHECK((n = node_new(NULL, &lp, "/esv", "job", 2000, &ops)) != NULL);
	while (i < size && !said_gone) {
		op = data[i++];
		switch (op & 15) {
		case 0:
			if (i >= size)
				break;
			len = data[i++];
			len = len < size - i ? len : size - i;
			answer(json_loadb((const char *)data + i, len, 0, &je),
			    "etcd: HTTP 400: bad");
			i += len;
			break;
		case 1:
			if (i < size && (c = TAILQ_FIRST(&calls)) != NULL)
				answer(good_reply(c, data[i]), NULL);
			i++;
			break;
		case 2:
			answer(NULL, "etcd /v3/kv/txn: HTTP 404: lease not found");
			break;
		case 3:
			if (i + 2 > size)
				break;
			pick_key(data[i], key, sizeof(key));
			if (data[i + 1] & 0x80) {
				len = data[i + 1] & 0x7f;
				i += 2;
				len = len < size - i ? len : size - i;
				len = len < sizeof(val) - 1 ? len : sizeof(val) - 1;
				memcpy(val, data + i, len);
				val[len] = '\0';
				i += len;
			} else {
				pick_value(data[i + 1], i + 2 < size ?
				    data[i + 2] : 0, val, sizeof(val));
				i += 3;
			}
			event(kv_json(key, val, op >> 4), false);
			break;
		case 4:
			if (i >= size)
				break;
			pick_key(data[i++], key, sizeof(key));
			revision++;
			event(json_pack("{s:o, s:I}", "key", etcd_b64(key,
			    strlen(key)), "mod_revision", (json_int_t)revision),
			    true);
			break;
		case 5:
			if (watch == NULL)
				break;
			if (op & 16) {
				json_t *res = json_pack("{s:b, s:s}", "canceled",
				    1, "compact_revision", "3");

				deliver(res);
				json_decref(res);
			} else if (op & 32) {
				end_watch("member gone");
			} else {
				json_t *res = json_pack("{s:b}", "created", 1);

				in_msg = watch;
				CHECK(watch->msg(watch->ctx, res));
				in_msg = NULL;
				json_decref(res);
			}
			break;
		case 6:
			if (i + 5 > size)
				break;
			memset(j, 0, sizeof(*j));
			j->version = RDZV_PROTO_VERSION;
			strlcpy(j->run_id, "job", sizeof(j->run_id));
			strlcpy(j->node_id, "me_1_0", sizeof(j->node_id));
			strlcpy(j->role, "default", sizeof(j->role));
			strlcpy(j->addr, "10.0.0.9", sizeof(j->addr));
			j->port = 29500;
			j->state = data[i] % 3;
			j->round = data[i + 1] & 3;
			j->group_rank = data[i + 1] >> 4 & 1;
			j->group_world_size = 2;
			j->nproc = 1 + (data[i + 2] & 3);
			j->min_nodes = 1 + (data[i + 3] & 1);
			j->max_nodes = j->min_nodes + (data[i + 4] & 3);
			j->last_call_ms = (data[i + 3] >> 6) * 1000;
			node_join(n, j);
			i += 5;
			break;
		case 7:
			if (i < size)
				node_barrier(n, data[i++] & 3);
			break;
		case 8:
			node_close_job(n);
			break;
		default:
			node_shutdown(n);
			break;
		}
	}
	node_free(n);
	while ((c = TAILQ_FIRST(&calls)) != NULL) {
		TAILQ_REMOVE(&calls, c, entry);
		call_free(c);
	}
	CHECK(watch == NULL);
	close(lp.epfd);
	return 0;
}
