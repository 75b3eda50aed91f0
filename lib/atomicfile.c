#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
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

/*
 * The temp name is fixed, so that a crash leaves at most one behind, and
 * created with O_EXCL|O_NOFOLLOW, so that nothing already there, a
 * symlink least of all, is written through.  One that is there is a
 * crash's leftover: unlinking removes the name itself, never what a link
 * points at, and only where we may (in a sticky directory the kernel
 * keeps another user's file), so it is removed and the create tried once
 * more.
 */
int
atomic_write_at(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode)
{
	char tmp[PATH_MAX];
	int fd, e, tries;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", name) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (tries = 0;; tries++) {
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd != -1)
			break;
		if (errno != EEXIST || tries > 0 ||
		    unlinkat(dirfd, tmp, 0) == -1)
			return -1;
	}
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

/* Empty the directory dfd (closed here), depth first, by fd only. */
static int
empty_dir(int dfd, int depth)
{
	struct dirent *de;
	DIR *d;
	int sub, rc = 0, e = 0;

	if ((d = fdopendir(dfd)) == NULL) {
		e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			e = errno;
			rc = -1;
			continue;
		}
		/* A directory: only now, and never through a symlink. */
		if (depth >= 64) {
			e = ELOOP;
			rc = -1;
			continue;
		}
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sub == -1 || empty_dir(sub, depth + 1) == -1 ||
		    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == -1) {
			e = errno;
			rc = -1;
		}
	}
	closedir(d);
	errno = e;
	return rc;
}

int
remove_tree_at(int dirfd, const char *name)
{
	int fd;

	if (unlinkat(dirfd, name, 0) == 0)
		return 0;
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if (empty_dir(fd, 0) == -1)
		return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		return -1;
	return 0;
}

int
remove_tree(const char *path)
{
	return remove_tree_at(AT_FDCWD, path);
}

char *
read_text(const char *path, size_t max, size_t *lenp)
{
	return read_text_at(AT_FDCWD, path, 0, max, lenp);
}

char *
read_text_at(int dirfd, const char *name, int flags, size_t max,
    size_t *lenp)
{
	struct stat st;
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t r;
	int fd, e;

	/* O_NONBLOCK: a FIFO in the way must not hang the caller. */
	if ((fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC |
	    flags)) == -1)
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
