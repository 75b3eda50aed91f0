#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sig.h"

static void
test_from_name(void **state)
{
	(void)state;
	assert_int_equal(sig_from_name("SIGTERM"), SIGTERM);
	assert_int_equal(sig_from_name("TERM"), SIGTERM);
	assert_int_equal(sig_from_name("term"), SIGTERM);
	assert_int_equal(sig_from_name("sigTerm"), SIGTERM);
	assert_int_equal(sig_from_name("15"), SIGTERM);
	assert_int_equal(sig_from_name("SIGUSR1"), SIGUSR1);
	assert_int_equal(sig_from_name("usr2"), SIGUSR2);
	assert_int_equal(sig_from_name("KILL"), SIGKILL);
	assert_int_equal(sig_from_name("IOT"), SIGABRT);
	assert_int_equal(sig_from_name("SIGCLD"), SIGCHLD);
	assert_int_equal(sig_from_name("40"), 40);
	assert_int_equal(sig_from_name("SIG40"), 40);
	assert_int_equal(sig_from_name("0"), 0);
	assert_int_equal(sig_from_name(""), 0);
	assert_int_equal(sig_from_name("SIG"), 0);
	assert_int_equal(sig_from_name("bogus"), 0);
	assert_int_equal(sig_from_name("SIGTERMX"), 0);
	assert_int_equal(sig_from_name("15x"), 0);
	assert_int_equal(sig_from_name("-15"), 0);
	assert_int_equal(sig_from_name("1000"), 0);
}

static void
test_name(void **state)
{
	const char *a, *b;

	(void)state;
	assert_string_equal(sig_name(SIGTERM), "SIGTERM");
	assert_string_equal(sig_name(SIGHUP), "SIGHUP");
	assert_string_equal(sig_name(SIGUSR2), "SIGUSR2");
	assert_string_equal(sig_name(40), "SIG40");
	assert_string_equal(sig_name(0), "SIG0");
	assert_string_equal(sig_name(-3), "SIG-3");
	assert_string_equal(sig_name(1000), "SIG1000");
	/* Known names stay valid across calls. */
	a = sig_name(SIGINT);
	b = sig_name(SIGQUIT);
	assert_string_equal(a, "SIGINT");
	assert_string_equal(b, "SIGQUIT");
}

static void
test_round_trip(void **state)
{
	char num[16];
	int signo;

	(void)state;
	for (signo = 1; signo < NSIG; signo++) {
		assert_int_equal(sig_from_name(sig_name(signo)), signo);
		snprintf(num, sizeof(num), "%d", signo);
		assert_int_equal(sig_from_name(num), signo);
	}
}

static void
test_letters(void **state)
{
	static const struct {
		int	signo;
		char	letter;
	} want[] = {
		{ SIGTERM, 't' }, { SIGKILL, 'k' }, { SIGHUP, 'h' },
		{ SIGALRM, 'a' }, { SIGINT, 'i' }, { SIGQUIT, 'q' },
		{ SIGUSR1, '1' }, { SIGUSR2, '2' }, { SIGSTOP, 'p' },
		{ SIGCONT, 'c' },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(sig_to_letter(want[i].signo), want[i].letter);
	assert_int_equal(sig_to_letter(SIGSEGV), 0);
	assert_int_equal(sig_to_letter(SIGCHLD), 0);
	assert_int_equal(sig_to_letter(0), 0);
}

static char	warned[256];
static int	nwarned;

static void
record_warning(const char *name)
{
	strlcat(warned, name, sizeof(warned));
	strlcat(warned, ";", sizeof(warned));
	nwarned++;
}

static void
test_parse_list(void **state)
{
	int sigs[4];

	(void)state;
	warned[0] = '\0';
	nwarned = 0;
	assert_int_equal(sig_parse_list("SIGTERM, bogus ,usr1,,2,TERM,x",
	    sigs, 4, record_warning), 3);
	assert_int_equal(sigs[0], SIGTERM);
	assert_int_equal(sigs[1], SIGUSR1);
	assert_int_equal(sigs[2], SIGINT);
	assert_int_equal(nwarned, 2);
	assert_string_equal(warned, "bogus;x;");

	assert_int_equal(sig_parse_list("", sigs, 4, record_warning), 0);
	assert_int_equal(sig_parse_list("nope", sigs, 4, NULL), 0);
	assert_int_equal(sig_parse_list("HUP,INT,QUIT,TERM", sigs, 4, NULL),
	    4);
	assert_int_equal(sigs[3], SIGTERM);
	assert_int_equal(sig_parse_list("HUP,INT,QUIT,TERM,USR1", sigs, 4,
	    NULL), -1);
	assert_int_equal(nwarned, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_name),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_letters),
		cmocka_unit_test(test_parse_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
