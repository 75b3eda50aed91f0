/*
 * The key table (a hash of entries: a value, a queue, waiters) and the
 * memory budget (store_conf.max_bytes) every part of the store draws on.
 */
#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "store_int.h"

/* As store_mem_take; a refusal is remembered for no_room's word. */
bool
mem_take(struct store *st, size_t n)
{
	if (st->used > st->conf.max_bytes ||
	    n > st->conf.max_bytes - st->used) {
		st->over = true;
		return false;
	}
	st->used += n;
	return true;
}

bool
store_mem_take(struct store *st, size_t n)
{
	if (st->used > st->conf.max_bytes ||
	    n > st->conf.max_bytes - st->used)
		return false;
	st->used += n;
	return true;
}

void
store_mem_force(struct store *st, size_t n)
{
	st->used += n;
}

void
store_mem_give(struct store *st, size_t n)
{
	st->used -= n < st->used ? n : st->used;
}

size_t
store_mem_used(const struct store *st)
{
	return st->used;
}

/* A key for the log: printable, quoted, cut at 32 characters. */
void
key_fmt(const uint8_t *p, size_t n, char *out, size_t ol)
{
	size_t i, o = 0;

	for (i = 0; i < n && i < 32 && o + 5 < ol; i++)
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
		    p[i] != '\\')
			out[o++] = p[i];
		else
			o += snprintf(out + o, ol - o, "\\x%02x", p[i]);
	if (i < n && o + 4 < ol)
		o += snprintf(out + o, ol - o, "...");
	out[o] = '\0';
}

/* ---- the table ---- */

static uint64_t
hash_of(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (n-- > 0)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

struct entry *
key_lookup(struct store *st, const struct slice *k)
{
	uint64_t h = hash_of(k->p, k->len);
	struct entry *e;

	for (e = st->buckets[h & (st->nbuckets - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->klen == k->len &&
		    memcmp(e->key, k->p, k->len) == 0)
			return e;
	return NULL;
}

static void
grow(struct store *st)
{
	struct entry **nb, *e, *next;
	size_t n = st->nbuckets * 2, i;

	if ((nb = calloc(n, sizeof(*nb))) == NULL)
		return;		/* longer chains, still correct */
	for (i = 0; i < st->nbuckets; i++)
		for (e = st->buckets[i]; e != NULL; e = next) {
			next = e->next;
			e->next = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
		}
	free(st->buckets);
	st->buckets = nb;
	st->nbuckets = n;
}

struct entry *
key_lookup_or_add(struct store *st, const struct slice *k)
{
	struct entry *e;
	size_t b;

	if ((e = key_lookup(st, k)) != NULL)
		return e;
	if (!mem_take(st, sizeof(*e) + k->len))
		return NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->key = malloc(k->len > 0 ? k->len : 1)) == NULL) {
		free(e);
		store_mem_give(st, sizeof(*e) + k->len);
		return NULL;
	}
	memcpy(e->key, k->p, k->len);
	e->klen = k->len;
	e->hash = hash_of(k->p, k->len);
	STAILQ_INIT(&e->queue);
	TAILQ_INIT(&e->waiters);
	if (st->nentries >= st->nbuckets)
		grow(st);
	b = e->hash & (st->nbuckets - 1);
	e->next = st->buckets[b];
	st->buckets[b] = e;
	st->nentries++;
	return e;
}

/* An entry that holds nothing and is waited for by nobody goes. */
void
key_maybe_drop(struct store *st, struct entry *e)
{
	struct entry **pp;

	if (e->present || e->qlen > 0 || !TAILQ_EMPTY(&e->waiters))
		return;
	for (pp = &st->buckets[e->hash & (st->nbuckets - 1)]; *pp != e;
	    pp = &(*pp)->next)
		;
	*pp = e->next;
	st->nentries--;
	store_mem_give(st, sizeof(*e) + e->klen);
	free(e->key);
	free(e->val);
	free(e);
}

bool
key_set_value(struct store *st, struct entry *e, const uint8_t *p, size_t n)
{
	size_t old = e->present ? e->vlen : 0;
	uint8_t *v;

	if (n > old && !mem_take(st, n - old))
		return false;
	if ((v = malloc(n > 0 ? n : 1)) == NULL) {
		if (n > old)
			store_mem_give(st, n - old);
		return false;
	}
	if (n < old)
		store_mem_give(st, old - n);
	memcpy(v, p, n);
	free(e->val);
	e->val = v;
	e->vlen = n;
	if (!e->present)
		st->nkeys++;
	e->present = true;
	return true;
}

bool
key_has(const struct entry *e)
{
	return e != NULL && (e->present || e->qlen > 0);
}

/* op on key k (n bytes) could not be had: past the budget, or malloc. */
int
no_room(struct store *st, const char *op, const struct slice *k, size_t n,
    char *why, size_t wl)
{
	char key[140];

	key_fmt(k->p, k->len, key, sizeof(key));
	if (st->over)
		snprintf(why, wl, "%s of key \"%s\" (%zu bytes): past the "
		    "store's budget of %zu bytes (--max-bytes)", op, key, n,
		    st->conf.max_bytes);
	else
		snprintf(why, wl, "%s of key \"%s\": out of memory", op, key);
	st->over = false;
	return -1;
}
