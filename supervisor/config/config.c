/*
 * Reading the configuration: config_load runs the sources in their order
 * (config_int.h), finds JOBDIR when esv-run names none, and config_reload
 * compares a new reading with the running one.
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
		return cfg_fail(ctx, "the job directory's base: %s", why);
	if ((size_t)snprintf(base, len, "%s/%s", real, name) >= len) {
		close(pfd);
		return cfg_fail(ctx, "the job directory's name is too long");
	}
	if (!ctx->cfg->dry_run && mkdirat(pfd, name, 0700) == -1 &&
	    errno != EEXIST) {
		close(pfd);
		return cfg_fail(ctx, "%s: %s", base, strerror(errno));
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(pfd);
	if (fd == -1 && errno == ENOENT && ctx->cfg->dry_run)
		return 0;
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR))
		return cfg_fail(ctx, "%s: not a directory (a symbolic link?): "
		    "refusing it as the job directory's base; remove it, or "
		    "name a job directory with --jobdir", base);
	if (fd == -1)
		return cfg_fail(ctx, "%s: %s", base, strerror(errno));
	if (fstat(fd, &st) == -1) {
		close(fd);
		return cfg_fail(ctx, "%s: %s", base, strerror(errno));
	}
	close(fd);
	if (st.st_uid != euid)
		return cfg_fail(ctx, "%s: owner uid %u, mode %04o: another user's, "
		    "so esv does not make job directories in it; have it "
		    "removed, or name a job directory with --jobdir", base,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	if ((st.st_mode & 077) != 0)
		return cfg_fail(ctx, "%s: owner uid %u, mode %04o: open to others, "
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
		return cfg_fail(ctx, "%s/%s: name too long", base, cfg->run_id);
	cfg->jobdir_auto = true;
	return cfg_set_jobdir(ctx, dir);
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

	if ((r = cfg_parse_cmdline(&ctx, argc, argv)) != 0)
		return r;
	cfg_set_defaults(cfg, ctx.torchrun);
	r = 0;
	if ((cfg->jobdir[0] != '\0' && cfg_load_ini(&ctx) == -1) ||
	    cfg_load_env(&ctx, envp) == -1 || cfg_load_cli(&ctx) == -1 ||
	    cfg_validate(&ctx) == -1 || auto_jobdir(&ctx) == -1 ||
	    cfg_build_argv(&ctx) == -1) {
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
	cfg_print_value(fp, cfg, d);
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
		const struct option_def *d = &cfg_options[i];

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
