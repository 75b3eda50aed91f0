#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confvalue.h"
#include "nelem.h"
#include "rdzvconf.h"

void
rdzv_conf_defaults(struct rdzv_conf *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->join_timeout_ms = 600000;
	rc->last_call_ms = 30000;
	rc->exit_barrier_ms = 300000;
	rc->is_host = -1;
	strlcpy(rc->prefix, "/esv", sizeof(rc->prefix));
}

unsigned
rdzv_lease_ms(const struct rdzv_conf *rc, int etcd)
{
	if (rc->lease_ttl_ms != 0)
		return rc->lease_ttl_ms;
	return etcd ? RDZV_LEASE_ETCD_MS : RDZV_LEASE_ESV_MS;
}

unsigned
rdzv_fence_grace_ms(unsigned lease_ms)
{
	unsigned g = lease_ms / 5;

	return g < 100 ? 100 : g > 2000 ? 2000 : g;
}

static int
set_path(const char *key, const char *v, char *dst, size_t len, char *why,
    size_t whylen)
{
	if (*v == '\0' || strlcpy(dst, v, len) >= len) {
		snprintf(why, whylen, "%s: empty or too long", key);
		return -1;
	}
	return 0;
}

/* torch's keys that mean nothing to esv's backend: accepted, unused. */
static const char *const ignored_keys[] = {
	"timeout", "read_timeout", "close_timeout", "keep_alive_interval",
	"keep_alive_max_attempt", "heartbeat", "store_type", "use_libuv",
};

static int
set_duration(const char *key, const char *v, unsigned *out, char *why,
    size_t whylen)
{
	long long ms = parse_duration_ms(v);

	if (ms < 0 || ms > 365LL * 24 * 3600 * 1000) {
		snprintf(why, whylen, "%s=%s: not a duration (seconds, or "
		    "500ms, 2m...)", key, v);
		return -1;
	}
	*out = (unsigned)ms;
	return 0;
}

static int
set_pair(struct rdzv_conf *rc, const char *key, const char *v, char *why,
    size_t whylen)
{
	bool b;
	size_t i;

	if (strcmp(key, "token_file") == 0)
		return set_path(key, v, rc->token_file, sizeof(rc->token_file),
		    why, whylen);
	if (strcmp(key, "cacert") == 0)
		return set_path(key, v, rc->cacert, sizeof(rc->cacert), why,
		    whylen);
	if (strcmp(key, "cert") == 0)
		return set_path(key, v, rc->cert, sizeof(rc->cert), why,
		    whylen);
	if (strcmp(key, "key") == 0)
		return set_path(key, v, rc->key, sizeof(rc->key), why, whylen);
	if (strcmp(key, "prefix") == 0) {
		if (v[0] != '/' || strchr(v, ' ') != NULL)
			return snprintf(why, whylen, "prefix=%s: a key path "
			    "beginning with /", v), -1;
		return set_path(key, v, rc->prefix, sizeof(rc->prefix), why,
		    whylen);
	}
	if (strcmp(key, "protocol") == 0) {
		if (strcmp(v, "http") != 0 && strcmp(v, "https") != 0)
			return snprintf(why, whylen, "protocol=%s: http or "
			    "https", v), -1;
		strlcpy(rc->protocol, v, sizeof(rc->protocol));
		return 0;
	}
	if (strcmp(key, "lease") == 0 || strcmp(key, "lease_ttl") == 0) {
		if (set_duration(key, v, &rc->lease_ttl_ms, why, whylen) == -1)
			return -1;
		if (rc->lease_ttl_ms < 1000 || rc->lease_ttl_ms > 3600000)
			return snprintf(why, whylen, "%s=%s: not within "
			    "1 s..1 h", key, v), -1;
		return 0;
	}
	if (strcmp(key, "join_timeout") == 0)
		return set_duration(key, v, &rc->join_timeout_ms, why, whylen);
	if (strcmp(key, "last_call_timeout") == 0)
		return set_duration(key, v, &rc->last_call_ms, why, whylen);
	if (strcmp(key, "exit_barrier_timeout") == 0)
		return set_duration(key, v, &rc->exit_barrier_ms, why, whylen);
	if (strcmp(key, "is_host") == 0) {
		if (strcmp(v, "auto") == 0) {
			rc->is_host = -1;
			return 0;
		}
		if (parse_bool(v, &b) == -1) {
			snprintf(why, whylen, "is_host=%s: not true, false or "
			    "auto", v);
			return -1;
		}
		rc->is_host = b;
		return 0;
	}
	for (i = 0; i < NELEM(ignored_keys); i++)
		if (strcmp(key, ignored_keys[i]) == 0)
			return 0;
	snprintf(why, whylen, "%s: unknown key", key);
	return -1;
}

int
rdzv_conf_parse(const char *conf, struct rdzv_conf *rc, char *why,
    size_t whylen)
{
	char *copy, *item, *save, *eq;
	int r = 0;

	if ((copy = strdup(conf)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (item = strtok_r(copy, ",", &save); item != NULL && r == 0;
	    item = strtok_r(NULL, ",", &save)) {
		item += strspn(item, " \t");
		if (*item == '\0')
			continue;
		if ((eq = strchr(item, '=')) == NULL) {
			snprintf(why, whylen, "%s: not key=value", item);
			r = -1;
			break;
		}
		*eq = '\0';
		r = set_pair(rc, item, eq + 1, why, whylen);
	}
	free(copy);
	return r;
}

int
endpoint_parse(const char *ep, unsigned defport, char *host, size_t hostlen,
    unsigned *port, char *why, size_t whylen)
{
	struct in6_addr a6;
	const char *hs = ep, *he, *ps = NULL;

	if (*ep == '[') {
		hs = ep + 1;
		if ((he = strchr(hs, ']')) == NULL) {
			snprintf(why, whylen, "%s: missing ']'", ep);
			return -1;
		}
		if (he[1] == ':')
			ps = he + 2;
		else if (he[1] != '\0') {
			snprintf(why, whylen, "%s: junk after ']'", ep);
			return -1;
		}
	} else if (inet_pton(AF_INET6, ep, &a6) == 1)
		he = ep + strlen(ep);
	else if ((he = strrchr(ep, ':')) != NULL)
		ps = he + 1;
	else
		he = ep + strlen(ep);
	if (he == hs || (size_t)(he - hs) >= hostlen) {
		snprintf(why, whylen, "%s: no host, or host too long", ep);
		return -1;
	}
	memcpy(host, hs, he - hs);
	host[he - hs] = '\0';
	*port = defport;
	if (ps != NULL && parse_uint(ps, 1, 65535, port, why, whylen) == -1)
		return -1;
	return 0;
}

int
rdzv_etcd_url(const struct rdzv_conf *rc, const char *ep, char *url,
    size_t urllen, char *why, size_t whylen)
{
	bool tls = rc->cacert[0] != '\0' || rc->cert[0] != '\0' ||
	    rc->key[0] != '\0';
	const char *scheme = rc->protocol[0] != '\0' ? rc->protocol :
	    tls ? "https" : "http";
	char host[256];
	unsigned port;

	if (tls && strcmp(scheme, "http") == 0)
		return snprintf(why, whylen, "rdzv_conf: protocol=http beside "
		    "cacert, cert or key: TLS is etcd's only authentication, "
		    "and plaintext would drop it (use https)"), -1;
	if (strncmp(ep, "http://", 7) == 0) {
		if (tls)
			return snprintf(why, whylen, "rdzv_endpoint: %s: "
			    "plaintext beside cacert, cert or key: TLS is "
			    "etcd's only authentication (use https://)", ep),
			    -1;
		if (strcmp(scheme, "https") == 0)
			return snprintf(why, whylen, "rdzv_endpoint: %s: "
			    "plaintext, but rdzv_conf says protocol=https", ep),
			    -1;
	}
	if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0) {
		if (strlcpy(url, ep, urllen) >= urllen)
			return snprintf(why, whylen, "rdzv_endpoint: %s: too "
			    "long", ep), -1;
		return 0;
	}
	if (strstr(ep, "://") != NULL)
		return snprintf(why, whylen, "rdzv_endpoint: %s: etcd is "
		    "reached by http:// or https://", ep), -1;
	if (endpoint_parse(ep, 2379, host, sizeof(host), &port, why,
	    whylen) == -1) {
		/* endpoint_parse's why, under the key it is of. */
		char w[256];

		strlcpy(w, why, sizeof(w));
		snprintf(why, whylen, "rdzv_endpoint: %s", w);
		return -1;
	}
	if ((size_t)snprintf(url, urllen, strchr(host, ':') != NULL ?
	    "%s://[%s]:%u" : "%s://%s:%u", scheme, host, port) >= urllen)
		return snprintf(why, whylen, "rdzv_endpoint: %s: too long",
		    ep), -1;
	return 0;
}
