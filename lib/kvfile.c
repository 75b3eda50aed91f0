#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "kvfile.h"

static int
kv_grow(struct kvbuf *kb, size_t need)
{
	size_t cap;
	char *nb;

	if (kb->len + need + 1 <= kb->cap)
		return 0;
	cap = kb->cap ? kb->cap : 256;
	while (cap < kb->len + need + 1)
		cap *= 2;
	if ((nb = realloc(kb->buf, cap)) == NULL) {
		kb->failed = 1;
		return -1;
	}
	kb->buf = nb;
	kb->cap = cap;
	return 0;
}

/* A value spans one line: an embedded newline would forge another key. */
static void
kv_append_value(struct kvbuf *kb, const char *v, size_t n)
{
	size_t i;

	if (kv_grow(kb, n + 1) == -1)
		return;
	for (i = 0; i < n; i++)
		kb->buf[kb->len++] = (v[i] == '\n' || v[i] == '\r') ? ' ' : v[i];
	kb->buf[kb->len++] = '\n';
	kb->buf[kb->len] = '\0';
}

void
kv_add(struct kvbuf *kb, const char *key, const char *value)
{
	size_t kl = strlen(key);

	if (kv_grow(kb, kl + 1) == -1)
		return;
	memcpy(kb->buf + kb->len, key, kl);
	kb->len += kl;
	kb->buf[kb->len++] = '=';
	kv_append_value(kb, value, strlen(value));
}

void
kv_addf(struct kvbuf *kb, const char *key, const char *fmt, ...)
{
	char small[256], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		kb->failed = 1;
		return;
	}
	if ((size_t)n >= sizeof(small)) {
		va_start(ap, fmt);
		n = vasprintf(&big, fmt, ap);
		va_end(ap);
		if (n < 0) {
			kb->failed = 1;
			return;
		}
	}
	kv_add(kb, key, big ? big : small);
	free(big);
}

void
kv_reset(struct kvbuf *kb)
{
	kb->len = 0;
	kb->failed = 0;
	if (kb->buf != NULL)
		kb->buf[0] = '\0';
}

void
kv_free(struct kvbuf *kb)
{
	free(kb->buf);
	memset(kb, 0, sizeof(*kb));
}

int
kv_write_at(struct kvbuf *kb, int dirfd, const char *name)
{
	if (kb->failed) {
		errno = ENOMEM;
		return -1;
	}
	return atomic_write_at(dirfd, name, kb->buf ? kb->buf : "", kb->len, 0644);
}

int
kv_parse(char *text, struct kvlist *kl)
{
	char *line, *next, *eq;
	size_t cap = 0;
	struct kvpair *np;

	memset(kl, 0, sizeof(*kl));
	kl->text = text;
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(line, '=')) == NULL || eq == line)
			continue;
		*eq = '\0';
		if (kl->n == cap) {
			cap = cap ? cap * 2 : 32;
			np = reallocarray(kl->pairs, cap, sizeof(*np));
			if (np == NULL) {
				kv_list_free(kl);
				return -1;
			}
			kl->pairs = np;
		}
		kl->pairs[kl->n].key = line;
		kl->pairs[kl->n].value = eq + 1;
		kl->n++;
	}
	return 0;
}


int
kv_read(const char *path, struct kvlist *kl)
{
	return kv_read_at(AT_FDCWD, path, kl);
}

int
kv_read_at(int dirfd, const char *name, struct kvlist *kl)
{
	char *text;

	memset(kl, 0, sizeof(*kl));
	if ((text = read_text_at(dirfd, name, dirfd == AT_FDCWD ? 0 :
	    O_NOFOLLOW, KV_FILE_MAX, NULL)) == NULL)
		return -1;
	if (kv_parse(text, kl) == -1) {
		free(text);
		return -1;
	}
	return 0;
}

const char *
kv_get(const struct kvlist *kl, const char *key)
{
	size_t i;

	for (i = 0; i < kl->n; i++)
		if (strcmp(kl->pairs[i].key, key) == 0)
			return kl->pairs[i].value;
	return NULL;
}

void
kv_list_free(struct kvlist *kl)
{
	free(kl->text);
	free(kl->pairs);
	memset(kl, 0, sizeof(*kl));
}
