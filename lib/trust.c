#include <sys/stat.h>

#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

static void
user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		snprintf(buf, len, "%s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

int
trust_check(int fd, const char *path, int flags, char *err, size_t errlen)
{
	char owner[96], me[96], fix[160];
	const char *what;
	struct stat st;
	uid_t euid = geteuid();

	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_uid != euid && st.st_uid != 0) {
		what = "owned by another user";
		user_name(euid, me, sizeof(me));
		snprintf(fix, sizeof(fix), "chown it to %s%s", me,
		    euid != 0 ? " or root" : "");
	} else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
	    ((flags & TRUST_STICKY_OK) == 0 || !S_ISDIR(st.st_mode) ||
	    (st.st_mode & S_ISVTX) == 0)) {
		what = "writable by group or others";
		snprintf(fix, sizeof(fix), "%s", (flags & TRUST_STICKY_OK) &&
		    S_ISDIR(st.st_mode) ? "chmod go-w it, or chmod +t it" :
		    "chmod go-w it");
	} else
		return 0;
	user_name(st.st_uid, owner, sizeof(owner));
	snprintf(err, errlen, "%s: owner %s, mode %04o: %s, so esv does not "
	    "trust it; %s", path, owner, (unsigned)(st.st_mode & 07777), what,
	    fix);
	errno = EPERM;
	return -1;
}
