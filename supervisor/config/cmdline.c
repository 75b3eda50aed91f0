/*
 * The command line (esv-supervise's and torchrun's option names, by
 * getopt_long from the option table), the PET_* variables it leaves
 * alone, and the worker's command it names.
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
int
cfg_load_env(struct loadctx *ctx, char **envp)
{
	const char *names[2], *v;
	char why[256];
	size_t i, j;

	for (i = 0; i < NOPTS; i++) {
		if (ctx->cli[i] != NULL)
			continue;
		names[0] = cfg_options[i].env_torch;
		names[1] = cfg_options[i].env;
		for (j = 0; j < NELEM(names); j++) {
			if (names[j] == NULL ||
			    (v = env_get(envp, names[j])) == NULL)
				continue;
			if (cfg_set_value(ctx, &cfg_options[i], v, why,
			    sizeof(why)) == -1 && cfg_bad_value(ctx, &cfg_options[i],
			    "%s: %s", names[j], why) == -1)
				return -1;
		}
	}
	return 0;
}

int
cfg_load_cli(struct loadctx *ctx)
{
	char why[256];
	size_t i;

	for (i = 0; i < NOPTS; i++) {
		if (ctx->cli[i] == NULL)
			continue;
		if (cfg_set_value(ctx, &cfg_options[i], ctx->cli[i], why,
		    sizeof(why)) == -1 && cfg_bad_value(ctx, &cfg_options[i],
		    "--%s: %s", cfg_options[i].opt, why) == -1)
			return -1;
	}
	return 0;
}

int
cfg_set_jobdir(struct loadctx *ctx, const char *dir)
{
	struct job_config *cfg = ctx->cfg;
	size_t len = strlen(dir);
	int n;

	if (len == 0)
		return cfg_fail(ctx, "JOBDIR: must not be empty");
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len >= sizeof(cfg->jobdir))
		return cfg_fail(ctx, "%s: name too long", dir);
	memcpy(cfg->jobdir, dir, len);
	cfg->jobdir[len] = '\0';
	n = snprintf(cfg->config_path, sizeof(cfg->config_path), "%s%sjob.ini",
	    cfg->jobdir, strcmp(cfg->jobdir, "/") == 0 ? "" : "/");
	if (n < 0 || (size_t)n >= sizeof(cfg->config_path))
		return cfg_fail(ctx, "%s: name too long", dir);
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
		if (cfg_options[i].short_opt != 0) {
			*sp++ = (char)cfg_options[i].short_opt;
			if (cfg_options[i].kind != K_BOOL)
				*sp++ = ':';
		}
		if (cfg_options[i].opt == NULL)
			continue;
		lo[n++] = (struct option){ cfg_options[i].opt,
		    cfg_options[i].kind == K_BOOL ? no_argument :
		    cfg_options[i].kind == K_ONOFF ? optional_argument :
		    required_argument, NULL, OPT_BASE + (int)i };
		if (strchr(cfg_options[i].opt, '-') == NULL)
			continue;
		strlcpy(under[i], cfg_options[i].opt, sizeof(under[i]));
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
		return cfg_fail(ctx, "%s: needs a value",
		    bad_option(argv, word, bad, sizeof(bad)));
	case '?':
		return cfg_fail(ctx, "%s: unknown option (see --help)",
		    bad_option(argv, word, bad, sizeof(bad)));
	}
	if (c >= OPT_BASE)
		i = (size_t)(c - OPT_BASE);
	else
		for (i = 0; cfg_options[i].short_opt != c; i++)
			;
	ctx->cli[i] = optarg != NULL ? optarg : "1";
	return 0;
}

/*
 * Options may come before and after JOBDIR; the first word after JOBDIR
 * that is no option (or whatever follows "--") starts the command.
 */
int
cfg_parse_cmdline(struct loadctx *ctx, int argc, char **argv)
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
		return cfg_fail(ctx, "JOBDIR: missing (see --help)");
	ctx->cmd = argv + optind;
	ctx->ncmd = argc - optind;
	/* esv-run without --jobdir: made from the run id, once it is known. */
	if (jobdir[0] == '\0' && ctx->torchrun)
		return 0;
	return cfg_set_jobdir(ctx, jobdir);
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
int
cfg_build_argv(struct loadctx *ctx)
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
		return cfg_fail(ctx, "%s: entrypoint: missing (give one in job.ini "
		    "or after --)", cfg->config_path);
	if (cfg->argv == NULL) {
		cfg->argc = 0;
		return cfg_fail(ctx, "%s", strerror(ENOMEM));
	}
	return 0;
}
