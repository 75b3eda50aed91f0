#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fifodir.h"

/*
 * Visible listener FIFOs start with this; a listener builds its FIFO under
 * the same name with a leading dot, so that a broadcaster never opens a
 * FIFO whose reader is not in place yet.
 */
#define FIFODIR_PREFIX		"ftrig1:"
#define FIFODIR_PREFIX_LEN	(sizeof(FIFODIR_PREFIX) - 1)

int
fifodir_make(const char *dir)
{
	struct stat sb;

	if (mkdir(dir, 03730) == 0)
		/* The umask strips group write, and mkdir may drop setgid. */
		return chmod(dir, 03730);
	if (errno != EEXIST)
		return -1;
	if (stat(dir, &sb) == -1)
		return -1;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/*
 * A listener that went away leaves no reader: ENXIO at open, or EPIPE if
 * it closed between our open and write.  A full FIFO (EAGAIN) belongs to
 * a slow listener, which loses bytes rather than stalling the caller.
 */
static void
fifodir_send(int dfd, const char *name, char ev)
{
	struct stat st;
	ssize_t w;
	int fd;

	/*
	 * Listeners of the directory's group make these names, and we may be
	 * root: write into FIFOs only, never through a link.
	 */
	fd = openat(dfd, name, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENXIO)
			unlinkat(dfd, name, 0);
		return;
	}
	if (fstat(fd, &st) == -1 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		return;
	}
	do
		w = write(fd, &ev, 1);
	while (w == -1 && errno == EINTR);
	if (w == -1 && errno == EPIPE)
		unlinkat(dfd, name, 0);
	close(fd);
}

/*
 * The caller must ignore SIGPIPE: a listener may close its FIFO between
 * our open and our write (esv-supervise ignores it for its whole life).
 */
void
fifodir_broadcast(const char *dir, char ev)
{
	struct dirent *de;
	DIR *d;
	int e = errno;

	if ((d = opendir(dir)) == NULL) {
		errno = e;
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, FIFODIR_PREFIX, FIFODIR_PREFIX_LEN) == 0)
			fifodir_send(dirfd(d), de->d_name, ev);
	closedir(d);
	errno = e;
}

int
fifodir_listen(const char *dir, struct fifodir_listener *l)
{
	char tmp[PATH_MAX];
	struct stat st, kst;
	uint32_t r[2];
	int e;

	l->fd = l->keep = -1;
	arc4random_buf(r, sizeof(r));
	if ((size_t)snprintf(l->path, sizeof(l->path), "%s/" FIFODIR_PREFIX
	    "%08x%08x", dir, r[0], r[1]) >= sizeof(l->path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/." FIFODIR_PREFIX
	    "%08x%08x", dir, r[0], r[1]) >= sizeof(tmp)) {
		l->path[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkfifo(tmp, 0622) == -1) {
		l->path[0] = '\0';
		return -1;
	}
	/*
	 * The directory may be another user's (esv-ctl run by root on any
	 * JOBDIR): between mkfifo and open, our FIFO could have been swapped
	 * for a link to some file, which fchmod would then open to all.  Go on
	 * only with a FIFO of ours, not reached through a link.
	 */
	if ((l->fd = open(tmp, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		goto fail;
	if (fstat(l->fd, &st) == -1)
		goto fail;
	if (!S_ISFIFO(st.st_mode) || st.st_uid != geteuid()) {
		errno = EPERM;
		goto fail;
	}
	/* The umask took the write bits a supervisor of another uid needs. */
	if (fchmod(l->fd, 0622) == -1)
		goto fail;
	/* Our own writer: the read end never sees EOF between events. */
	if ((l->keep = open(tmp, O_WRONLY | O_NONBLOCK | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 ||
	    fstat(l->keep, &kst) == -1)
		goto fail;
	if (kst.st_dev != st.st_dev || kst.st_ino != st.st_ino) {
		errno = EPERM;
		goto fail;
	}
	if (rename(tmp, l->path) == -1)
		goto fail;
	return 0;
fail:
	e = errno;
	if (l->fd != -1)
		close(l->fd);
	if (l->keep != -1)
		close(l->keep);
	l->fd = l->keep = -1;
	l->path[0] = '\0';
	unlink(tmp);
	errno = e;
	return -1;
}

void
fifodir_unlisten(struct fifodir_listener *l)
{
	int e = errno;

	if (l->fd != -1)
		close(l->fd);
	if (l->keep != -1)
		close(l->keep);
	l->fd = l->keep = -1;
	if (l->path[0] != '\0')
		unlink(l->path);
	l->path[0] = '\0';
	errno = e;
}
