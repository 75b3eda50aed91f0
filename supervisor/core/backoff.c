#include "backoff.h"

unsigned
backoff_next(struct backoff *b, unsigned long long ran_ms)
{
	unsigned long long delay;
	unsigned i;

	if (b->initial_ms == 0)
		return 0;
	if (ran_ms >= b->reset_ms)
		b->streak = 0;
	b->streak++;
	delay = b->initial_ms;
	for (i = 1; i < b->streak && delay < b->max_ms; i++)
		delay *= 2;
	return delay > b->max_ms ? b->max_ms : (unsigned)delay;
}
