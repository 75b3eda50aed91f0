/*
 * JOBDIR/job.ini, read by inih: its [job] keys through the option table,
 * its [env] section, continuation lines of entrypoint and args.  Only a
 * file nobody else may change is read (trust.h).
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
		return cfg_fail(ctx, "%s:%d: %s: not a valid variable name",
		    cfg->config_path, ctx->lineno, name);
	for (i = 0; i < cfg->nextra_env; i++)
		if (strcmp(cfg->extra_env[i].name, name) == 0)
			return cfg_fail(ctx, "%s:%d: %s: %s", cfg->config_path,
			    ctx->lineno, name, ctx->indented ?
			    "continuation lines are only for args" :
			    "duplicate variable");
	if (cfg->nextra_env == ESV_MAX_EXTRA_ENV)
		return cfg_fail(ctx, "%s:%d: %s: more than %d variables in [env]",
		    cfg->config_path, ctx->lineno, name, ESV_MAX_EXTRA_ENV);
	p = &cfg->extra_env[cfg->nextra_env];
	p->name = strdup(name);
	p->value = unquote(value);
	cfg->nextra_env++;
	if (p->name == NULL || p->value == NULL)
		return cfg_fail(ctx, "%s: %s", cfg->config_path, strerror(errno));
	return 0;
}

static int
ini_job(struct loadctx *ctx, const char *name, const char *value)
{
	const char *path = ctx->cfg->config_path;
	char why[256], *v;
	int i, r;

	if ((i = cfg_find_key(name)) == -1)
		return cfg_fail(ctx, "%s:%d: %s: unknown key", path, ctx->lineno,
		    name);
	if (ctx->seen[i]) {
		/* inih hands an indented line over as the same key again. */
		if (!ctx->indented || ctx->last_key != i)
			return cfg_fail(ctx, "%s:%d: %s: duplicate key", path,
			    ctx->lineno, name);
		if (cfg_options[i].fn != cfg_set_args)
			return cfg_fail(ctx, "%s:%d: %s: continuation lines are "
			    "only for args", path, ctx->lineno, name);
	}
	ctx->seen[i] = true;
	ctx->last_key = i;
	v = cfg_options[i].fn == cfg_set_args ? strdup(value) : unquote(value);
	if (v == NULL)
		return cfg_fail(ctx, "%s: %s", path, strerror(errno));
	r = cfg_set_value(ctx, &cfg_options[i], v, why, sizeof(why));
	free(v);
	if (r == -1)
		return cfg_bad_value(ctx, &cfg_options[i], "%s:%d: %s: %s", path,
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
		r = cfg_fail(ctx, "%s:%d: %s: outside any section (put it under "
		    "[job])", ctx->cfg->config_path, ctx->lineno, name);
	else
		r = cfg_fail(ctx, "%s:%d: [%s]: unknown section (only [job] and "
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
			cfg_fail(ctx, "%s:%d: [%.*s]: unknown section (only [job] "
			    "and [env])", ctx->cfg->config_path, ctx->lineno,
			    (int)nl, name);
			return NULL;
		}
	}
	len = strlen(str);
	if (len == (size_t)num - 1 && str[len - 1] != '\n') {
		if ((c = getc(ctx->fp)) != EOF) {
			ctx->errline = ctx->lineno;
			cfg_fail(ctx, "%s:%d: line too long (at most %d "
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

int
cfg_load_ini(struct loadctx *ctx)
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
			return cfg_fail(ctx, "%s: a file, not a job directory; to "
			    "run a script as torchrun does, use esv-run "
			    "(esv-run [options] %s [args])", ctx->cfg->jobdir,
			    ctx->cfg->jobdir);
		return cfg_fail(ctx, "%s", why);
	}
	fd = openat(dfd, ESV_JOB_INI, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	close(dfd);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			return cfg_fail(ctx, "%s: is a symbolic link: refusing to "
			    "follow it; put the file itself there", path);
		return cfg_fail(ctx, "%s: %s", path, strerror(errno));
	}
	if (trust_check(fd, path, 0, why, sizeof(why)) == -1) {
		close(fd);
		return cfg_fail(ctx, "%s", why);
	}
	if ((ctx->fp = fdopen(fd, "r")) == NULL) {
		close(fd);
		return cfg_fail(ctx, "%s: %s", path, strerror(errno));
	}
	r = ini_parse_stream(ini_read, ctx, ini_pair, ctx);
	rerr = ferror(ctx->fp);
	fclose(ctx->fp);
	ctx->fp = NULL;
	if (r > 0 && (!ctx->failed || r < ctx->errline)) {
		ctx->failed = false;
		return cfg_fail(ctx, "%s:%d: syntax error (want [section] or "
		    "key = value)", path, r);
	}
	if (ctx->failed)
		return -1;
	if (r < 0 || rerr)
		return cfg_fail(ctx, "%s: %s", path, r == -2 ? strerror(ENOMEM) :
		    "read error");
	return 0;
}
