#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

/* Make room for n more bytes plus a '\n'; on failure keep what fits. */
static size_t
linebuf_room(struct linebuf *lb, size_t n)
{
	size_t cap = lb->cap;
	char *nb;

	if (lb->len + n + 1 > LINEBUF_MAX)
		n = LINEBUF_MAX - 1 - lb->len;
	if (lb->len + n + 1 <= cap)
		return n;
	if (cap == 0)
		cap = 256;
	while (cap < lb->len + n + 1)
		cap *= 2;
	if (cap > LINEBUF_MAX)
		cap = LINEBUF_MAX;
	if ((nb = realloc(lb->buf, cap)) == NULL)
		return lb->cap > lb->len + 1 ? lb->cap - lb->len - 1 : 0;
	lb->buf = nb;
	lb->cap = cap;
	return n;
}

static void
linebuf_emit(struct linebuf *lb, line_fn *emit, void *ctx)
{
	lb->buf[lb->len++] = '\n';
	emit(ctx, lb->buf, lb->len);
	lb->len = 0;
}

void
linebuf_feed(struct linebuf *lb, const char *data, size_t n, line_fn *emit,
    void *ctx)
{
	const char *nl;
	size_t take, room;

	while (n > 0) {
		nl = memchr(data, '\n', n);
		take = nl != NULL ? (size_t)(nl - data) + 1 : n;
		if (lb->len == 0 && nl != NULL && take <= LINEBUF_MAX) {
			/* The common case: a whole line, no copy. */
			emit(ctx, data, take);
			data += take;
			n -= take;
			continue;
		}
		if (nl != NULL)
			take--;		/* the '\n' is added by linebuf_emit */
		room = linebuf_room(lb, take);
		memcpy(lb->buf + lb->len, data, room);
		lb->len += room;
		data += room;
		n -= room;
		if (nl != NULL && room == take) {
			data++;
			n--;
			linebuf_emit(lb, emit, ctx);
		} else if (lb->len + 1 >= LINEBUF_MAX || room < take) {
			/* Too long a line, or no memory: cut it, lose nothing. */
			if (lb->len > 0)
				linebuf_emit(lb, emit, ctx);
			else if (room == 0 && take > 0) {
				emit(ctx, data, take);
				data += take;
				n -= take;
			}
		}
	}
}

void
linebuf_flush(struct linebuf *lb, line_fn *emit, void *ctx)
{
	if (lb->len > 0)
		linebuf_emit(lb, emit, ctx);
}

void
linebuf_free(struct linebuf *lb)
{
	free(lb->buf);
	memset(lb, 0, sizeof(*lb));
}
