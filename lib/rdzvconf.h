/*
 * torchrun's --rdzv-conf "k=v,k2=v2" and --rdzv-endpoint HOST[:PORT], as
 * esv reads them (esv-job.ini(5) lists the keys).
 */
#ifndef ESV_RDZVCONF_H
#define ESV_RDZVCONF_H

#include <limits.h>
#include <stddef.h>

struct rdzv_conf {
	char		token_file[PATH_MAX];
	unsigned	join_timeout_ms;	/* whole join, default 600 s */
	unsigned	last_call_ms;		/* after min nodes, default 30 s */
	unsigned	exit_barrier_ms;	/* default 300 s; 0: none */
	int		is_host;		/* -1 auto, 0 never, 1 always */
	/*
	 * The node's lease ("lease", or "lease_ttl" as etcd calls it): how
	 * long a node may go unheard before its ranks may be given away.
	 * 0 until set: each backend has its own default (rdzv_lease_ms).
	 */
	unsigned	lease_ttl_ms;
	/* etcd */
	char		cacert[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	char		prefix[256];		/* default /esv */
	/*
	 * Of HOST:PORT: "" until set, then http, or https if any of
	 * cacert, cert and key is set (rdzv_etcd_url).
	 */
	char		protocol[8];
};

#define RDZV_LEASE_ESV_MS	1500
/*
 * etcd's TTLs are whole seconds, no shorter than 1.5 of its election
 * timeouts (2 s with etcd's defaults), expired in sweeps of 500 ms: a
 * lease of 2 s is the shortest a default etcd grants (esv-rdzv-etcd(8)).
 */
#define RDZV_LEASE_ETCD_MS	2000

void	rdzv_conf_defaults(struct rdzv_conf *rc);
/* The lease in force: the one set, or the backend's default. */
unsigned	rdzv_lease_ms(const struct rdzv_conf *rc, int etcd);
/*
 * The part of a lease given to stopping the workers of a node that has
 * lost it: they get SIGTERM at lease - grace, SIGKILL at the lease's end.
 */
unsigned	rdzv_fence_grace_ms(unsigned lease_ms);
/* Parse conf into rc; 0, or -1 with "key=value: why" in why. */
int	rdzv_conf_parse(const char *conf, struct rdzv_conf *rc, char *why,
	    size_t whylen);

/*
 * One item of the etcd backend's endpoint, "HOST[:PORT]" (port 2379) or
 * a URL, as the URL esv-rdzv-etcd is given, in url.  The scheme of
 * HOST:PORT is protocol=, or https if any TLS file is set, else http.
 * TLS files beside plaintext (an http:// URL, protocol=http) are refused:
 * TLS is all the authentication etcd has.  0, or -1 with why set
 * ("rdzv_endpoint: ..." or "rdzv_conf: ...").
 */
int	rdzv_etcd_url(const struct rdzv_conf *rc, const char *ep, char *url,
	    size_t urllen, char *why, size_t whylen);

/*
 * "host:port", "host", "[v6addr]:port", "[v6addr]" or a bare IPv6 address;
 * port defaults to defport.  0, or -1 with why set.
 */
int	endpoint_parse(const char *ep, unsigned defport, char *host,
	    size_t hostlen, unsigned *port, char *why, size_t whylen);

#endif
