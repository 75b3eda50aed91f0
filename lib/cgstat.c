/* cgroup v2 accounting files (cgstat.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgstat.h"

long long
cgstat_keyed(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p;
	char *end;
	long long v;

	for (p = text; *p != '\0'; p++) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			errno = 0;
			v = strtoll(p + klen + 1, &end, 10);
			if (errno != 0 || end == p + klen + 1 || v < 0 ||
			    (*end != '\n' && *end != '\0'))
				return -1;
			return v;
		}
		if ((p = strchr(p, '\n')) == NULL)
			break;
	}
	return -1;
}

/*
 * A small cgroup file into buf, NUL-terminated: one open, one read, one
 * close.  Every file read here is a few lines, and kernfs hands a file of
 * less than a page over in one read; what would not fit in buf is not a
 * file of ours.
 */
static int
small(int dirfd, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0 || (size_t)n == len - 1)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* A file of one number ("max" is not one). */
static long long
single(int dirfd, const char *name)
{
	char text[64], *end;
	long long v;

	if (small(dirfd, name, text, sizeof(text)) == -1)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || v < 0 || (*end != '\n' &&
	    *end != '\0'))
		v = -1;
	return v;
}

static long long
keyed(int dirfd, const char *name, const char *key)
{
	char text[4096];

	if (small(dirfd, name, text, sizeof(text)) == -1)
		return -1;
	return cgstat_keyed(text, key);
}

void
cgstat_read(int dirfd, struct cgstat *st, unsigned what)
{
	char text[256];

	*st = (struct cgstat){ -1, -1, -1, -1, -1, -1 };
	if (what & CGSTAT_CPU)
		st->cpu_usec = keyed(dirfd, "cpu.stat", "usage_usec");
	if (what & CGSTAT_MEMORY) {
		st->memory_current = single(dirfd, "memory.current");
		st->memory_peak = single(dirfd, "memory.peak");
		st->oom_kill = keyed(dirfd, "memory.events", "oom_kill");
	}
	if ((what & CGSTAT_EVENTS) && small(dirfd, "cgroup.events", text,
	    sizeof(text)) == 0) {
		st->populated = (int)cgstat_keyed(text, "populated");
		st->frozen = (int)cgstat_keyed(text, "frozen");
	}
}

int
cgstat_read_path(const char *path, struct cgstat *st)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	cgstat_read(fd, st, CGSTAT_ALL);
	close(fd);
	return 0;
}
