/*
 * The armed timers of esv-watchdogd, keyed by (pid, scope) as torch's
 * FileTimerServer keys them, and ordered by deadline for the next expiry.
 * No I/O: the caller signals and reports through callbacks.
 */
#ifndef ESV_WD_TIMERS_H
#define ESV_WD_TIMERS_H

#include <sys/types.h>
#include <sys/tree.h>

#include <stdbool.h>
#include <stddef.h>

struct wtimer {
	RB_ENTRY(wtimer)	 bykey, bydl;
	double			 deadline;	/* epoch seconds */
	pid_t			 pid;
	int			 signal;	/* <= 0: never sent */
	char			 scope[];
};
RB_HEAD(wt_bykey, wtimer);
RB_HEAD(wt_bydl, wtimer);

struct timers {
	struct wt_bykey	bykey;
	struct wt_bydl	bydl;
	size_t		n;
};

/*
 * On expiry: send(ctx, pid, sig) signals a pid, true if it was sent;
 * expired(ctx, t, acted, sent) is called for each expired timer cleared,
 * before it is freed: acted for the one whose signal was tried.
 */
struct timers_ops {
	bool	(*send)(void *ctx, pid_t pid, int sig);
	void	(*expired)(void *ctx, const struct wtimer *t, bool acted,
		    bool sent);
};

void	timers_init(struct timers *ts);
void	timers_free(struct timers *ts);
/*
 * Arm, or replace the deadline and signal of (pid, scope); scopes are at
 * most WDCHAN_SCOPE_MAX bytes.  -1: ENOMEM.
 */
int	timers_set(struct timers *ts, pid_t pid, const char *scope,
	    double deadline, int sig);
/* Forget (pid, scope); false if it was not armed. */
bool	timers_release(struct timers *ts, pid_t pid, const char *scope);
/* Drop the timers of every pid not in pids (sorted); how many dropped. */
size_t	timers_keep_pids(struct timers *ts, const pid_t *pids, size_t n);
/* The earliest deadline, false if none is armed. */
bool	timers_next(const struct timers *ts, double *deadline);
/*
 * Act on the timers due at now, pid by pid, as torch does: the first
 * expired timer with a signal, in deadline order, is sent and every timer
 * of its pid is cleared; without one, only the expired ones are.
 * Returns how many expired timers were cleared.
 */
size_t	timers_expire(struct timers *ts, double now,
	    const struct timers_ops *ops, void *ctx);

#endif
