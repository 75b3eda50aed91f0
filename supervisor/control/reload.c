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
#include "control.h"
#include "msg.h"
#include "report.h"
#include "spawning.h"

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
	notify_reloading(sv->notify, false);
	r = config_reload(sv->cfg, sv->env.argc, sv->env.argv, sv->env.environ,
	    err, sizeof(err), kept, sv);
	if (r == -1) {
		warn_msg("reload (%s): %s: the running configuration is kept",
		    source, err);
		events_log(sv, "config.reload", json_pack("{ss sb ss}",
		    "source", source, "changed", 0, "error", err));
	} else {
		if (r == 1) {
			sv->rep.job_name = sv->cfg->argv[0];
			resolve_python(&sv->env, sv->cfg);
			info_msg("reload (%s): the command or [env] changed: the "
			    "next start runs %s", source, sv->cfg->argv[0]);
		} else if (!quiet)
			info_msg("reload (%s): nothing that may change did",
			    source);
		events_log(sv, "config.reload", json_pack("{ss sb}", "source",
		    source, "changed", r == 1));
	}
	notify_reloading(sv->notify, true);
}
