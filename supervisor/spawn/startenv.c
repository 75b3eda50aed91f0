/*
 * What each start reads again (esv-supervise(8), RELOADING): the
 * interpreter on PATH, and JOBDIR/env/, the workers' base environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "envdir.h"
#include "msg.h"
#include "spawning.h"
#include "trust.h"
#include "workerenv.h"

/* torchrun resolves its interpreter once a start; so do we, and fail early. */
void
resolve_python(struct start_env *se, const struct job_config *cfg)
{
	char *path, *dir, *save;

	strlcpy(se->python, cfg->python, sizeof(se->python));
	if (cfg->no_python || strchr(cfg->python, '/') != NULL)
		return;
	if ((path = getenv("PATH")) == NULL || (path = strdup(path)) == NULL)
		return;
	for (dir = strtok_r(path, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];

		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir,
		    cfg->python) < sizeof(cand) && access(cand, X_OK) == 0) {
			strlcpy(se->python, cand, sizeof(se->python));
			break;
		}
	}
	free(path);
}

static void
start_env_free(struct start_env *se)
{
	struct envbuf eb = { se->vars, se->nvars,
	    se->nvars + 1 };

	envbuf_free(&eb);
	se->vars = NULL;
	se->nvars = 0;
}

/*
 * Its files become the workers' environment, which may be root's: as
 * job.ini, only a directory and files nobody else can change are read
 * (trust.h), and one that is not refuses the start, since skipping a file
 * would start the workers with an environment nobody meant either.
 */
int
start_env_build(struct start_env *se, const struct job_config *cfg,
    int jobfd, char *err, size_t errlen)
{
	struct envbuf eb = { 0 };
	char path[PATH_MAX];
	int fd, r = 0;

	start_env_free(se);
	if (envbuf_copy(&eb, se->environ) == -1)
		die(ESV_EXIT_SYSTEM, "unable to build the environment");
	pathf(path, sizeof(path), "%s/%s", cfg->jobdir, ESV_ENV_DIR);
	fd = openat(jobfd, ESV_ENV_DIR, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno != ENOENT)
		warn_sys("%s: not read", path);
	else if (fd != -1 && (trust_check(fd, path, 0, err, errlen) == -1 ||
	    envdir_apply(fd, path, &eb, err, errlen) == -1))
		r = -1;
	if (fd != -1)
		close(fd);
	if (r == -1) {
		envbuf_free(&eb);
		return -1;
	}
	/* envbuf keeps vars NULL-terminated, as environ; an empty one. */
	if (eb.vars == NULL &&
	    (eb.vars = calloc(1, sizeof(*eb.vars))) == NULL)
		die(ESV_EXIT_SYSTEM, "unable to build the environment");
	se->vars = eb.vars;
	se->nvars = eb.len;
	return 0;
}
