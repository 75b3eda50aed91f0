/*
 * The guardian's pipe (guardian.c): "+<pgid>\n" records a worker's
 * process group, "=<pgid>\n" a group that is no worker's (the hosted
 * esv-rdzv: killed with the job, not at the lease's end), "-<pgid>\n"
 * forgets either; "@<ms>\n" sets the workers' lease end (CLOCK_MONOTONIC
 * ms; 0: none); EOF means the supervisor is gone.  Written by the supervisor and by each worker between clone and
 * exec (group.c), so the formatter makes no library call and is not
 * instrumented: it runs on a stack the sanitizers do not know.
 */
#ifndef ESV_GUARDPROTO_H
#define ESV_GUARDPROTO_H

#include <stddef.h>
#include <sys/types.h>

#define GUARD_LINE_MAX	24	/* "@9223372036854775807\n" and room */

/* The line for op and pgid > 1 (or ms >= 0), into buf: its length. */
__attribute__((no_sanitize("address", "undefined")))
static inline size_t
guard_line_ll(char buf[GUARD_LINE_MAX], char op, long long val)
{
	char digits[20];
	unsigned long long v = (unsigned long long)val;
	size_t n = 0, i = 0;

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	buf[i++] = op;
	while (n > 0)
		buf[i++] = digits[--n];
	buf[i++] = '\n';
	return i;
}

__attribute__((no_sanitize("address", "undefined")))
static inline size_t
guard_line(char buf[GUARD_LINE_MAX], char op, pid_t pgid)
{
	return guard_line_ll(buf, op, pgid);
}

struct guard_reader {
	char	line[GUARD_LINE_MAX];
	size_t	len;
	int	overlong;	/* the line being read is dropped */
	/* The last "@" line's time, and whether one came since reset. */
	long long	lease_end;
	int		lease_new;
};

/*
 * Feed n bytes read from the pipe; for each whole line that is "+", "="
 * or "-" and a pgid of 2..INT_MAX in decimal, call fn; an "@" line and
 * a time in decimal sets lease_end and lease_new.  Anything else, and a
 * line too long to be one, is dropped whole: never half a number.
 */
void	guard_feed(struct guard_reader *r, const char *buf, size_t n,
	    void (*fn)(void *ctx, char op, pid_t pgid), void *ctx);

#endif
