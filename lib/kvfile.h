/*
 * The key=value text format of esv's status and state files: one
 * "key=value" per line, keys [a-z_]+, values with no newline (a newline
 * in a value is written as a space).  Readers ignore unknown keys.
 */
#ifndef ESV_KVFILE_H
#define ESV_KVFILE_H

#include <stddef.h>

struct kvbuf {
	char	*buf;
	size_t	 len, cap;
	int	 failed;	/* sticky allocation failure */
};

void	kv_add(struct kvbuf *kb, const char *key, const char *value);
void	kv_addf(struct kvbuf *kb, const char *key, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
void	kv_reset(struct kvbuf *kb);
void	kv_free(struct kvbuf *kb);
/* Replace dirfd/name atomically with the buffer. 0 or -1/errno. */
int	kv_write_at(struct kvbuf *kb, int dirfd, const char *name);

/* A parsed file: keys and values point into one owned buffer. */
struct kvpair {
	const char	*key;
	const char	*value;
};
struct kvlist {
	char		*text;
	struct kvpair	*pairs;
	size_t		 n;
};

/* State files are small; this bounds a reader fed something else. */
#define KV_FILE_MAX	(16 * 1024 * 1024)

/* Read and parse path. 0, or -1/errno (ENOENT when absent). */
int		 kv_read(const char *path, struct kvlist *kl);
/* The same for dirfd/name, not through a symlink. */
int		 kv_read_at(int dirfd, const char *name, struct kvlist *kl);
int		 kv_parse(char *text, struct kvlist *kl);	/* takes text */
const char	*kv_get(const struct kvlist *kl, const char *key);
void		 kv_list_free(struct kvlist *kl);

#endif
