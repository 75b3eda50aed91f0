/*
 * What the supervisor's helper daemons (esv-watchdogd, esv-healthd) send
 * back on their socketpair: lines, read as they come.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "supervise.h"

int
helper_read_lines(struct supervisor *sv, int fd, char *buf, size_t size,
    size_t *len, void (*line)(struct supervisor *, char *))
{
	char *nl, *p;
	ssize_t r;

	r = read(fd, buf + *len, size - 1 - *len);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	*len += r;
	buf[*len] = '\0';
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		line(sv, p);
	}
	*len -= p - buf;
	memmove(buf, p, *len);
	if (*len == size - 1)
		*len = 0;	/* no line is that long: resync */
	return 0;
}
