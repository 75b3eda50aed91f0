#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

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
