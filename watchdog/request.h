/*
 * The FIFO side of esv-watchdogd: torch's FileTimerClient writes one JSON
 * object per line.  Framing and parsing only, no I/O.
 */
#ifndef ESV_WD_REQUEST_H
#define ESV_WD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "wdchan.h"

/* PIPE_BUF: torch's client refuses to send a longer request. */
#define REQ_LINE_MAX	4096

struct request {
	pid_t	pid;
	char	scope[WDCHAN_SCOPE_MAX + 1];
	double	expiration;	/* epoch seconds */
	int	signal;		/* <= 0: clear on expiry, send nothing */
	bool	release;	/* expiration_time < 0 */
};

/*
 * Cuts the byte stream into lines.  A partial line waits for the rest,
 * however many writes it takes; a line over REQ_LINE_MAX is reported once
 * and skipped up to its newline.
 */
struct reqreader {
	char		buf[REQ_LINE_MAX];
	size_t		len;
	bool		skipping;
	unsigned long	lineno;		/* lines begun so far */
};

/*
 * One call per line: the line without its newline, or line NULL and err
 * set for an over-long one.
 */
typedef void	reqline_fn(void *ctx, unsigned long lineno, const char *line,
		    size_t len, const char *err);

void	reqreader_feed(struct reqreader *rr, const char *data, size_t n,
	    reqline_fn *fn, void *ctx);

/*
 * Parse one line (no newline).  0 and *r filled, 1 for a blank line, or
 * -1 with the reason in err.
 */
int	request_parse(const char *line, size_t len, struct request *r,
	    char *err, size_t errlen);

/*
 * Make untrusted text safe for one log line: C-style escapes, quotes
 * escaped too; cut to what fits in dlen.
 */
void	request_vis(char *dst, size_t dlen, const char *src, size_t srclen);

#endif
