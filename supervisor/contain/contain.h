/*
 * Containment: the job's processes, whatever they do.  cgroup v2 where
 * it can be had (cgroup.c), the guardian process that outlives us and
 * kills what is left (guardian.c, guardproto.c), and the sweeps of /proc
 * by process group and by holders of group.lock (holders.c).
 *
 * Owns: struct cgroups (supervise.h), the guardian's pipe, group.lock.
 * May call: lib/ only.  It never calls the state machine: a change of a
 * worker's cgroup reaches the group through the callback given to
 * cgroup_setup, from the loop.
 */
#ifndef ESV_CONTAIN_H
#define ESV_CONTAIN_H

#include "supervise.h"

/* cgroup.c: containment by cgroup v2 where it can be had. */
/* changed: called from the loop when a worker's cgroup.events changes. */
void	cgroup_setup(struct supervisor *sv,
	    void (*changed)(struct supervisor *));
int	cgroup_check_limits(struct supervisor *sv, char *err, size_t len);
int	cgroup_worker_prepare(struct supervisor *sv, struct worker *wk);
int	cgroup_no_clone_into(struct supervisor *sv, struct worker *wk,
	    const char *why);
void	cgroup_worker_path(const struct cgroups *cg, const struct worker *wk,
	    char *buf, size_t len);
void	cgroup_worker_stats(struct cgroups *cg, struct worker *wk);
void	cgroup_kill(struct supervisor *sv);
bool	cgroup_empty(const struct cgroups *cg);
int	cgroup_freeze(struct cgroups *cg, bool frozen);
void	cgroup_cleanup(struct supervisor *sv);

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
void	group_lock_release(struct locks *l);

/* guardian.c */
void	guardian_start(struct supervisor *sv);
void	guardian_add(struct guardian_run *g, pid_t pgid);
void	guardian_drop(struct guardian_run *g, pid_t pgid);
/* A group that is no worker's: killed with the job, not at the lease's end. */
void	guardian_add_spare(struct guardian_run *g, pid_t pgid);
/* The workers' lease ends at kill_at_ms (mono_ms; 0: none): told at once. */
void	guardian_lease(struct guardian_run *g, long long kill_at_ms);
void	guardian_flush(struct guardian_run *g);
void	guardian_died(struct supervisor *sv);

#endif
