/*
 * JOBDIR/env/ (envdir.h).  Read at every group start, so that an edit
 * reaches the next attempt without a restart of the supervisor.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envdir.h"
#include "msg.h"
#include "trust.h"

/* Longer files are refused: a value is one line, not a data file. */
#define ENVDIR_MAX	(128 * 1024)

int
envdir_value(const char *data, size_t n, char *out, size_t outlen)
{
	size_t len, i;

	if (n == 0)
		return 0;
	for (len = 0; len < n && data[len] != '\n'; len++)
		;
	while (len > 0 && (data[len - 1] == ' ' || data[len - 1] == '\t'))
		len--;
	if (len >= outlen)
		return -1;
	for (i = 0; i < len; i++)
		out[i] = data[i] == '\0' ? '\n' : data[i];
	out[len] = '\0';
	return 1;
}

/*
 * 0 with the file's bytes in buf, -1 if it is skipped (a warning), -2 if
 * it is not trusted or a symbolic link (the line in err).
 */
static int
read_file(int dirfd, const char *path, const char *name, char *buf,
    size_t *n, char *err, size_t errlen)
{
	char file[PATH_MAX];
	struct stat st;
	ssize_t r;
	size_t got = 0;
	int fd;

	/* O_NONBLOCK: a FIFO put there must not hold up the loop. */
	fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
	    O_CLOEXEC);
	/* Where it leads is not checked: refused as job.ini's link is. */
	if (fd == -1 && errno == ELOOP) {
		snprintf(err, errlen, "%s/%s: is a symbolic link: refusing to "
		    "follow it; put the file itself there", path, name);
		return -2;
	}
	if (fd == -1) {
		warn_sys("%s/%s: skipped", path, name);
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		warn_msg("%s/%s: not a regular file: skipped", path, name);
		close(fd);
		return -1;
	}
	/*
	 * As job.ini: a file someone else could write sets LD_PRELOAD for
	 * workers that may be root's.  Checked on the fd we read.
	 */
	snprintf(file, sizeof(file), "%s/%s", path, name);
	if (trust_check(fd, file, 0, err, errlen) == -1) {
		close(fd);
		return -2;
	}
	while (got < ENVDIR_MAX &&
	    (r = read(fd, buf + got, ENVDIR_MAX - got)) != 0) {
		if (r == -1) {
			if (errno == EINTR)
				continue;
			warn_sys("%s/%s: skipped", path, name);
			close(fd);
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	*n = got;
	return 0;
}

int
envdir_apply(int dirfd, const char *path, struct envbuf *eb, char *err,
    size_t errlen)
{
	struct dirent *de;
	char *buf, *val;
	size_t n;
	int fd, r, count = 0;
	DIR *d;

	if ((fd = dup(dirfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		warn_sys("unable to read %s", path);
		return 0;
	}
	buf = malloc(ENVDIR_MAX);
	val = malloc(ENVDIR_MAX + 1);
	if (buf == NULL || val == NULL) {
		warn_sys("unable to read %s", path);
		goto out;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (strchr(de->d_name, '=') != NULL) {
			warn_msg("%s/%s: a name with '=': skipped", path,
			    de->d_name);
			continue;
		}
		if ((r = read_file(dirfd, path, de->d_name, buf, &n, err,
		    errlen)) == -2) {
			count = -1;
			break;
		}
		if (r == -1)
			continue;
		r = envdir_value(buf, n, val, ENVDIR_MAX + 1);
		if (r == -1 || n == ENVDIR_MAX) {
			warn_msg("%s/%s: longer than %d bytes: skipped", path,
			    de->d_name, ENVDIR_MAX);
			continue;
		}
		if ((r == 1 ? envbuf_set(eb, de->d_name, val) :
		    envbuf_unset(eb, de->d_name)) == -1) {
			warn_sys("%s/%s: skipped", path, de->d_name);
			continue;
		}
		count++;
	}
out:
	free(buf);
	free(val);
	closedir(d);
	return count;
}
