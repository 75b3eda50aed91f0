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
#include "nelem.h"
#include "utf8.h"
#include "confvalue.h"
#include "ctldir.h"
#include "msg.h"
#include "sig.h"
#include "trust.h"

#define MAX_NNODES	100000
#define OPT_BASE	256	/* getopt_long values of table options */
#define OPT_HELP	'h'
#define OPT_VERSION	1
#define OPT_JOBDIR	2
#define OPT_TORCHRUN	3
#define OPT_DRY_RUN	4

struct loadctx;
struct option_def;

typedef int (*setter)(struct loadctx *, const struct option_def *,
    const char *, char *, size_t);

enum kind {
	K_STR,		/* char array; min is the minimum length */
	K_BOOL,		/* a flag, torch's kind */
	K_ONOFF,	/* on by default: its flag also takes =false */
	K_UINT,		/* unsigned in min..max */
	K_MS,		/* unsigned milliseconds from a duration */
	K_FN,		/* the special setter does everything */
};

/* One setting: its job.ini key, long option and environment variables. */
struct option_def {
	const char	*key;
	const char	*opt;		/* dashed spelling; NULL: job.ini only */
	int		 short_opt;
	const char	*env;		/* PET_<OPTION> */
	const char	*env_torch;	/* torch's own name, weaker than env */
	enum kind	 kind;
	size_t		 off, size;	/* the field in struct job_config */
	long long	 min, max;
	setter		 fn;
};

struct loadctx {
	struct job_config	*cfg;
	char			*err;
	size_t			 errlen;
	bool			 failed;

	/* Command line: the last value of each option, and the command. */
	const char		*cli[64];
	char			**cmd;
	int			 ncmd;
	const char		*jobdir;	/* --jobdir */
	bool			 torchrun;	/* esv-run: no JOBDIR word */

	/* job.ini being parsed. */
	FILE			*fp;
	int			 lineno;
	int			 errline;	/* line of our first error */
	bool			 indented;	/* line starts with a blank */
	bool			 seen[64];
	int			 last_key;	/* for continuation lines */
	char			*ini_entry;
	char			**ini_args;
	int			 ini_nargs;
};

static int	set_entrypoint(struct loadctx *, const struct option_def *,
		    const char *, char *, size_t);
static int	set_args(struct loadctx *, const struct option_def *,
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

static const struct option_def options[] = {
	{ "entrypoint", NULL, 0, NULL, NULL, K_FN, NOFIELD, 0, 0,
	    set_entrypoint },
	{ "args", NULL, 0, NULL, NULL, K_FN, NOFIELD, 0, 0, set_args },
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
#define NOPTS	NELEM(options)

_Static_assert(NOPTS <= 64, "loadctx arrays hold 64 options");

static int
fail(struct loadctx *ctx, const char *fmt, ...)
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
 * A value that set_value refused.  A bad health port must not stop the
 * job (torch only logs one): it is kept to be said, and no server starts.
 */
static int
bad_value(struct loadctx *ctx, const struct option_def *d, const char *fmt,
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

static int
set_value(struct loadctx *ctx, const struct option_def *d, const char *v,
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

static int
set_args(struct loadctx *ctx, const struct option_def *d, const char *v,
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

static void
set_defaults(struct job_config *cfg, bool torchrun)
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

static int
find_key(const char *key)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (strcmp(options[i].key, key) == 0)
			return (int)i;
	return -1;
}

/* A value wholly inside one pair of quotes loses them. */
static char *
unquote(const char *v)
{
	size_t len = strlen(v);

	if (len >= 2 && (v[0] == '"' || v[0] == '\'') && v[len - 1] == v[0])
		return strndup(v + 1, len - 2);
	return strdup(v);
}

static bool
env_name_valid(const char *name)
{
	if (!isalpha((unsigned char)*name) && *name != '_')
		return false;
	for (name++; *name != '\0'; name++)
		if (!isalnum((unsigned char)*name) && *name != '_')
			return false;
	return true;
}

static int
ini_env(struct loadctx *ctx, const char *name, const char *value)
{
	struct job_config *cfg = ctx->cfg;
	struct env_pair *p;
	int i;

	if (!env_name_valid(name))
		return fail(ctx, "%s:%d: %s: not a valid variable name",
		    cfg->config_path, ctx->lineno, name);
	for (i = 0; i < cfg->nextra_env; i++)
		if (strcmp(cfg->extra_env[i].name, name) == 0)
			return fail(ctx, "%s:%d: %s: %s", cfg->config_path,
			    ctx->lineno, name, ctx->indented ?
			    "continuation lines are only for args" :
			    "duplicate variable");
	if (cfg->nextra_env == ESV_MAX_EXTRA_ENV)
		return fail(ctx, "%s:%d: %s: more than %d variables in [env]",
		    cfg->config_path, ctx->lineno, name, ESV_MAX_EXTRA_ENV);
	p = &cfg->extra_env[cfg->nextra_env];
	p->name = strdup(name);
	p->value = unquote(value);
	cfg->nextra_env++;
	if (p->name == NULL || p->value == NULL)
		return fail(ctx, "%s: %s", cfg->config_path, strerror(errno));
	return 0;
}

static int
ini_job(struct loadctx *ctx, const char *name, const char *value)
{
	const char *path = ctx->cfg->config_path;
	char why[256], *v;
	int i, r;

	if ((i = find_key(name)) == -1)
		return fail(ctx, "%s:%d: %s: unknown key", path, ctx->lineno,
		    name);
	if (ctx->seen[i]) {
		/* inih hands an indented line over as the same key again. */
		if (!ctx->indented || ctx->last_key != i)
			return fail(ctx, "%s:%d: %s: duplicate key", path,
			    ctx->lineno, name);
		if (options[i].fn != set_args)
			return fail(ctx, "%s:%d: %s: continuation lines are "
			    "only for args", path, ctx->lineno, name);
	}
	ctx->seen[i] = true;
	ctx->last_key = i;
	v = options[i].fn == set_args ? strdup(value) : unquote(value);
	if (v == NULL)
		return fail(ctx, "%s: %s", path, strerror(errno));
	r = set_value(ctx, &options[i], v, why, sizeof(why));
	free(v);
	if (r == -1)
		return bad_value(ctx, &options[i], "%s:%d: %s: %s", path,
		    ctx->lineno, name, why);
	return 0;
}

static int
ini_pair(void *user, const char *section, const char *name,
    const char *value)
{
	struct loadctx *ctx = user;
	int r;

	if (ctx->failed)
		return 0;
	if (strcmp(section, "job") == 0)
		r = ini_job(ctx, name, value);
	else if (strcmp(section, "env") == 0)
		r = ini_env(ctx, name, value);
	else if (*section == '\0')
		r = fail(ctx, "%s:%d: %s: outside any section (put it under "
		    "[job])", ctx->cfg->config_path, ctx->lineno, name);
	else
		r = fail(ctx, "%s:%d: [%s]: unknown section (only [job] and "
		    "[env])", ctx->cfg->config_path, ctx->lineno, section);
	if (r == -1) {
		ctx->errline = ctx->lineno;
		return 0;
	}
	return 1;
}

/*
 * inih's handler gets no line number in the Debian build, so read the
 * lines ourselves.  A line longer than inih's buffer would be split into
 * two bogus lines: refuse it instead.
 */
static char *
ini_read(char *str, int num, void *stream)
{
	struct loadctx *ctx = stream;
	size_t len;
	int c;

	if (ctx->failed || fgets(str, num, ctx->fp) == NULL)
		return NULL;
	ctx->lineno++;
	ctx->indented = str[0] == ' ' || str[0] == '\t';
	if (str[strspn(str, " \t")] == '[') {
		const char *name = str + strspn(str, " \t") + 1;
		size_t nl = strcspn(name, "]");

		ctx->last_key = -1;
		/* Name the header's line, and catch a section with no keys. */
		if (name[nl] == ']' && !(nl == 3 && strncmp(name, "job", 3) == 0) &&
		    !(nl == 3 && strncmp(name, "env", 3) == 0)) {
			ctx->errline = ctx->lineno;
			fail(ctx, "%s:%d: [%.*s]: unknown section (only [job] "
			    "and [env])", ctx->cfg->config_path, ctx->lineno,
			    (int)nl, name);
			return NULL;
		}
	}
	len = strlen(str);
	if (len == (size_t)num - 1 && str[len - 1] != '\n') {
		if ((c = getc(ctx->fp)) != EOF) {
			ctx->errline = ctx->lineno;
			fail(ctx, "%s:%d: line too long (at most %d "
			    "characters)", ctx->cfg->config_path, ctx->lineno,
			    num - 2);
			return NULL;
		}
	}
	return str;
}

static bool
is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int
load_ini(struct loadctx *ctx)
{
	const char *path = ctx->cfg->config_path;
	char why[1024];
	int r, rerr, dfd, fd;

	/*
	 * Its [env] reaches the workers, which may run as root: only a
	 * JOBDIR and job.ini that nobody else can change are read (trust.h).
	 */
	dfd = trust_open_dir(ctx->cfg->jobdir, 0, 0, NULL, 0, why,
	    sizeof(why));
	if (dfd == -1) {
		if (errno == ENOENT)
			return 0;
		/* torchrun's habit: the script where esv wants JOBDIR. */
		if (errno == ENOTDIR && is_file(ctx->cfg->jobdir))
			return fail(ctx, "%s: a file, not a job directory; to "
			    "run a script as torchrun does, use esv-run "
			    "(esv-run [options] %s [args])", ctx->cfg->jobdir,
			    ctx->cfg->jobdir);
		return fail(ctx, "%s", why);
	}
	fd = openat(dfd, ESV_JOB_INI, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	close(dfd);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			return fail(ctx, "%s: is a symbolic link: refusing to "
			    "follow it; put the file itself there", path);
		return fail(ctx, "%s: %s", path, strerror(errno));
	}
	if (trust_check(fd, path, 0, why, sizeof(why)) == -1) {
		close(fd);
		return fail(ctx, "%s", why);
	}
	if ((ctx->fp = fdopen(fd, "r")) == NULL) {
		close(fd);
		return fail(ctx, "%s: %s", path, strerror(errno));
	}
	r = ini_parse_stream(ini_read, ctx, ini_pair, ctx);
	rerr = ferror(ctx->fp);
	fclose(ctx->fp);
	ctx->fp = NULL;
	if (r > 0 && (!ctx->failed || r < ctx->errline)) {
		ctx->failed = false;
		return fail(ctx, "%s:%d: syntax error (want [section] or "
		    "key = value)", path, r);
	}
	if (ctx->failed)
		return -1;
	if (r < 0 || rerr)
		return fail(ctx, "%s: %s", path, r == -2 ? strerror(ENOMEM) :
		    "read error");
	return 0;
}

static const char *
env_get(char **envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

/* Environment values of the options the command line leaves alone. */
static int
load_env(struct loadctx *ctx, char **envp)
{
	const char *names[2], *v;
	char why[256];
	size_t i, j;

	for (i = 0; i < NOPTS; i++) {
		if (ctx->cli[i] != NULL)
			continue;
		names[0] = options[i].env_torch;
		names[1] = options[i].env;
		for (j = 0; j < NELEM(names); j++) {
			if (names[j] == NULL ||
			    (v = env_get(envp, names[j])) == NULL)
				continue;
			if (set_value(ctx, &options[i], v, why,
			    sizeof(why)) == -1 && bad_value(ctx, &options[i],
			    "%s: %s", names[j], why) == -1)
				return -1;
		}
	}
	return 0;
}

static int
load_cli(struct loadctx *ctx)
{
	char why[256];
	size_t i;

	for (i = 0; i < NOPTS; i++) {
		if (ctx->cli[i] == NULL)
			continue;
		if (set_value(ctx, &options[i], ctx->cli[i], why,
		    sizeof(why)) == -1 && bad_value(ctx, &options[i],
		    "--%s: %s", options[i].opt, why) == -1)
			return -1;
	}
	return 0;
}

static int
set_jobdir(struct loadctx *ctx, const char *dir)
{
	struct job_config *cfg = ctx->cfg;
	size_t len = strlen(dir);
	int n;

	if (len == 0)
		return fail(ctx, "JOBDIR: must not be empty");
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len >= sizeof(cfg->jobdir))
		return fail(ctx, "%s: name too long", dir);
	memcpy(cfg->jobdir, dir, len);
	cfg->jobdir[len] = '\0';
	n = snprintf(cfg->config_path, sizeof(cfg->config_path), "%s%sjob.ini",
	    cfg->jobdir, strcmp(cfg->jobdir, "/") == 0 ? "" : "/");
	if (n < 0 || (size_t)n >= sizeof(cfg->config_path))
		return fail(ctx, "%s: name too long", dir);
	return 0;
}

/* The word getopt_long was reading: a whole --long[=v] or one -x. */
static const char *
bad_option(char **argv, int word, char *buf, size_t len)
{
	if (strncmp(argv[word], "--", 2) == 0)
		snprintf(buf, len, "%.*s", (int)strcspn(argv[word], "="),
		    argv[word]);
	else
		snprintf(buf, len, "-%c", optopt);
	return buf;
}

/*
 * Both spellings of each long option, --nproc-per-node and torch 1.13's
 * --nproc_per_node, with the same value.
 */
static void
build_longopts(struct option *lo, char under[][32], char *shorts)
{
	size_t i, n = 0;
	char *p, *sp;

	/* '+': stop at JOBDIR and the command; ':': report, don't print. */
	sp = stpcpy(shorts, "+:h");
	for (i = 0; i < NOPTS; i++) {
		if (options[i].short_opt != 0) {
			*sp++ = (char)options[i].short_opt;
			if (options[i].kind != K_BOOL)
				*sp++ = ':';
		}
		if (options[i].opt == NULL)
			continue;
		lo[n++] = (struct option){ options[i].opt,
		    options[i].kind == K_BOOL ? no_argument :
		    options[i].kind == K_ONOFF ? optional_argument :
		    required_argument, NULL, OPT_BASE + (int)i };
		if (strchr(options[i].opt, '-') == NULL)
			continue;
		strlcpy(under[i], options[i].opt, sizeof(under[i]));
		for (p = under[i]; *p != '\0'; p++)
			if (*p == '-')
				*p = '_';
		lo[n] = lo[n - 1];
		lo[n++].name = under[i];
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
	lo[n++] = (struct option){ "jobdir", required_argument, NULL,
	    OPT_JOBDIR };
	lo[n++] = (struct option){ "torchrun", no_argument, NULL,
	    OPT_TORCHRUN };
	lo[n++] = (struct option){ "dry-run", no_argument, NULL,
	    OPT_DRY_RUN };
	lo[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	*sp = '\0';
}

/* Record one option; 1 when it was --help or --version. */
static int
cli_option(struct loadctx *ctx, int c, char **argv, int word)
{
	char bad[64];
	size_t i;

	switch (c) {
	case OPT_HELP:
		config_usage(stdout);
		return 1;
	case OPT_VERSION:
		printf("esv-supervise %s\n", ESV_VERSION);
		return 1;
	case OPT_JOBDIR:
		ctx->jobdir = optarg;
		return 0;
	case OPT_TORCHRUN:
		ctx->torchrun = ctx->cfg->torchrun = true;
		return 0;
	case OPT_DRY_RUN:
		ctx->cfg->dry_run = true;
		return 0;
	case ':':
		return fail(ctx, "%s: needs a value",
		    bad_option(argv, word, bad, sizeof(bad)));
	case '?':
		return fail(ctx, "%s: unknown option (see --help)",
		    bad_option(argv, word, bad, sizeof(bad)));
	}
	if (c >= OPT_BASE)
		i = (size_t)(c - OPT_BASE);
	else
		for (i = 0; options[i].short_opt != c; i++)
			;
	ctx->cli[i] = optarg != NULL ? optarg : "1";
	return 0;
}

/*
 * Options may come before and after JOBDIR; the first word after JOBDIR
 * that is no option (or whatever follows "--") starts the command.
 */
static int
parse_cmdline(struct loadctx *ctx, int argc, char **argv)
{
	struct option lo[2 * NOPTS + 6];
	char under[NOPTS][32], shorts[3 + 2 * NOPTS + 1];
	const char *jobdir = NULL;
	int c, r, word;

	build_longopts(lo, under, shorts);
	optind = 0;	/* glibc: start afresh, config_load may run twice */
	opterr = 0;
	for (;;) {
		for (;;) {
			word = optind > 0 ? optind : 1;
			c = getopt_long(argc, argv, shorts, lo, NULL);
			if (c == -1)
				break;
			if ((r = cli_option(ctx, c, argv, word)) != 0)
				return r;
		}
		/* --jobdir, or esv-run's command line: the command follows. */
		if (jobdir == NULL && (ctx->jobdir != NULL || ctx->torchrun))
			jobdir = ctx->jobdir != NULL ? ctx->jobdir : "";
		if (jobdir != NULL || optind >= argc)
			break;
		jobdir = argv[optind++];
	}
	if (jobdir == NULL)
		return fail(ctx, "JOBDIR: missing (see --help)");
	ctx->cmd = argv + optind;
	ctx->ncmd = argc - optind;
	/* esv-run without --jobdir: made from the run id, once it is known. */
	if (jobdir[0] == '\0' && ctx->torchrun)
		return 0;
	return set_jobdir(ctx, jobdir);
}

/* Does an agent run in dir (its supervise/lock is held)? */
static bool
in_use(const char *dir)
{
	char path[PATH_MAX];
	bool busy;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, ESV_LOCK) >=
	    sizeof(path) || (fd = open(path, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return false;
	busy = flock(fd, LOCK_SH | LOCK_NB) == -1 && errno == EWOULDBLOCK;
	close(fd);
	return busy;
}

/*
 * The base of esv-run's job directories.  Whoever can change it, or a
 * directory above it, can swap a job directory (or logs/ in it) for a
 * link to a file of ours, which the supervisor or a worker then writes
 * (TORCHELASTIC_ERROR_FILE).  So it is reached only through directories
 * nobody else can change (trust_open_dir), made and opened relative to
 * them, and must be ours and for us alone (0700), as XDG_RUNTIME_DIR is.
 */
static int
auto_base(struct loadctx *ctx, char *base, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR");
	char parent[PATH_MAX], real[PATH_MAX], name[32], why[1024];
	struct stat st;
	uid_t euid = geteuid();
	bool ours = false;
	int pfd, fd;

	/* Another user's (root's with sudo -E, too) is not ours to use. */
	if (xdg != NULL && xdg[0] == '/' &&
	    (fd = open(xdg, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		ours = fstat(fd, &st) == 0 && st.st_uid == euid;
		close(fd);
	}
	if (ours) {
		strlcpy(parent, xdg, sizeof(parent));
		strlcpy(name, "esv", sizeof(name));
	} else if (euid == 0) {
		strlcpy(parent, "/run", sizeof(parent));
		strlcpy(name, "esv", sizeof(name));
	} else {
		strlcpy(parent, tmp != NULL && tmp[0] == '/' ? tmp : "/tmp",
		    sizeof(parent));
		snprintf(name, sizeof(name), "esv-%u", (unsigned)euid);
	}
	pfd = trust_open_dir(parent, TRUST_STICKY_OK, 0, real, sizeof(real),
	    why, sizeof(why));
	if (pfd == -1)
		return fail(ctx, "the job directory's base: %s", why);
	if ((size_t)snprintf(base, len, "%s/%s", real, name) >= len) {
		close(pfd);
		return fail(ctx, "the job directory's name is too long");
	}
	if (!ctx->cfg->dry_run && mkdirat(pfd, name, 0700) == -1 &&
	    errno != EEXIST) {
		close(pfd);
		return fail(ctx, "%s: %s", base, strerror(errno));
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(pfd);
	if (fd == -1 && errno == ENOENT && ctx->cfg->dry_run)
		return 0;
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR))
		return fail(ctx, "%s: not a directory (a symbolic link?): "
		    "refusing it as the job directory's base; remove it, or "
		    "name a job directory with --jobdir", base);
	if (fd == -1)
		return fail(ctx, "%s: %s", base, strerror(errno));
	if (fstat(fd, &st) == -1) {
		close(fd);
		return fail(ctx, "%s: %s", base, strerror(errno));
	}
	close(fd);
	if (st.st_uid != euid)
		return fail(ctx, "%s: owner uid %u, mode %04o: another user's, "
		    "so esv does not make job directories in it; have it "
		    "removed, or name a job directory with --jobdir", base,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	if ((st.st_mode & 077) != 0)
		return fail(ctx, "%s: owner uid %u, mode %04o: open to others, "
		    "so esv does not make job directories in it; chmod 700 "
		    "it", base, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
	return 0;
}

/*
 * esv-run's job directory: in $XDG_RUNTIME_DIR/esv/ if that is ours, else
 * /run/esv/ for root, else $TMPDIR/esv-UID/ (/tmp); in it, the run id, or
 * RUNID.PID for torch's default id "none" and when an agent already runs
 * in RUNID (another node of the job on this host).
 */
static int
auto_jobdir(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;
	char base[PATH_MAX], dir[PATH_MAX];
	int n;

	if (cfg->jobdir[0] != '\0')
		return 0;
	if (auto_base(ctx, base, sizeof(base)) == -1)
		return -1;
	n = snprintf(dir, sizeof(dir), "%s/%s", base, cfg->run_id);
	/* torch's default id, or another node of the job on this host. */
	if (strcmp(cfg->run_id, "none") == 0 || in_use(dir))
		n = snprintf(dir, sizeof(dir), "%s/%s.%d", base, cfg->run_id,
		    (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(dir))
		return fail(ctx, "%s/%s: name too long", base, cfg->run_id);
	cfg->jobdir_auto = true;
	return set_jobdir(ctx, dir);
}

int
config_jobdir_taken(struct job_config *cfg)
{
	char dir[PATH_MAX];
	const char *dot = strrchr(cfg->jobdir, '.');
	char pid[24];
	int n;

	snprintf(pid, sizeof(pid), ".%d", (int)getpid());
	if (!cfg->jobdir_auto || (dot != NULL && strcmp(dot, pid) == 0))
		return -1;
	n = snprintf(dir, sizeof(dir), "%s%s", cfg->jobdir, pid);
	if (n < 0 || (size_t)n >= sizeof(cfg->jobdir))
		return -1;
	strlcpy(cfg->jobdir, dir, sizeof(cfg->jobdir));
	return 0;
}

static char **
dup_argv(const char *first, char **rest, int nrest)
{
	char **v;
	int i, n = 0;

	if ((v = calloc(nrest + 2, sizeof(*v))) == NULL)
		return NULL;
	if (first != NULL && (v[n++] = strdup(first)) == NULL)
		goto nomem;
	for (i = 0; i < nrest; i++)
		if ((v[n++] = strdup(rest[i])) == NULL)
			goto nomem;
	return v;
nomem:
	while (n > 0)
		free(v[--n]);
	free(v);
	return NULL;
}

/* A command on the command line replaces job.ini's and its args. */
static int
build_argv(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;

	if (ctx->ncmd > 0) {
		cfg->argv = dup_argv(NULL, ctx->cmd, ctx->ncmd);
		cfg->argc = ctx->ncmd;
	} else if (ctx->ini_entry != NULL) {
		cfg->argv = dup_argv(ctx->ini_entry, ctx->ini_args,
		    ctx->ini_nargs);
		cfg->argc = ctx->ini_nargs + 1;
	} else
		return fail(ctx, "%s: entrypoint: missing (give one in job.ini "
		    "or after --)", cfg->config_path);
	if (cfg->argv == NULL) {
		cfg->argc = 0;
		return fail(ctx, "%s", strerror(ENOMEM));
	}
	return 0;
}

static int
validate_static(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;
	char host[256], why[256];
	unsigned port;

	if (cfg->nnodes_min != cfg->nnodes_max)
		return fail(ctx, "--nnodes %u:%u: the static rendezvous needs "
		    "a fixed number of nodes (use --rdzv-backend esv)",
		    cfg->nnodes_min, cfg->nnodes_max);
	if (cfg->node_rank >= cfg->nnodes_max)
		return fail(ctx, "--node-rank %u: must be below --nnodes %u",
		    cfg->node_rank, cfg->nnodes_max);
	/*
	 * As torch: the static rendezvous meets at --rdzv-endpoint, which
	 * rank 0's store listens on.  It takes the place of the defaults
	 * of --master-addr and --master-port, not of values given for them.
	 */
	if (cfg->rdzv_endpoint[0] != '\0') {
		if (endpoint_parse(cfg->rdzv_endpoint, cfg->master_port, host,
		    sizeof(host), &port, why, sizeof(why)) == -1)
			return fail(ctx, "rdzv_endpoint: %s: %s",
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
		return fail(ctx, "rdzv_conf: token_file: the etcd backend "
		    "authenticates to etcd with TLS (cacert=, cert=, key=)");
	if (cfg->rdzv_endpoint[0] == '\0')
		return fail(ctx, "rdzv_endpoint: required by the etcd backend "
		    "(HOST:PORT or http(s)://HOST:PORT of etcd members, "
		    "comma-separated)");
	strlcpy(copy, cfg->rdzv_endpoint, sizeof(copy));
	for (ep = strtok_r(copy, ",", &save); ep != NULL;
	    ep = strtok_r(NULL, ",", &save)) {
		if (urls[0] != '\0')
			strlcat(urls, ",", sizeof(urls));
		if (rdzv_etcd_url(&cfg->rdzv, ep, url, sizeof(url), why,
		    sizeof(why)) == -1)
			return fail(ctx, "%s", why);
		if (strlcat(urls, url, sizeof(urls)) >= sizeof(urls))
			return fail(ctx, "rdzv_endpoint: too long");
	}
	strlcpy(cfg->rdzv_endpoint, urls, sizeof(cfg->rdzv_endpoint));
	if ((cfg->rdzv.cert[0] == '\0') != (cfg->rdzv.key[0] == '\0'))
		return fail(ctx, "rdzv_conf: cert and key go together");
	for (i = 0; i < NELEM(files); i++)
		if (files[i][0] != '\0' && access(files[i], R_OK) == -1)
			return fail(ctx, "rdzv_conf: %s=%s: %s", names[i],
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
		return fail(ctx, "rdzv_conf: %s", why);
	if (strcmp(cfg->rdzv_backend, "c10d") == 0)
		strlcpy(cfg->rdzv_backend, "esv", sizeof(cfg->rdzv_backend));
	if (strcmp(cfg->rdzv_backend, "static") == 0)
		return validate_static(ctx);
	if (strcmp(cfg->rdzv_backend, "etcd") == 0 ||
	    strcmp(cfg->rdzv_backend, "etcd-v2") == 0)
		return validate_etcd(ctx);
	if (strcmp(cfg->rdzv_backend, "esv") != 0)
		return fail(ctx, "rdzv_backend: %s: not available in this "
		    "version (static, esv, c10d or etcd)", cfg->rdzv_backend);
	if (cfg->rdzv.cacert[0] != '\0' || cfg->rdzv.cert[0] != '\0' ||
	    cfg->rdzv.key[0] != '\0')
		return fail(ctx, "rdzv_conf: cacert, cert and key are for the "
		    "etcd backend; esv-rdzv authenticates with token_file");
	if (!cfg->standalone) {
		if (cfg->rdzv_endpoint[0] == '\0')
			return fail(ctx, "rdzv_endpoint: required by the esv "
			    "backend (HOST:PORT of esv-rdzv)");
		if (endpoint_parse(cfg->rdzv_endpoint, 29400, cfg->rdzv_host,
		    sizeof(cfg->rdzv_host), &cfg->rdzv_port, why,
		    sizeof(why)) == -1)
			return fail(ctx, "rdzv_endpoint: %s", why);
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

static int
validate(struct loadctx *ctx)
{
	struct job_config *cfg = ctx->cfg;

	if (cfg->no_python && cfg->module)
		return fail(ctx, "Don't use both the '--no-python' flag and "
		    "the '--module' flag at the same time.");
	if (cfg->standalone) {
		if (cfg->nnodes_max > 1)
			return fail(ctx, "--standalone: runs one node, but "
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
		return fail(ctx, "--restart-delay-max %ums: below "
		    "--restart-delay %ums", cfg->restart_delay_max_ms,
		    cfg->restart_delay_ms);
	return 0;
}

static void
free_strv(char **v, int n)
{
	int i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
config_load(struct job_config *cfg, int argc, char **argv, char **envp,
    char *err, size_t errlen)
{
	struct loadctx ctx;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = cfg;
	ctx.err = err;
	ctx.errlen = errlen;
	ctx.last_key = -1;
	if (errlen > 0)
		err[0] = '\0';

	if ((r = parse_cmdline(&ctx, argc, argv)) != 0)
		return r;
	set_defaults(cfg, ctx.torchrun);
	r = 0;
	if ((cfg->jobdir[0] != '\0' && load_ini(&ctx) == -1) ||
	    load_env(&ctx, envp) == -1 || load_cli(&ctx) == -1 ||
	    validate(&ctx) == -1 || auto_jobdir(&ctx) == -1 ||
	    build_argv(&ctx) == -1) {
		config_free(cfg);
		r = -1;
	}
	free(ctx.ini_entry);
	free_strv(ctx.ini_args, ctx.ini_nargs);
	return r;
}

void
config_free(struct job_config *cfg)
{
	int i;

	free_strv(cfg->argv, cfg->argc);
	cfg->argv = NULL;
	cfg->argc = 0;
	for (i = 0; i < cfg->nextra_env; i++) {
		free(cfg->extra_env[i].name);
		free(cfg->extra_env[i].value);
	}
	cfg->nextra_env = 0;
}

/* One option's value as the option takes it, for --dry-run. */
static void
print_value(FILE *fp, const struct job_config *cfg, const struct option_def *d)
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
		if (options[i].opt == NULL)
			continue;
		fprintf(fp, "%s=", options[i].key);
		print_value(fp, cfg, &options[i]);
		fputc('\n', fp);
	}
	fputs("command=", fp);
	for (a = 0; a < cfg->argc; a++)
		fprintf(fp, "%s%s", a > 0 ? " " : "", cfg->argv[a]);
	fputc('\n', fp);
}

/* What may change between attempts (esv-job.ini(5), RELOADING). */
static bool
reloadable(const char *key)
{
	static const char *const keys[] = { "entrypoint", "args", "no_python",
	    "module", "run_path", "python" };
	size_t i;

	for (i = 0; i < NELEM(keys); i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

static void
value_text(char *buf, size_t len, const struct job_config *cfg,
    const struct option_def *d)
{
	FILE *fp;

	buf[0] = '\0';
	if ((fp = fmemopen(buf, len, "w")) == NULL)
		return;
	print_value(fp, cfg, d);
	fclose(fp);
	buf[len - 1] = '\0';
}

int
config_reload(struct job_config *cur, int argc, char **argv, char **envp,
    char *err, size_t errlen, config_kept_fn kept, void *ctx)
{
	struct job_config *next;
	char was[1024], now[1024];
	size_t i;
	int r;

	if ((next = malloc(sizeof(*next))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	r = config_load(next, argc, argv, envp, err, errlen);
	if (r != 0) {
		free(next);
		return -1;
	}
	r = 0;
	for (i = 0; i < NOPTS; i++) {
		const struct option_def *d = &options[i];

		if (d->opt == NULL || reloadable(d->key))
			continue;
		/* A standalone job draws a fresh id at every reading. */
		if (cur->standalone && strcmp(d->key, "run_id") == 0)
			continue;
		value_text(was, sizeof(was), cur, d);
		value_text(now, sizeof(now), next, d);
		if (strcmp(was, now) != 0 && kept != NULL)
			kept(ctx, d->key, was, now);
	}
	/* [env]: its own comparison, then taken whole. */
	if (cur->nextra_env != next->nextra_env)
		r = 1;
	for (i = 0; r == 0 && i < (size_t)cur->nextra_env; i++)
		if (strcmp(cur->extra_env[i].name, next->extra_env[i].name) != 0 ||
		    strcmp(cur->extra_env[i].value, next->extra_env[i].value) != 0)
			r = 1;
	if (cur->argc != next->argc || cur->no_python != next->no_python ||
	    cur->module != next->module || cur->run_path != next->run_path ||
	    strcmp(cur->python, next->python) != 0)
		r = 1;
	for (i = 0; r == 0 && i < (size_t)cur->argc; i++)
		if (strcmp(cur->argv[i], next->argv[i]) != 0)
			r = 1;
	if (r == 1) {
		config_free(cur);
		cur->argv = next->argv;
		cur->argc = next->argc;
		next->argv = NULL;
		next->argc = 0;
		memcpy(cur->extra_env, next->extra_env, sizeof(cur->extra_env));
		cur->nextra_env = next->nextra_env;
		next->nextra_env = 0;
		cur->no_python = next->no_python;
		cur->module = next->module;
		cur->run_path = next->run_path;
		strlcpy(cur->python, next->python, sizeof(cur->python));
	}
	config_free(next);
	free(next);
	return r;
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

