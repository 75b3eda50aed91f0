/*
 * The schema of the control directory's state files: every key of
 * supervise/state and workers/N/state, with its type, and every state
 * name, defined here once (esv-control(5) documents them).  The
 * supervisor writes keys by these names only (ctl_job_key(JK_...)), and
 * the one reader (jobstatus.c), esv-ctl, esv-healthd's view and metrics
 * use the same names and types.
 */
#ifndef ESV_CTLSCHEMA_H
#define ESV_CTLSCHEMA_H

#include <stddef.h>

/* What a value is; an empty value is "none" (JSON null) whatever its type. */
enum ctl_type {
	CTL_NAME,	/* text, never a number: a run id "42" stays a string */
	CTL_PATH,	/* text naming a file or socket (kept off the network) */
	CTL_INT,	/* a decimal integer */
	CTL_TIME,	/* wall-clock seconds since the epoch, with a fraction */
	CTL_PIDS,	/* integers separated by spaces */
};

struct ctl_key {
	const char	*name;
	enum ctl_type	 type;
};

#define ESV_JOB_KEYS(X)							\
	X(JK_STATE,		"state",		CTL_NAME)	\
	X(JK_WANT,		"want",			CTL_NAME)	\
	X(JK_PAUSED,		"paused",		CTL_INT)	\
	X(JK_SINCE,		"since",		CTL_TIME)	\
	X(JK_SUPERVISOR_PID,	"supervisor_pid",	CTL_INT)	\
	X(JK_ATTEMPT,		"attempt",		CTL_INT)	\
	X(JK_RESTART_COUNT,	"restart_count",	CTL_INT)	\
	X(JK_MAX_RESTARTS,	"max_restarts",		CTL_INT)	\
	X(JK_MANUAL_RESTARTS,	"manual_restarts",	CTL_INT)	\
	X(JK_RUN_ID,		"run_id",		CTL_NAME)	\
	X(JK_ROLE,		"role",			CTL_NAME)	\
	X(JK_RDZV_BACKEND,	"rdzv_backend",		CTL_NAME)	\
	X(JK_RDZV_ENDPOINT,	"rdzv_endpoint",	CTL_NAME)	\
	X(JK_RDZV_CONNECTED,	"rdzv_connected",	CTL_INT)	\
	X(JK_RDZV_ROUND,	"rdzv_round",		CTL_INT)	\
	X(JK_RDZV_PARTICIPANTS,	"rdzv_participants",	CTL_INT)	\
	X(JK_NODES_WAITING,	"nodes_waiting",	CTL_INT)	\
	X(JK_MEMBERSHIP_RESTARTS, "membership_restarts", CTL_INT)	\
	X(JK_WATCHDOG_SOCKET,	"watchdog_socket",	CTL_PATH)	\
	X(JK_TIMERS_EXPIRED,	"timers_expired",	CTL_INT)	\
	X(JK_FAILURES_EXIT,	"worker_failures_exit",	CTL_INT)	\
	X(JK_FAILURES_SIGNAL,	"worker_failures_signal", CTL_INT)	\
	X(JK_FAILURES_EXEC,	"worker_failures_exec",	CTL_INT)	\
	X(JK_FAILURES_SPAWN,	"worker_failures_spawn", CTL_INT)	\
	X(JK_EVENTS_LOST,	"events_lost",		CTL_INT)	\
	X(JK_LOG_LINES_LOST,	"log_lines_lost",	CTL_INT)	\
	X(JK_HEALTH_LISTEN,	"health_listen",	CTL_NAME)	\
	X(JK_STORE_LISTEN,	"store_listen",		CTL_NAME)	\
	X(JK_GROUP_RANK,	"group_rank",		CTL_INT)	\
	X(JK_GROUP_WORLD_SIZE,	"group_world_size",	CTL_INT)	\
	X(JK_LOCAL_WORLD_SIZE,	"local_world_size",	CTL_INT)	\
	X(JK_WORLD_SIZE,	"world_size",		CTL_INT)	\
	X(JK_BASE_RANK,		"base_rank",		CTL_INT)	\
	X(JK_MASTER_ADDR,	"master_addr",		CTL_NAME)	\
	X(JK_MASTER_PORT,	"master_port",		CTL_INT)	\
	X(JK_PIDS,		"pids",			CTL_PIDS)	\
	X(JK_PGIDS,		"pgids",		CTL_PIDS)	\
	X(JK_ATTEMPT_DIR,	"attempt_dir",		CTL_PATH)	\
	X(JK_NEXT_START,	"next_start",		CTL_TIME)	\
	X(JK_EXIT_CODE,		"exit_code",		CTL_INT)	\
	X(JK_CONTAINMENT,	"containment",		CTL_NAME)	\
	X(JK_CONTAINMENT_WHY,	"containment_why",	CTL_PATH)	\
	X(JK_CGROUP,		"cgroup",		CTL_PATH)

#define ESV_WORKER_KEYS(X)						\
	X(WK_STATE,		"state",		CTL_NAME)	\
	X(WK_LOCAL_RANK,	"local_rank",		CTL_INT)	\
	X(WK_RANK,		"rank",			CTL_INT)	\
	X(WK_ROLE_RANK,		"role_rank",		CTL_INT)	\
	X(WK_PID,		"pid",			CTL_INT)	\
	X(WK_PGID,		"pgid",			CTL_INT)	\
	X(WK_ATTEMPT,		"attempt",		CTL_INT)	\
	X(WK_RESTART_COUNT,	"restart_count",	CTL_INT)	\
	X(WK_STARTED,		"started",		CTL_TIME)	\
	X(WK_EXITED,		"exited",		CTL_TIME)	\
	X(WK_EXIT_CODE,		"exit_code",		CTL_INT)	\
	X(WK_SIGNAL,		"signal",		CTL_NAME)	\
	X(WK_ERROR_FILE,	"error_file",		CTL_PATH)	\
	X(WK_CGROUP,		"cgroup",		CTL_PATH)	\
	X(WK_CGROUP_CPU_BASE,	"cgroup_cpu_base",	CTL_INT)	\
	X(WK_CPU_USEC,		"cpu_usec",		CTL_INT)	\
	X(WK_MEMORY_PEAK,	"memory_peak",		CTL_INT)	\
	X(WK_OOM_KILL,		"oom_kill",		CTL_INT)

/* supervise/store, written by the agent's esv-stored alone. */
#define ESV_STORE_KEYS(X)						\
	X(SK_LISTEN,		"listen",		CTL_NAME)	\
	X(SK_PID,		"pid",			CTL_INT)	\
	X(SK_KEYS,		"keys",			CTL_INT)	\
	X(SK_CONNECTIONS,	"connections",		CTL_INT)	\
	X(SK_WAITING,		"waiting",		CTL_INT)	\
	X(SK_UPDATED,		"updated",		CTL_TIME)

#define ESV_CTL_ENUM(id, name, type)	id,
enum job_key { ESV_JOB_KEYS(ESV_CTL_ENUM) JK_COUNT };
enum worker_key { ESV_WORKER_KEYS(ESV_CTL_ENUM) WK_COUNT };
enum store_key { ESV_STORE_KEYS(ESV_CTL_ENUM) SK_COUNT };
#undef ESV_CTL_ENUM

extern const struct ctl_key ctl_job_keys[JK_COUNT];
extern const struct ctl_key ctl_worker_keys[WK_COUNT];
extern const struct ctl_key ctl_store_keys[SK_COUNT];

#define ctl_job_key(k)		(ctl_job_keys[(k)].name)
#define ctl_worker_key(k)	(ctl_worker_keys[(k)].name)
#define ctl_store_key(k)	(ctl_store_keys[(k)].name)

/* The schema's entry for a key of a job's (or a worker's) file, or NULL. */
const struct ctl_key	*ctl_job_lookup(const char *name);
const struct ctl_key	*ctl_worker_lookup(const char *name);
const struct ctl_key	*ctl_store_lookup(const char *name);

/*
 * Values of the group's "state" (supervise/state):
 *   down       no worker runs, none will start until "u"
 *   joining    waiting for a rendezvous round
 *   running    workers are running
 *   stopping   signalled, waiting for every worker to go
 *   backoff    waiting out a restart delay
 *   finishing  this node's group succeeded; in the exit barrier
 *   succeeded  every worker exited 0; the job is over
 *   failed     the restart budget is spent; the job is over
 */
#define ESV_GS_DOWN		"down"
#define ESV_GS_JOINING		"joining"
#define ESV_GS_RUNNING		"running"
#define ESV_GS_STOPPING		"stopping"
#define ESV_GS_BACKOFF		"backoff"
#define ESV_GS_FINISHING	"finishing"
#define ESV_GS_SUCCEEDED	"succeeded"
#define ESV_GS_FAILED		"failed"
extern const char *const ctl_group_states[];	/* NULL-terminated */

/* Values of a worker's "state" (workers/N/state). */
#define ESV_WS_STARTING		"starting"
#define ESV_WS_RUNNING		"running"
#define ESV_WS_SUCCEEDED	"succeeded"
#define ESV_WS_FAILED		"failed"
#define ESV_WS_STOPPED		"stopped"
extern const char *const ctl_worker_states[];	/* NULL-terminated */

/* "supervisor" of a status object (jobstatus.h). */
#define ESV_SUPERVISOR_RUNNING		"running"
#define ESV_SUPERVISOR_NOT_RUNNING	"not running"

#endif
