/*
 * A worker's exit, said: its failure record, its event, its line for the
 * init system's logger, its files; written after the signals have gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "clone_into.h"
#include "contain.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "group.h"
#include "group_int.h"
#include "guardproto.h"
#include "helpers.h"
#include "msg.h"
#include "pidfd.h"
#include "report.h"
#include "sig.h"
#include "spawning.h"
#include "subst.h"
#include "trust.h"
#include "utf8.h"
#include "workerenv.h"

/* Why a worker could not start (exec_errno set), in a static buffer. */
static const char *
start_error(struct supervisor *sv, struct worker *wk)
{
	static char buf[PATH_MAX + 128];

	if (wk->spawn_step != NULL)
		snprintf(buf, sizeof(buf), "unable to start it (%s): %s",
		    wk->spawn_step, strerror(wk->exec_errno));
	else
		snprintf(buf, sizeof(buf), "unable to exec %s: %s",
		    sv->cfg->no_python ? sv->cfg->argv[0] : sv->env.python,
		    strerror(wk->exec_errno));
	return buf;
}

static void
record_failure(struct supervisor *sv, struct worker *wk)
{
	struct worker_failure *nf;
	char path[PATH_MAX], rel[32];

	nf = reallocarray(sv->grp.failures, sv->grp.nfailures + 1, sizeof(*nf));
	if (nf == NULL) {
		warn_sys("unable to record a failure");
		return;
	}
	sv->grp.failures = nf;
	if (ctl_error_path(path, sizeof(path), sv->dirs.attempt_dir,
	    wk->local_rank) == -1)
		path[0] = '\0';
	ctl_error_path(rel, sizeof(rel), NULL, wk->local_rank);
	if (failure_init_at(&nf[sv->grp.nfailures], wk->local_rank,
	    sv->rdzv.round.ranks.base_rank + wk->local_rank, wk->last_pid,
	    wk->exitcode, sv->dirs.attemptfd,
	    sv->dirs.attemptfd != -1 ? rel : NULL, O_NOFOLLOW, path,
	    (time_t)wk->exited) == -1)
		return;
	/* A bare SIGKILL says nothing; the memory controller knows more. */
	(void)failure_note_oom(&nf[sv->grp.nfailures], wk->cg.oom_kill,
	    wk->cg.memory_peak);
	/* torch's generic hint would hide the one thing the user needs. */
	if (wk->exec_errno != 0) {
		char *msg = strdup(start_error(sv, wk));

		if (msg != NULL) {
			free(nf[sv->grp.nfailures].message);
			nf[sv->grp.nfailures].message = msg;
		}
	}
	sv->grp.nfailures++;
}

/* One line per worker exit, for the init system's logger. */
static void
worker_exit_line(struct supervisor *sv, const struct worker *wk)
{
	char how[64];

	if (wk->exitcode == -SIGKILL && wk->cg.oom_kill > 0)
		snprintf(how, sizeof(how), "killed by the OOM killer at %.1f GiB",
		    (double)wk->cg.memory_peak / (1 << 30));
	else if (wk->exitcode < 0)
		snprintf(how, sizeof(how), "killed by %s",
		    sig_name(-wk->exitcode));
	else
		snprintf(how, sizeof(how), "exited %d", wk->exitcode);
	info_msg("worker %u (rank %u, pid %d) %s after %.1f s: %s",
	    wk->local_rank, sv->rdzv.round.ranks.base_rank + wk->local_rank,
	    (int)wk->last_pid, how, wk->exited - wk->started,
	    wk->state == W_SUCCEEDED ? "succeeded" :
	    wk->state == W_FAILED ? "failed" : "stopped");
}

void
flush_exits(struct supervisor *sv)
{
	struct worker *wk;
	unsigned i, exits = 0;
	json_t *ev;

	for (i = 0; i < sv->grp.nworkers; i++) {
		wk = &sv->grp.workers[i];
		if (!wk->exit_pending)
			continue;
		wk->exit_pending = false;
		exits++;
		cgroup_worker_stats(&sv->cg, wk);
		if (wk->exec_errno != 0)
			warn_msg("worker %u: %s", wk->local_rank,
			    start_error(sv, wk));
		if (wk->state == W_FAILED) {
			record_failure(sv, wk);
			/* Here, where spawn failures pass too (exec_errno). */
			if (wk->spawn_step != NULL)
				sv->counts.failures_spawn++;
			else if (wk->exec_errno != 0)
				sv->counts.failures_exec++;
			else if (wk->exitcode < 0)
				sv->counts.failures_signal++;
			else
				sv->counts.failures_exit++;
		}
		ev = json_pack("{si si si si ss ss}",
		    "local_rank", wk->local_rank, "rank",
		    sv->rdzv.round.ranks.base_rank + wk->local_rank, "pid",
		    wk->last_pid, "exitcode", wk->exitcode, "signal",
		    wk->exitcode < 0 ? sig_name(-wk->exitcode) : "", "state",
		    wk->state == W_SUCCEEDED ? "succeeded" :
		    wk->state == W_FAILED ? "failed" : "stopped");
		if (ev != NULL && wk->exec_errno != 0)
			json_object_set_new(ev, "error",
			    json_string(start_error(sv, wk)));
		if (ev != NULL && wk->cg.cpu_usec >= 0)
			json_object_set_new(ev, "cpu_usec",
			    json_integer(wk->cg.cpu_usec));
		if (ev != NULL && wk->cg.memory_peak >= 0)
			json_object_set_new(ev, "memory_peak",
			    json_integer(wk->cg.memory_peak));
		if (ev != NULL && wk->cg.oom_kill >= 0)
			json_object_set_new(ev, "oom_kill",
			    json_boolean(wk->exitcode == -SIGKILL &&
			    wk->cg.oom_kill > 0));
		events_log(sv, "worker.exit", ev);
		worker_exit_line(sv, wk);
		report_worker(sv, wk);
	}
	/* Before the pid can be reused: the dead worker's timers go. */
	if (exits > 0)
		watchdog_pids(&sv->wd, &sv->grp);
	/*
	 * supervise/state lists the live workers' pids: a worker that
	 * succeeded while the others run leaves it now, not whenever the
	 * next state change happens to write the file (a reader would be
	 * told of a pid that may be another process's by then).  While the
	 * start's reports are still being written, their last step does it.
	 */
	if (exits > 0 && !sv->rep.report_pending)
		report_group(sv);
}
