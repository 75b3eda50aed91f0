#include "loop.h"
#include "msg.h"
#include "ratelim.h"

#define BURST	10
#define SECOND	1000

void
ratelim_flush(struct ratelim *rl, long long now)
{
	if (rl->suppressed > 0)
		warn_msg("%lu more %s suppressed", rl->suppressed, rl->what);
	rl->window = now;
	rl->count = 0;
	rl->suppressed = 0;
}

bool
ratelim_allow(struct ratelim *rl)
{
	long long now = mono_ms();

	if (now - rl->window >= SECOND)
		ratelim_flush(rl, now);
	if (rl->count >= BURST) {
		rl->suppressed++;
		return false;
	}
	rl->count++;
	return true;
}

long long
ratelim_tick(struct ratelim *rl, long long now, long long next)
{
	if (rl->suppressed == 0)
		return next;
	if (now - rl->window >= SECOND) {
		ratelim_flush(rl, now);
		return next;
	}
	return rl->window + SECOND < next ? rl->window + SECOND : next;
}
