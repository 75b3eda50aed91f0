#include <stdlib.h>
#include <string.h>

/*
 * libbsd's tree.h marks its static functions __unused, which its cdefs.h
 * leaves undefined (glibc has struct members of that name): after the
 * system headers.
 */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif
#include "timers.h"
#include "wdchan.h"

static int
key_cmp(const struct wtimer *a, const struct wtimer *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return strcmp(a->scope, b->scope);
}

static int
dl_cmp(const struct wtimer *a, const struct wtimer *b)
{
	if (a->deadline != b->deadline)
		return a->deadline < b->deadline ? -1 : 1;
	return key_cmp(a, b);
}

RB_GENERATE_STATIC(wt_bykey, wtimer, bykey, key_cmp)
RB_GENERATE_STATIC(wt_bydl, wtimer, bydl, dl_cmp)

void
timers_init(struct timers *ts)
{
	RB_INIT(&ts->bykey);
	RB_INIT(&ts->bydl);
	ts->n = 0;
}

static void
unlink_free(struct timers *ts, struct wtimer *t)
{
	RB_REMOVE(wt_bykey, &ts->bykey, t);
	RB_REMOVE(wt_bydl, &ts->bydl, t);
	ts->n--;
	free(t);
}

void
timers_free(struct timers *ts)
{
	struct wtimer *t;

	while ((t = RB_MIN(wt_bykey, &ts->bykey)) != NULL)
		unlink_free(ts, t);
}

/* A key on the stack: the scope is a flexible array. */
union keybuf {
	struct wtimer	t;
	char		raw[sizeof(struct wtimer) + WDCHAN_SCOPE_MAX + 1];
};

static struct wtimer *
find(const struct timers *ts, pid_t pid, const char *scope,
    union keybuf *kb)
{
	kb->t.pid = pid;
	strlcpy(kb->t.scope, scope, WDCHAN_SCOPE_MAX + 1);
	return RB_FIND(wt_bykey, (struct wt_bykey *)&ts->bykey, &kb->t);
}

int
timers_set(struct timers *ts, pid_t pid, const char *scope, double deadline,
    int sig)
{
	union keybuf kb;
	struct wtimer *t;
	size_t len;

	if ((t = find(ts, pid, scope, &kb)) != NULL) {
		/* The deadline is part of the order: take it out first. */
		RB_REMOVE(wt_bydl, &ts->bydl, t);
	} else {
		len = strlen(scope) + 1;
		if ((t = malloc(sizeof(*t) + len)) == NULL)
			return -1;
		t->pid = pid;
		memcpy(t->scope, scope, len);
		RB_INSERT(wt_bykey, &ts->bykey, t);
		ts->n++;
	}
	t->deadline = deadline;
	t->signal = sig;
	RB_INSERT(wt_bydl, &ts->bydl, t);
	return 0;
}

bool
timers_release(struct timers *ts, pid_t pid, const char *scope)
{
	union keybuf kb;
	struct wtimer *t;

	if ((t = find(ts, pid, scope, &kb)) == NULL)
		return false;
	unlink_free(ts, t);
	return true;
}

/* The first timer of pid in key order ("" sorts before any scope). */
static struct wtimer *
first_of(struct timers *ts, pid_t pid)
{
	union keybuf kb;
	struct wtimer *t;

	kb.t.pid = pid;
	kb.t.scope[0] = '\0';
	t = RB_NFIND(wt_bykey, &ts->bykey, &kb.t);
	return t != NULL && t->pid == pid ? t : NULL;
}

static int
pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

size_t
timers_keep_pids(struct timers *ts, const pid_t *pids, size_t n)
{
	struct wtimer *t, *next;
	size_t dropped = 0;

	for (t = RB_MIN(wt_bykey, &ts->bykey); t != NULL; t = next) {
		next = RB_NEXT(wt_bykey, &ts->bykey, t);
		if (n > 0 && bsearch(&t->pid, pids, n, sizeof(*pids),
		    pid_cmp) != NULL)
			continue;
		unlink_free(ts, t);
		dropped++;
	}
	return dropped;
}

bool
timers_next(const struct timers *ts, double *deadline)
{
	struct wtimer *t;

	if ((t = RB_MIN(wt_bydl, (struct wt_bydl *)&ts->bydl)) == NULL)
		return false;
	*deadline = t->deadline;
	return true;
}

/* The timers of one pid are adjacent in key order. */
static size_t
expire_pid(struct timers *ts, pid_t pid, double now,
    const struct timers_ops *ops, void *ctx)
{
	struct wtimer *t, *next, *act = NULL;
	size_t n = 0;
	bool sent = false;

	for (t = first_of(ts, pid); t != NULL && t->pid == pid;
	    t = RB_NEXT(wt_bykey, &ts->bykey, t))
		if (t->deadline <= now && t->signal > 0 &&
		    (act == NULL || dl_cmp(t, act) < 0))
			act = t;
	if (act != NULL) {
		sent = ops->send(ctx, pid, act->signal);
		ops->expired(ctx, act, true, sent);
		n++;
	}
	for (t = first_of(ts, pid); t != NULL && t->pid == pid; t = next) {
		next = RB_NEXT(wt_bykey, &ts->bykey, t);
		if (t->deadline <= now && t != act) {
			ops->expired(ctx, t, false, false);
			n++;
		} else if (act == NULL)
			continue;
		unlink_free(ts, t);
	}
	return n;
}

size_t
timers_expire(struct timers *ts, double now, const struct timers_ops *ops,
    void *ctx)
{
	struct wtimer *t;
	size_t n = 0;

	while ((t = RB_MIN(wt_bydl, &ts->bydl)) != NULL && t->deadline <= now)
		n += expire_pid(ts, t->pid, now, ops, ctx);
	return n;
}
