/*
 * What the files of state/ share, and nobody else.  group.c is the
 * lifecycle (start, stop, verdict, what follows); attempt.c starts an
 * attempt's workers; exits.c says their exits; reap.c reaps; round.c
 * takes the rendezvous' news.  Calls go down that list's arrows only:
 * round.c and reap.c call group.c, group.c calls attempt.c and exits.c,
 * never back (tests/circles.py).
 */
#ifndef ESV_GROUP_INT_H
#define ESV_GROUP_INT_H

#include "group.h"

/* After SIGKILL, how long a worker stuck in D state may hold us up. */
#define KILL_GRACE_MS	5000
/* A worker that could not execute its entrypoint exits so, as in sh(1). */
#define WORKER_EXEC_FAILED	127
/* SIGKILLed processes that still hold group.lock: retried, then given up. */
#define DRAIN_MS	2000
#define DRAIN_STEP_MS	5

/* group.c */
void	set_state(struct supervisor *sv, enum group_state st);
void	fail_to_start(struct supervisor *sv, const char *why);
long long	verdict_ms(struct supervisor *sv);
void	group_launch(struct supervisor *sv);
void	arm_deadline(struct supervisor *sv, long long ms);
bool	inherited(struct supervisor *sv, pid_t pid, bool drop);
bool	finish_attempt(struct supervisor *sv);
void	job_over(struct supervisor *sv, enum group_state st)
	    __attribute__((noreturn));
void	after_stop(struct supervisor *sv);
void	after_stop_next(struct supervisor *sv, enum stop_reason why);
void	succeeded(struct supervisor *sv);
void	store_gone(struct supervisor *sv);

/* attempt.c */
int	prepare_attempt_dir(struct supervisor *sv);
int	spawn_worker(struct supervisor *sv, struct worker *wk, char **envp);
void	worker_pidfd_close(struct worker *wk);

#endif
