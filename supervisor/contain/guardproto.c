#include <limits.h>
#include <string.h>

#include "guardproto.h"

static void
guard_line_done(struct guard_reader *r,
    void (*fn)(void *ctx, char op, pid_t pgid), void *ctx)
{
	long long pg = 0;
	size_t i;

	if (r->overlong || r->len < 2 || (r->line[0] != '+' &&
	    r->line[0] != '-' && r->line[0] != '=' && r->line[0] != '@'))
		return;
	for (i = 1; i < r->len; i++) {
		if (r->line[i] < '0' || r->line[i] > '9')
			return;
		if (pg > (LLONG_MAX - (r->line[i] - '0')) / 10)
			return;
		pg = pg * 10 + (r->line[i] - '0');
		if (pg > INT_MAX && r->line[0] != '@')
			return;
	}
	if (r->line[0] == '@') {
		r->lease_end = pg;
		r->lease_new = 1;
		return;
	}
	if (pg > 1)
		fn(ctx, r->line[0], (pid_t)pg);
}

void
guard_feed(struct guard_reader *r, const char *buf, size_t n,
    void (*fn)(void *ctx, char op, pid_t pgid), void *ctx)
{
	size_t k;

	for (k = 0; k < n; k++) {
		if (buf[k] == '\n') {
			guard_line_done(r, fn, ctx);
			r->len = 0;
			r->overlong = 0;
		} else if (r->len < sizeof(r->line))
			r->line[r->len++] = buf[k];
		else
			r->overlong = 1;
	}
}
