#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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
	tfd = timer_open();
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
	w = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h };
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
	w = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h };
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
	w = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h };
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
	w = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h };
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
	w1 = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h1 };
	w2 = (struct watch){ .fd = timer_open(), .fn = on_timer, .ctx = &h2 };
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
		cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
