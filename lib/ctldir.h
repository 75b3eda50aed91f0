/*
 * The control directory of a job, relative to JOBDIR.  Every path is named
 * here once; the formats are documented in esv-control(5).
 *
 * supervise/ is runit's layout, so that runit's sv(8) drives a job:
 *   lock       flock(2)ed by the supervisor for its life
 *   control    FIFO of one-letter commands (runit and s6 letters)
 *   ok         FIFO the supervisor holds open for reading ("is it up?")
 *   status     runit's 20-byte binary record (statusrec.h)
 *   stat       runit's text: "run", "down", plus ", paused", ", got TERM", ...
 *   pid        pid of the group's representative worker (local rank 0), or empty
 * and esv's own files beside them:
 *   state      key=value: the group (keys and states: ctlschema.h)
 *   group.lock flock(2)ed by the supervisor and inherited by every worker:
 *              held while any worker of the job lives
 *   guardian.lock  flock(2)ed by the supervisor and its guardian: held
 *              until both are gone, the guardian's last sweep done
 *   pgids      the process groups of the running workers, "pgid=N" lines
 *   failure.json  the last failure summary
 * event/       s6-style fifodir: listeners get one byte per event
 * workers/<local_rank>/{state,env/,error.json}
 * events.jsonl the event log
 * down         present: start with the group down (as runit and s6)
 */
#ifndef ESV_CTLDIR_H
#define ESV_CTLDIR_H

#include <stddef.h>

#define ESV_JOB_INI		"job.ini"
/* The operator's envdir, read at every group start (envdir.h). */
#define ESV_ENV_DIR		"env"
#define ESV_DOWN_FILE		"down"
#define ESV_SUPERVISE_DIR	"supervise"
#define ESV_LOCK		"supervise/lock"
#define ESV_GROUP_LOCK		"supervise/group.lock"
#define ESV_CONTROL		"supervise/control"
#define ESV_OK			"supervise/ok"
#define ESV_STATUS		"supervise/status"
#define ESV_STAT		"supervise/stat"
#define ESV_PID			"supervise/pid"
#define ESV_STATE		"supervise/state"
#define ESV_STORE_STATE		"supervise/store"	/* esv-stored's own */
/* The round's nodes that may reach esv-stored (esv-stored --allow-file). */
#define ESV_STORE_ALLOW		"supervise/store.allow"
#define ESV_GUARDIAN_LOCK	"supervise/guardian.lock"
#define ESV_PGIDS		"supervise/pgids"
#define ESV_FAILURE		"supervise/failure.json"
#define ESV_TIMER_FIFO		"supervise/timer.fifo"	/* default FIFO */
#define ESV_WATCHDOG_SOCK	"supervise/watchdog.sock"
#define ESV_RDZV_TOKEN		"supervise/rdzv.token"	/* --standalone's */
#define ESV_RDZV_LOG		"supervise/rdzv.log"	/* our esv-rdzv */
#define ESV_EVENT_DIR		"event"
#define ESV_WORKERS_DIR		"workers"
#define ESV_DEFAULT_LOG_DIR	"logs"	/* not "log": sv(8) reads log/ as a logger */
/* The job's event log, one JSON object a line, appended to. */
#define ESV_EVENTS_FILE		"events.jsonl"
/*
 * A worker's TORCHELASTIC_ERROR_FILE: ATTEMPT_DIR/<local_rank>/error.json,
 * copied to workers/<local_rank>/error.json when the worker has failed.
 */
#define ESV_ERROR_FILE		"error.json"

/* Bytes broadcast into event/ (s6 uses s, u, d, x the same way). */
#define ESV_EVENT_START		's'	/* supervisor started */
#define ESV_EVENT_UP		'u'	/* every worker of an attempt spawned */
#define ESV_EVENT_DOWN		'd'	/* every worker of an attempt gone */
#define ESV_EVENT_FINISHED	'f'	/* the job ended: succeeded or failed */
#define ESV_EVENT_EXIT		'x'	/* supervisor exiting */

/*
 * ATTEMPT_DIR/<local_rank>/error.json into buf, or "<local_rank>/error.json"
 * (relative to the attempt directory) if attempt_dir is NULL.  0, or -1 if
 * it does not fit.  The keys and states of the state files: ctlschema.h.
 */
int	ctl_error_path(char *buf, size_t len, const char *attempt_dir,
	    unsigned local_rank);

#endif
