/* cgroup v2 accounting files (cgstat.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
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

/* A file of one number ("max" is not one). */
static long long
single(int dirfd, const char *name)
{
	char *text, *end;
	long long v;

	if ((text = read_text_at(dirfd, name, O_NOFOLLOW, 64, NULL)) == NULL)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || v < 0 || (*end != '\n' &&
	    *end != '\0'))
		v = -1;
	free(text);
	return v;
}

static long long
keyed(int dirfd, const char *name, const char *key)
{
	char *text;
	long long v;

	if ((text = read_text_at(dirfd, name, O_NOFOLLOW, 4096, NULL)) == NULL)
		return -1;
	v = cgstat_keyed(text, key);
	free(text);
	return v;
}

void
cgstat_read(int dirfd, struct cgstat *st)
{
	char *text;

	st->cpu_usec = keyed(dirfd, "cpu.stat", "usage_usec");
	st->memory_current = single(dirfd, "memory.current");
	st->memory_peak = single(dirfd, "memory.peak");
	st->oom_kill = keyed(dirfd, "memory.events", "oom_kill");
	st->populated = st->frozen = -1;
	if ((text = read_text_at(dirfd, "cgroup.events", O_NOFOLLOW, 4096,
	    NULL)) != NULL) {
		st->populated = (int)cgstat_keyed(text, "populated");
		st->frozen = (int)cgstat_keyed(text, "frozen");
		free(text);
	}
}

int
cgstat_read_path(const char *path, struct cgstat *st)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	cgstat_read(fd, st);
	close(fd);
	return 0;
}
