#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop.h"

/* Bounds are generous on purpose: a loaded CI box must not fail them. */
#define SLOW_MS	2000

struct hits {
	int		n;
	uint32_t	events;
	uint32_t	signo;
};

static void
on_timer(struct watch *w, uint32_t events)
{
	struct hits *h = w->ctx;

	h->n++;
	h->events = events;
	timer_ack(w->fd);
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct hits *h = w->ctx;
	struct signalfd_siginfo si;

	h->n++;
	h->events = events;
	if (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		h->signo = si.ssi_signo;
}

/* Run the loop until the handler ran or SLOW_MS passed. */
static void
run_until_hit(struct loop *lp, struct hits *h)
{
	long long t0 = mono_ms();

	while (h->n == 0 && mono_ms() - t0 < SLOW_MS)
		assert_true(loop_once(lp, 50) >= 0);
}

static void
assert_cloexec(int fd)
{
	int fl;

	assert_true(fd >= 0);
	fl = fcntl(fd, F_GETFD);
	assert_true(fl != -1 && (fl & FD_CLOEXEC));
}

static void
test_fds_flags(void **state)
{
	struct loop lp;
	sigset_t set;
	int tfd, sfd;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	assert_cloexec(lp.epfd);
	tfd = timer_open(CLOCK_MONOTONIC);
	assert_cloexec(tfd);
	assert_true(fcntl(tfd, F_GETFL) & O_NONBLOCK);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sfd = signals_open(&set);
	assert_cloexec(sfd);
	close(sfd);
	close(tfd);
	close(lp.epfd);
}

static void
test_timer_fires(void **state)
{
	struct hits h = { 0 };
	struct watch w;
	struct loop lp;
	long long t0, dt;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	w = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h };
	assert_true(w.fd >= 0);
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);

	t0 = mono_ms();
	assert_int_equal(timer_arm_ms(w.fd, 20), 0);
	run_until_hit(&lp, &h);
	dt = mono_ms() - t0;
	assert_int_equal(h.n, 1);
	assert_true(h.events & EPOLLIN);
	assert_true(dt >= 19);
	assert_true(dt < SLOW_MS);

	/* One-shot and acknowledged: it does not fire again. */
	assert_int_equal(loop_once(&lp, 100), 0);
	assert_int_equal(h.n, 1);
	close(w.fd);
	close(lp.epfd);
}

static void
test_timer_zero_fires(void **state)
{
	struct hits h = { 0 };
	struct watch w;
	struct loop lp;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	w = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h };
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);
	assert_int_equal(timer_arm_ms(w.fd, 0), 0);
	run_until_hit(&lp, &h);
	assert_int_equal(h.n, 1);
	close(w.fd);
	close(lp.epfd);
}

static void
test_timer_disarm(void **state)
{
	struct hits h = { 0 };
	struct watch w;
	struct loop lp;
	long long t0;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	w = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h };
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);
	assert_int_equal(timer_arm_ms(w.fd, 20), 0);
	assert_int_equal(timer_arm_ms(w.fd, -1), 0);
	t0 = mono_ms();
	while (mono_ms() - t0 < 100)
		assert_true(loop_once(&lp, 100) >= 0);
	assert_int_equal(h.n, 0);
	close(w.fd);
	close(lp.epfd);
}

/* Re-arming replaces the deadline: the later one wins. */
static void
test_timer_rearm(void **state)
{
	struct hits h = { 0 };
	struct watch w;
	struct loop lp;
	long long t0;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	w = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h };
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);
	t0 = mono_ms();
	assert_int_equal(timer_arm_ms(w.fd, 10), 0);
	assert_int_equal(timer_arm_ms(w.fd, 150), 0);
	run_until_hit(&lp, &h);
	assert_int_equal(h.n, 1);
	assert_true(mono_ms() - t0 >= 149);
	close(w.fd);
	close(lp.epfd);
}

static void
test_signal(void **state)
{
	struct hits h = { 0 };
	struct watch w;
	struct loop lp;
	sigset_t set;
	struct signalfd_siginfo si;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	w = (struct watch){ .fd = signals_open(&set), .fn = on_signal,
	    .ctx = &h };
	assert_true(w.fd >= 0);
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);

	/* Blocked by signals_open, so raise() does not kill us. */
	assert_int_equal(raise(SIGUSR1), 0);
	run_until_hit(&lp, &h);
	assert_int_equal(h.n, 1);
	assert_int_equal(h.signo, SIGUSR1);

	/* Deleted: a new signal stays pending and no handler runs. */
	assert_int_equal(loop_del(&lp, &w), 0);
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(loop_once(&lp, 100), 0);
	assert_int_equal(h.n, 1);
	assert_int_equal(read(w.fd, &si, sizeof(si)), (ssize_t)sizeof(si));
	assert_int_equal(si.ssi_signo, SIGUSR1);
	close(w.fd);
	close(lp.epfd);
}

/* signals_read takes what is pending, in one read, at most max. */
static void
test_signals_read(void **state)
{
	struct signalfd_siginfo si[4];
	sigset_t set;
	int fd;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	assert_true((fd = signals_open(&set)) >= 0);
	assert_int_equal(signals_read(fd, si, 4), 0);
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(raise(SIGUSR2), 0);
	assert_int_equal(signals_read(fd, si, 1), 1);
	assert_int_equal(si[0].ssi_signo, SIGUSR1);
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(signals_read(fd, si, 4), 2);
	assert_int_equal(si[0].ssi_signo + si[1].ssi_signo, SIGUSR1 + SIGUSR2);
	assert_int_equal(signals_read(fd, si, 4), 0);
	close(fd);
}

/* loop_once returns how many handlers it ran. */
static void
test_two_watches(void **state)
{
	struct hits h1 = { 0 }, h2 = { 0 };
	struct watch w1, w2;
	struct loop lp;
	int n = 0;
	long long t0;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	w1 = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h1 };
	w2 = (struct watch){ .fd = timer_open(CLOCK_MONOTONIC), .fn = on_timer, .ctx = &h2 };
	assert_int_equal(loop_add(&lp, &w1, EPOLLIN), 0);
	assert_int_equal(loop_add(&lp, &w2, EPOLLIN), 0);
	assert_int_equal(timer_arm_ms(w1.fd, 0), 0);
	assert_int_equal(timer_arm_ms(w2.fd, 0), 0);
	t0 = mono_ms();
	while (n < 2 && mono_ms() - t0 < SLOW_MS)
		n += loop_once(&lp, 50);
	assert_int_equal(n, 2);
	assert_int_equal(h1.n, 1);
	assert_int_equal(h2.n, 1);
	close(w1.fd);
	close(w2.fd);
	close(lp.epfd);
}

/*
 * A batch holds events for two watches; the first handler to run gives
 * the other watch a new, empty fd (as a helper daemon's restart does).
 * The other handler must not run for the old fd's event: it would read
 * the new fd, which has nothing.
 */
struct swap {
	struct loop	*lp;
	struct watch	*other;
	int		 newfd;		/* what the first handler gives other */
	int		 calls;
	int		 stale;		/* calls on a replaced fd's event */
	bool		 swapped;	/* it was replaced in this batch */
};

static struct swap swaps[2];

static void
on_swap(struct watch *w, uint32_t events)
{
	struct swap *me = w->ctx, *him = me->other->ctx;
	char c;

	(void)events;
	me->calls++;
	if (me->swapped) {
		me->stale++;
		return;
	}
	if (read(w->fd, &c, 1) != 1)
		me->stale++;
	if (him->calls == 0 && !him->swapped) {
		assert_int_equal(loop_del(me->lp, me->other), 0);
		close(me->other->fd);
		me->other->fd = me->newfd;
		assert_int_equal(loop_add(me->lp, me->other, EPOLLIN), 0);
		him->swapped = true;
	}
}

static void
test_replaced_fd_in_batch(void **state)
{
	struct watch w[2];
	struct loop lp;
	int sp[2][2], fresh[2][2], i, ran;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp[i]), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0,
		    fresh[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		w[i] = (struct watch){ .fd = sp[i][0], .fn = on_swap,
		    .ctx = &swaps[i] };
		swaps[i] = (struct swap){ .lp = &lp, .other = &w[1 - i],
		    .newfd = fresh[1 - i][0] };
		assert_int_equal(loop_add(&lp, &w[i], EPOLLIN), 0);
		assert_int_equal(write(sp[i][1], "x", 1), 1);
	}
	/* Both are ready before the wait: one batch holds both events. */
	ran = loop_once(&lp, 1000);
	assert_int_equal(ran, 1);
	assert_int_equal(swaps[0].calls + swaps[1].calls, 1);
	assert_int_equal(swaps[0].stale + swaps[1].stale, 0);

	/* The replaced watch works on its new fd in the next batch. */
	i = swaps[0].swapped ? 0 : 1;
	swaps[i].swapped = false;
	assert_int_equal(write(fresh[i][1], "y", 1), 1);
	assert_int_equal(loop_once(&lp, 1000), 1);
	assert_int_equal(swaps[i].calls, 1);
	assert_int_equal(swaps[i].stale, 0);
	close(fresh[1 - i][0]);		/* the spare of the one not replaced */
	for (i = 0; i < 2; i++) {
		close(w[i].fd);
		close(sp[i][1]);
		close(fresh[i][1]);
	}
	close(lp.epfd);
}

/* A handler may delete and free another watch whose event is pending. */
struct freer {
	struct loop	*lp;
	struct watch	*w[2];		/* malloc'd, NULL once freed */
	int		 calls;
};

static void
on_free(struct watch *w, uint32_t events)
{
	struct freer *f = w->ctx;
	char c;
	int i;

	(void)events;
	f->calls++;
	(void)!read(w->fd, &c, 1);
	for (i = 0; i < 2; i++)
		if (f->w[i] != NULL && f->w[i] != w) {
			assert_int_equal(loop_del(f->lp, f->w[i]), 0);
			close(f->w[i]->fd);
			free(f->w[i]);
			f->w[i] = NULL;
		}
}

static void
test_freed_in_batch(void **state)
{
	struct freer f = { 0 };
	struct loop lp;
	int sp[2][2], i;

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	f.lp = &lp;
	for (i = 0; i < 2; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp[i]), 0);
		assert_non_null(f.w[i] = malloc(sizeof(*f.w[i])));
		*f.w[i] = (struct watch){ .fd = sp[i][0], .fn = on_free,
		    .ctx = &f };
		assert_int_equal(loop_add(&lp, f.w[i], EPOLLIN), 0);
		assert_int_equal(write(sp[i][1], "x", 1), 1);
	}
	/* Whichever runs first frees the other, whose event is dropped. */
	assert_int_equal(loop_once(&lp, 1000), 1);
	assert_int_equal(f.calls, 1);
	for (i = 0; i < 2; i++) {
		if (f.w[i] != NULL) {
			close(f.w[i]->fd);
			free(f.w[i]);
		}
		close(sp[i][1]);
	}
	close(lp.epfd);
}

/* A blocking fd is made non-blocking by loop_add. */
static void
test_add_nonblocking(void **state)
{
	struct watch w;
	struct loop lp;
	int sp[2];

	(void)state;
	assert_int_equal(loop_init(&lp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	assert_false(fcntl(sp[0], F_GETFL) & O_NONBLOCK);
	w = (struct watch){ .fd = sp[0], .fn = on_timer };
	assert_int_equal(loop_add(&lp, &w, EPOLLIN), 0);
	assert_true(fcntl(sp[0], F_GETFL) & O_NONBLOCK);
	close(sp[0]);
	close(sp[1]);
	close(lp.epfd);
}

static void
test_clocks(void **state)
{
	long long a, b;
	double w;

	(void)state;
	a = mono_ms();
	usleep(20000);
	b = mono_ms();
	assert_true(b - a >= 19 && b - a < SLOW_MS);
	w = wall_now();
	assert_true(w > (double)time(NULL) - 2 && w < (double)time(NULL) + 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fds_flags),
		cmocka_unit_test(test_timer_fires),
		cmocka_unit_test(test_timer_zero_fires),
		cmocka_unit_test(test_timer_disarm),
		cmocka_unit_test(test_timer_rearm),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_two_watches),
		cmocka_unit_test(test_signals_read),
		cmocka_unit_test(test_replaced_fd_in_batch),
		cmocka_unit_test(test_freed_in_batch),
		cmocka_unit_test(test_add_nonblocking),
		cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
