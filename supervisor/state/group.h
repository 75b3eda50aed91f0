/*
 * The state machine's doing: the group of workers through its lifecycle
 * (start, run, stop, reap, verdict, backoff, restart) and the rendezvous'
 * callbacks.  The decisions are fsm.c's; this carries them out.
 *
 * Owns: the group's state, its workers, the attempt's directories.
 * May call every other part of esv-supervise: containment, spawning,
 * reporting, the helper daemons, configuration.  Nothing calls back into
 * it but main.c (the loop's handlers) and control/ (the operator's
 * letters): its news leave by report_group and events_log.
 */
#ifndef ESV_GROUP_H
#define ESV_GROUP_H

#include "supervise.h"

void	logs_setup(struct supervisor *sv);

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

/* A worker's cgroup.events changed. */
void	group_cgroup_event(struct supervisor *sv);

#endif
