/*
 * esv-supervise: the state shared by its parts.  One process, one event
 * loop; every handler runs to completion and never sleeps.
 *
 * The parts, one folder each, and their headers (README.md): state/
 * (group.h), config/ (config.h), spawn/ (spawning.h), contain/
 * (contain.h), report/ (report.h), helpers/ (helpers.h), control/
 * (control.h).  This header holds only the structures they share; a
 * part's functions are declared in its own header, which only the parts
 * allowed to call it can see (meson.build, tests/arrows.py).
 */
#ifndef ESV_SUPERVISE_H
#define ESV_SUPERVISE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "backoff.h"
#include "cgstat.h"
#include "config.h"
#include "failure.h"
#include "fsm.h"
#include "linebuf.h"
#include "loop.h"
#include "rdzv.h"

enum worker_state { W_STARTING, W_RUNNING, W_SUCCEEDED, W_FAILED, W_STOPPED };


struct worker;

/* One output stream of a worker that the supervisor copies line by line. */
struct supervisor;

struct stream {
	struct watch	 w;
	struct supervisor *sv;
	struct worker	*wk;
	int		 console;	/* 1 or 2, or -1: not on the console */
	int		 file;		/* log file, or -1 */
	bool		 prefixed;
	struct linebuf	 lb;
};

struct worker {
	unsigned		 local_rank;
	enum worker_state	 state;
	pid_t			 pid;		/* 0 once reaped */
	pid_t			 last_pid;
	pid_t			 pgid;
	int			 pidfd;		/* of pid, kept until pgid is 0 */
	int			 exitcode;	/* torch's: -signal if killed */
	int			 exec_errno;	/* why it could not start, or 0 */
	const char		*spawn_step;	/* what failed before exec, or NULL */
	bool			 exit_pending;	/* reaped, not yet reported */
	bool			 dir_ok;	/* workers/N/ exists */
	double			 started, exited;
	char			*prefix;	/* of tee'd lines, or NULL */
	size_t			 prefix_len;
	struct stream		 out, err;
	int			 cgfd;		/* its cgroup directory, or -1 */
	int			 cgprocs;	/* its cgroup.procs, or -1 */
	bool			 cg_killed;	/* cgroup.kill reached its cgroup */
	long long		 cg_cpu_base;	/* usage_usec at its start */
	struct cgstat		 cg;		/* read at its exit */
};

/* cgroup v2 containment (cgroup.c); on false: process groups only. */
struct cgroups {
	bool			 on;
	char			 why[PATH_MAX + 128];	/* what is in use, or why not */
	char			 job[PATH_MAX];	/* the job's cgroup directory */
	int			 jobfd, workersfd;
	bool			 memory, cpu, pids;	/* controllers for workers */
	bool			 clone_into;	/* workers born in their cgroup */
	bool			 moved;		/* we live in job/supervisor/ */
	struct watch		 inow;		/* inotify of workers/cgroup.events */
	void			(*changed)(struct supervisor *);	/* on inow */
};

/*
 * Each concern's own state, one structure each, written by its folder's
 * files only (the folder named in the comment); the state machine and
 * reporting read them.
 */

/*
 * What the group counted (state/), for the state files, the events and
 * esv-healthd's metrics (report/).
 */
struct group_counts {
	unsigned		 attempt;	/* group starts so far */
	unsigned		 restart_count;	/* failure restarts, as torch */
	unsigned		 manual_restarts;
	unsigned		 membership_restarts;	/* scale up/down */
	/* Failed workers by how they ended. */
	unsigned		 failures_exit, failures_signal, failures_exec;
	unsigned		 failures_spawn;	/* could not even reach exec */
};

/* JOBDIR/events.jsonl (report/events.c). */
struct event_log {
	int			 fd;
	/* Lines not written for want of space; said once an episode ends. */
	unsigned		 lost, lost_said;
	bool			 failing;	/* the last append failed */
};

/* The workers' log lines not written for want of space (spawn/output.c). */
struct lines_lost {
	unsigned		 lost, lost_said;
	bool			 failing;
};

/* supervise/control and supervise/ok (control/control.c). */
struct control_fifo {
	int			 fd, keepfd, okfd;
	struct watch		 w;
};

/*
 * The host's canonical name for the failure summary (report/hostname.c),
 * looked up by a child; name holds gethostname() until it answers.
 */
struct host_lookup {
	char			 name[256];
	struct watch		 w;
	pid_t			 pid;		/* its child, until reaped */
};

/* The guardian (contain/guardian.c). */
struct guardian_run {
	int			 fd;		/* our end of its pipe */
	pid_t			 pid;
	long long		 lease;		/* told it: "@" (mono_ms) */
};

/* esv-watchdogd (helpers/run_watchdogd.c), when file timers are on. */
struct watchdog_run {
	pid_t			 pid;
	struct watch		 w, timer;
	int			 fifo_fd;
	long long		 started_ms;
	char			 fifo[PATH_MAX];
	char			 sock[PATH_MAX];
	char			 in[1024];
	size_t			 inlen;
	unsigned		 timers_expired;
};

/* esv-healthd (helpers/run_healthd.c), when a health port is set. */
struct healthd_run {
	pid_t			 pid;
	struct watch		 w, timer;
	long long		 started_ms;
	struct backoff		 backoff;
	char			 listen[300];	/* its --listen */
	char			 where[80];	/* where it said it listens */
	char			 in[128];
	size_t			 inlen;
};

/* esv-stored (helpers/run_stored.c), when the agent serves the store. */
struct store_run {
	int			 fd;		/* the socket offered, or -1 */
	pid_t			 pid;
	bool			 stopping;
	bool			 lingering;	/* SIGUSR1: until no client */
	char			 where[300];
};

/* Readiness for systemd and s6: report/notify.c's own, opaque here. */
struct readiness;

/*
 * The group's lifecycle and its workers (state/; control/ and main.c set
 * want, want_exit and paused, as fsm_control and the signals decide).
 */
struct group_run {
	struct worker		*workers;
	unsigned		 nworkers;
	unsigned		 alive;

	enum group_state	 state;
	enum stop_reason	 stop_reason;
	char			 want;		/* 'u', 'd' or 'o' (once) */
	bool			 want_exit;
	bool			 paused;
	int			 stop_signal;	/* signal that began the stop */
	int			 kill_phase;	/* 0 signalled, 1 SIGKILLed */
	long long		 kill_at;	/* mono ms of the stop's SIGKILL */
	/*
	 * A stop for a failure waits for its verdict (group.c, verdict_wait):
	 * failed_at, the first failure's mono ms; verdict_pending, the
	 * workers are gone and the wait is on.
	 */
	long long		 failed_at;
	bool			 verdict_pending;
	bool			 fenced;	/* kill_at: the lease's end */
	double			 since;
	long long		 attempt_started_ms;
	long long		 next_start_wall;	/* for the state file */
	struct backoff		 backoff;

	struct worker_failure	*failures;
	size_t			 nfailures;

	/* Children from before exec (a caller's sidecar): never killed. */
	pid_t			*inherited;
	size_t			 ninherited;
};

/*
 * The log base, this run's and this attempt's directory, by fd and by
 * name (state/attempt.c); spawn/ and report/ write into the attempt's.
 */
struct log_dirs {
	int			 logfd, runfd, attemptfd;
	char			 log_base[PATH_MAX];
	char			 run_dir[PATH_MAX];
	char			 attempt_dir[PATH_MAX];
};

/*
 * What a start is made from (spawn/startenv.c; main.c and control/reload.c
 * keep the command line and environ).
 */
struct start_env {
	char			**environ;
	/* The command line, read again by a reload (reload.c). */
	int			 argc;
	char			**argv;
	/* The workers' base environment for this start: environ with
	 * JOBDIR/env/ applied, NULL between starts. */
	char			**vars;
	size_t			 nvars;
	char			 python[PATH_MAX];
	struct rlimit		 nofile;	/* the workers' (rlim_max 0: ours) */
};

/* supervise/lock, group.lock and guardian.lock (contain/holders.c, main.c). */
struct locks {
	int			 lockfd, grouplockfd;
	/* Waiting for SIGKILLed processes to let go of group.lock (state/). */
	bool			 draining;
	long long		 drain_deadline;
	int			 guardlockfd;	/* guardian.lock, shared with it */
	dev_t			 lock_dev;	/* identity of group.lock */
	ino_t			 lock_ino;
};

/*
 * The rendezvous (main.c opens rz, state/ takes its rounds, a stop by
 * control/ or state/ marks it stopping).
 */
struct round_state {
	struct rdzv_params	 rzp;	/* what rz knows of the job */
	struct rdzv		 rz;
	struct rdzv_round	 round;
	bool			 have_round;
};

/*
 * What the reports say of the job as a whole and how far the workers'
 * files are written (state/group.c; main.c and control/reload.c set
 * job_name); report/ reads it.
 */
struct report_cursor {
	const char		*job_name;	/* the summary's title */
	int			 exit_code;
	unsigned		 report_next;	/* next worker whose files to write */
	bool			 report_pending;
	double			 pid_since;	/* runit's record: last start or stop */
	double			 started_wall;	/* the supervisor's start */
};

/* The supervisor: one part per concern, and what all of them share. */
struct supervisor {
	struct job_config	*cfg;
	int			 jobfd;		/* JOBDIR */
	struct loop		 loop;
	struct watch		 sigw, timerw;

	struct group_run	 grp;
	struct group_counts	 counts;
	struct round_state	 rdzv;
	struct log_dirs		 dirs;
	struct start_env	 env;
	struct locks		 locks;
	struct report_cursor	 rep;

	struct control_fifo	 ctl;
	struct event_log	 events;
	struct lines_lost	 log_lines;
	struct host_lookup	 host;
	struct readiness	*notify;
	struct cgroups		 cg;
	struct guardian_run	 guard;
	struct watchdog_run	 wd;
	struct healthd_run	 hd;
	struct store_run	 st;
};

#endif
