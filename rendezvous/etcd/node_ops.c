/*
 * What a request to etcd is made of (keys under the job's prefix, in
 * base64; puts, deletes, compares, counts; the state and join documents)
 * and what a txn's reply says.  Pure functions of their arguments: it
 * calls nothing of the node.
 */
#include <stdio.h>
#include <string.h>

#include "node_int.h"

/* The range of every key under pfx (relative to the prefix). */
json_t *
prefix_of(struct node *n, const char *pfx)
{
	char key[1024], end[1024];

	snprintf(key, sizeof(key), "%s%s", n->prefix, pfx);
	strlcpy(end, key, sizeof(end));
	end[strlen(end) - 1]++;
	return json_pack("{s:o, s:o}", "key", etcd_b64(key, strlen(key)),
	    "range_end", etcd_b64(end, strlen(end)));
}

json_t *
b64key(struct node *n, const char *rel)
{
	char key[1024];

	snprintf(key, sizeof(key), "%s%s", n->prefix, rel);
	return etcd_b64(key, strlen(key));
}

json_t *
op_put(struct node *n, const char *rel, const char *val, bool leased)
{
	json_t *put = json_pack("{s:o, s:o}", "key", b64key(n, rel), "value",
	    etcd_b64(val, strlen(val)));
	char id[32];

	if (leased) {
		snprintf(id, sizeof(id), "%lld", n->lease);
		json_object_set_new(put, "lease", json_string(id));
	}
	return json_pack("{s:o}", "request_put", put);
}

/* Delete a key, or every key under rel when rel ends in '/'. */
json_t *
op_del(struct node *n, const char *rel)
{
	char end[1024];
	size_t len;
	json_t *del;

	del = json_pack("{s:o}", "key", b64key(n, rel));
	len = strlen(rel);
	if (len > 0 && rel[len - 1] == '/') {
		snprintf(end, sizeof(end), "%s%s", n->prefix, rel);
		end[strlen(end) - 1]++;
		json_object_set_new(del, "range_end", etcd_b64(end,
		    strlen(end)));
	}
	return json_pack("{s:o}", "request_delete_range", del);
}

json_t *
cmp_mod(struct node *n, const char *rel, long long mod)
{
	char v[32];

	snprintf(v, sizeof(v), "%lld", mod);
	/* A key that does not exist has mod revision 0. */
	return json_pack("{s:o, s:s, s:s, s:s}", "key", b64key(n, rel),
	    "target", "MOD", "result", "EQUAL", "mod_revision", v);
}

char *
state_json(const struct state *st, unsigned round, const char *status,
    json_t *expect)
{
	json_t *j = json_pack("{s:I, s:s, s:I, s:I, s:I}", "round",
	    (json_int_t)round, "status", status, "min", (json_int_t)st->min,
	    "max", (json_int_t)st->max, "last_call_ms",
	    (json_int_t)st->last_call_ms);
	char *s;

	if (expect != NULL)
		json_object_set_new(j, "expect", expect);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

char *
join_json(struct node *n)
{
	json_t *j = json_pack("{s:I, s:s, s:s, s:I}", "nproc",
	    (json_int_t)n->me.nproc, "role", n->me.role, "addr", n->me.addr,
	    "port", (json_int_t)n->me.port);
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return s;
}

json_t *
cmp_absent(struct node *n, const char *rel)
{
	return json_pack("{s:o, s:s, s:s, s:s}", "key", b64key(n, rel),
	    "target", "CREATE", "result", "EQUAL", "create_revision", "0");
}

json_t *
op_count(struct node *n, const char *pfx)
{
	json_t *r = prefix_of(n, pfx);

	json_object_set_new(r, "count_only", json_true());
	return json_pack("{s:o}", "request_range", r);
}

/* The version of the one key the i-th response of a txn read. */
unsigned
reply_version(json_t *reply, size_t i)
{
	json_t *range = json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_range");
	long long version = 0;

	if (etcd_int(json_array_get(json_object_get(range, "kvs"), 0),
	    "version", &version) == -1 || version < 0)
		version = 0;
	return version > MAX_MEMBERS ? MAX_MEMBERS : (unsigned)version;
}

/* The reply of the txn run as the i-th operation of a txn. */
json_t *
reply_txn(json_t *reply, size_t i)
{
	return json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_txn");
}

/* The count of the range answered as the i-th response of a txn. */
unsigned
reply_count(json_t *reply, size_t i)
{
	json_t *range = json_object_get(json_array_get(json_object_get(reply,
	    "responses"), i), "response_range");
	long long count = 0;

	/* etcd omits a count of zero. */
	if (etcd_int(range, "count", &count) == -1 || count < 0 ||
	    count > MAX_MEMBERS)
		count = 0;
	return (unsigned)count;
}
