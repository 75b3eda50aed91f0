#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

/* As the kernel's MAXSYMLINKS. */
#define TRUST_LINKS_MAX	40
/*
 * O_PATH: a directory on the way may let us pass without letting us read
 * it (a home of mode 0711); fstat and the *at calls take such an fd.
 */
#define WALK_OPEN	(O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * Owners are shown as numbers: a name would need NSS, which a static
 * esv-supervise cannot load safely.
 */
int
trust_check(int fd, const char *path, int flags, char *err, size_t errlen)
{
	char fix[160];
	const char *what;
	struct stat st;
	uid_t euid = geteuid();

	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_uid != euid && st.st_uid != 0) {
		what = "owned by another user";
		snprintf(fix, sizeof(fix), "chown it to uid %u%s",
		    (unsigned)euid, euid != 0 ? " or root" : "");
	} else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
	    ((flags & TRUST_STICKY_OK) == 0 || !S_ISDIR(st.st_mode) ||
	    (st.st_mode & S_ISVTX) == 0)) {
		what = "writable by group or others";
		snprintf(fix, sizeof(fix), "%s", (flags & TRUST_STICKY_OK) &&
		    S_ISDIR(st.st_mode) ? "chmod go-w it, or chmod +t it" :
		    "chmod go-w it");
	} else
		return 0;
	snprintf(err, errlen, "%s: owner uid %u, mode %04o: %s, so esv does "
	    "not trust it; %s", path, (unsigned)st.st_uid,
	    (unsigned)(st.st_mode & 07777), what, fix);
	errno = EPERM;
	return -1;
}

static int
walk_fail(int dfd, const char *path, int e, char *err, size_t errlen)
{
	if (dfd != -1)
		close(dfd);
	snprintf(err, errlen, "%s: %s", path[0] != '\0' ? path : "/",
	    strerror(e));
	errno = e;
	return -1;
}

/*
 * A link that only we or root could have made, in a directory only we or
 * root can change (checked before), sends us nowhere another user chose;
 * anyone else's might (a link in a sticky /tmp).
 */
static int
follow(int *dfd, const char *name, const char *at, char *cur, char *rest,
    const char **p, char *err, size_t errlen)
{
	char target[PATH_MAX], tail[PATH_MAX];
	struct stat st;
	uid_t euid = geteuid();
	ssize_t n;

	if (fstatat(*dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return walk_fail(*dfd, at, errno, err, errlen);
	if (!S_ISLNK(st.st_mode))
		return walk_fail(*dfd, at, ENOTDIR, err, errlen);
	if (st.st_uid != euid && st.st_uid != 0) {
		close(*dfd);
		snprintf(err, errlen, "%s: a symbolic link of uid %u, another "
		    "user, so esv does not follow it; name the directory "
		    "without it", at, (unsigned)st.st_uid);
		errno = EPERM;
		return -1;
	}
	if ((n = readlinkat(*dfd, name, target, sizeof(target))) == -1)
		return walk_fail(*dfd, at, errno, err, errlen);
	if ((size_t)n == sizeof(target) || n == 0)
		return walk_fail(*dfd, at, n == 0 ? ENOENT : ENAMETOOLONG, err,
		    errlen);
	target[n] = '\0';
	if ((size_t)snprintf(tail, sizeof(tail), "%s/%s", target, *p) >=
	    sizeof(tail))
		return walk_fail(*dfd, at, ENAMETOOLONG, err, errlen);
	memcpy(rest, tail, strlen(tail) + 1);
	*p = rest;
	if (target[0] == '/') {
		close(*dfd);
		if ((*dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
			return walk_fail(-1, "/", errno, err, errlen);
		cur[0] = '\0';
	}
	return 0;
}

int
trust_open_dir(const char *path, int flags, mode_t mode, char *real,
    size_t reallen, char *err, size_t errlen)
{
	/* cur is the path of dfd; "" stands for "/". */
	char rest[PATH_MAX], cur[PATH_MAX], next[PATH_MAX], name[NAME_MAX + 1];
	struct stat st;
	const char *p;
	char *slash;
	size_t n;
	int dfd, fd, links = 0;
	bool last, mk;

	if (path[0] == '\0')
		return walk_fail(-1, "\"\"", ENOENT, err, errlen);
	if (path[0] == '/')
		n = strlcpy(rest, path, sizeof(rest));
	else {
		if (getcwd(cur, sizeof(cur)) == NULL)
			return walk_fail(-1, path, errno, err, errlen);
		n = (size_t)snprintf(rest, sizeof(rest), "%s/%s", cur, path);
	}
	if (n >= sizeof(rest))
		return walk_fail(-1, path, ENAMETOOLONG, err, errlen);
	cur[0] = '\0';
	if ((dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    trust_check(dfd, "/", TRUST_STICKY_OK, err, errlen) == -1)
		goto fail;
	for (p = rest; ; ) {
		p += strspn(p, "/");
		if (*p == '\0')
			break;
		n = strcspn(p, "/");
		if (n > NAME_MAX)
			return walk_fail(dfd, path, ENAMETOOLONG, err, errlen);
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		last = p[strspn(p, "/")] == '\0';
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			/* cur has no link in it: its parent is the real one. */
			if ((slash = strrchr(cur, '/')) != NULL)
				*slash = '\0';
			fd = openat(dfd, "..", O_PATH | O_DIRECTORY |
			    O_CLOEXEC);
			if (fd == -1)
				return walk_fail(dfd, cur, errno, err, errlen);
			close(dfd);
			dfd = fd;
			if (trust_check(dfd, cur[0] != '\0' ? cur : "/",
			    TRUST_STICKY_OK, err, errlen) == -1)
				goto fail;
			continue;
		}
		if ((size_t)snprintf(next, sizeof(next), "%s/%s", cur, name) >=
		    sizeof(next))
			return walk_fail(dfd, path, ENAMETOOLONG, err, errlen);
		mk = (flags & TRUST_MKDIR) || ((flags & TRUST_MKDIR_LAST) &&
		    last);
		fd = openat(dfd, name, WALK_OPEN);
		if (fd == -1 && errno == ENOENT && mk) {
			if (mkdirat(dfd, name, mode) == -1 && errno != EEXIST)
				return walk_fail(dfd, next, errno, err, errlen);
			fd = openat(dfd, name, WALK_OPEN);
		}
		if (fd == -1 && (errno == ELOOP || errno == ENOTDIR)) {
			if (last && (flags & TRUST_NOFOLLOW_LAST) &&
			    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				return walk_fail(dfd, next, ELOOP, err, errlen);
			if (++links > TRUST_LINKS_MAX)
				return walk_fail(dfd, next, ELOOP, err, errlen);
			if (follow(&dfd, name, next, cur, rest, &p, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if (fd == -1)
			return walk_fail(dfd, next, errno, err, errlen);
		close(dfd);
		dfd = fd;
		memcpy(cur, next, strlen(next) + 1);
		if (trust_check(dfd, cur, last ? flags & TRUST_STICKY_OK :
		    TRUST_STICKY_OK, err, errlen) == -1)
			goto fail;
	}
	/* The last may be held to more: a JOBDIR is never sticky. */
	if (trust_check(dfd, cur[0] != '\0' ? cur : "/",
	    flags & TRUST_STICKY_OK, err, errlen) == -1)
		goto fail;
	if (real != NULL && strlcpy(real, cur[0] != '\0' ? cur : "/",
	    reallen) >= reallen)
		return walk_fail(dfd, cur, ENAMETOOLONG, err, errlen);
	/* The very directory checked, now to be read and written in. */
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return walk_fail(dfd, cur, errno, err, errlen);
	close(dfd);
	return fd;
fail:
	if (dfd != -1) {
		int e = errno;

		close(dfd);
		errno = e;
	} else
		snprintf(err, errlen, "/: %s", strerror(errno));
	return -1;
}
