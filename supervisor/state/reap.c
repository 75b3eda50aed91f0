/*
 * SIGCHLD: whose child it was (a worker, a helper, the guardian, an
 * adopted process), and what the exits mean for the group.
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

static struct worker *
find_worker(struct supervisor *sv, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sv->grp.nworkers; i++)
		if (sv->grp.workers[i].pid == pid)
			return &sv->grp.workers[i];
	return NULL;
}

/*
 * Only what must be known to act: the files, the error file and the
 * event line are written by flush_exits, after the signals have gone out.
 */
static void
worker_exited(struct supervisor *sv, struct worker *wk, int status)
{
	wk->pid = 0;
	wk->exited = wall_now();
	sv->grp.alive--;
	wk->exitcode = WIFSIGNALED(status) ? -WTERMSIG(status) :
	    WEXITSTATUS(status);
	if (wk->exitcode == 0)
		wk->state = W_SUCCEEDED;
	else if (sv->grp.state == G_STOPPING)
		wk->state = W_STOPPED;
	else
		wk->state = W_FAILED;
	wk->exit_pending = true;
}

/* SIGCHLD: reap everything; grandchildren we adopted are only reaped. */
void
group_reap(struct supervisor *sv)
{
	struct worker *wk;
	enum store_exit gone;
	unsigned i, failed = 0;
	int status;
	pid_t pid;
	bool done;

	/*
	 * Has the round ended first?  A supervisor woken from a stall finds
	 * its workers' exits and the rendezvous's news at once: exits that
	 * followed the end of the round (the lease ran out, the server
	 * dropped us or restarted the round, and the peers vanished) are a
	 * membership stop, not a failure.  So the rendezvous speaks first.
	 */
	if (sv->grp.state == G_RUNNING)
		rdzv_check(&sv->rdzv.rz);
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == sv->guard.pid) {
			guardian_died(sv);
			continue;
		}
		if (rdzv_child_exited(&sv->rdzv.rz, pid, status))
			continue;
		if ((gone = store_exited(&sv->st, pid, status)) !=
		    STORE_NOT_OURS) {
			if (gone == STORE_LINGER_OVER)
				store_gone(sv);
			continue;
		}
		if (pid == sv->wd.pid) {
			watchdog_died(sv, status);
			continue;
		}
		if (pid == sv->hd.pid) {
			healthd_died(sv, status);
			continue;
		}
		if (pid == sv->host.pid) {
			sv->host.pid = 0;
			continue;
		}
		if ((wk = find_worker(sv, pid)) == NULL) {
			(void)inherited(sv, pid, true);
			continue;
		}
		worker_exited(sv, wk, status);
		if (wk->state == W_FAILED)
			failed++;
	}
	if (sv->grp.state == G_RUNNING && failed > 0) {
		/* The signals first: the rest can wait a few microseconds. */
		group_stop(sv, SIGTERM, STOP_FAILURE);
		return;
	}
	flush_exits(sv);
	if (sv->grp.alive > 0 || sv->locks.draining)
		return;
	if (sv->grp.state == G_STOPPING) {
		after_stop(sv);
		return;
	}
	if (sv->grp.state != G_RUNNING)
		return;
	done = true;
	for (i = 0; i < sv->grp.nworkers; i++)
		if (sv->grp.workers[i].state != W_SUCCEEDED)
			done = false;
	if (done && finish_attempt(sv))
		succeeded(sv);
}
