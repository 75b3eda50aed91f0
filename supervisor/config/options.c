/*
 * The option table: every setting's job.ini key, torchrun's option name
 * and PET_* variable, its kind and bounds, the setters of the settings
 * that need more than a bound, the defaults, and what --dry-run and
 * --help print.
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

static int	set_entrypoint(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_nproc(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_nnodes(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_master_port(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_std(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_filter(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_interval(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_signals(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_health_port(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_master_addr(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_start_method(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_numa_binding(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);

#define FIELD(f)	offsetof(struct job_config, f), \
			sizeof(((struct job_config *)NULL)->f)
#define NOFIELD		0, 0

const struct option_def cfg_options[] = {
	{ "entrypoint", NULL, 0, NULL, NULL, K_FN, NOFIELD, 0, 0,
	    set_entrypoint },
	{ "args", NULL, 0, NULL, NULL, K_FN, NOFIELD, 0, 0, cfg_set_args },
	{ "nproc_per_node", "nproc-per-node", 0, "PET_NPROC_PER_NODE", NULL,
	    K_FN, FIELD(nproc_per_node), 0, 0, set_nproc },
	{ "nnodes", "nnodes", 0, "PET_NNODES", NULL, K_FN, NOFIELD, 0, 0,
	    set_nnodes },
	{ "node_rank", "node-rank", 0, "PET_NODE_RANK", NULL, K_UINT,
	    FIELD(node_rank), 0, MAX_NNODES - 1, NULL },
	{ "master_addr", "master-addr", 0, "PET_MASTER_ADDR", NULL, K_FN,
	    FIELD(master_addr), 1, 0, set_master_addr },
	{ "master_port", "master-port", 0, "PET_MASTER_PORT", NULL, K_FN,
	    FIELD(master_port), 1, 65535, set_master_port },
	{ "max_restarts", "max-restarts", 0, "PET_MAX_RESTARTS", NULL, K_UINT,
	    FIELD(max_restarts), 0, INT_MAX, NULL },
	{ "role", "role", 0, "PET_ROLE", NULL, K_STR, FIELD(role), 1, 0, NULL },
	{ "run_id", "rdzv-id", 0, "PET_RDZV_ID", NULL, K_STR, FIELD(run_id),
	    1, 0, NULL },
	{ "rdzv_backend", "rdzv-backend", 0, "PET_RDZV_BACKEND", NULL, K_STR,
	    FIELD(rdzv_backend), 1, 0, NULL },
	{ "rdzv_endpoint", "rdzv-endpoint", 0, "PET_RDZV_ENDPOINT", NULL,
	    K_STR, FIELD(rdzv_endpoint), 0, 0, NULL },
	{ "rdzv_conf", "rdzv-conf", 0, "PET_RDZV_CONF", NULL, K_STR,
	    FIELD(rdzv_conf), 0, 0, NULL },
	{ "standalone", "standalone", 0, "PET_STANDALONE", NULL, K_BOOL,
	    FIELD(standalone), 0, 0, NULL },
	{ "agent_store", "agent-store", 0, "PET_AGENT_STORE", NULL, K_ONOFF,
	    FIELD(agent_store), 0, 0, NULL },
	{ "local_addr", "local-addr", 0, "PET_LOCAL_ADDR", NULL, K_STR,
	    FIELD(local_addr), 0, 0, NULL },
	{ "file_timer", "file-timer", 0, "PET_FILE_TIMER",
	    "TORCHELASTIC_ENABLE_FILE_TIMER", K_BOOL, FIELD(file_timer), 0, 0,
	    NULL },
	{ "timer_file", "timer-file", 0, "PET_TIMER_FILE",
	    "TORCHELASTIC_TIMER_FILE", K_STR, FIELD(timer_file), 0, 0, NULL },
	{ "health_port", "health-port", 0, "PET_HEALTH_PORT",
	    "TORCHELASTIC_HEALTH_CHECK_PORT", K_FN, NOFIELD, 0, 0,
	    set_health_port },
	{ "health_address", "health-address", 0, "PET_HEALTH_ADDRESS", NULL,
	    K_STR, FIELD(health_address), 0, 0, NULL },
	{ "health_timeout", "health-timeout", 0, "PET_HEALTH_TIMEOUT", NULL,
	    K_MS, FIELD(health_timeout_ms), 0, 0, NULL },
	{ "health_status_paths", "health-status-paths", 0,
	    "PET_HEALTH_STATUS_PATHS", NULL, K_BOOL, FIELD(health_status_paths),
	    0, 0, NULL },
	{ "log_dir", "log-dir", 0, "PET_LOG_DIR", NULL, K_STR, FIELD(log_dir),
	    0, 0, NULL },
	{ "redirects", "redirects", 'r', "PET_REDIRECTS", NULL, K_FN,
	    FIELD(redirects), 0, 0, set_std },
	{ "tee", "tee", 't', "PET_TEE", NULL, K_FN, FIELD(tee), 0, 0, set_std },
	{ "log_line_prefix", "log-line-prefix-template", 0,
	    "PET_LOG_LINE_PREFIX_TEMPLATE",
	    "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", K_STR,
	    FIELD(log_line_prefix), 0, 0, NULL },
	{ "local_ranks_filter", "local-ranks-filter", 0,
	    "PET_LOCAL_RANKS_FILTER", NULL, K_FN, FIELD(local_ranks_filter),
	    0, 0, set_filter },
	{ "no_python", "no-python", 0, "PET_NO_PYTHON", NULL, K_BOOL,
	    FIELD(no_python), 0, 0, NULL },
	{ "module", "module", 'm', "PET_MODULE", NULL, K_BOOL, FIELD(module),
	    0, 0, NULL },
	{ "run_path", "run-path", 0, "PET_RUN_PATH", NULL, K_BOOL,
	    FIELD(run_path), 0, 0, NULL },
	{ "start_method", "start-method", 0, "PET_START_METHOD", NULL, K_FN,
	    FIELD(start_method), 0, 0, set_start_method },
	{ "event_log_handler", "event-log-handler", 0,
	    "PET_EVENT_LOG_HANDLER", NULL, K_STR, FIELD(event_log_handler), 1,
	    0, NULL },
	{ "logs_specs", "logs-specs", 0, "PET_LOGS_SPECS", NULL, K_STR,
	    FIELD(logs_specs), 1, 0, NULL },
	{ "numa_binding", "numa-binding", 0, "PET_NUMA_BINDING", NULL, K_FN,
	    FIELD(numa_binding), 0, 0, set_numa_binding },
	{ "python", "python", 0, "PET_PYTHON", "PYTHON_EXEC", K_STR,
	    FIELD(python), 1, 0, NULL },
	{ "monitor_interval", "monitor-interval", 0, "PET_MONITOR_INTERVAL",
	    NULL, K_FN, FIELD(monitor_interval), 0, 0, set_interval },
	{ "shutdown_timeout", "shutdown-timeout", 0, "PET_SHUTDOWN_TIMEOUT",
	    "TORCH_ELASTIC_SHUTDOWN_TIMEOUT", K_MS, FIELD(shutdown_timeout_ms),
	    0, 0, NULL },
	{ "signals", "signals-to-handle", 0, "PET_SIGNALS_TO_HANDLE",
	    "TORCHELASTIC_SIGNALS_TO_HANDLE", K_FN, NOFIELD, 0, 0,
	    set_signals },
	{ "restart_delay", "restart-delay", 0, "PET_RESTART_DELAY", NULL, K_MS,
	    FIELD(restart_delay_ms), 0, 0, NULL },
	{ "restart_delay_max", "restart-delay-max", 0, "PET_RESTART_DELAY_MAX",
	    NULL, K_MS, FIELD(restart_delay_max_ms), 0, 0, NULL },
	{ "restart_reset", "restart-reset", 0, "PET_RESTART_RESET", NULL, K_MS,
	    FIELD(restart_reset_ms), 0, 0, NULL },
	{ "notification_fd", "notification-fd", 0, NULL, NULL, K_UINT,
	    FIELD(notification_fd), 3, INT_MAX, NULL },
	{ "cgroups", "cgroups", 0, "PET_CGROUPS", NULL, K_ONOFF,
	    FIELD(cgroups), 0, 0, NULL },
	{ "memory_max", "memory-max", 0, "PET_MEMORY_MAX", NULL, K_STR,
	    FIELD(memory_max), 0, 0, NULL },
	{ "cpu_max", "cpu-max", 0, "PET_CPU_MAX", NULL, K_STR,
	    FIELD(cpu_max), 0, 0, NULL },
	{ "pids_max", "pids-max", 0, "PET_PIDS_MAX", NULL, K_STR,
	    FIELD(pids_max), 0, 0, NULL },
};
const size_t cfg_noptions = NELEM(cfg_options);

_Static_assert(NELEM(cfg_options) <= 64, "loadctx arrays hold 64 options");

int
cfg_fail(struct loadctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx->failed) {
		va_start(ap, fmt);
		vsnprintf(ctx->err, ctx->errlen, fmt, ap);
		va_end(ap);
		/* It quotes what it refuses: that may be anything. */
		utf8_one_line(ctx->err);
		ctx->failed = true;
	}
	return -1;
}

/*
 * A value that cfg_set_value refused.  A bad health port must not stop the
 * job (torch only logs one): it is kept to be said, and no server starts.
 */
int
cfg_bad_value(struct loadctx *ctx, const struct option_def *d, const char *fmt,
    ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (d->fn == set_health_port) {
		vsnprintf(ctx->cfg->health_error,
		    sizeof(ctx->cfg->health_error), fmt, ap);
		utf8_one_line(ctx->cfg->health_error);
		ctx->cfg->health_port = -1;
	} else if (!ctx->failed) {
		vsnprintf(ctx->err, ctx->errlen, fmt, ap);
		utf8_one_line(ctx->err);
		ctx->failed = true;
	}
	va_end(ap);
	return ctx->failed ? -1 : 0;
}

static void *
field(struct loadctx *ctx, const struct option_def *d)
{
	return (char *)ctx->cfg + d->off;
}

static int
set_string(char *dst, size_t size, size_t minlen, const char *v, char *why,
    size_t whylen)
{
	if (strlen(v) < minlen) {
		snprintf(why, whylen, "must not be empty");
		return -1;
	}
	if (strlcpy(dst, v, size) >= size) {
		snprintf(why, whylen, "too long (at most %zu bytes)", size - 1);
		return -1;
	}
	return 0;
}

int
cfg_set_value(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	long long ms;

	switch (d->kind) {
	case K_STR:
		return set_string(field(ctx, d), d->size, (size_t)d->min, v,
		    why, whylen);
	case K_BOOL:
	case K_ONOFF:
		if (parse_bool(v, field(ctx, d)) == 0)
			return 0;
		snprintf(why, whylen, "not a boolean (true/false, yes/no, "
		    "1/0): %s", v);
		return -1;
	case K_UINT:
		return parse_uint(v, d->min, d->max, field(ctx, d), why,
		    whylen);
	case K_MS:
		if ((ms = parse_duration_ms(v)) < 0) {
			snprintf(why, whylen, "not a duration (30, 500ms, 2s, "
			    "1m): %s", v);
			return -1;
		}
		if (ms > UINT_MAX) {
			snprintf(why, whylen, "too long: %s", v);
			return -1;
		}
		*(unsigned *)field(ctx, d) = (unsigned)ms;
		return 0;
	case K_FN:
		return d->fn(ctx, d, v, why, whylen);
	}
	return -1;
}

static int
set_entrypoint(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	(void)d;
	if (*v == '\0') {
		snprintf(why, whylen, "must not be empty");
		return -1;
	}
	free(ctx->ini_entry);
	if ((ctx->ini_entry = strdup(v)) == NULL) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

int
cfg_set_args(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	(void)d;
	return split_args(v, &ctx->ini_args, &ctx->ini_nargs, why, whylen);
}

static int
set_nproc(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	unsigned *np = field(ctx, d);

	if (strcasecmp(v, "cpu") == 0)
		*np = count_cpus();
	else if (strcasecmp(v, "gpu") == 0) {
		if ((*np = count_gpus()) == 0) {
			snprintf(why, whylen, "gpu: no /dev/nvidia[0-9]* "
			    "device found");
			return -1;
		}
	} else if (strcasecmp(v, "auto") == 0) {
		/* torchrun: the GPU count when there are GPUs. */
		if ((*np = count_gpus()) == 0)
			*np = count_cpus();
	} else
		return parse_uint(v, 1, ESV_MAX_NPROC, np, why, whylen);
	return 0;
}

static int
set_nnodes(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	struct job_config *cfg = ctx->cfg;
	const char *colon;
	char min[32];
	unsigned lo, hi;

	(void)d;
	if ((colon = strchr(v, ':')) == NULL) {
		if (parse_uint(v, 1, MAX_NNODES, &lo, why, whylen) == -1)
			return -1;
		cfg->nnodes_min = cfg->nnodes_max = lo;
		return 0;
	}
	if ((size_t)(colon - v) >= sizeof(min)) {
		snprintf(why, whylen, "not a number: %s", v);
		return -1;
	}
	memcpy(min, v, colon - v);
	min[colon - v] = '\0';
	if (parse_uint(min, 1, MAX_NNODES, &lo, why, whylen) == -1 ||
	    parse_uint(colon + 1, 1, MAX_NNODES, &hi, why, whylen) == -1)
		return -1;
	if (lo > hi) {
		snprintf(why, whylen, "minimum above maximum: %s", v);
		return -1;
	}
	cfg->nnodes_min = lo;
	cfg->nnodes_max = hi;
	return 0;
}

static int
set_master_addr(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	(void)d;
	if (v[0] == '\0' || strlcpy(ctx->cfg->master_addr, v,
	    sizeof(ctx->cfg->master_addr)) >= sizeof(ctx->cfg->master_addr)) {
		snprintf(why, whylen, "not a host name or address");
		return -1;
	}
	ctx->cfg->master_addr_set = true;
	return 0;
}

/* torch's choices; esv execs every worker whatever is chosen. */
static int
set_start_method(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	(void)d;
	if (strcmp(v, "spawn") != 0 && strcmp(v, "fork") != 0 &&
	    strcmp(v, "forkserver") != 0) {
		snprintf(why, whylen, "%s: not spawn, fork or forkserver", v);
		return -1;
	}
	strlcpy(ctx->cfg->start_method, v, sizeof(ctx->cfg->start_method));
	return 0;
}

/* Newer torch's choices. */
static int
set_numa_binding(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	static const char *const modes[] = { "node", "socket", "exclusive",
		"core-complex" };
	size_t i;

	(void)d;
	for (i = 0; i < NELEM(modes); i++)
		if (strcmp(v, modes[i]) == 0) {
			strlcpy(ctx->cfg->numa_binding, v,
			    sizeof(ctx->cfg->numa_binding));
			return 0;
		}
	snprintf(why, whylen, "%s: not node, socket, exclusive or core-complex",
	    v);
	return -1;
}

static int
set_master_port(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	if (parse_uint(v, d->min, d->max, field(ctx, d), why, whylen) == -1)
		return -1;
	ctx->cfg->master_port_set = true;
	return 0;
}

static int
set_std(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	if (!std_spec_valid(v)) {
		snprintf(why, whylen, "not 0..3 nor LOCAL_RANK:0..3,...: %s",
		    v);
		return -1;
	}
	return set_string(field(ctx, d), d->size, 1, v, why, whylen);
}

static int
set_filter(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	if (*v != '\0' && filter_scan(v, 0) == -1) {
		snprintf(why, whylen, "not a list of local ranks like 0,2: %s",
		    v);
		return -1;
	}
	return set_string(field(ctx, d), d->size, 0, v, why, whylen);
}

static int
set_interval(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x) ||
	    x < 0) {
		snprintf(why, whylen, "not a number of seconds: %s", v);
		return -1;
	}
	*(double *)field(ctx, d) = x;
	return 0;
}

static void
warn_signal(const char *name)
{
	warn_msg("signals to handle: %s: unknown signal, ignored", name);
}

static int
set_signals(struct loadctx *ctx, const struct option_def *d, const char *v,
    char *why, size_t whylen)
{
	struct job_config *cfg = ctx->cfg;
	int sigs[ESV_MAX_SIGNALS], n, i;

	(void)d;
	if ((n = sig_parse_list(v, sigs, ESV_MAX_SIGNALS, warn_signal)) < 0) {
		snprintf(why, whylen, "more than %d signals: %s",
		    ESV_MAX_SIGNALS, v);
		return -1;
	}
	if (n == 0) {
		snprintf(why, whylen, "no signal to handle: %s", v);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (sigs[i] == SIGKILL || sigs[i] == SIGSTOP ||
		    sigs[i] == SIGCHLD) {
			snprintf(why, whylen, "%s: cannot be handled",
			    sig_name(sigs[i]));
			return -1;
		}
	}
	memcpy(cfg->signals, sigs, n * sizeof(sigs[0]));
	cfg->nsignals = n;
	return 0;
}

static int
set_health_port(struct loadctx *ctx, const struct option_def *d,
    const char *v, char *why, size_t whylen)
{
	struct job_config *cfg = ctx->cfg;
	unsigned port;

	(void)d;
	cfg->health_error[0] = '\0';
	if (*v == '\0') {
		cfg->health_port = -1;	/* as if unset: no server */
		return 0;
	}
	if (parse_uint(v, 0, 65535, &port, why, whylen) == -1)
		return -1;
	cfg->health_port = (int)port;
	return 0;
}

void
cfg_set_defaults(struct job_config *cfg, bool torchrun)
{
	/*
	 * torchrun's list for esv-run.  esv-supervise is a daemon of init
	 * systems, where SIGHUP means "read your configuration again"
	 * (systemctl reload, sv hup, s6-svc -h): it reloads unless the job
	 * lists SIGHUP here.
	 */
	static const int torch_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
	static const int sigs[] = { SIGTERM, SIGINT, SIGQUIT };

	strlcpy(cfg->python, "python3", sizeof(cfg->python));
	cfg->nproc_per_node = 1;
	cfg->nnodes_min = cfg->nnodes_max = 1;
	strlcpy(cfg->master_addr, "127.0.0.1", sizeof(cfg->master_addr));
	cfg->master_port = 29500;
	strlcpy(cfg->role, "default", sizeof(cfg->role));
	strlcpy(cfg->run_id, "none", sizeof(cfg->run_id));
	strlcpy(cfg->rdzv_backend, "static", sizeof(cfg->rdzv_backend));
	strlcpy(cfg->redirects, "0", sizeof(cfg->redirects));
	strlcpy(cfg->tee, "0", sizeof(cfg->tee));
	strlcpy(cfg->log_line_prefix, "[${role_name}${local_rank}]:",
	    sizeof(cfg->log_line_prefix));
	cfg->shutdown_timeout_ms = 30000;
	if (torchrun) {
		memcpy(cfg->signals, torch_sigs, sizeof(torch_sigs));
		cfg->nsignals = NELEM(torch_sigs);
	} else {
		memcpy(cfg->signals, sigs, sizeof(sigs));
		cfg->nsignals = NELEM(sigs);
	}
	cfg->restart_delay_max_ms = 60000;
	cfg->restart_reset_ms = 60000;
	cfg->monitor_interval = 0.1;
	cfg->health_port = -1;
	cfg->health_timeout_ms = 60000;
	/* Rank 0 racing for a port it was told is free is what the agent
	 * store removes: on unless the job turns it off. */
	cfg->agent_store = true;
	/* Where the kernel offers it, nothing of a worker escapes. */
	cfg->cgroups = true;
}

int
cfg_find_key(const char *key)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (strcmp(cfg_options[i].key, key) == 0)
			return (int)i;
	return -1;
}


/* One option's value as the option takes it, for --dry-run. */
void
cfg_print_value(FILE *fp, const struct job_config *cfg, const struct option_def *d)
{
	const char *f = (const char *)cfg + d->off;
	int i;

	if (strcmp(d->key, "nnodes") == 0)
		fprintf(fp, "%u:%u", cfg->nnodes_min, cfg->nnodes_max);
	else if (strcmp(d->key, "signals") == 0)
		for (i = 0; i < cfg->nsignals; i++)
			fprintf(fp, "%s%s", i > 0 ? "," : "",
			    sig_name(cfg->signals[i]));
	else if (strcmp(d->key, "health_port") == 0)
		fprintf(fp, "%d", cfg->health_port);
	else if (strcmp(d->key, "monitor_interval") == 0)
		fprintf(fp, "%g", cfg->monitor_interval);
	else if (d->kind == K_BOOL || d->kind == K_ONOFF)
		fputs(*(const bool *)f ? "true" : "false", fp);
	else if (d->kind == K_UINT || d->kind == K_MS ||
	    d->size == sizeof(unsigned))
		fprintf(fp, "%u", *(const unsigned *)f);
	else
		fputs(f, fp);
}

void
config_print(FILE *fp, const struct job_config *cfg)
{
	size_t i;
	int a;

	fprintf(fp, "jobdir=%s\n", cfg->jobdir);
	for (i = 0; i < NOPTS; i++) {
		if (cfg_options[i].opt == NULL)
			continue;
		fprintf(fp, "%s=", cfg_options[i].key);
		cfg_print_value(fp, cfg, &cfg_options[i]);
		fputc('\n', fp);
	}
	fputs("command=", fp);
	for (a = 0; a < cfg->argc; a++)
		fprintf(fp, "%s%s", a > 0 ? " " : "", cfg->argv[a]);
	fputc('\n', fp);
}


void
config_usage(FILE *fp)
{
	fputs(
"usage: esv-supervise [options] JOBDIR [--] [entrypoint [args...]]\n"
"       esv-supervise [options] --jobdir JOBDIR entrypoint [args...]\n"
"       esv-run [torchrun's options] entrypoint [args...]\n"
"\n"
"Settings come from defaults, JOBDIR/job.ini, PET_<OPTION> variables and\n"
"these options, each overriding the one before (see esv-job.ini(5)).\n"
"\n"
"  --nproc-per-node N|auto|cpu|gpu  workers on this node (1)\n"
"  --nnodes N|MIN:MAX               nodes in the job (1:1)\n"
"  --node-rank N                    rank of this node (0)\n"
"  --master-addr ADDR               MASTER_ADDR for the workers (127.0.0.1)\n"
"  --master-port PORT               MASTER_PORT (29500)\n"
"  --max-restarts N                 group restarts after a failure (0)\n"
"  --role NAME                      worker role (default)\n"
"  --rdzv-id ID                     run id (none)\n"
"  --rdzv-backend NAME              static, esv (c10d) or etcd (static)\n"
"  --rdzv-endpoint HOST:PORT        rendezvous endpoint (etcd: URL,...)\n"
"  --rdzv-conf K=V,...              rendezvous settings\n"
"  --standalone                     one node on its own\n"
"  --local-addr ADDR                MASTER_ADDR this node publishes (esv)\n"
"  --agent-store[=false]            group rank 0's node serves the workers'\n"
"                                   store until every node's are done\n"
"                                   (on; false: worker rank 0 does)\n"
"  --file-timer                     run esv-watchdogd for torch's FileTimerClient\n"
"  --timer-file PATH                its FIFO (JOBDIR/supervise/timer.fifo)\n"
"  --health-port PORT               run esv-healthd on PORT (0: any free one)\n"
"  --health-address ADDR            its address (127.0.0.1; *: all)\n"
"  --health-status-paths            show file paths in its /status\n"
"  --health-timeout DURATION        unhealthy after no progress this long (60s)\n"
"  --log-dir DIR                    worker logs (JOBDIR/logs)\n"
"  -r, --redirects SPEC             0..3 or LOCAL_RANK:0..3,... (0)\n"
"  -t, --tee SPEC                   same syntax as --redirects (0)\n"
"  --log-line-prefix-template TMPL  prefix of tee'd lines\n"
"                                   ([${role_name}${local_rank}]:)\n"
"  --local-ranks-filter 0,2         ranks shown on the console (all)\n"
"  --no-python                      run the entrypoint itself\n"
"  -m, --module                     run the entrypoint as python3 -m\n"
"  --run-path                       accepted: the script runs as python3 -u\n"
"  --start-method spawn|fork|forkserver  accepted and ignored: workers are exec'd\n"
"  --event-log-handler, --logs-specs NAME, --numa-binding MODE\n"
"                                   newer torch's; accepted and noted, not applied\n"
"  --python PATH                    the interpreter (python3)\n"
"  --monitor-interval SECONDS       accepted for torchrun, unused\n"
"  --shutdown-timeout DURATION      stop signal to SIGKILL (30s)\n"
"  --signals-to-handle LIST         forwarded signals (SIGTERM,SIGINT,SIGQUIT;\n"
"                                   esv-run: SIGTERM,SIGINT,SIGHUP,SIGQUIT);\n"
"                                   SIGHUP not listed: reload (job.ini)\n"
"  --notification-fd FD             write a newline to FD once ready (s6)\n"
"  --cgroups[=false]                a cgroup v2 per worker where possible (on)\n"
"  --memory-max, --cpu-max, --pids-max VALUE  each worker's cgroup limit\n"
"  --restart-delay DURATION         first restart delay (0: none)\n"
"  --restart-delay-max DURATION     longest restart delay (60s)\n"
"  --restart-reset DURATION         a run this long resets the delay (60s)\n"
"  --dry-run                        print the settings as read, run nothing\n"
"  -h, --help                       this text\n"
"  --version                        the version\n"
"\n"
"Long options also take underscores (--nproc_per_node) and --opt=value.\n"
"Exit status: 0 every worker succeeded, 1 the job failed or was stopped,\n"
"100 usage or configuration error, 111 system error.\n",
	    fp);
}
