/*
 * The environment of one worker: the supervisor's own environment with the
 * variables torchrun sets (esv-supervise(8), ENVIRONMENT) laid over it.
 */
#ifndef ESV_WORKERENV_H
#define ESV_WORKERENV_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "ranks.h"

/* Facts of one attempt that are the same for every worker of the node. */
struct attempt_info {
	const struct job_config		*cfg;
	struct rank_assignment		 ranks;
	const char			*master_addr;
	unsigned			 master_port;
	unsigned			 restart_count;
	const char			*attempt_dir;	/* log dir of this attempt, "" if none */
	bool				 use_agent_store;
	const char			*timer_file;	/* esv-watchdogd's FIFO, or NULL */
};

/* An environment being built: a NULL-terminated "NAME=value" array. */
struct envbuf {
	char	**vars;
	size_t	 len, cap;
};

/*
 * The variables esv sets for local_rank (never the inherited ones), in a
 * fixed order; this is exactly what workers/N/env/ holds.
 */
int	workerenv_own(struct envbuf *eb, const struct attempt_info *ai,
	    unsigned local_rank, char **base_env);

/*
 * The whole environment of the worker: base_env (the supervisor's environ)
 * with the own variables replacing same-named entries.
 */
int	workerenv_full(struct envbuf *eb, const struct attempt_info *ai,
	    unsigned local_rank, char **base_env);

int	envbuf_set(struct envbuf *eb, const char *name, const char *value);
int	envbuf_unset(struct envbuf *eb, const char *name);
/* Append a copy of every entry of env. */
int	envbuf_copy(struct envbuf *eb, char **env);
const char *envbuf_get(const struct envbuf *eb, const char *name);
void	envbuf_free(struct envbuf *eb);

/* Look name up in a NULL-terminated environ-style array. */
const char *env_lookup(char **env, const char *name);

#endif
