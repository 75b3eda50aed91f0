/*
 * esv-supervise: the state shared by its parts.  One process, one event
 * loop; every handler runs to completion and never sleeps.
 */
#ifndef ESV_SUPERVISE_H
#define ESV_SUPERVISE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/un.h>

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

struct supervisor {
	struct job_config	*cfg;
	char			**environ;
	int			 jobfd;		/* JOBDIR */
	int			 lockfd, grouplockfd;
	/* Waiting for SIGKILLed processes to let go of group.lock. */
	bool			 draining;
	long long		 drain_deadline;
	int			 guardlockfd;	/* guardian.lock, shared with it */
	struct rlimit		 nofile;	/* the workers' (rlim_max 0: ours) */
	int			 ctlfd, ctlkeepfd, okfd;
	int			 guardianfd;
	int			 eventsfd;	/* JOBDIR/events.jsonl */
	/* Lines not written for want of space (events.c, output.c). */
	unsigned		 events_lost, events_lost_said;
	bool			 events_failing;	/* the last append failed */
	unsigned		 log_lines_lost, log_lines_lost_said;
	bool			 logs_failing;
	pid_t			 guardian_pid;
	long long		 guard_lease;	/* told it: "@" (mono_ms) */

	/* esv-watchdogd (run_watchdogd.c), when file timers are on. */
	pid_t			 wd_pid;
	struct watch		 wdw, wd_timer;
	int			 wd_fifo_fd;
	long long		 wd_started_ms;
	char			 wd_fifo[PATH_MAX];
	char			 wd_sock[PATH_MAX];
	char			 wd_in[1024];
	size_t			 wd_inlen;
	unsigned		 timers_expired;

	/* esv-healthd (run_healthd.c), when a health port is set. */
	pid_t			 hd_pid;
	struct watch		 hdw, hd_timer;
	long long		 hd_started_ms;
	struct backoff		 hd_backoff;
	char			 hd_listen[300];	/* its --listen */
	char			 hd_where[80];	/* where it said it listens */
	char			 hd_in[128];
	size_t			 hd_inlen;

	/* esv-stored (run_stored.c), when the agent serves the store. */
	int			 st_fd;		/* the socket offered, or -1 */
	pid_t			 st_pid;
	bool			 st_stopping;
	bool			 st_lingering;	/* SIGUSR1: until no client */
	char			 st_where[300];

	struct loop		 loop;
	struct watch		 sigw, ctlw, timerw;

	struct rdzv_params	 rzp;	/* what rz knows of the job */
	struct rdzv		 rz;
	struct rdzv_round	 round;
	bool			 have_round;

	/* Children from before exec (a caller's sidecar): never killed. */
	pid_t			*inherited;
	size_t			 ninherited;

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

	unsigned		 attempt;	/* group starts so far */
	unsigned		 restart_count;	/* failure restarts, as torch */
	unsigned		 manual_restarts;
	unsigned		 membership_restarts;	/* scale up/down */
	/* Failed workers by how they ended, for esv-healthd's metrics. */
	unsigned		 failures_exit, failures_signal, failures_exec;
	unsigned		 failures_spawn;	/* could not even reach exec */
	struct backoff		 backoff;

	struct worker_failure	*failures;
	size_t			 nfailures;

	/* The log base, this run's and this attempt's directory: by fd. */
	int			 logfd, runfd, attemptfd;
	char			 log_base[PATH_MAX];
	char			 run_dir[PATH_MAX];
	char			 attempt_dir[PATH_MAX];
	char			 python[PATH_MAX];
	char			 host[256];	/* hostname.c */
	struct watch		 hostw;
	pid_t			 host_pid;	/* its child, until reaped */
	const char		*job_name;	/* the summary's title */
	int			 exit_code;
	unsigned		 report_next;	/* next worker whose files to write */
	bool			 report_pending;
	double			 pid_since;	/* runit's record: last start or stop */
	dev_t			 lock_dev;	/* identity of group.lock */
	ino_t			 lock_ino;

	/* The command line, read again by a reload (reload.c). */
	int			 argc;
	char			**argv;
	/* The workers' base environment for this start: environ with
	 * JOBDIR/env/ applied (reload.c), NULL between starts. */
	char			**start_env;
	size_t			 start_env_len;
	double			 started_wall;	/* the supervisor's start */

	struct cgroups		 cg;

	/* Readiness (notify.c). */
	int			 notify_fd;	/* datagram socket, or -1 */
	struct sockaddr_un	 notify_addr;
	socklen_t		 notify_addrlen;
	char			 notify_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	bool			 notify_failed;
	long long		 notify_watchdog_ms;	/* 0: no WATCHDOG=1 */
	struct watch		 notify_wdw;
	int			 s6_notify_fd;	/* -1 once written */
	bool			 ready;
	char			 notify_status[256];
};

/* cgroup.c: containment by cgroup v2 where it can be had. */
/* changed: called from the loop when a worker's cgroup.events changes. */
void	cgroup_setup(struct supervisor *sv,
	    void (*changed)(struct supervisor *));
int	cgroup_check_limits(struct supervisor *sv, char *err, size_t len);
int	cgroup_worker_prepare(struct supervisor *sv, struct worker *wk);
int	cgroup_no_clone_into(struct supervisor *sv, struct worker *wk,
	    const char *why);
void	cgroup_worker_path(struct supervisor *sv, const struct worker *wk,
	    char *buf, size_t len);
void	cgroup_worker_stats(struct supervisor *sv, struct worker *wk);
void	cgroup_kill(struct supervisor *sv);
bool	cgroup_empty(struct supervisor *sv);
int	cgroup_freeze(struct supervisor *sv, bool frozen);
void	cgroup_cleanup(struct supervisor *sv);
/* group.c: a worker's cgroup.events changed. */
void	group_cgroup_event(struct supervisor *sv);

/* notify.c: readiness for systemd and s6. */
void	notify_claim_fd(struct supervisor *sv);
void	notify_setup(struct supervisor *sv);
void	notify_ready(struct supervisor *sv);
void	notify_status(struct supervisor *sv);
void	notify_reloading(struct supervisor *sv, bool done);
void	notify_stopping(struct supervisor *sv);

/* reload.c: what may change between attempts. */
void	resolve_python(struct supervisor *sv);
/* Read job.ini again; source says who asked, for the messages. */
void	supervisor_reload(struct supervisor *sv, const char *source,
	    bool quiet);
/*
 * Build sv->start_env for the start that comes (JOBDIR/env/); -1 with one
 * line in err if env/ or a file in it is not trusted: no start then.
 */
int	start_env_build(struct supervisor *sv, char *err, size_t errlen);

/* group.c */
void	logs_setup(struct supervisor *sv);
int	store_prepare(struct supervisor *sv);
int	store_round(struct supervisor *sv);
void	store_drop(struct supervisor *sv);
void	store_stop(struct supervisor *sv);
/* Static, after a success: keep it for the other nodes (store_linger). */
bool	store_linger(struct supervisor *sv);
/* A child was reaped: was it the store, and was it the one kept? */
enum store_exit { STORE_NOT_OURS, STORE_REAPED, STORE_LINGER_OVER };
enum store_exit store_exited(struct supervisor *sv, pid_t pid, int status);

void	group_start(struct supervisor *sv);
void	group_stop(struct supervisor *sv, int signo, enum stop_reason why);
void	group_signal(struct supervisor *sv, int signo);
/* No worker runs: leave the round or the backoff, and be down. */
void	group_go_down(struct supervisor *sv);
void	worker_pidfd(struct worker *wk, pid_t pid);
void	group_reap(struct supervisor *sv);
void	flush_exits(struct supervisor *sv);
void	group_timer(struct supervisor *sv);
void	group_report_step(struct supervisor *sv, bool yield);
/* The rendezvous' callbacks (rdzv.h). */
void	group_round_ready(struct supervisor *sv, const struct rdzv_round *r);
void	group_rdzv_failed(struct supervisor *sv, const char *why);
void	group_membership_changed(struct supervisor *sv);
void	group_fenced(struct supervisor *sv, long long kill_at_ms);
void	group_barrier_done(struct supervisor *sv, bool released);
void	supervisor_exit(struct supervisor *sv, int code) __attribute__((noreturn));
/* Our children now, from /proc (malloc'd; NULL and *n 0 if unknown). */
pid_t	*children_list(size_t *n);
/* The one place the group's state changes; the caller reports it. */
void	group_enter(struct supervisor *sv, enum group_state st);

/* control.c */
void	control_setup(struct supervisor *sv);
void	control_read(struct watch *w, uint32_t events);

/* output.c */
int	output_open(struct supervisor *sv, struct worker *wk, int fds[2]);
void	output_started(struct supervisor *sv, struct worker *wk);
void	output_close(struct supervisor *sv, struct worker *wk);

/* report.c */
void	report_setup(struct supervisor *sv);
void	report_group(struct supervisor *sv);
void	report_worker(struct supervisor *sv, struct worker *wk);
/* Returns -1 if interrupted because stop(sv) said so between files. */
int	report_env(struct supervisor *sv, struct worker *wk, char **own,
	    bool (*stop)(struct supervisor *));
void	event_broadcast(struct supervisor *sv, char ev);
void	report_failure(struct supervisor *sv, bool final);

/* events.c: fields is a jansson object (or NULL), consumed. */
struct json_t;
void	events_open(struct supervisor *sv);
void	events_log(struct supervisor *sv, const char *name,
	    struct json_t *fields);

/*
 * holders.c: the job's processes, found in /proc as members of its process
 * groups or sessions, or as holders of group.lock (dev, ino).
 */
struct sweep {
	dev_t		 dev;
	ino_t		 ino;
	pid_t		*groups;	/* grows with the groups of holders */
	size_t		 ngroups, gcap;
	pid_t		 spare_sid;	/* a holder here dies alone, not its group */
	unsigned	 members, holders;	/* killed, each way */
	pid_t		*seen;		/* counted already */
	size_t		 nseen, seencap;
};
void	sweep_add_group(struct sweep *s, pid_t pgid);
/*
 * SIGKILL them all; scan again until a scan finds none alive, or for at
 * most ms (0: one scan).  Waiting (ms > 0) is for start-up and for the
 * guardian, which have no loop; the loop passes 0 and retries on its timer.
 */
void	sweep_kill(struct sweep *s, long long ms);
void	sweep_free(struct sweep *s);
/* How long the guardian's last sweep may chase processes stuck in the kernel. */
#define GUARDIAN_SWEEP_MS	10000
/*
 * Lock supervise/group.lock, killing whatever of the job still holds it;
 * -1 if it could not be had in time (10 s at start, 2 s later).
 */
/*
 * group.lock, held by the supervisor between attempts and by the workers
 * while any of them lives.  At start-up, before the loop runs: wait for an
 * earlier supervisor's guardian, kill what is left of its groups, and
 * take the lock (up to 10 s).  0, or -1 if it is still held.
 */
int	group_lock_take(struct supervisor *sv);
/*
 * After an attempt, from the loop, never waiting: 0 if the lock is ours,
 * 1 if processes that were sent SIGKILL still hold it; then
 * group_lock_retry (0 ours, -1 still held) on the loop's timer.
 */
int	group_lock_reclaim(struct supervisor *sv);
int	group_lock_retry(struct supervisor *sv);
void	group_lock_release(struct supervisor *sv);

/* run_watchdogd.c: the supervisor's side of esv-watchdogd */
void	watchdog_setup(struct supervisor *sv);
void	watchdog_pids(struct supervisor *sv);
void	watchdog_died(struct supervisor *sv, int status);
void	watchdog_timer(struct watch *w, uint32_t events);
void	watchdog_stop(struct supervisor *sv);

/*
 * helper.c: start prog (found by prog_path(prog, subdir, envvar)) with
 * argv (argv[0] is set here) and a socketpair as its fd 3, whose other end
 * w watches with fn.  0 with *pid set, or -1 (said) with *pid 0.
 */
int	helper_spawn(struct supervisor *sv, const char *prog,
	    const char *subdir, const char *envvar, char *argv[],
	    bool stdout_to_stderr, pid_t *pid, struct watch *w, watch_fn *fn);
/* Stop watching w and close it. */
void	helper_lost(struct supervisor *sv, struct watch *w);
/*
 * Read what a helper daemon sent on fd into buf (len bytes kept
 * of an unfinished line) and hand each whole line, without its newline,
 * to line.  -1 when it hung up (its exit comes with SIGCHLD), else 0.
 */
int	helper_read_lines(struct supervisor *sv, int fd, char *buf,
	    size_t size, size_t *len, void (*line)(struct supervisor *, char *));

/* run_healthd.c: the supervisor's side of esv-healthd */
void	healthd_setup(struct supervisor *sv);
void	healthd_died(struct supervisor *sv, int status);
void	healthd_timer(struct watch *w, uint32_t events);
void	healthd_stop(struct supervisor *sv);

/*
 * hostname.c: the host's canonical name for the failure summary, looked
 * up by a child; sv->host holds gethostname() until it answers.
 */
void	hostname_start(struct supervisor *sv);

/* guardian.c */
void	guardian_start(struct supervisor *sv);
void	guardian_add(struct supervisor *sv, pid_t pgid);
void	guardian_drop(struct supervisor *sv, pid_t pgid);
/* A group that is no worker's: killed with the job, not at the lease's end. */
void	guardian_add_spare(struct supervisor *sv, pid_t pgid);
/* The workers' lease ends at kill_at_ms (mono_ms; 0: none): told at once. */
void	guardian_lease(struct supervisor *sv, long long kill_at_ms);
void	guardian_flush(struct supervisor *sv);
void	guardian_died(struct supervisor *sv);

#endif
