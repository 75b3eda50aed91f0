/*
 * Warnings of one kind, at most 10 a second: a flood of bad input is said
 * in a bounded number of lines, the rest counted and said in one line
 * ("N more WHAT suppressed") when its second is over.
 */
#ifndef ESV_RATELIM_H
#define ESV_RATELIM_H

#include <stdbool.h>

struct ratelim {
	const char	*what;		/* "bad requests" */
	long long	 window;	/* CLOCK_MONOTONIC ms */
	unsigned	 count;
	unsigned long	 suppressed;
};

/* May one more warning be said now?  If not, it is counted. */
bool		ratelim_allow(struct ratelim *rl);
/* Say what was suppressed and start a new second at now (ms). */
void		ratelim_flush(struct ratelim *rl, long long now);
/*
 * For the event loop, which must wake to say a burst's tail even in
 * silence: flushes a finished second, returns min(next, end of this one).
 */
long long	ratelim_tick(struct ratelim *rl, long long now, long long next);

#endif
