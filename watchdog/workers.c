/*
 * The workers esv-supervise named on the control channel, with their
 * pidfds; or, with --any-pid and no channel, any process but ourselves.
 */
#include "watchdogd.h"

int
pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

bool
is_worker(const struct workers *wk, pid_t pid)
{
	if (pid == getpid())
		return false;
	if (!wk->listed)
		return wk->any_pid;
	return bsearch(&pid, wk->pids, wk->n, sizeof(*wk->pids), pid_cmp) !=
	    NULL;
}

int
worker_pidfd(const struct workers *wk, pid_t pid)
{
	pid_t *p;

	p = bsearch(&pid, wk->pids, wk->n, sizeof(*wk->pids), pid_cmp);
	return p != NULL ? wk->pidfds[p - wk->pids] : -1;
}
