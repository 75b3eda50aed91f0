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

/* A directory that others may write if it has the sticky bit (/tmp). */
#define TRUST_STICKY_OK	0x1

/*
 * 0 if fd (opened from path) is owned by the effective user or root and
 * neither group nor others can write it.  Else -1 with one line in err
 * that names path, its owner and mode and what to change (errno EPERM),
 * or the error of fstat.
 */
int	trust_check(int fd, const char *path, int flags, char *err,
	    size_t errlen);

#endif
