#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/report/statusrec.h"

/*
 * runit's TAI64 label: 2^62 + 10 + 1700000000 is
 * 0x400000006553f10a; 123456789 ns is 0x075bcd15; the pid is stored
 * little-endian.
 */
static const uint8_t known[RUNIT_STATUS_LEN] = {
	0x40, 0x00, 0x00, 0x00, 0x65, 0x53, 0xf1, 0x0a,
	0x07, 0x5b, 0xcd, 0x15,
	0x04, 0x03, 0x02, 0x01,
	1, 'u', 1, RUNIT_RUN,
};

static struct runit_status
known_status(void)
{
	struct runit_status st;

	memset(&st, 0, sizeof(st));
	st.since.tv_sec = 1700000000;
	st.since.tv_nsec = 123456789;
	st.pid = 0x01020304;
	st.paused = 1;
	st.want = 'u';
	st.got_term = 1;
	st.state = RUNIT_RUN;
	return st;
}

static void
test_pack_exact_bytes(void **state)
{
	struct runit_status st = known_status();
	uint8_t out[RUNIT_STATUS_LEN];

	(void)state;
	memset(out, 0xee, sizeof(out));
	runit_status_pack(out, &st);
	assert_memory_equal(out, known, RUNIT_STATUS_LEN);
}

static void
test_unpack_known(void **state)
{
	struct runit_status st;

	(void)state;
	memset(&st, 0xee, sizeof(st));
	assert_int_equal(runit_status_unpack(known, sizeof(known), &st), 0);
	assert_int_equal(st.since.tv_sec, 1700000000);
	assert_int_equal(st.since.tv_nsec, 123456789);
	assert_int_equal(st.pid, 0x01020304);
	assert_int_equal(st.paused, 1);
	assert_int_equal(st.want, 'u');
	assert_int_equal(st.got_term, 1);
	assert_int_equal(st.state, RUNIT_RUN);
}

static void
roundtrip(const struct runit_status *in)
{
	struct runit_status out;
	uint8_t buf[RUNIT_STATUS_LEN];

	runit_status_pack(buf, in);
	assert_int_equal(runit_status_unpack(buf, sizeof(buf), &out), 0);
	assert_int_equal(out.since.tv_sec, in->since.tv_sec);
	assert_int_equal(out.since.tv_nsec, in->since.tv_nsec);
	assert_int_equal(out.pid, in->pid);
	assert_int_equal(out.paused, in->paused);
	assert_int_equal(out.want, in->want);
	assert_int_equal(out.got_term, in->got_term);
	assert_int_equal(out.state, in->state);
}

static void
test_roundtrip(void **state)
{
	struct runit_status st = known_status();

	(void)state;
	roundtrip(&st);

	/* Down, want down, the epoch, nsec at its largest. */
	memset(&st, 0, sizeof(st));
	st.since.tv_nsec = 999999999;
	st.want = 'd';
	st.state = RUNIT_DOWN;
	roundtrip(&st);

	/* Finishing, a pid with every byte distinct and the top bit set. */
	st.since.tv_sec = 4102444800LL;	/* 2100-01-01, past 2^31 */
	st.since.tv_nsec = 1;
	st.pid = 0xfedcba98;
	st.want = 'u';
	st.state = RUNIT_FINISH;
	roundtrip(&st);
}

static void
test_wrong_length(void **state)
{
	uint8_t big[64];
	struct runit_status st;

	(void)state;
	memset(big, 0, sizeof(big));
	memcpy(big, known, sizeof(known));
	assert_int_equal(runit_status_unpack(big, 0, &st), -1);
	assert_int_equal(runit_status_unpack(big, 18, &st), -1); /* daemontools */
	assert_int_equal(runit_status_unpack(big, 19, &st), -1);
	assert_int_equal(runit_status_unpack(big, 21, &st), -1);
	assert_int_equal(runit_status_unpack(big, 35, &st), -1); /* s6 */
	assert_int_equal(runit_status_unpack(big, 20, &st), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_exact_bytes),
		cmocka_unit_test(test_unpack_known),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_wrong_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
