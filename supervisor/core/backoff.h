/*
 * Restart backoff: the delay before a failure restart doubles on each
 * consecutive fast failure, up to a cap; an attempt that ran for at least
 * reset_ms starts the count again.  initial_ms 0 disables it (torchrun).
 */
#ifndef ESV_BACKOFF_H
#define ESV_BACKOFF_H

struct backoff {
	unsigned	initial_ms, max_ms, reset_ms;
	unsigned	streak;		/* consecutive fast failures */
};

/* The delay before the next start, given how long the last attempt ran. */
unsigned	backoff_next(struct backoff *b, unsigned long long ran_ms);

#endif
