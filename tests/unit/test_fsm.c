/*
 * Every control letter against every state of the group, and what follows
 * every kind of stop: supervisor/core/fsm.c, the decisions esv-supervise acts on.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/core/fsm.h"

static const char *const state_names[G_NSTATES] = {
	"down", "running", "stopping", "backoff", "succeeded", "failed",
	"joining", "finishing" };

/*
 * One row per letter: the effect in each state, in enum order
 * (down running stopping backoff succeeded failed joining finishing).
 * N none, W show the new wish, S start, T stop, G signal, D down now,
 * X exit now.
 */
static const struct {
	unsigned char	 letter;
	const char	*effects;
	int		 signo;		/* of T and G */
	enum stop_reason why;		/* of T */
	char		 want;
	bool		 want_exit;
} table[] = {
	{ 'u', "SWWWWWWW", 0, STOP_NONE, 'u', false },
	{ 'o', "SWWWWWWW", 0, STOP_NONE, 'o', false },
	{ 'd', "WTWDWWDW", SIGTERM, STOP_DOWN, 'd', false },
	{ 'x', "XTNXXXXX", SIGTERM, STOP_EXIT, 0, true },
	{ 't', "NTNNNNNN", SIGTERM, STOP_MANUAL, 0, false },
	{ 'r', "NTNNNNNN", SIGTERM, STOP_MANUAL, 0, false },
	{ 'k', "NTGNNNNN", SIGKILL, STOP_MANUAL, 0, false },
	{ 'p', "GGGGGGGG", SIGSTOP, STOP_NONE, 0, false },
	{ 'c', "GGGGGGGG", SIGCONT, STOP_NONE, 0, false },
	{ 'h', "GGGGGGGG", SIGHUP, STOP_NONE, 0, false },
	{ 'a', "GGGGGGGG", SIGALRM, STOP_NONE, 0, false },
	{ 'i', "GGGGGGGG", SIGINT, STOP_NONE, 0, false },
	{ 'q', "GGGGGGGG", SIGQUIT, STOP_NONE, 0, false },
	{ '1', "GGGGGGGG", SIGUSR1, STOP_NONE, 0, false },
	{ '2', "GGGGGGGG", SIGUSR2, STOP_NONE, 0, false },
	{ 'l', "LLLLLLLL", 0, STOP_NONE, 0, false },
	{ 'z', "NNNNNNNN", 0, STOP_NONE, 0, false },
	{ 0, "NNNNNNNN", 0, STOP_NONE, 0, false },
	{ 0xff, "NNNNNNNN", 0, STOP_NONE, 0, false },
};

static enum ctl_effect
effect_of(char c)
{
	switch (c) {
	case 'W': return CTL_SHOW;
	case 'S': return CTL_START;
	case 'T': return CTL_STOP;
	case 'G': return CTL_SIGNAL;
	case 'D': return CTL_DOWN;
	case 'X': return CTL_EXIT;
	case 'L': return CTL_RELOAD;
	}
	return CTL_NONE;
}

static void
test_letters(void **state)
{
	struct ctl_decision d;
	enum ctl_effect want;
	size_t i;
	int st;

	(void)state;
	/* Every letter the FIFO takes has its row. */
	for (i = 0; i < strlen(CONTROL_LETTERS); i++) {
		size_t j;

		for (j = 0; j < sizeof(table) / sizeof(table[0]); j++)
			if (table[j].letter == (unsigned char)CONTROL_LETTERS[i])
				break;
		if (j == sizeof(table) / sizeof(table[0]))
			fail_msg("letter %c has no row", CONTROL_LETTERS[i]);
	}
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		assert_int_equal(fsm_known_letter(table[i].letter),
		    table[i].effects[1] != 'N');
		for (st = 0; st < G_NSTATES; st++) {
			d = fsm_control(st, table[i].letter);
			want = effect_of(table[i].effects[st]);
			if (d.effect != want)
				fail_msg("letter 0x%02x in %s: effect %d, "
				    "wanted %d", table[i].letter,
				    state_names[st], d.effect, want);
			if ((want == CTL_STOP || want == CTL_SIGNAL) &&
			    d.signo != table[i].signo)
				fail_msg("letter %c in %s: signal %d, wanted "
				    "%d", table[i].letter, state_names[st],
				    d.signo, table[i].signo);
			if (want == CTL_STOP && d.why != table[i].why)
				fail_msg("letter %c in %s: reason %d, wanted "
				    "%d", table[i].letter, state_names[st],
				    d.why, table[i].why);
			/* The wish is recorded whatever the state. */
			assert_int_equal(d.want, table[i].want);
			assert_int_equal(d.want_exit, table[i].want_exit);
			assert_int_equal(d.paused, table[i].letter == 'p' ? 1 :
			    table[i].letter == 'c' ? 0 : -1);
		}
	}
}

static void
test_after_stop(void **state)
{
	static const struct {
		enum stop_reason why;
		char		 want;
		bool		 want_exit;
		unsigned	 restarts, max;
		enum next_step	 next;
	} cases[] = {
		/* A failure restarts while the budget lasts. */
		{ STOP_FAILURE, 'u', false, 0, 3, NEXT_RESTART },
		{ STOP_FAILURE, 'u', false, 3, 3, NEXT_FAILED },
		{ STOP_FAILURE, 'o', false, 0, 3, NEXT_FAILED },
		/* `down` while stopping after a failure: down, not spent. */
		{ STOP_FAILURE, 'd', false, 0, 3, NEXT_DOWN },
		{ STOP_FAILURE, 'd', false, 3, 3, NEXT_DOWN },
		{ STOP_FAILURE, 'u', true, 0, 3, NEXT_EXIT },
		{ STOP_DOWN, 'd', false, 0, 3, NEXT_DOWN },
		/* `up` after `down` while still stopping: a new attempt. */
		{ STOP_DOWN, 'u', false, 0, 3, NEXT_START },
		{ STOP_MANUAL, 'u', false, 3, 3, NEXT_START },
		{ STOP_MANUAL, 'o', false, 0, 0, NEXT_START },
		{ STOP_MANUAL, 'd', false, 0, 3, NEXT_DOWN },
		{ STOP_MEMBERSHIP, 'u', false, 3, 3, NEXT_START },
		{ STOP_MEMBERSHIP, 'd', false, 0, 3, NEXT_DOWN },
		{ STOP_SIGNAL, 'u', false, 0, 3, NEXT_EXIT },
		{ STOP_SIGNAL, 'd', false, 0, 3, NEXT_EXIT },
		{ STOP_EXIT, 'd', true, 0, 3, NEXT_EXIT },
		{ STOP_MANUAL, 'u', true, 0, 3, NEXT_EXIT },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (fsm_after_stop(cases[i].why, cases[i].want,
		    cases[i].want_exit, cases[i].restarts, cases[i].max) !=
		    cases[i].next)
			fail_msg("case %zu: wanted %d", i, cases[i].next);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_letters),
		cmocka_unit_test(test_after_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
