#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= w;
	}
	return 0;
}

int
atomic_write_at(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode)
{
	char tmp[PATH_MAX];
	int fd, e;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", name) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd == -1)
		return -1;
	if (write_all(fd, buf, len) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	if (renameat(dirfd, tmp, dirfd, name) == -1) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = e;
	return -1;
}

int
atomic_write(const char *path, const void *buf, size_t len, mode_t mode)
{
	return atomic_write_at(AT_FDCWD, path, buf, len, mode);
}

int
pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) == -1) {
		struct stat st;

		if (errno != EEXIST)
			return -1;
		if (stat(buf, &st) == -1)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
	}
	return 0;
}

static int
remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

int
remove_tree(const char *path)
{
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == -1)
		return errno == ENOENT ? 0 : -1;
	return 0;
}

char *
read_text(const char *path, size_t max, size_t *lenp)
{
	struct stat st;
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t r;
	int fd, e;

	/* O_NONBLOCK: a FIFO in the way must not hang the caller. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	for (;;) {
		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 4096;
			if (cap > max + 1)
				cap = max + 1;
			if (len + 1 >= cap) {
				errno = EFBIG;
				goto fail;
			}
			if ((nb = realloc(buf, cap)) == NULL)
				goto fail;
			buf = nb;
		}
		if ((r = read(fd, buf + len, cap - len - 1)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	if (buf == NULL && (buf = malloc(1)) == NULL)
		return NULL;
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return buf;
fail:
	e = errno;
	free(buf);
	close(fd);
	errno = e;
	return NULL;
}
