/*
 * What an operator may change while the supervisor runs, and when it is
 * read (esv-supervise(8), RELOADING):
 * - JOBDIR/env/ (an envdir), at every group start;
 * - job.ini's entrypoint, args, no_python, module, run_path, python and
 *   [env], at every start the operator asks for (esv-ctl restart, term,
 *   kill, up) and on a reload (esv-ctl reload, SIGHUP).
 * What the rendezvous agreed on (nnodes, nproc_per_node, the run id, the
 * backend) and the supervisor's own settings stay as they were read at
 * its start: a reload that changes them says so and keeps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "envdir.h"
#include "msg.h"
#include "supervise.h"
#include "trust.h"
#include "workerenv.h"

/* torchrun resolves its interpreter once a start; so do we, and fail early. */
void
resolve_python(struct supervisor *sv)
{
	const struct job_config *cfg = sv->cfg;
	char *path, *dir, *save;

	strlcpy(sv->python, cfg->python, sizeof(sv->python));
	if (cfg->no_python || strchr(cfg->python, '/') != NULL)
		return;
	if ((path = getenv("PATH")) == NULL || (path = strdup(path)) == NULL)
		return;
	for (dir = strtok_r(path, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];

		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir,
		    cfg->python) < sizeof(cand) && access(cand, X_OK) == 0) {
			strlcpy(sv->python, cand, sizeof(sv->python));
			break;
		}
	}
	free(path);
}

static void
start_env_free(struct supervisor *sv)
{
	struct envbuf eb = { sv->start_env, sv->start_env_len,
	    sv->start_env_len + 1 };

	envbuf_free(&eb);
	sv->start_env = NULL;
	sv->start_env_len = 0;
}

/*
 * Its files become the workers' environment, which may be root's: as
 * job.ini, only a directory and files nobody else can change are read
 * (trust.h), and one that is not refuses the start, since skipping a file
 * would start the workers with an environment nobody meant either.
 */
int
start_env_build(struct supervisor *sv, char *err, size_t errlen)
{
	struct envbuf eb = { 0 };
	char path[PATH_MAX];
	int fd, r = 0;

	start_env_free(sv);
	if (envbuf_copy(&eb, sv->environ) == -1)
		die(ESV_EXIT_SYSTEM, "unable to build the environment");
	pathf(path, sizeof(path), "%s/%s", sv->cfg->jobdir, ESV_ENV_DIR);
	fd = openat(sv->jobfd, ESV_ENV_DIR, O_RDONLY | O_DIRECTORY |
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
	sv->start_env = eb.vars;
	sv->start_env_len = eb.len;
	return 0;
}

static void
kept(void *ctx, const char *key, const char *was, const char *now)
{
	(void)ctx;
	warn_msg("%s: %s: changed from %s to %s: kept at %s until "
	    "esv-supervise starts again (what may change between attempts: "
	    "esv-supervise(8), RELOADING)", ESV_JOB_INI, key, was, now, was);
}

void
supervisor_reload(struct supervisor *sv, const char *source, bool quiet)
{
	char err[1024];
	int r;

	if (sv->cfg->torchrun) {
		if (!quiet)
			info_msg("reload (%s): esv-run's settings are its command "
			    "line: nothing to read (%s/%s is read at every "
			    "start)", source, sv->cfg->jobdir, ESV_ENV_DIR);
		return;
	}
	notify_reloading(sv, false);
	r = config_reload(sv->cfg, sv->argc, sv->argv, sv->environ, err,
	    sizeof(err), kept, sv);
	if (r == -1) {
		warn_msg("reload (%s): %s: the running configuration is kept",
		    source, err);
		events_log(sv, "config.reload", json_pack("{ss sb ss}",
		    "source", source, "changed", 0, "error", err));
	} else {
		if (r == 1) {
			sv->job_name = sv->cfg->argv[0];
			resolve_python(sv);
			info_msg("reload (%s): the command or [env] changed: the "
			    "next start runs %s", source, sv->cfg->argv[0]);
		} else if (!quiet)
			info_msg("reload (%s): nothing that may change did",
			    source);
		events_log(sv, "config.reload", json_pack("{ss sb}", "source",
		    source, "changed", r == 1));
	}
	notify_reloading(sv, true);
}
