/*
 * Whom esv trusts with a path it acts on as its user (often root): a
 * file or directory that another user can change could redirect esv's
 * reads and writes, or feed it settings.  The rules are sshd's
 * StrictModes: owned by the effective user or root, and writable by
 * nobody else.  See "Trust" in esv-supervise(8).
 */
#ifndef ESV_TRUST_H
#define ESV_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* A directory that others may write if it has the sticky bit (/tmp). */
#define TRUST_STICKY_OK		0x1
/* trust_open_dir: make the missing directories, or only the last one. */
#define TRUST_MKDIR		0x2
#define TRUST_MKDIR_LAST	0x4
/* trust_open_dir: the last is never reached through a symbolic link. */
#define TRUST_NOFOLLOW_LAST	0x8

/*
 * 0 if fd (opened from path) is owned by the effective user or root and
 * neither group nor others can write it.  Else -1 with one line in err
 * that names path, its owner and mode and what to change (errno EPERM),
 * or the error of fstat.
 */
int	trust_check(int fd, const char *path, int flags, char *err,
	    size_t errlen);

/*
 * Open directory path (relative to the working directory unless it
 * begins with '/') as sshd's secure_path walks a path: from / one
 * component at a time, each opened with O_NOFOLLOW relative to the one
 * before and passed through trust_check.  Every directory on the way
 * may be sticky (/tmp); the last only with TRUST_STICKY_OK.  A symbolic
 * link is followed only if the effective user or root owns it, and its
 * target is walked under the same rules (not the last with
 * TRUST_NOFOLLOW_LAST: ELOOP).  With TRUST_MKDIR, missing
 * directories are made with mode; with TRUST_MKDIR_LAST, only the last.
 *
 * Returns an fd of the directory (O_CLOEXEC), and its path without any
 * symbolic link, "." or ".." in real if real is not NULL.  Else -1 with
 * one line in err naming the component at fault; errno EPERM if it is
 * not trusted, else the error of the call that failed.
 */
int	trust_open_dir(const char *path, int flags, mode_t mode, char *real,
	    size_t reallen, char *err, size_t errlen);

#endif
