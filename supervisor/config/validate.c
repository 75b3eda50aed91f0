/*
 * What a reading must hold together once every source is in: the
 * rendezvous backend against its endpoint and node counts, the limits
 * against each other, a run id drawn where torch draws one.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "config_int.h"
#include "nelem.h"
#include "utf8.h"
#include "confvalue.h"
#include "ctldir.h"
#include "msg.h"
#include "sig.h"
#include "trust.h"

static int
validate_static(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;
	char host[256], why[256];
	unsigned port;

	if (cfg->nnodes_min != cfg->nnodes_max)
		return cfg_fail(ctx, "--nnodes %u:%u: the static rendezvous needs "
		    "a fixed number of nodes (use --rdzv-backend esv)",
		    cfg->nnodes_min, cfg->nnodes_max);
	if (cfg->node_rank >= cfg->nnodes_max)
		return cfg_fail(ctx, "--node-rank %u: must be below --nnodes %u",
		    cfg->node_rank, cfg->nnodes_max);
	/*
	 * As torch: the static rendezvous meets at --rdzv-endpoint, which
	 * rank 0's store listens on.  It takes the place of the defaults
	 * of --master-addr and --master-port, not of values given for them.
	 */
	if (cfg->rdzv_endpoint[0] != '\0') {
		if (endpoint_parse(cfg->rdzv_endpoint, cfg->master_port, host,
		    sizeof(host), &port, why, sizeof(why)) == -1)
			return cfg_fail(ctx, "rdzv_endpoint: %s: %s",
			    cfg->rdzv_endpoint, why);
		if (!cfg->master_addr_set)
			strlcpy(cfg->master_addr, host, sizeof(cfg->master_addr));
		if (!cfg->master_port_set) {
			cfg->master_port = port;
			cfg->master_port_set = true;
		}
	}
	return 0;
}

/*
 * torch's etcd backends take HOST[:PORT] and rdzv_conf protocol=; etcd
 * itself prints URLs: both are taken, and the helper gets URLs.  TLS
 * files are checked now, not at the first join.
 */
static int
validate_etcd(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;
	const char *files[] = { cfg->rdzv.cacert, cfg->rdzv.cert,
	    cfg->rdzv.key }, *names[] = { "cacert", "cert", "key" };
	char copy[sizeof(cfg->rdzv_endpoint)], *ep, *save, url[512], why[256];
	char urls[sizeof(cfg->rdzv_endpoint)] = "";
	size_t i;

	strlcpy(cfg->rdzv_backend, "etcd", sizeof(cfg->rdzv_backend));
	if (cfg->rdzv.token_file[0] != '\0')
		return cfg_fail(ctx, "rdzv_conf: token_file: the etcd backend "
		    "authenticates to etcd with TLS (cacert=, cert=, key=)");
	if (cfg->rdzv_endpoint[0] == '\0')
		return cfg_fail(ctx, "rdzv_endpoint: required by the etcd backend "
		    "(HOST:PORT or http(s)://HOST:PORT of etcd members, "
		    "comma-separated)");
	strlcpy(copy, cfg->rdzv_endpoint, sizeof(copy));
	for (ep = strtok_r(copy, ",", &save); ep != NULL;
	    ep = strtok_r(NULL, ",", &save)) {
		if (urls[0] != '\0')
			strlcat(urls, ",", sizeof(urls));
		if (rdzv_etcd_url(&cfg->rdzv, ep, url, sizeof(url), why,
		    sizeof(why)) == -1)
			return cfg_fail(ctx, "%s", why);
		if (strlcat(urls, url, sizeof(urls)) >= sizeof(urls))
			return cfg_fail(ctx, "rdzv_endpoint: too long");
	}
	strlcpy(cfg->rdzv_endpoint, urls, sizeof(cfg->rdzv_endpoint));
	if ((cfg->rdzv.cert[0] == '\0') != (cfg->rdzv.key[0] == '\0'))
		return cfg_fail(ctx, "rdzv_conf: cert and key go together");
	for (i = 0; i < NELEM(files); i++)
		if (files[i][0] != '\0' && access(files[i], R_OK) == -1)
			return cfg_fail(ctx, "rdzv_conf: %s=%s: %s", names[i],
			    files[i], strerror(errno));
	return 0;
}

/* c10d is torchrun's default dynamic backend: esv-rdzv plays its part. */
static int
validate_rdzv(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;
	char why[256];

	rdzv_conf_defaults(&cfg->rdzv);
	if (rdzv_conf_parse(cfg->rdzv_conf, &cfg->rdzv, why, sizeof(why)) == -1)
		return cfg_fail(ctx, "rdzv_conf: %s", why);
	if (strcmp(cfg->rdzv_backend, "c10d") == 0)
		strlcpy(cfg->rdzv_backend, "esv", sizeof(cfg->rdzv_backend));
	if (strcmp(cfg->rdzv_backend, "static") == 0)
		return validate_static(ctx);
	if (strcmp(cfg->rdzv_backend, "etcd") == 0 ||
	    strcmp(cfg->rdzv_backend, "etcd-v2") == 0)
		return validate_etcd(ctx);
	if (strcmp(cfg->rdzv_backend, "esv") != 0)
		return cfg_fail(ctx, "rdzv_backend: %s: not available in this "
		    "version (static, esv, c10d or etcd)", cfg->rdzv_backend);
	if (cfg->rdzv.cacert[0] != '\0' || cfg->rdzv.cert[0] != '\0' ||
	    cfg->rdzv.key[0] != '\0')
		return cfg_fail(ctx, "rdzv_conf: cacert, cert and key are for the "
		    "etcd backend; esv-rdzv authenticates with token_file");
	if (!cfg->standalone) {
		if (cfg->rdzv_endpoint[0] == '\0')
			return cfg_fail(ctx, "rdzv_endpoint: required by the esv "
			    "backend (HOST:PORT of esv-rdzv)");
		if (endpoint_parse(cfg->rdzv_endpoint, 29400, cfg->rdzv_host,
		    sizeof(cfg->rdzv_host), &cfg->rdzv_port, why,
		    sizeof(why)) == -1)
			return cfg_fail(ctx, "rdzv_endpoint: %s", why);
	}
	return 0;
}

/* A random (version 4) UUID in its usual text, as torch's uuid.uuid4(). */
static void
fresh_run_id(char *buf, size_t len)
{
	uint8_t u[16];

	arc4random_buf(u, sizeof(u));
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
	    u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int
cfg_validate(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;

	if (cfg->no_python && cfg->module)
		return cfg_fail(ctx, "Don't use both the '--no-python' flag and "
		    "the '--module' flag at the same time.");
	if (cfg->standalone) {
		if (cfg->nnodes_max > 1)
			return cfg_fail(ctx, "--standalone: runs one node, but "
			    "--nnodes is %u:%u", cfg->nnodes_min,
			    cfg->nnodes_max);
		/* As torchrun: a private rendezvous on this host, a fresh id. */
		strlcpy(cfg->rdzv_backend, "esv", sizeof(cfg->rdzv_backend));
		cfg->rdzv_endpoint[0] = '\0';
		fresh_run_id(cfg->run_id, sizeof(cfg->run_id));
	}
	if (validate_rdzv(ctx) == -1)
		return -1;
	if (cfg->restart_delay_max_ms < cfg->restart_delay_ms)
		return cfg_fail(ctx, "--restart-delay-max %ums: below "
		    "--restart-delay %ums", cfg->restart_delay_max_ms,
		    cfg->restart_delay_ms);
	return 0;
}
