#include <glob.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../supervisor/config/config.h"

struct fixture {
	char			 dir[64];
	char			 ini[128];
	char			 err[512];
	struct job_config	 cfg;
};

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	strcpy(f->dir, "/tmp/test_config.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->ini, sizeof(f->ini), "%s/job.ini", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	config_free(&f->cfg);
	unlink(f->ini);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void
write_ini(struct fixture *f, const char *text)
{
	FILE *fp;

	assert_non_null(fp = fopen(f->ini, "w"));
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/*
 * Run config_load on a NULL-terminated word list; "DIR" stands for the
 * fixture's job directory.
 */
static int
load_env(struct fixture *f, char **envp, const char *first, ...)
{
	char *argv[64];
	const char *w;
	va_list ap;
	int argc = 0;

	config_free(&f->cfg);
	argv[argc++] = "esv-supervise";
	va_start(ap, first);
	for (w = first; w != NULL; w = va_arg(ap, const char *)) {
		assert_true(argc < 63);
		argv[argc++] = strcmp(w, "DIR") == 0 ? f->dir : (char *)w;
	}
	va_end(ap);
	argv[argc] = NULL;
	f->err[0] = '\0';
	return config_load(&f->cfg, argc, argv, envp, f->err, sizeof(f->err));
}

#define load(f, ...)	load_env((f), NULL, __VA_ARGS__, (const char *)NULL)
#define loadenv(f, e, ...) load_env((f), (e), __VA_ARGS__, (const char *)NULL)

/* The error with the job directory's name replaced by "DIR". */
static const char *
err_of(struct fixture *f)
{
	static char buf[512];
	size_t n = strlen(f->dir);

	if (strncmp(f->err, f->dir, n) == 0)
		snprintf(buf, sizeof(buf), "DIR%s", f->err + n);
	else
		snprintf(buf, sizeof(buf), "%s", f->err);
	return buf;
}

static void
assert_fails(struct fixture *f, int r, const char *want)
{
	assert_int_equal(r, -1);
	assert_string_equal(err_of(f), want);
	assert_null(f->cfg.argv);
	assert_null(strchr(f->err, '\n'));
}

static void
assert_argv(struct job_config *cfg, const char *const *want)
{
	int n;

	for (n = 0; want[n] != NULL; n++) {
		assert_true(n < cfg->argc);
		assert_string_equal(cfg->argv[n], want[n]);
	}
	assert_int_equal(cfg->argc, n);
	assert_null(cfg->argv[n]);
}

/* Run fn with stderr or stdout going to a file; returns what was written. */
static char *
capture(int fd, int (*fn)(void *), void *arg, int *ret)
{
	static char buf[4096];
	FILE *tmp;
	size_t n;
	int saved;

	fflush(stdout);
	assert_non_null(tmp = tmpfile());
	assert_true((saved = dup(fd)) >= 0);
	assert_true(dup2(fileno(tmp), fd) >= 0);
	*ret = fn(arg);
	fflush(stdout);
	assert_true(dup2(saved, fd) >= 0);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

static void
test_defaults(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	char dir[128];
	char *argv[] = { "esv-supervise", dir, "train.py", NULL };

	snprintf(dir, sizeof(dir), "%s//", f->dir);
	assert_int_equal(config_load(cfg, 3, argv, NULL, f->err,
	    sizeof(f->err)), 0);
	assert_string_equal(cfg->jobdir, f->dir);
	assert_string_equal(cfg->config_path, f->ini);
	assert_argv(cfg, (const char *[]){ "train.py", NULL });
	assert_false(cfg->no_python);
	assert_false(cfg->module);
	assert_string_equal(cfg->python, "python3");
	assert_int_equal(cfg->nproc_per_node, 1);
	assert_int_equal(cfg->nnodes_min, 1);
	assert_int_equal(cfg->nnodes_max, 1);
	assert_int_equal(cfg->node_rank, 0);
	assert_string_equal(cfg->master_addr, "127.0.0.1");
	assert_int_equal(cfg->master_port, 29500);
	assert_false(cfg->master_port_set);
	assert_int_equal(cfg->max_restarts, 0);
	assert_string_equal(cfg->role, "default");
	assert_string_equal(cfg->run_id, "none");
	assert_string_equal(cfg->rdzv_backend, "static");
	assert_string_equal(cfg->rdzv_endpoint, "");
	assert_string_equal(cfg->rdzv_conf, "");
	assert_false(cfg->standalone);
	assert_string_equal(cfg->log_dir, "");
	assert_string_equal(cfg->redirects, "0");
	assert_string_equal(cfg->tee, "0");
	assert_string_equal(cfg->log_line_prefix,
	    "[${role_name}${local_rank}]:");
	assert_string_equal(cfg->local_ranks_filter, "");
	assert_int_equal(cfg->shutdown_timeout_ms, 30000);
	/* SIGHUP is the supervisor's reload; esv-run forwards it (torch). */
	assert_int_equal(cfg->nsignals, 3);
	assert_int_equal(cfg->signals[0], SIGTERM);
	assert_int_equal(cfg->signals[1], SIGINT);
	assert_int_equal(cfg->signals[2], SIGQUIT);
	assert_int_equal(cfg->notification_fd, 0);
	assert_int_equal(cfg->restart_delay_ms, 0);
	assert_int_equal(cfg->restart_delay_max_ms, 60000);
	assert_int_equal(cfg->restart_reset_ms, 60000);
	assert_int_equal(cfg->nextra_env, 0);
}

static void
test_ini_every_key(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;

	write_ini(f,
	    "; a comment\n"
	    "# another\n"
	    "[job]\n"
	    "entrypoint = /usr/bin/env\n"
	    "args = -u X --lr=0.1\n"
	    "nproc_per_node = 4\n"
	    "nnodes = 3\n"
	    "node_rank = 2\n"
	    "master_addr = node0.example\n"
	    "master_port = 12345\n"
	    "max_restarts = 5\n"
	    "role = trainer\n"
	    "run_id = job42\n"
	    "rdzv_backend = static\n"
	    "rdzv_endpoint = node0:29400\n"
	    "rdzv_conf = timeout=10,join_timeout=20\n"
	    "standalone = no\n"
	    "log_dir = /var/log/esv\n"
	    "redirects = 3\n"
	    "tee = 0:1,1:2\n"
	    "log_line_prefix = \"[${rank}]: \"\n"
	    "local_ranks_filter = 0,2\n"
	    "no_python = yes\n"
	    "module = false\n"
	    "python = /opt/py/bin/python3\n"
	    "monitor_interval = 0.5\n"
	    "shutdown_timeout = 1500ms\n"
	    "signals = SIGTERM,SIGUSR1\n"
	    "restart_delay = 2s\n"
	    "restart_delay_max = 1m\n"
	    "restart_reset = 90\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_argv(cfg, (const char *[]){ "/usr/bin/env", "-u", "X",
	    "--lr=0.1", NULL });
	assert_int_equal(cfg->nproc_per_node, 4);
	assert_int_equal(cfg->nnodes_min, 3);
	assert_int_equal(cfg->nnodes_max, 3);
	assert_int_equal(cfg->node_rank, 2);
	assert_string_equal(cfg->master_addr, "node0.example");
	assert_int_equal(cfg->master_port, 12345);
	assert_true(cfg->master_port_set);
	assert_int_equal(cfg->max_restarts, 5);
	assert_string_equal(cfg->role, "trainer");
	assert_string_equal(cfg->run_id, "job42");
	assert_string_equal(cfg->rdzv_backend, "static");
	assert_string_equal(cfg->rdzv_endpoint, "node0:29400");
	assert_string_equal(cfg->rdzv_conf, "timeout=10,join_timeout=20");
	assert_false(cfg->standalone);
	assert_string_equal(cfg->log_dir, "/var/log/esv");
	assert_string_equal(cfg->redirects, "3");
	assert_string_equal(cfg->tee, "0:1,1:2");
	assert_string_equal(cfg->log_line_prefix, "[${rank}]: ");
	assert_string_equal(cfg->local_ranks_filter, "0,2");
	assert_true(cfg->no_python);
	assert_false(cfg->module);
	assert_string_equal(cfg->python, "/opt/py/bin/python3");
	assert_true(cfg->monitor_interval > 0.49 &&
	    cfg->monitor_interval < 0.51);
	assert_int_equal(cfg->shutdown_timeout_ms, 1500);
	assert_int_equal(cfg->nsignals, 2);
	assert_int_equal(cfg->signals[0], SIGTERM);
	assert_int_equal(cfg->signals[1], SIGUSR1);
	assert_int_equal(cfg->restart_delay_ms, 2000);
	assert_int_equal(cfg->restart_delay_max_ms, 60000);
	assert_int_equal(cfg->restart_reset_ms, 90000);
}

static void
test_ini_booleans(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = t.py\nmodule = TRUE\n"
	    "standalone = 1\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_true(f->cfg.module);
	assert_true(f->cfg.standalone);
	write_ini(f, "[job]\nentrypoint = t.py\nmodule = maybe\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: module: not a "
	    "boolean (true/false, yes/no, 1/0): maybe");
}

/* The agent store is on unless a layer turns it off; its flag takes a value. */
static void
test_agent_store_onoff(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = t.py\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_true(f->cfg.agent_store);
	write_ini(f, "[job]\nentrypoint = t.py\nagent_store = no\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_false(f->cfg.agent_store);
	assert_int_equal(load(f, "--agent-store", "DIR"), 0);
	assert_true(f->cfg.agent_store);
	write_ini(f, "[job]\nentrypoint = t.py\n");
	assert_int_equal(load(f, "--agent-store=false", "DIR"), 0);
	assert_false(f->cfg.agent_store);
	assert_int_equal(load(f, "--agent_store=0", "DIR"), 0);
	assert_false(f->cfg.agent_store);
	assert_fails(f, load(f, "--agent-store=maybe", "DIR"),
	    "--agent-store: not a boolean (true/false, yes/no, 1/0): maybe");
}

static void
test_ini_env_section(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;

	write_ini(f, "[env]\nOMP_NUM_THREADS = 4\n_X1 = 'a b'\n"
	    "[job]\nentrypoint = t.py\n[env]\nNCCL_DEBUG = INFO\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_int_equal(cfg->nextra_env, 3);
	assert_string_equal(cfg->extra_env[0].name, "OMP_NUM_THREADS");
	assert_string_equal(cfg->extra_env[0].value, "4");
	assert_string_equal(cfg->extra_env[1].name, "_X1");
	assert_string_equal(cfg->extra_env[1].value, "a b");
	assert_string_equal(cfg->extra_env[2].name, "NCCL_DEBUG");
	assert_string_equal(cfg->extra_env[2].value, "INFO");

	write_ini(f, "[job]\nentrypoint = t.py\n[env]\n1BAD = x\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:4: 1BAD: not a valid variable name");
	assert_int_equal(cfg->nextra_env, 0);
	write_ini(f, "[env]\nA-B = x\n");
	assert_fails(f, load(f, "DIR", "t.py"),
	    "DIR/job.ini:2: A-B: not a valid variable name");
	write_ini(f, "[env]\nA = 1\nB = 2\nA = 3\n");
	assert_fails(f, load(f, "DIR", "t.py"),
	    "DIR/job.ini:4: A: duplicate variable");
}

static void
test_ini_errors(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = t.py\nbogus = 1\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: bogus: unknown key");
	write_ini(f, "[job]\nentrypoint = t.py\n\n[jobs]\nnnodes = 1\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:4: [jobs]: unknown section (only [job] and [env])");
	/* An unknown section with no keys is refused too, at its header. */
	write_ini(f, "[job]\nentrypoint = t.py\n[extra]\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: [extra]: unknown section (only [job] and [env])");
	write_ini(f, "nnodes = 1\n[job]\nentrypoint = t.py\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:1: nnodes: outside any "
	    "section (put it under [job])");
	write_ini(f, "[job]\nentrypoint = t.py\nnproc_per_node = abc\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: nproc_per_node: not a number: abc");
	write_ini(f, "[job]\nentrypoint = t.py\nnproc_per_node = 5000\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: nproc_per_node: "
	    "out of range 1..4096: 5000");
	write_ini(f, "[job]\nmax_restarts = 1\nentrypoint = t.py\n"
	    "max_restarts = 2\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:4: max_restarts: duplicate key");
	write_ini(f, "[job]\nentrypoint = t.py\njust words\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: syntax error (want "
	    "[section] or key = value)");
	/* The first error wins, whichever kind it is. */
	write_ini(f, "[job]\njust words\nbogus = 1\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:2: syntax error (want "
	    "[section] or key = value)");
	write_ini(f, "[job]\nmaster_port = 0\njust words\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:2: master_port: out of range 1..65535: 0");
	write_ini(f, "[job]\nentrypoint = t.py\nshutdown_timeout = 5 s\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: shutdown_timeout: "
	    "not a duration (30, 500ms, 2s, 1m): 5 s");
	write_ini(f, "[job]\nentrypoint = t.py\nrole =\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: role: must not be empty");
	write_ini(f, "[job]\nentrypoint = t.py\nmonitor_interval = -1\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini:3: monitor_interval: "
	    "not a number of seconds: -1");
}

static void
test_ini_long_line(void **state)
{
	struct fixture *f = *state;
	char text[1024];

	snprintf(text, sizeof(text), "[job]\nentrypoint = t.py\nargs = %0300d\n",
	    7);
	write_ini(f, text);
	assert_int_equal(load(f, "DIR"), -1);
	assert_string_equal(err_of(f), "DIR/job.ini:3: line too long "
	    "(at most 198 characters)");
}

static void
test_ini_args_continuation(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = t.py\nargs = --a 1\n"
	    "  --b 2\n\t--c 3\nrole = r\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_argv(&f->cfg, (const char *[]){ "t.py", "--a", "1", "--b",
	    "2", "--c", "3", NULL });
	assert_string_equal(f->cfg.role, "r");
	write_ini(f, "[job]\nentrypoint = t.py\nrole = a\n  b\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:4: role: continuation lines are only for args");
}

static void
test_missing_entrypoint(void **state)
{
	struct fixture *f = *state;

	assert_fails(f, load(f, "DIR"), "DIR/job.ini: entrypoint: missing "
	    "(give one in job.ini or after --)");
	write_ini(f, "[job]\nargs = --x\n");
	assert_fails(f, load(f, "DIR"), "DIR/job.ini: entrypoint: missing "
	    "(give one in job.ini or after --)");
	assert_fails(f, load(f, "DIR", "--"), "DIR/job.ini: entrypoint: "
	    "missing (give one in job.ini or after --)");
	assert_fails(f, load_env(f, NULL, (const char *)NULL),
	    "JOBDIR: missing (see --help)");
}

static void
test_cli_overrides_ini(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;

	write_ini(f, "[job]\nentrypoint = t.py\nnproc_per_node = 2\n"
	    "role = ini\nmax_restarts = 1\nmodule = no\n");
	assert_int_equal(load(f, "--nproc-per-node", "3", "--role=cli",
	    "-m", "DIR"), 0);
	assert_int_equal(cfg->nproc_per_node, 3);
	assert_string_equal(cfg->role, "cli");
	assert_int_equal(cfg->max_restarts, 1);
	assert_true(cfg->module);
	/* The last of repeated options wins. */
	assert_int_equal(load(f, "--role", "a", "--role", "b", "DIR"), 0);
	assert_string_equal(cfg->role, "b");
}

static void
test_env_between_ini_and_cli(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	char *env[] = { "PET_MAX_RESTARTS=2", "PET_NNODES=2",
	    "PET_NODE_RANK=1", "PET_ROLE=envrole", "PET_STANDALONE=0",
	    "PET_NO_PYTHON=1", "PET_MASTER_ADDR=10.0.0.1",
	    "PET_MASTER_PORT=4000", "PET_RDZV_ID=r1", "PET_LOG_DIR=/tmp/l",
	    "PET_REDIRECTS=1", "PET_TEE=2", "PET_MONITOR_INTERVAL=5",
	    "PET_RDZV_ENDPOINT=h:1", "PET_RDZV_CONF=timeout=5",
	    "PET_LOCAL_RANKS_FILTER=1", "PET_NPROC_PER_NODE=6",
	    "PET_MAX_RESTARTSX=9", "XPET_ROLE=no", NULL };
	char *bad[] = { "PET_MAX_RESTARTS=x", NULL };

	write_ini(f, "[job]\nentrypoint = t.py\nmax_restarts = 1\n"
	    "role = ini\nnnodes = 1\n");
	assert_int_equal(loadenv(f, env, "DIR"), 0);
	assert_int_equal(cfg->max_restarts, 2);
	assert_int_equal(cfg->nnodes_max, 2);
	assert_int_equal(cfg->node_rank, 1);
	assert_string_equal(cfg->role, "envrole");
	assert_true(cfg->no_python);
	assert_string_equal(cfg->master_addr, "10.0.0.1");
	assert_int_equal(cfg->master_port, 4000);
	assert_true(cfg->master_port_set);
	assert_string_equal(cfg->run_id, "r1");
	assert_string_equal(cfg->log_dir, "/tmp/l");
	assert_string_equal(cfg->redirects, "1");
	assert_string_equal(cfg->tee, "2");
	assert_true(cfg->monitor_interval == 5.0);
	assert_string_equal(cfg->rdzv_endpoint, "h:1");
	assert_string_equal(cfg->rdzv_conf, "timeout=5");
	assert_string_equal(cfg->local_ranks_filter, "1");
	assert_int_equal(cfg->nproc_per_node, 6);

	assert_int_equal(loadenv(f, env, "--max_restarts", "3", "--role",
	    "cli", "DIR"), 0);
	assert_int_equal(cfg->max_restarts, 3);
	assert_string_equal(cfg->role, "cli");

	assert_fails(f, loadenv(f, bad, "DIR"),
	    "PET_MAX_RESTARTS: not a number: x");
	/* A value the command line overrides is not looked at. */
	assert_int_equal(loadenv(f, bad, "--max-restarts=4", "DIR"), 0);
	assert_int_equal(cfg->max_restarts, 4);
}

static void
test_torch_env_names(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	char *env[] = { "TORCH_ELASTIC_SHUTDOWN_TIMEOUT=5",
	    "PYTHON_EXEC=/usr/bin/python3.11",
	    "TORCHELASTIC_SIGNALS_TO_HANDLE=SIGUSR2",
	    "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[${rank}]:", NULL };
	char *both[] = { "TORCH_ELASTIC_SHUTDOWN_TIMEOUT=5",
	    "PET_SHUTDOWN_TIMEOUT=7", NULL };

	write_ini(f, "[job]\nentrypoint = t.py\nshutdown_timeout = 1\n"
	    "python = ini\n");
	assert_int_equal(loadenv(f, env, "DIR"), 0);
	assert_int_equal(cfg->shutdown_timeout_ms, 5000);
	assert_string_equal(cfg->python, "/usr/bin/python3.11");
	assert_int_equal(cfg->nsignals, 1);
	assert_int_equal(cfg->signals[0], SIGUSR2);
	assert_string_equal(cfg->log_line_prefix, "[${rank}]:");
	assert_int_equal(loadenv(f, both, "DIR"), 0);
	assert_int_equal(cfg->shutdown_timeout_ms, 7000);
	assert_int_equal(loadenv(f, both, "--shutdown-timeout", "250ms",
	    "--python", "py", "--log-line-prefix-template", "x",
	    "--signals-to-handle", "INT", "DIR"), 0);
	assert_int_equal(cfg->shutdown_timeout_ms, 250);
	assert_string_equal(cfg->python, "py");
	assert_string_equal(cfg->log_line_prefix, "x");
	assert_int_equal(cfg->signals[0], SIGINT);
}

/* A bad health port is said, not fatal: the job runs without the server. */
static void
test_health_port(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	char *torch[] = { "TORCHELASTIC_HEALTH_CHECK_PORT=8080", NULL };
	char *bad[] = { "TORCHELASTIC_HEALTH_CHECK_PORT=abc", NULL };

	write_ini(f, "[job]\nentrypoint = t.py\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_int_equal(cfg->health_port, -1);
	assert_int_equal(cfg->health_timeout_ms, 60000);
	assert_string_equal(cfg->health_address, "");
	assert_int_equal(loadenv(f, torch, "DIR"), 0);
	assert_int_equal(cfg->health_port, 8080);
	assert_int_equal(loadenv(f, bad, "DIR"), 0);
	assert_int_equal(cfg->health_port, -1);
	assert_string_equal(cfg->health_error,
	    "TORCHELASTIC_HEALTH_CHECK_PORT: not a number: abc");
	/* A good value from a stronger source wins over a bad one. */
	assert_int_equal(loadenv(f, bad, "--health-port", "0", "DIR"), 0);
	assert_int_equal(cfg->health_port, 0);
	assert_string_equal(cfg->health_error, "");
	assert_int_equal(load(f, "--health-port", "70000", "DIR"), 0);
	assert_int_equal(cfg->health_port, -1);
	assert_non_null(strstr(cfg->health_error, "--health-port: "));
	write_ini(f, "[job]\nentrypoint = t.py\nhealth_port = x\n"
	    "health_address = ::1\nhealth_timeout = 5s\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_int_equal(cfg->health_port, -1);
	assert_non_null(strstr(cfg->health_error, "job.ini:3: health_port: "));
	assert_string_equal(cfg->health_address, "::1");
	assert_int_equal(cfg->health_timeout_ms, 5000);
	/* Other keys stay strict. */
	write_ini(f, "[job]\nentrypoint = t.py\nhealth_timeout = soon\n");
	assert_int_equal(load(f, "DIR"), -1);
}

/* torchrun's options that esv takes as torch 1.13 does, or notes. */
static void
test_torchrun_parity(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	char *env[] = { "PET_START_METHOD=forkserver", "PET_RUN_PATH=1", NULL };
	char first[128];

	assert_int_equal(load(f, "--start_method", "spawn", "--run_path",
	    "DIR", "t.py"), 0);
	assert_string_equal(cfg->start_method, "spawn");
	assert_true(cfg->run_path);
	assert_int_equal(loadenv(f, env, "DIR", "t.py"), 0);
	assert_string_equal(cfg->start_method, "forkserver");
	assert_true(cfg->run_path);
	assert_fails(f, load(f, "--start-method", "thread", "DIR", "t.py"),
	    "--start-method: thread: not spawn, fork or forkserver");

	/* Newer torch's: taken, checked where torch checks, noted at run. */
	assert_int_equal(load(f, "--event_log_handler", "console",
	    "--logs-specs", "mine", "--numa-binding", "core-complex", "DIR",
	    "t.py"), 0);
	assert_string_equal(cfg->event_log_handler, "console");
	assert_string_equal(cfg->logs_specs, "mine");
	assert_string_equal(cfg->numa_binding, "core-complex");
	assert_fails(f, load(f, "--numa-binding", "all", "DIR", "t.py"),
	    "--numa-binding: all: not node, socket, exclusive or core-complex");

	/* Static: the endpoint is where rank 0's store listens... */
	assert_int_equal(load(f, "--nnodes", "2", "--rdzv-endpoint",
	    "h1:1234", "DIR", "t.py"), 0);
	assert_string_equal(cfg->master_addr, "h1");
	assert_int_equal(cfg->master_port, 1234);
	assert_true(cfg->master_port_set);
	/* ...unless --master-addr and --master-port say otherwise. */
	assert_int_equal(load(f, "--nnodes", "2", "--rdzv-endpoint",
	    "h1:1234", "--master-addr", "h2", "DIR", "t.py"), 0);
	assert_string_equal(cfg->master_addr, "h2");
	assert_int_equal(cfg->master_port, 1234);
	assert_int_equal(load(f, "--nnodes", "2", "--rdzv-endpoint", "h1",
	    "--master-port", "7", "DIR", "t.py"), 0);
	assert_string_equal(cfg->master_addr, "h1");
	assert_int_equal(cfg->master_port, 7);
	assert_fails(f, load(f, "--nnodes", "2", "--rdzv-endpoint", "h1:x",
	    "DIR", "t.py"), "rdzv_endpoint: h1:x: not a number: x");

	/* --standalone: a fresh run id each time, as torch's uuid4. */
	assert_int_equal(load(f, "--standalone", "--rdzv-id", "mine", "DIR",
	    "t.py"), 0);
	assert_int_equal(strlen(cfg->run_id), 36);
	assert_int_equal(cfg->run_id[14], '4');
	strlcpy(first, cfg->run_id, sizeof(first));
	assert_int_equal(load(f, "--standalone", "DIR", "t.py"), 0);
	assert_string_not_equal(cfg->run_id, first);
}

static void
test_both_spellings(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;

	assert_int_equal(load(f, "--nproc_per_node=2", "--node_rank", "1",
	    "--nnodes=2", "--master_addr", "h", "--master_port=1",
	    "--max_restarts", "3", "--rdzv_id=x", "--rdzv_conf", "read_timeout=9",
	    "--rdzv_endpoint=e", "--rdzv_backend", "static", "--log_dir=/l",
	    "--local_ranks_filter", "0", "--no_python", "--monitor_interval",
	    "1", "--shutdown_timeout=1s", "--signals_to_handle=HUP",
	    "--restart_delay", "1s", "--restart_delay_max=2s",
	    "--restart_reset", "3s", "--log_line_prefix_template=p",
	    "-r", "3", "-t0:1,1:2", "DIR", "t.py"), 0);
	assert_int_equal(cfg->nproc_per_node, 2);
	assert_int_equal(cfg->node_rank, 1);
	assert_int_equal(cfg->nnodes_max, 2);
	assert_string_equal(cfg->master_addr, "h");
	assert_int_equal(cfg->master_port, 1);
	assert_int_equal(cfg->max_restarts, 3);
	assert_string_equal(cfg->run_id, "x");
	assert_string_equal(cfg->rdzv_conf, "read_timeout=9");
	assert_string_equal(cfg->rdzv_endpoint, "e");
	assert_string_equal(cfg->log_dir, "/l");
	assert_string_equal(cfg->local_ranks_filter, "0");
	assert_true(cfg->no_python);
	assert_int_equal(cfg->shutdown_timeout_ms, 1000);
	assert_int_equal(cfg->signals[0], SIGHUP);
	assert_int_equal(cfg->restart_delay_ms, 1000);
	assert_int_equal(cfg->restart_delay_max_ms, 2000);
	assert_int_equal(cfg->restart_reset_ms, 3000);
	assert_string_equal(cfg->log_line_prefix, "p");
	assert_string_equal(cfg->redirects, "3");
	assert_string_equal(cfg->tee, "0:1,1:2");

	assert_int_equal(load(f, "--nproc-per-node", "5", "--node-rank=1",
	    "--nnodes", "2", "--master-addr=h2", "--max-restarts=7",
	    "--rdzv-id", "y", "--log-dir", "/m", "--local-ranks-filter=1",
	    "--monitor-interval=2", "--standalone", "--nnodes=1",
	    "--node-rank=0", "--redirects=1", "--tee", "2", "--module",
	    "DIR", "t.py"), 0);
	assert_int_equal(cfg->nproc_per_node, 5);
	assert_int_equal(cfg->max_restarts, 7);
	/* --standalone gives the job a fresh id, as torch does. */
	assert_int_equal(strlen(cfg->run_id), 36);
	assert_string_equal(cfg->log_dir, "/m");
	assert_true(cfg->standalone);
	assert_string_equal(cfg->rdzv_backend, "esv");
	assert_true(cfg->module);
	assert_string_equal(cfg->redirects, "1");
	assert_string_equal(cfg->tee, "2");
}

static void
test_cli_errors(void **state)
{
	struct fixture *f = *state;

	assert_fails(f, load(f, "--max-restarts", "x", "DIR", "t.py"),
	    "--max-restarts: not a number: x");
	assert_fails(f, load(f, "--max_restarts=x", "DIR", "t.py"),
	    "--max-restarts: not a number: x");
	assert_fails(f, load(f, "--bogus=1", "DIR", "t.py"),
	    "--bogus: unknown option (see --help)");
	assert_fails(f, load(f, "-mx", "DIR", "t.py"),
	    "-x: unknown option (see --help)");
	assert_fails(f, load(f, "--standalone=1", "DIR", "t.py"),
	    "--standalone: unknown option (see --help)");
	assert_fails(f, load(f, "DIR", "--nnodes"),
	    "--nnodes: needs a value");
	assert_fails(f, load(f, "DIR", "-r"), "-r: needs a value");
	assert_fails(f, load(f, "--redirects", "4", "DIR", "t.py"),
	    "--redirects: not 0..3 nor LOCAL_RANK:0..3,...: 4");
	assert_fails(f, load(f, "--nnodes", "1:x", "DIR", "t.py"),
	    "--nnodes: not a number: x");
	assert_fails(f, load(f, "--nnodes", "3:2", "DIR", "t.py"),
	    "--nnodes: minimum above maximum: 3:2");
	assert_fails(f, load(f, "", "t.py"), "JOBDIR: must not be empty");
}

static void
test_dashdash_replaces_ini(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = ini.py\nargs = --from-ini\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_argv(&f->cfg, (const char *[]){ "ini.py", "--from-ini",
	    NULL });
	assert_int_equal(load(f, "DIR", "--", "cli.py", "--x", "--", "-m"),
	    0);
	assert_argv(&f->cfg, (const char *[]){ "cli.py", "--x", "--", "-m",
	    NULL });
	assert_false(f->cfg.module);
}

static void
test_torchrun_style(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;

	assert_int_equal(load(f, "--nnodes", "1", "DIR", "--max-restarts",
	    "2", "train.py", "--lr", "1", "-m", "--nproc-per-node", "7"), 0);
	assert_int_equal(cfg->max_restarts, 2);
	assert_int_equal(cfg->nproc_per_node, 1);
	assert_false(cfg->module);
	assert_argv(cfg, (const char *[]){ "train.py", "--lr", "1", "-m",
	    "--nproc-per-node", "7", NULL });
}

struct kept_log {
	char	 text[1024];
};

static void
kept_cb(void *ctx, const char *key, const char *was, const char *now)
{
	struct kept_log *k = ctx;
	size_t n = strlen(k->text);

	snprintf(k->text + n, sizeof(k->text) - n, "%s:%s>%s;", key, was, now);
}

/* What a reload takes, keeps and refuses (esv-supervise(8), RELOADING). */
static void
test_reload(void **state)
{
	struct fixture *f = *state;
	struct job_config *cfg = &f->cfg;
	struct kept_log k = { "" };
	char *argv[] = { "esv-supervise", f->dir, NULL };

	write_ini(f, "[job]\nentrypoint = a.py\nargs = --x 1\n"
	    "nproc_per_node = 2\nmax_restarts = 1\n[env]\nX = 1\n");
	assert_int_equal(load(f, "DIR"), 0);
	/* Nothing changed. */
	assert_int_equal(config_reload(cfg, 2, argv, NULL, f->err,
	    sizeof(f->err), kept_cb, &k), 0);
	assert_string_equal(k.text, "");
	/* The command and [env] are taken; nproc and max_restarts kept. */
	write_ini(f, "[job]\nentrypoint = b.py\nargs = --y\nnproc_per_node = 4\n"
	    "max_restarts = 3\n[env]\nX = 2\nY = 3\n");
	assert_int_equal(config_reload(cfg, 2, argv, NULL, f->err,
	    sizeof(f->err), kept_cb, &k), 1);
	assert_argv(cfg, (const char *[]){ "b.py", "--y", NULL });
	assert_int_equal(cfg->nextra_env, 2);
	assert_string_equal(cfg->extra_env[0].value, "2");
	assert_string_equal(cfg->extra_env[1].name, "Y");
	assert_int_equal(cfg->nproc_per_node, 2);
	assert_int_equal(cfg->max_restarts, 1);
	assert_string_equal(k.text,
	    "nproc_per_node:2>4;max_restarts:1>3;");
	/* A broken file: refused with file:line, nothing touched. */
	write_ini(f, "[job]\nentrypoint = c.py\nnproc_per_node = many\n");
	assert_int_equal(config_reload(cfg, 2, argv, NULL, f->err,
	    sizeof(f->err), NULL, NULL), -1);
	assert_non_null(strstr(err_of(f), "DIR/job.ini:3: nproc_per_node"));
	assert_argv(cfg, (const char *[]){ "b.py", "--y", NULL });
	write_ini(f, "[job\n");
	assert_int_equal(config_reload(cfg, 2, argv, NULL, f->err,
	    sizeof(f->err), NULL, NULL), -1);
	assert_non_null(strstr(err_of(f), "DIR/job.ini:1:"));
	assert_string_equal(cfg->extra_env[1].value, "3");
}

static void
test_signals_torchrun(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "--torchrun", "t.py"), 0);
	assert_int_equal(f->cfg.nsignals, 4);
	assert_int_equal(f->cfg.signals[2], SIGHUP);
}

static void
test_args_quoting(void **state)
{
	struct fixture *f = *state;

	write_ini(f, "[job]\nentrypoint = t.py\n"
	    "args = --lr ${local_rank} '${local_rank}' \"a b\" c\\ d "
	    "\"q\\\"x\\$y\\n\" '' x'y'\"z\" 'back\\slash'\n");
	assert_int_equal(load(f, "DIR"), 0);
	assert_argv(&f->cfg, (const char *[]){ "t.py", "--lr",
	    "${local_rank}", "${local_rank}", "a b", "c d", "q\"x$y\\n", "",
	    "xyz", "back\\slash", NULL });
	write_ini(f, "[job]\nentrypoint = t.py\nargs = 'open\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: args: unterminated ' quote");
	write_ini(f, "[job]\nentrypoint = t.py\nargs = a \\\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: args: backslash at the end");
}

static void
test_contradictions(void **state)
{
	struct fixture *f = *state;

	assert_fails(f, load(f, "--no-python", "-m", "DIR", "t.py"),
	    "Don't use both the '--no-python' flag and the '--module' flag "
	    "at the same time.");
	assert_fails(f, load(f, "--nnodes", "2", "--node-rank", "2", "DIR",
	    "t.py"), "--node-rank 2: must be below --nnodes 2");
	assert_fails(f, load(f, "--node-rank", "1", "DIR", "t.py"),
	    "--node-rank 1: must be below --nnodes 1");
	assert_fails(f, load(f, "--nnodes", "1:2", "DIR", "t.py"),
	    "--nnodes 1:2: the static rendezvous needs a fixed number of "
	    "nodes (use --rdzv-backend esv)");
	assert_fails(f, load(f, "--rdzv-backend", "zk", "DIR", "t.py"),
	    "rdzv_backend: zk: not available in this version (static, esv, "
	    "c10d or etcd)");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "DIR", "t.py"),
	    "rdzv_endpoint: required by the etcd backend (HOST:PORT or "
	    "http(s)://HOST:PORT of etcd members, comma-separated)");
	/* torch's etcd spelling (HOST:PORT, protocol=) becomes URLs. */
	assert_int_equal(load(f, "--rdzv-backend", "etcd-v2",
	    "--rdzv-endpoint", "h1:2379,[::1],https://h3:5",
	    "--rdzv-conf", "protocol=https", "DIR", "t.py"), 0);
	assert_string_equal(f->cfg.rdzv_backend, "etcd");
	assert_string_equal(f->cfg.rdzv_endpoint,
	    "https://h1:2379,https://[::1]:2379,https://h3:5");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "ftp://h:1", "DIR", "t.py"), "rdzv_endpoint: ftp://h:1: etcd is "
	    "reached by http:// or https://");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "token_file=/t", "DIR", "t.py"),
	    "rdzv_conf: token_file: the etcd backend authenticates to etcd "
	    "with TLS (cacert=, cert=, key=)");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "cacert=/nonexistent/ca.pem", "DIR", "t.py"),
	    "rdzv_conf: cacert=/nonexistent/ca.pem: No such file or "
	    "directory");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "cert=/etc/hostname", "DIR", "t.py"),
	    "rdzv_conf: cert and key go together");
	/*
	 * TLS files make https the default; beside plaintext they are
	 * refused, never dropped (issue 34, defect 10).
	 */
	assert_int_equal(load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1,[::1]", "--rdzv-conf", "cacert=/etc/hostname", "DIR", "t.py"),
	    0);
	assert_string_equal(f->cfg.rdzv_endpoint,
	    "https://h:1,https://[::1]:2379");
	assert_int_equal(load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "DIR", "t.py"), 0);
	assert_string_equal(f->cfg.rdzv_endpoint, "http://h:1");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "https://h:2,http://h:1", "--rdzv-conf",
	    "cert=/etc/hostname,key=/etc/hostname", "DIR", "t.py"),
	    "rdzv_endpoint: http://h:1: plaintext beside cacert, cert or key: "
	    "TLS is etcd's only authentication (use https://)");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "protocol=http,key=/etc/hostname", "DIR",
	    "t.py"), "rdzv_conf: protocol=http beside cacert, cert or key: TLS "
	    "is etcd's only authentication, and plaintext would drop it (use "
	    "https)");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "http://h:1", "--rdzv-conf", "protocol=https", "DIR", "t.py"),
	    "rdzv_endpoint: http://h:1: plaintext, but rdzv_conf says "
	    "protocol=https");
	assert_fails(f, load(f, "--rdzv-backend", "esv", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "cacert=/etc/hostname", "DIR", "t.py"),
	    "rdzv_conf: cacert, cert and key are for the etcd backend; "
	    "esv-rdzv authenticates with token_file");
	assert_fails(f, load(f, "--rdzv-backend", "etcd", "--rdzv-endpoint",
	    "h:1", "--rdzv-conf", "lease_ttl=200ms", "DIR", "t.py"),
	    "rdzv_conf: lease_ttl=200ms: not within 1 s..1 h");
	assert_fails(f, load(f, "--rdzv-backend", "esv", "--nnodes", "1:2",
	    "DIR", "t.py"), "rdzv_endpoint: required by the esv backend "
	    "(HOST:PORT of esv-rdzv)");
	/* torch's c10d command line as it is: no token (a warning at run). */
	assert_int_equal(load(f, "--rdzv-backend", "c10d", "--rdzv-endpoint",
	    "h:5", "DIR", "t.py"), 0);
	assert_string_equal(f->cfg.rdzv_backend, "esv");
	assert_string_equal(f->cfg.rdzv.token_file, "");
	assert_fails(f, load(f, "--rdzv-backend", "esv", "--rdzv-endpoint",
	    "h:0", "DIR", "t.py"), "rdzv_endpoint: out of range 1..65535: 0");
	assert_fails(f, load(f, "--rdzv-conf", "join_timeout=x", "DIR",
	    "t.py"), "rdzv_conf: join_timeout=x: not a duration (seconds, or "
	    "500ms, 2m...)");
	assert_fails(f, load(f, "--standalone", "--nnodes", "2", "DIR",
	    "t.py"), "--standalone: runs one node, but --nnodes is 2:2");
	assert_fails(f, load(f, "--restart-delay", "5s",
	    "--restart-delay-max", "1s", "DIR", "t.py"),
	    "--restart-delay-max 1000ms: below --restart-delay 5000ms");
	assert_fails(f, load(f, "--tee", "0:1,", "DIR", "t.py"),
	    "--tee: not 0..3 nor LOCAL_RANK:0..3,...: 0:1,");
	assert_fails(f, load(f, "--local-ranks-filter", "0,,2", "DIR",
	    "t.py"), "--local-ranks-filter: not a list of local ranks like "
	    "0,2: 0,,2");
	assert_fails(f, load(f, "--local-ranks-filter", "a", "DIR", "t.py"),
	    "--local-ranks-filter: not a list of local ranks like 0,2: a");
	/* c10d means esv-rdzv; elastic node counts are fine there. */
	assert_int_equal(load(f, "--rdzv-backend", "c10d", "--rdzv-endpoint",
	    "[::1]", "--nnodes", "1:4", "--rdzv-conf", "token_file=/t",
	    "DIR", "t.py"), 0);
	assert_string_equal(f->cfg.rdzv_backend, "esv");
	assert_string_equal(f->cfg.rdzv_host, "::1");
	assert_int_equal(f->cfg.rdzv_port, 29400);
	assert_string_equal(f->cfg.rdzv.token_file, "/t");
	/* --standalone brings its own rendezvous. */
	assert_int_equal(load(f, "--standalone", "--rdzv-backend", "c10d",
	    "--rdzv-endpoint", "h:1", "DIR", "t.py"), 0);
	assert_string_equal(f->cfg.rdzv_backend, "esv");
	assert_string_equal(f->cfg.rdzv_endpoint, "");
	assert_int_equal(load(f, "--restart-delay", "5s",
	    "--restart-delay-max", "5s", "DIR", "t.py"), 0);
}

static int
devices_nvidia(void)
{
	glob_t g;
	int n = 0;

	if (glob("/dev/nvidia[0-9]*", 0, NULL, &g) == 0) {
		n = (int)g.gl_pathc;
		globfree(&g);
	}
	return n;
}

static void
test_nproc_words(void **state)
{
	struct fixture *f = *state;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int gpus = devices_nvidia();

	assert_int_equal(load(f, "--nproc-per-node", "cpu", "DIR", "t.py"),
	    0);
	assert_int_equal(f->cfg.nproc_per_node, cpus);
	assert_int_equal(load(f, "--nproc-per-node", "auto", "DIR", "t.py"),
	    0);
	assert_int_equal(f->cfg.nproc_per_node, gpus > 0 ? gpus : cpus);
	if (gpus == 0)
		assert_fails(f, load(f, "--nproc-per-node", "gpu", "DIR",
		    "t.py"), "--nproc-per-node: gpu: no /dev/nvidia[0-9]* "
		    "device found");
	else {
		assert_int_equal(load(f, "--nproc-per-node", "gpu", "DIR",
		    "t.py"), 0);
		assert_int_equal(f->cfg.nproc_per_node, gpus);
	}
	assert_fails(f, load(f, "--nproc-per-node", "0", "DIR", "t.py"),
	    "--nproc-per-node: out of range 1..4096: 0");
}

static int
load_signals(void *arg)
{
	struct fixture *f = arg;

	return load(f, "--signals-to-handle", "SIGTERM, bogus,usr1,2,TERM",
	    "DIR", "t.py");
}

static void
test_signals(void **state)
{
	struct fixture *f = *state;
	const char *out;
	int r;

	out = capture(STDERR_FILENO, load_signals, f, &r);
	assert_int_equal(r, 0);
	assert_non_null(strstr(out, "bogus: unknown signal, ignored"));
	assert_int_equal(f->cfg.nsignals, 3);
	assert_int_equal(f->cfg.signals[0], SIGTERM);
	assert_int_equal(f->cfg.signals[1], SIGUSR1);
	assert_int_equal(f->cfg.signals[2], SIGINT);

	assert_fails(f, load(f, "--signals-to-handle", "TERM,KILL", "DIR",
	    "t.py"), "--signals-to-handle: SIGKILL: cannot be handled");
	assert_fails(f, load(f, "--signals-to-handle", "SIGSTOP", "DIR",
	    "t.py"), "--signals-to-handle: SIGSTOP: cannot be handled");
	assert_fails(f, load(f, "--signals-to-handle", ",", "DIR", "t.py"),
	    "--signals-to-handle: no signal to handle: ,");
	write_ini(f, "[job]\nentrypoint = t.py\nsignals = SIGCHLD\n");
	assert_fails(f, load(f, "DIR"),
	    "DIR/job.ini:3: signals: SIGCHLD: cannot be handled");
}

static void
test_std_for_rank(void **state)
{
	(void)state;
	assert_int_equal(std_for_rank("3", 0), 3);
	assert_int_equal(std_for_rank("3", 7), 3);
	assert_int_equal(std_for_rank("0", 1), 0);
	assert_int_equal(std_for_rank("2", 11), 2);
	assert_int_equal(std_for_rank("0:1,1:2", 0), 1);
	assert_int_equal(std_for_rank("0:1,1:2", 1), 2);
	assert_int_equal(std_for_rank("0:1,1:2", 2), 0);
	assert_int_equal(std_for_rank("0:1,1:2", 10), 0);
	assert_int_equal(std_for_rank("3:3", 3), 3);
	assert_int_equal(std_for_rank("1:1,1:3", 1), 3);
	assert_int_equal(std_for_rank("4", 0), -1);
	assert_int_equal(std_for_rank("", 0), -1);
	assert_int_equal(std_for_rank("0:4", 0), -1);
	assert_int_equal(std_for_rank("10:1", 0), -1);
	assert_int_equal(std_for_rank("0:1,", 0), -1);
	assert_int_equal(std_for_rank("0:1;1:2", 0), -1);
	assert_int_equal(std_for_rank(" 3", 0), -1);

	assert_true(std_spec_valid("0"));
	assert_true(std_spec_valid("9:0,0:3"));
	assert_false(std_spec_valid("03"));
	assert_false(std_spec_valid("0:"));
	assert_false(std_spec_valid(":1"));
	assert_false(std_spec_valid("a:1"));
}

static void
test_rank_in_filter(void **state)
{
	(void)state;
	assert_true(rank_in_filter("", 0));
	assert_true(rank_in_filter("", 99));
	assert_true(rank_in_filter("0,2", 0));
	assert_false(rank_in_filter("0,2", 1));
	assert_true(rank_in_filter("0,2", 2));
	assert_true(rank_in_filter("0, 12", 12));
	assert_false(rank_in_filter("12", 1));
	assert_false(rank_in_filter("0,,2", 0));
	assert_false(rank_in_filter("x", 0));
}

static void
test_durations(void **state)
{
	(void)state;
	assert_int_equal(parse_duration_ms("30"), 30000);
	assert_int_equal(parse_duration_ms("30s"), 30000);
	assert_int_equal(parse_duration_ms("500ms"), 500);
	assert_int_equal(parse_duration_ms("2m"), 120000);
	assert_int_equal(parse_duration_ms("1h"), 3600000);
	assert_int_equal(parse_duration_ms("1.5s"), 1500);
	assert_int_equal(parse_duration_ms("1.5"), 1500);
	assert_int_equal(parse_duration_ms(".25s"), 250);
	assert_int_equal(parse_duration_ms("0"), 0);
	assert_int_equal(parse_duration_ms("0ms"), 0);
	assert_int_equal(parse_duration_ms(""), -1);
	assert_int_equal(parse_duration_ms("s"), -1);
	assert_int_equal(parse_duration_ms("."), -1);
	assert_int_equal(parse_duration_ms("-1"), -1);
	assert_int_equal(parse_duration_ms("+1"), -1);
	assert_int_equal(parse_duration_ms(" 1"), -1);
	assert_int_equal(parse_duration_ms("1 s"), -1);
	assert_int_equal(parse_duration_ms("1d"), -1);
	assert_int_equal(parse_duration_ms("1.2.3"), -1);
	assert_int_equal(parse_duration_ms("inf"), -1);
	assert_int_equal(parse_duration_ms("0x10"), -1);
	assert_int_equal(parse_duration_ms("99999999999999999999h"), -1);
}

static int
run_help(void *arg)
{
	return load((struct fixture *)arg, "--nnodes", "x", "--help", "DIR");
}

static int
run_version(void *arg)
{
	return load((struct fixture *)arg, "--version");
}

static void
test_help_version(void **state)
{
	struct fixture *f = *state;
	const char *out;
	int r;

	out = capture(STDOUT_FILENO, run_help, f, &r);
	assert_int_equal(r, 1);
	assert_true(strncmp(out, "usage: esv-supervise ", 21) == 0);
	assert_non_null(strstr(out, "--nproc-per-node"));
	out = capture(STDOUT_FILENO, run_version, f, &r);
	assert_int_equal(r, 1);
	assert_string_equal(out, "esv-supervise " ESV_VERSION "\n");
}

static void
test_no_ini_is_fine_and_unreadable_is_not(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "DIR", "t.py"), 0);
	assert_int_equal(mkdir(f->ini, 0700), 0);
	assert_int_equal(load(f, "DIR", "t.py"), -1);
	assert_int_equal(strncmp(err_of(f), "DIR/job.ini: ", 13), 0);
	assert_int_equal(rmdir(f->ini), 0);
}

/*
 * The annotated example must stay loadable and set nothing: every key is
 * commented out, so it needs an entrypoint, and master_addr and
 * master_port stay unset (a free port on one node, not a pinned 29500).
 * tests/integration/test_install.sh checks that its defaults are true.
 */
static void
test_example_file(void **state)
{
#ifdef ESV_SOURCE_DIR
	struct job_config *cfg = &((struct fixture *)*state)->cfg;
	char err[512];
	char *bare[] = { "esv-supervise", ESV_SOURCE_DIR "/../../etc", NULL };
	char *argv[] = { "esv-supervise", ESV_SOURCE_DIR "/../../etc", "--",
	    "train.py", NULL };

	assert_int_equal(config_load(cfg, 2, bare, NULL, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "job.ini: entrypoint: missing"));
	assert_int_equal(config_load(cfg, 4, argv, NULL, err, sizeof(err)),
	    0);
	assert_argv(cfg, (const char *[]){ "train.py", NULL });
	assert_int_equal(cfg->nproc_per_node, 1);
	assert_string_equal(cfg->master_addr, "127.0.0.1");
	assert_false(cfg->master_addr_set);
	assert_int_equal(cfg->master_port, 29500);
	assert_false(cfg->master_port_set);
	assert_string_equal(cfg->rdzv_backend, "static");
	assert_string_equal(cfg->log_line_prefix,
	    "[${role_name}${local_rank}]:");
	assert_int_equal(cfg->nsignals, 3);
	assert_int_equal(cfg->shutdown_timeout_ms, 30000);
	assert_int_equal(cfg->restart_delay_max_ms, 60000);
	assert_int_equal(cfg->health_port, -1);
	assert_int_equal(cfg->notification_fd, 0);
	assert_int_equal(cfg->nextra_env, 0);
#else
	(void)state;
	skip();
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ini_every_key, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_agent_store_onoff, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ini_booleans, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ini_env_section, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ini_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ini_long_line, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ini_args_continuation,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_entrypoint, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cli_overrides_ini, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_env_between_ini_and_cli,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_torch_env_names, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_torchrun_parity, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_both_spellings, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_health_port, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cli_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_dashdash_replaces_ini,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signals_torchrun, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_torchrun_style, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_args_quoting, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_contradictions, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_nproc_words, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
		cmocka_unit_test(test_std_for_rank),
		cmocka_unit_test(test_rank_in_filter),
		cmocka_unit_test(test_durations),
		cmocka_unit_test_setup_teardown(test_help_version, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_no_ini_is_fine_and_unreadable_is_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_example_file, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
