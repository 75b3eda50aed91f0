#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "fuzz.h"

static char dir[PATH_MAX];

static void
remove_dir(void)
{
	remove_tree(dir);
}

const char *
fuzz_dir(void)
{
	const char *tmp;

	if (dir[0] == '\0') {
		tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/esv-fuzz.XXXXXX",
		    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
		if (mkdtemp(dir) == NULL) {
			perror("mkdtemp");
			abort();
		}
		atexit(remove_dir);
	}
	return dir;
}

void
fuzz_put(const char *rel, const uint8_t *data, size_t size)
{
	char path[PATH_MAX], parent[PATH_MAX], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), rel);
	strlcpy(parent, path, sizeof(parent));
	if ((slash = strrchr(parent, '/')) != NULL) {
		*slash = '\0';
		mkdir_p(parent, 0700);
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1 || (size > 0 && write(fd, data, size) !=
	    (ssize_t)size)) {
		perror(path);
		abort();
	}
	close(fd);
}

char *
fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

FILE *
fuzz_null(void)
{
	static FILE *fp;

	if (fp == NULL && (fp = fopen("/dev/null", "we")) == NULL)
		abort();
	return fp;
}
