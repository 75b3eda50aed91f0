/*
 * The job's configuration: defaults, then JOBDIR/job.ini, then PET_*
 * environment variables, then the command line (torchrun's option names).
 * The format of job.ini is documented in esv-job.ini(5).
 *
 * config/ owns the configuration (config.c), the trust checks of the
 * files an operator hands us (trust.c) and the %-patterns of log paths
 * (subst.c).  It may call lib/ only: it knows nothing of a running
 * supervisor, so the unit tests and fuzzers take it alone.
 */
#ifndef ESV_CONFIG_H
#define ESV_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "confvalue.h"
#include "rdzvconf.h"

#define ESV_MAX_SIGNALS		16
#define ESV_MAX_EXTRA_ENV	256

struct env_pair {
	char	*name;
	char	*value;
};

struct job_config {
	char	 jobdir[PATH_MAX];
	bool	 torchrun;		/* esv-run's command line (--torchrun) */
	bool	 dry_run;		/* --dry-run: print the settings */
	bool	 jobdir_auto;		/* esv-run made its name up */
	char	 config_path[PATH_MAX];	/* JOBDIR/job.ini, may not exist */

	/* What to run: entrypoint followed by its arguments, unsubstituted. */
	char	**argv;
	int	 argc;
	bool	 no_python;		/* exec argv[0] itself */
	bool	 module;		/* python3 -u -m argv[0] ... */
	bool	 run_path;		/* torch's --run-path: python3 -u argv[0],
					 * as without it (no Python process of
					 * ours to runpy it in) */
	char	 start_method[16];	/* torch's; accepted, workers are
					 * always exec'd */
	/* Newer torch's Python plugin points and NUMA binding: accepted,
	 * noted, not applied (esv has no Python process to load them in). */
	char	 event_log_handler[64];
	char	 logs_specs[64];
	char	 numa_binding[16];
	char	 python[PATH_MAX];	/* $PYTHON_EXEC, else "python3" */

	unsigned nproc_per_node;
	unsigned nnodes_min, nnodes_max;
	unsigned node_rank;
	char	 master_addr[256];
	bool	 master_addr_set;	/* given, not the default */
	unsigned master_port;
	bool	 master_port_set;	/* false: pick a free port (1 node only) */
	unsigned max_restarts;
	char	 role[64];
	char	 run_id[128];
	char	 rdzv_backend[32];	/* "static" or "esv" ("c10d" = esv) */
	char	 rdzv_endpoint[1024];
	char	 rdzv_conf[1024];
	bool	 standalone;
	bool	 agent_store;	/* esv-stored serves the workers' store */
	/* Parsed from the two above (esv backend). */
	char	 rdzv_host[256];
	unsigned rdzv_port;
	struct rdzv_conf rdzv;
	/* What this node publishes as MASTER_ADDR; "" = its address as seen
	 * on the connection to esv-rdzv. */
	char	 local_addr[256];

	/* esv-watchdogd: torch's TORCHELASTIC_ENABLE_FILE_TIMER and its FIFO
	 * ("" = JOBDIR/supervise/timer.fifo). */
	bool	 file_timer;
	char	 timer_file[PATH_MAX];

	/* esv-healthd: torch's TORCHELASTIC_HEALTH_CHECK_PORT.  -1: none;
	 * a bad value is no error (torch logs it), health_error says it. */
	int	 health_port;
	char	 health_error[320];
	char	 health_address[256];	/* "": 127.0.0.1; "*": every one */
	bool	 health_status_paths;	/* file paths in /status */
	unsigned health_timeout_ms;

	char	 log_dir[PATH_MAX];	/* "" means JOBDIR/logs */
	char	 redirects[128];	/* torch Std syntax: "3" or "0:1,1:2" */
	char	 tee[128];
	char	 log_line_prefix[256];	/* ${role_name} ${local_rank} ${rank} */
	char	 local_ranks_filter[256];	/* "" = all ranks on the console */

	unsigned shutdown_timeout_ms;	/* SIGTERM to SIGKILL, default 30000 */
	int	 signals[ESV_MAX_SIGNALS];	/* forwarded to the workers */
	int	 nsignals;

	/* Restart backoff; restart_delay_ms == 0 means restart at once. */
	unsigned restart_delay_ms;
	unsigned restart_delay_max_ms;
	unsigned restart_reset_ms;	/* an attempt this long resets it */

	/* cgroup v2 containment (on where it can be had) and the limits
	 * written to each worker's cgroup ("" = none). */
	bool	 cgroups;
	char	 memory_max[64];
	char	 cpu_max[64];
	char	 pids_max[32];

	/* s6's readiness: a newline on this fd once ready; 0: none. */
	unsigned notification_fd;

	double	 monitor_interval;	/* accepted and ignored: event-driven */

	/* [env] section: extra variables for the workers. */
	struct env_pair extra_env[ESV_MAX_EXTRA_ENV];
	int	 nextra_env;
};

/*
 * Fill cfg from defaults, JOBDIR/job.ini, the environment (PET_*,
 * PYTHON_EXEC, TORCH_ELASTIC_SHUTDOWN_TIMEOUT, TORCHELASTIC_SIGNALS_TO_HANDLE,
 * TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE) and argv, in that order of rising
 * precedence, then validate.  envp is the environment to read.
 * On error: writes one line "file:line: key: why" or "option: why" into
 * err and returns -1 (the caller exits 100).  Returns 1 when --help was
 * asked for (usage already printed to stdout), 0 otherwise.
 */
int	config_load(struct job_config *cfg, int argc, char **argv,
	    char **envp, char *err, size_t errlen);
/* key=value a line: every option as read, the job directory, the command. */
void	config_print(FILE *fp, const struct job_config *cfg);
/*
 * esv-run's job directory turned out to be in use (another node of the
 * job on this host won the race for it): switch to JOBDIR.PID.  0, or -1
 * if the directory was given, or already is that one.
 */
int	config_jobdir_taken(struct job_config *cfg);
void	config_free(struct job_config *cfg);

/*
 * Read the configuration again as config_load did (same argv and envp)
 * and take from it what may change between attempts: the entrypoint, its
 * arguments, no_python, module, run_path, python and [env].  Any other
 * setting that now differs is kept as it is, and kept() is told of it.
 * Returns 1 when something was taken, 0 when nothing changed, -1 with
 * err set ("job.ini:LINE: ...") when the configuration does not load:
 * cur is then untouched.
 */
typedef void (*config_kept_fn)(void *ctx, const char *key, const char *was,
    const char *now);
int	config_reload(struct job_config *cur, int argc, char **argv,
	    char **envp, char *err, size_t errlen, config_kept_fn kept,
	    void *ctx);
void	config_usage(FILE *fp);

#endif
