/*
 * JOBDIR/env/: an envdir, the operator's way to change the workers'
 * environment between attempts (esv-supervise(8), ENVIRONMENT).  The
 * rules are those of runit's chpst -e and s6-envdir: one file per
 * variable, named after it; an empty file unsets the variable; otherwise
 * its first line is the value, trailing spaces and tabs removed, NUL
 * bytes turned into newlines.  Names that begin with a dot or hold '='
 * are skipped.
 */
#ifndef ESV_ENVDIR_H
#define ESV_ENVDIR_H

#include <stddef.h>

#include "workerenv.h"

/*
 * The value an envdir file of n bytes holds, written NUL-terminated into
 * out (at most outlen bytes); 1 if the variable is set, 0 if the file
 * unsets it (it is empty), -1 if the value does not fit.
 */
int	envdir_value(const char *data, size_t n, char *out, size_t outlen);

/*
 * Apply directory dirfd (path names it in messages) to eb: set or unset
 * each variable its files name.  A file that cannot be read, is not a
 * regular file or is too long is skipped with a warning naming it.
 * Returns the number of variables set or unset; -1 if a file is a
 * symbolic link or is not trusted (trust.h: another user owns it, or
 * others can write it), with one line in err naming it, and eb only
 * partly applied.
 */
int	envdir_apply(int dirfd, const char *path, struct envbuf *eb,
	    char *err, size_t errlen);

#endif
