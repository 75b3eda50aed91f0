/*
 * What the pieces of config/ share, and nobody else: the option table
 * (options.c) and the state of one reading (struct loadctx), filled in
 * turn by the defaults, job.ini (jobini.c), PET_* variables and the
 * command line (cmdline.c), then checked (validate.c); config.c runs
 * them in that order.
 */
#ifndef ESV_CONFIG_INT_H
#define ESV_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

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

extern const struct option_def cfg_options[];
extern const size_t cfg_noptions;
#define NOPTS	cfg_noptions

/* The first error of a reading, in ctx->err; -1. */
int	cfg_fail(struct loadctx *ctx, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	cfg_bad_value(struct loadctx *ctx, const struct option_def *d,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The index of key in the table, or -1. */
int	cfg_find_key(const char *key);
int	cfg_set_args(struct loadctx *ctx, const struct option_def *d,
	    const char *v, char *why, size_t whylen);
int	cfg_set_value(struct loadctx *ctx, const struct option_def *d,
	    const char *v, char *why, size_t whylen);
void	cfg_set_defaults(struct job_config *cfg, bool torchrun);
void	cfg_print_value(FILE *fp, const struct job_config *cfg,
	    const struct option_def *d);

/* jobini.c */
int	cfg_load_ini(struct loadctx *ctx);

/* cmdline.c */
int	cfg_parse_cmdline(struct loadctx *ctx, int argc, char **argv);
int	cfg_set_jobdir(struct loadctx *ctx, const char *dir);
int	cfg_load_env(struct loadctx *ctx, char **envp);
int	cfg_load_cli(struct loadctx *ctx);
int	cfg_build_argv(struct loadctx *ctx);

/* validate.c */
int	cfg_validate(struct loadctx *ctx);

#endif
