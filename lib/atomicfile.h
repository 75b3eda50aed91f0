/* Files that other programs read are replaced atomically: temp + rename. */
#ifndef ESV_ATOMICFILE_H
#define ESV_ATOMICFILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Write buf to dirfd/name via dirfd/name.new and rename.  name.new is
 * made with O_EXCL|O_NOFOLLOW; a stale one (a crash's) is unlinked first.
 * 0 or -1/errno.
 */
int	atomic_write_at(int dirfd, const char *name, const void *buf,
	    size_t len, mode_t mode);
int	atomic_write(const char *path, const void *buf, size_t len, mode_t mode);

/*
 * snprintf for paths: 0, or -1 with errno ENAMETOOLONG when it did not fit
 * (a truncated path names the wrong file).
 */
int	pathf(char *buf, size_t len, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * The whole of a regular file, NUL-terminated, in a new buffer (its
 * length in *lenp if not NULL).  NULL with errno set: ENOENT when absent,
 * EINVAL when not a regular file, EFBIG when longer than max.
 */
char	*read_text(const char *path, size_t max, size_t *lenp);
/* The same for dirfd/name, opened with flags added (O_NOFOLLOW). */
char	*read_text_at(int dirfd, const char *name, int flags, size_t max,
	    size_t *lenp);

/* mkdir -p, ignoring EEXIST on each component.  0 or -1/errno. */
int	mkdir_p(const char *path, mode_t mode);
/*
 * rm -rf path, or dirfd/name: walks by directory fd, each opened with
 * O_NOFOLLOW, so no symlink below it (nor name itself) is followed,
 * whoever swaps one in meanwhile.  0 (also when absent) or -1/errno.
 */
int	remove_tree(const char *path);
int	remove_tree_at(int dirfd, const char *name);

#endif
