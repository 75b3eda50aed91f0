/*
 * Spawning a worker: its environment (workerenv.c, envdir.c, startenv.c),
 * its output copied line by line to the console and its log (output.c,
 * linebuf.c), and its birth in its cgroup (clone_into.c).
 *
 * Owns: the workers' base environment for a start, their output streams.
 * May call: configuration (its patterns and trust checks), lib/.
 */
#ifndef ESV_SPAWNING_H
#define ESV_SPAWNING_H

#include "supervise.h"

/* startenv.c: what a start reads again (the interpreter, JOBDIR/env/). */
void	resolve_python(struct start_env *se, const struct job_config *cfg);

/*
 * Build se->vars for the start that comes (JOBDIR/env/ in jobfd); -1 with
 * one line in err if env/ or a file in it is not trusted: no start then.
 */
int	start_env_build(struct start_env *se, const struct job_config *cfg,
	    int jobfd, char *err, size_t errlen);

/* output.c */
int	output_open(struct supervisor *sv, struct worker *wk, int fds[2]);
void	output_started(struct supervisor *sv, struct worker *wk);
void	output_close(struct supervisor *sv, struct worker *wk);

#endif
