/*
 * The timers' deadlines: one timerfd armed for the earliest, and the
 * workers signalled when theirs pass.
 */
#include "watchdogd.h"

void
expiry_open(struct expiry *e)
{
	/* Expirations are wall-clock times, as torch's clients send them. */
	e->w.fd = timer_open(CLOCK_REALTIME);
	if (e->w.fd == -1)
		die(ESV_EXIT_SYSTEM, "timerfd_create");
	e->w.fn = on_timer;
	e->w.ctx = e;
}

/*
 * Through the worker's pidfd: if the worker is gone, the signal is not
 * sent, whoever has its pid now.  --any-pid has no list, hence no
 * pidfds: it signals by pid (for tests and trusted single-user setups).
 */
static bool
op_send(void *ctx, pid_t pid, int sig)
{
	struct expiry *e = ctx;
	int fd;

	e->no_pidfd = false;
	if (!e->wk->listed) {
		if (kill(pid, sig) == 0)
			return true;
		if (errno != ESRCH)
			warn_sys("kill %d %s", (int)pid, sig_name(sig));
		return false;
	}
	if ((fd = worker_pidfd(e->wk, pid)) == -1) {
		e->no_pidfd = true;
		return false;
	}
	if (esv_pidfd_kill(fd, sig) == 0)
		return true;
	if (errno != ESRCH)
		warn_sys("pidfd of pid %d: %s", (int)pid, sig_name(sig));
	return false;
}

static void
op_expired(void *ctx, const struct wtimer *t, bool acted, bool sent)
{
	struct expiry *ex = ctx;
	struct wd_expired e;
	char scope[4 * WDCHAN_SCOPE_MAX + 1], what[64];

	memset(&e, 0, sizeof(e));
	e.pid = t->pid;
	utf8_strlcpy(e.scope, t->scope, sizeof(e.scope));
	e.signal = t->signal;
	e.deadline = t->deadline;
	/* To the microsecond: more digits would be noise. */
	e.lateness_ms = round((wall_now() - t->deadline) * 1e6) / 1e3;
	e.sent = sent;
	ex->cnt->expired++;
	if (sent)
		snprintf(what, sizeof(what), "sent %s", sig_name(t->signal));
	else if (acted)
		snprintf(what, sizeof(what), "%s not sent: %s",
		    sig_name(t->signal), ex->no_pidfd ?
		    "the supervisor gave no pidfd for it" : "no such process");
	else
		strlcpy(what, t->signal > 0 ? "cleared" : "no signal",
		    sizeof(what));
	request_vis(scope, sizeof(scope), t->scope, strlen(t->scope));
	info_msg("timer expired: pid %d scope %s deadline %.3f "
	    "(lateness %.3f ms): %s", (int)t->pid, scope, t->deadline,
	    e.lateness_ms, what);
	ctl_send(ex->ctl, wdchan_expired(&e));
}

void
run_expiries(struct expiry *e)
{
	static const struct timers_ops ops = { op_send, op_expired };

	timers_expire(e->ts, wall_now(), &ops, e);
}

/* The timerfd, on the wall clock as torch's deadlines are. */
void
arm_timer(struct expiry *e)
{
	struct itimerspec its;
	double dl = 0, sec;
	bool have;

	have = timers_next(e->ts, &dl);
	if (e->set == have && (!have || dl == e->dl))
		return;
	memset(&its, 0, sizeof(its));
	if (have) {
		dl = fmin(dl, DEADLINE_MAX);
		/* Rounded up: firing early would only mean a second wake-up. */
		sec = floor(dl);
		its.it_value.tv_sec = (time_t)sec;
		its.it_value.tv_nsec = (long)ceil((dl - sec) * 1e9);
		if (its.it_value.tv_nsec >= 1000000000L) {
			its.it_value.tv_sec++;
			its.it_value.tv_nsec = 0;
		}
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(e->w.fd, TFD_TIMER_ABSTIME |
	    TFD_TIMER_CANCEL_ON_SET, &its, NULL) == -1)
		die(ESV_EXIT_SYSTEM, "timerfd_settime");
	e->set = have;
	e->dl = dl;
}

void
on_timer(struct watch *w, uint32_t events)
{
	struct expiry *e = w->ctx;
	uint64_t n;

	(void)events;
	/* Fired, or ECANCELED: the clock was set.  Either way, arm anew. */
	if (read(w->fd, &n, sizeof(n)) == -1 && errno == ECANCELED &&
	    e->verbose)
		info_msg("the wall clock was set: deadlines checked again");
	e->set = false;
}
