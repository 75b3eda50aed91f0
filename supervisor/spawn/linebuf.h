/*
 * Reassembles a byte stream into whole lines, so that output of several
 * workers sharing one console is interleaved only at line boundaries.
 */
#ifndef ESV_LINEBUF_H
#define ESV_LINEBUF_H

#include <stddef.h>

#define LINEBUF_MAX	65536	/* a longer line is cut here, not lost */

typedef void	line_fn(void *ctx, const char *line, size_t len);

/* The buffer is only allocated when a line arrives in pieces. */
struct linebuf {
	char	*buf;
	size_t	 len, cap;
};

/* Feed n bytes; emit(ctx, line, len) for each whole line, '\n' included. */
void	linebuf_feed(struct linebuf *lb, const char *data, size_t n,
	    line_fn *emit, void *ctx);
/* At EOF: emit a pending partial line, with a '\n' added. */
void	linebuf_flush(struct linebuf *lb, line_fn *emit, void *ctx);
void	linebuf_free(struct linebuf *lb);

#endif
