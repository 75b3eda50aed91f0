/*
 * The copy of the job's keys kept in step with etcd: one range, then a
 * watch from its revision, opened again when it ends; a fresh read after
 * a lost race; and its scope, every key while the node leads, h/ alone
 * while it follows (set_scope).  It may call the copy's tree
 * (node_keys.c), the pieces of a request and the timer's deadlines; what
 * the copy changes is decided above, through n->evaluate.
 */
#include <stdio.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"

static bool
on_watch_msg(void *ctx, json_t *res)
{
	struct node *n = ctx;
	json_t *events, *ev;
	long long compact;
	size_t i;

	if (json_is_true(json_object_get(res, "canceled"))) {
		etcd_int(res, "compact_revision", &compact);
		warn_msg("etcd: watch of %s canceled (%s): reading it again",
		    n->prefix, compact > 0 ? "compacted" : "by the member");
		/* What the watch missed is gone from etcd's history. */
		n->resync = true;
		return false;
	}
	/* Its revision is etcd's now, not what the watch has sent yet. */
	if (json_is_true(json_object_get(res, "created")))
		return true;
	events = json_object_get(res, "events");
	json_array_foreach(events, i, ev)
		apply(n, json_object_get(ev, "kv"), json_string_value(
		    json_object_get(ev, "type")) != NULL && strcmp(
		    json_string_value(json_object_get(ev, "type")), "DELETE") ==
		    0, false);
	n->in_watch = true;
	n->evaluate(n);
	n->in_watch = false;
	return !n->rescope;
}

static void
on_watch_end(void *ctx, const char *why)
{
	struct node *n = ctx;

	n->watch = NULL;
	if (n->rescope) {
		n->rescope = false;
		if (!n->ranging)
			sync_start(n);
		return;
	}
	if (n->resync) {
		n->resync = false;
		n->ready = false;
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
		rearm(n);
		return;
	}
	warn_msg("etcd: watch of %s ended (%s): watching again from revision "
	    "%lld", n->prefix, why, n->rev + 1);
	n->watch_at = mono_ms() + WATCH_RETRY_MS;
	rearm(n);
}

/* What the copy holds: every key of the job (leading), or h/. */
static json_t *
prefix_range(struct node *n)
{
	return prefix_of(n, n->full ? "" : "h/");
}

/*
 * Lead or follow: the copy is read again in its new scope and the watch
 * opened again from that read.  A read in flight for the other scope is
 * dropped on arrival (range_full, refresh_full).
 */
void
set_scope(struct node *n, bool full)
{
	if (n->full == full)
		return;
	n->full = full;
	if (full)
		info_msg("etcd: job %s: this node leads: it decides for every "
		    "node", n->me.run_id);
	else
		info_msg("etcd: job %s: another node leads", n->me.run_id);
	n->ready = false;
	n->resync = false;
	n->lastcall_gone = -1;
	/* A stream is not closed from its own callback: it ends it. */
	if (n->in_watch && n->watch != NULL) {
		n->rescope = true;
		return;
	}
	etcd_stream_close(n->watch);
	n->watch = NULL;
	if (!n->ranging)
		sync_start(n);
}

void
watch_open(struct node *n)
{
	json_t *req = prefix_range(n);
	char rev[32];

	snprintf(rev, sizeof(rev), "%lld", n->rev + 1);
	json_object_set_new(req, "start_revision", json_string(rev));
	n->watch_at = 0;
	n->watch = etcd_stream_open(n->e, "/v3/watch", json_pack("{s:o}",
	    "create_request", req), on_watch_msg, on_watch_end, n);
	if (n->watch == NULL)
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
}

static void
on_range(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	json_t *kvs, *kv;
	size_t i;

	n->ranging = false;
	if (n->range_full != n->full) {
		sync_start(n);
		return;
	}
	if (reply == NULL) {
		warn_msg("etcd: reading %s: %s", n->prefix, err);
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
		rearm(n);
		return;
	}
	kv_clear(n);
	kvs = json_object_get(reply, "kvs");
	json_array_foreach(kvs, i, kv)
		apply(n, kv, false, true);
	header_rev(reply, &n->rev);
	n->read_rev = n->rev;
	n->ready = true;
	n->stale = false;
	watch_open(n);
	n->evaluate(n);
}

/*
 * A fresh read after a lost race, the watch left running.  A read older
 * than the copy is dropped (the watch overtook it); a newer one replaces
 * the copy, and a last call that it no longer has has expired.
 */
static void
on_refresh(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	struct kv *kv;
	json_t *kvs, *j;
	long long rev;
	unsigned round, lc[8], nlc = 0, i;
	size_t x;

	n->stale = false;
	if (n->refresh_full != n->full) {
		n->evaluate(n);
		return;
	}
	if (reply == NULL || !header_rev(reply, &rev)) {
		warn_msg("etcd: reading %s: %s", n->prefix, err != NULL ? err :
		    "no revision in the reply");
		n->evaluate(n);
		return;
	}
	if (rev > n->rev) {
		KV_PREFIX_FOREACH(kv, n, "r/")
			if (nlc < 8 && lastcall_key(kv->key, &round))
				lc[nlc++] = round;
		kv_clear(n);
		kvs = json_object_get(reply, "kvs");
		json_array_foreach(kvs, x, j)
			apply(n, j, false, true);
		n->rev = n->read_rev = rev;
		for (i = 0; i < nlc; i++)
			if (kv_getf(n, "r/%u/lastcall", lc[i]) == NULL)
				n->lastcall_gone = lc[i];
	}
	n->evaluate(n);
}

void
refresh(struct node *n)
{
	n->stale = true;
	n->refresh_full = n->full;
	if (etcd_call(n->e, "/v3/kv/range", prefix_range(n), on_refresh, n) ==
	    -1)
		n->stale = false;
}

void
sync_start(struct node *n)
{
	n->ranging = true;
	n->range_full = n->full;
	n->watch_at = 0;
	if (etcd_call(n->e, "/v3/kv/range", prefix_range(n), on_range, n) ==
	    -1) {
		n->ranging = false;
		n->watch_at = mono_ms() + WATCH_RETRY_MS;
	}
}
