#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../watchdog/timers.h"

/* What the expiry did, in order. */
struct rec {
	int	sends, expired;
	pid_t	sent_pid[16];
	int	sent_sig[16];
	char	scope[16][32];
	bool	acted[16], sent[16];
	bool	send_ok;	/* false: the pid is gone */
	double	last_dl;	/* deadlines of the big test come in order */
	bool	ordered;
};

static bool
fake_send(void *ctx, pid_t pid, int sig)
{
	struct rec *r = ctx;

	assert_true(r->sends < 16);
	r->sent_pid[r->sends] = pid;
	r->sent_sig[r->sends++] = sig;
	return r->send_ok;
}

static void
fake_expired(void *ctx, const struct wtimer *t, bool acted, bool sent)
{
	struct rec *r = ctx;

	assert_true(r->expired < 16);
	snprintf(r->scope[r->expired], sizeof(r->scope[0]), "%d/%s",
	    (int)t->pid, t->scope);
	r->acted[r->expired] = acted;
	r->sent[r->expired++] = sent;
}

static const struct timers_ops ops = { fake_send, fake_expired };

static void
test_set_replace_release(void **state)
{
	struct timers ts;
	double dl;

	(void)state;
	timers_init(&ts);
	assert_false(timers_next(&ts, &dl));
	assert_int_equal(timers_set(&ts, 10, "a", 100.0, 9), 0);
	assert_int_equal(timers_set(&ts, 10, "b", 50.0, 9), 0);
	assert_int_equal(timers_set(&ts, 11, "a", 70.0, 9), 0);
	assert_int_equal(ts.n, 3);
	assert_true(timers_next(&ts, &dl));
	assert_true(dl == 50.0);
	/* A later request for the same key moves its deadline. */
	assert_int_equal(timers_set(&ts, 10, "b", 200.0, 15), 0);
	assert_int_equal(ts.n, 3);
	assert_true(timers_next(&ts, &dl));
	assert_true(dl == 70.0);
	assert_true(timers_release(&ts, 11, "a"));
	assert_false(timers_release(&ts, 11, "a"));
	assert_false(timers_release(&ts, 12, "a"));
	assert_int_equal(ts.n, 2);
	assert_true(timers_next(&ts, &dl));
	assert_true(dl == 100.0);
	timers_free(&ts);
	assert_int_equal(ts.n, 0);
}

static void
test_expire_kills_and_clears_pid(void **state)
{
	struct rec r = { .send_ok = true };
	struct timers ts;
	double dl;

	(void)state;
	timers_init(&ts);
	timers_set(&ts, 10, "quiet", 1.0, 0);
	timers_set(&ts, 10, "term", 2.0, 15);
	timers_set(&ts, 10, "kill", 3.0, 9);
	timers_set(&ts, 10, "later", 50.0, 9);
	timers_set(&ts, 20, "other", 60.0, 9);
	assert_int_equal(timers_expire(&ts, 5.0, &ops, &r), 3);
	/* The first expired timer with a signal is the one sent. */
	assert_int_equal(r.sends, 1);
	assert_int_equal(r.sent_pid[0], 10);
	assert_int_equal(r.sent_sig[0], 15);
	assert_int_equal(r.expired, 3);
	assert_string_equal(r.scope[0], "10/term");
	assert_true(r.acted[0] && r.sent[0]);
	assert_false(r.acted[1] || r.sent[1] || r.acted[2] || r.sent[2]);
	/* Every timer of the signalled pid is gone, the others stay. */
	assert_int_equal(ts.n, 1);
	assert_true(timers_next(&ts, &dl));
	assert_true(dl == 60.0);
	timers_free(&ts);
}

static void
test_expire_signal_zero_clears_only_expired(void **state)
{
	struct rec r = { .send_ok = true };
	struct timers ts;
	double dl;

	(void)state;
	timers_init(&ts);
	timers_set(&ts, 10, "a", 1.0, 0);
	timers_set(&ts, 10, "b", 2.0, -3);
	timers_set(&ts, 10, "c", 9.0, 9);
	assert_int_equal(timers_expire(&ts, 5.0, &ops, &r), 2);
	assert_int_equal(r.sends, 0);
	assert_int_equal(r.expired, 2);
	assert_int_equal(ts.n, 1);
	assert_true(timers_next(&ts, &dl));
	assert_true(dl == 9.0);
	/* Due at exactly its deadline. */
	assert_int_equal(timers_expire(&ts, 9.0, &ops, &r), 1);
	assert_int_equal(r.sends, 1);
	assert_int_equal(ts.n, 0);
	timers_free(&ts);
}

static void
test_expire_gone_pid(void **state)
{
	struct rec r = { .send_ok = false };
	struct timers ts;

	(void)state;
	timers_init(&ts);
	timers_set(&ts, 30, "x", 1.0, 9);
	timers_set(&ts, 30, "y", 100.0, 9);
	timers_set(&ts, 31, "x", 1.5, 9);
	assert_int_equal(timers_expire(&ts, 2.0, &ops, &r), 2);
	assert_int_equal(r.sends, 2);
	assert_true(r.acted[0] && !r.sent[0]);
	assert_true(r.acted[1] && !r.sent[1]);
	assert_int_equal(ts.n, 0);
	assert_int_equal(timers_expire(&ts, 1e9, &ops, &r), 0);
	timers_free(&ts);
}

static void
test_keep_pids(void **state)
{
	static const pid_t keep[] = { 5, 7, 9 };
	struct timers ts;

	(void)state;
	timers_init(&ts);
	timers_set(&ts, 5, "a", 1.0, 9);
	timers_set(&ts, 6, "a", 1.0, 9);
	timers_set(&ts, 6, "b", 1.0, 9);
	timers_set(&ts, 9, "a", 1.0, 9);
	timers_set(&ts, 10, "a", 1.0, 9);
	assert_int_equal(timers_keep_pids(&ts, keep, 3), 3);
	assert_int_equal(ts.n, 2);
	assert_false(timers_release(&ts, 6, "a"));
	assert_true(timers_release(&ts, 9, "a"));
	assert_int_equal(timers_keep_pids(&ts, NULL, 0), 1);
	assert_int_equal(ts.n, 0);
	timers_free(&ts);
}

static void
test_long_scope(void **state)
{
	char scope[257];
	struct timers ts;

	(void)state;
	memset(scope, 'x', 256);
	scope[256] = '\0';
	timers_init(&ts);
	assert_int_equal(timers_set(&ts, 1, scope, 1.0, 9), 0);
	assert_int_equal(timers_set(&ts, 1, scope, 2.0, 9), 0);
	assert_int_equal(ts.n, 1);
	assert_true(timers_release(&ts, 1, scope));
	timers_free(&ts);
}

static bool
big_send(void *ctx, pid_t pid, int sig)
{
	(void)ctx;
	(void)pid;
	(void)sig;
	return true;
}

static void
big_expired(void *ctx, const struct wtimer *t, bool acted, bool sent)
{
	struct rec *r = ctx;

	(void)acted;
	(void)sent;
	if (t->deadline < r->last_dl)
		r->ordered = false;
	r->last_dl = t->deadline;
}

/* 100,000 workers with one timer each, armed in scrambled order. */
static void
test_many(void **state)
{
	static const struct timers_ops bigops = { big_send, big_expired };
	struct rec r = { .ordered = true };
	struct timers ts;
	char scope[32];
	unsigned i, k;

	(void)state;
	timers_init(&ts);
	for (i = 0; i < 100000; i++) {
		k = (i * 7919u) % 100000u;
		snprintf(scope, sizeof(scope), "train.py#%u", k % 1000);
		assert_int_equal(timers_set(&ts, (pid_t)k + 1, scope,
		    1000.0 + k / 10.0, 9), 0);
	}
	assert_int_equal(ts.n, 100000);
	assert_int_equal(timers_expire(&ts, 1000.0 + 4999.95, &bigops, &r),
	    50000);
	assert_true(r.ordered);
	assert_int_equal(ts.n, 50000);
	timers_free(&ts);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_replace_release),
		cmocka_unit_test(test_expire_kills_and_clears_pid),
		cmocka_unit_test(test_expire_signal_zero_clears_only_expired),
		cmocka_unit_test(test_expire_gone_pid),
		cmocka_unit_test(test_keep_pids),
		cmocka_unit_test(test_long_scope),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
