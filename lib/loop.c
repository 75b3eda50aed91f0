#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "msg.h"

int
loop_init(struct loop *lp)
{
	lp->next = lp->nbatch = 0;
	lp->epfd = epoll_create1(EPOLL_CLOEXEC);
	return lp->epfd == -1 ? -1 : 0;
}

/*
 * The rest of the batch may hold events that epoll reported for w's old
 * fd: its handler would read the new one (a fresh, empty socket: that is
 * how a restarted helper daemon once hung the supervisor) or a freed w.
 */
static void
forget(struct loop *lp, struct watch *w)
{
	int i;

	for (i = lp->next; i < lp->nbatch; i++)
		if (lp->batch[i].data.ptr == w)
			lp->batch[i].data.ptr = NULL;
}

int
loop_add(struct loop *lp, struct watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };
	int fl;

	forget(lp, w);
	if ((fl = fcntl(w->fd, F_GETFL)) == -1 ||
	    (!(fl & O_NONBLOCK) && fcntl(w->fd, F_SETFL, fl | O_NONBLOCK) == -1))
		return -1;
	return epoll_ctl(lp->epfd, EPOLL_CTL_ADD, w->fd, &ev);
}

int
loop_mod(struct loop *lp, struct watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(lp->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

int
loop_del(struct loop *lp, struct watch *w)
{
	forget(lp, w);
	return epoll_ctl(lp->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

int
loop_once(struct loop *lp, int timeout_ms)
{
	struct epoll_event *ev;
	struct watch *w;
	int n, ran = 0;

	n = epoll_wait(lp->epfd, lp->batch, LOOP_BATCH, timeout_ms);
	if (n == -1)
		return errno == EINTR ? 0 : -1;
	for (lp->nbatch = n, lp->next = 0; lp->next < lp->nbatch;) {
		ev = &lp->batch[lp->next++];
		if ((w = ev->data.ptr) == NULL)
			continue;
		w->fn(w, ev->events);
		ran++;
	}
	lp->nbatch = lp->next = 0;
	return ran;
}

int
timer_open(clockid_t clock)
{
	return timerfd_create(clock, TFD_NONBLOCK | TFD_CLOEXEC);
}

int
timer_arm_ms(int tfd, long long ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (ms >= 0) {
		/* An all-zero it_value would disarm: fire a nanosecond later. */
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (ms % 1000) * 1000000L;
		if (ms == 0)
			its.it_value.tv_nsec = 1;
	}
	return timerfd_settime(tfd, 0, &its, NULL);
}

void
timer_ack(int tfd)
{
	uint64_t n;

	(void)!read(tfd, &n, sizeof(n));
}

int
signals_open(const sigset_t *set)
{
	if (sigprocmask(SIG_BLOCK, set, NULL) == -1)
		return -1;
	return signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int
signals_read(int sfd, struct signalfd_siginfo *si, int max)
{
	ssize_t n;

	n = read(sfd, si, (size_t)max * sizeof(*si));
	return n <= 0 ? 0 : (int)(n / (ssize_t)sizeof(*si));
}

long long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double
wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
loop_daemon_init(struct loop *lp, struct watch *sigw, watch_fn *fn)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	if (loop_init(lp) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_create");
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigw->fn = fn;
	if ((sigw->fd = signals_open(&set)) == -1)
		die(ESV_EXIT_SYSTEM, "signalfd");
	if (loop_add(lp, sigw, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
}
