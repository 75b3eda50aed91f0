#include <limits.h>
#include <stdio.h>
#include <string.h>
/* Only strnvisx is used, the same in both flavours of strnvis. */
#define LIBBSD_OPENBSD_VIS
#include <vis.h>

#include <jansson.h>

#include "nelem.h"
#include "request.h"

static void
line_end(struct reqreader *rr, reqline_fn *fn, void *ctx)
{
	if (!rr->skipping)
		fn(ctx, rr->lineno, rr->buf, rr->len, NULL);
	rr->skipping = false;
	rr->len = 0;
}

void
reqreader_feed(struct reqreader *rr, const char *data, size_t n,
    reqline_fn *fn, void *ctx)
{
	const char *nl;
	size_t take;

	while (n > 0) {
		if (rr->len == 0 && !rr->skipping)
			rr->lineno++;
		nl = memchr(data, '\n', n);
		take = nl != NULL ? (size_t)(nl - data) : n;
		if (!rr->skipping && take > sizeof(rr->buf) - rr->len) {
			fn(ctx, rr->lineno, NULL, 0, "line longer than "
			    "4096 bytes: skipped");
			rr->skipping = true;
			rr->len = 0;
		}
		if (!rr->skipping) {
			memcpy(rr->buf + rr->len, data, take);
			rr->len += take;
		}
		if (nl == NULL)
			return;
		line_end(rr, fn, ctx);
		data += take + 1;
		n -= take + 1;
	}
}

void
request_vis(char *dst, size_t dlen, const char *src, size_t srclen)
{
	/* Each byte takes at most 4 ("\ooo"). */
	if (srclen > (dlen - 1) / 4)
		srclen = (dlen - 1) / 4;
	if (strnvisx(dst, dlen, src, srclen,
	    VIS_CSTYLE | VIS_NL | VIS_TAB | VIS_DQ | VIS_OCTAL) == -1)
		dst[0] = '\0';
}

static bool
blank(const char *line, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (strchr(" \t\r", line[i]) == NULL)
			return false;
	return true;
}

static int
fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -1;
}

/* pid, signal and version: JSON integers in [lo, hi]. */
static int
get_int(json_t *v, const char *name, json_int_t lo, json_int_t hi, int *out,
    char *err, size_t errlen)
{
	json_int_t i;

	if (!json_is_integer(v))
		return fail(err, errlen, "%s: not an integer", name);
	i = json_integer_value(v);
	if (i < lo || i > hi) {
		snprintf(err, errlen, "%s: %lld out of range %lld..%lld", name,
		    (long long)i, (long long)lo, (long long)hi);
		return -1;
	}
	*out = (int)i;
	return 0;
}

static int
get_field(struct request *r, const char *key, json_t *v, char *err,
    size_t errlen)
{
	int ignored;

	if (strcmp(key, "pid") == 0)
		return get_int(v, key, 1, INT_MAX, &r->pid, err, errlen);
	if (strcmp(key, "signal") == 0)
		return get_int(v, key, INT_MIN, 64, &r->signal, err, errlen);
	if (strcmp(key, "version") == 0)
		return get_int(v, key, INT_MIN, INT_MAX, &ignored, err, errlen);
	if (strcmp(key, "expiration_time") == 0) {
		if (!json_is_number(v))
			return fail(err, errlen, "%s: not a number", key);
		r->expiration = json_number_value(v);
		r->release = r->expiration < 0;
		return 0;
	}
	if (strcmp(key, "scope_id") == 0) {
		if (!json_is_string(v))
			return fail(err, errlen, "%s: not a string", key);
		if (json_string_length(v) > WDCHAN_SCOPE_MAX)
			return fail(err, errlen, "%s: longer than 256 bytes",
			    key);
		/* jansson refuses \u0000, so the scope is one C string. */
		strlcpy(r->scope, json_string_value(v), sizeof(r->scope));
		return 0;
	}
	return -2;
}

static int
parse_object(json_t *o, struct request *r, char *err, size_t errlen)
{
	static const char *const required[] = { "pid", "scope_id",
	    "expiration_time", "signal" };
	char name[72];
	const char *key;
	json_t *v;
	size_t i;
	int rc;

	json_object_foreach(o, key, v) {
		if ((rc = get_field(r, key, v, err, errlen)) == -2) {
			request_vis(name, sizeof(name), key, strlen(key));
			return fail(err, errlen, "unknown field \"%s\"", name);
		}
		if (rc == -1)
			return -1;
	}
	for (i = 0; i < NELEM(required); i++)
		if (json_object_get(o, required[i]) == NULL)
			return fail(err, errlen, "missing field %s",
			    required[i]);
	return 0;
}

int
request_parse(const char *line, size_t len, struct request *r, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *o;
	int rc;

	if (memchr(line, '\0', len) != NULL)
		return fail(err, errlen, "%s", "NUL byte");
	if (blank(line, len))
		return 1;
	if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		snprintf(err, errlen, "malformed JSON: %s (column %d)", je.text,
		    je.column);
		return -1;
	}
	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		rc = fail(err, errlen, "%s", "not an object");
	else
		rc = parse_object(o, r, err, errlen);
	json_decref(o);
	return rc;
}
