/*
 * esv-healthd's /metrics (healthd/metrics.c) from a status object as the
 * job's files give it: every line is a comment or "name{labels} value"
 * with a finite value, every family has its HELP and TYPE, the job's
 * figures come through, and a state file's garbage never leaks into the
 * exposition.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../healthd/healthd.h"

static json_t *
status(const char *job)
{
	json_t *st;
	json_error_t err;

	st = json_loads(job, 0, &err);
	if (st == NULL)
		fail_msg("%s: %s", job, err.text);
	return st;
}

/* Check the format of every line; the value of sample name, or NAN. */
static double
check_and_get(const char *text, const char *name)
{
	char *copy, *line, *save, *sp, *end, typed[128] = "";
	double v, found = NAN;

	assert_non_null(copy = strdup(text));
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		if (strncmp(line, "# TYPE ", 7) == 0) {
			snprintf(typed, sizeof(typed), "%.*s",
			    (int)strcspn(line + 7, " "), line + 7);
			continue;
		}
		assert_true(line[0] != '#');
		/* A sample of the family whose TYPE came last. */
		if (strncmp(line, typed, strlen(typed)) != 0)
			fail_msg("sample without its TYPE: %s", line);
		assert_non_null(sp = strrchr(line, ' '));
		v = strtod(sp + 1, &end);
		if (*end != '\0' || !isfinite(v))
			fail_msg("not a finite value: %s", line);
		if ((size_t)(sp - line) == strlen(name) &&
		    strncmp(line, name, sp - line) == 0)
			found = v;
	}
	free(copy);
	return found;
}

static void
test_values(void **state)
{
	json_t *st;
	size_t len;
	char *m;

	(void)state;
	st = status("{\"supervisor\": \"running\", \"job\": {\"state\": "
	    "\"running\", \"restart_count\": 2, \"max_restarts\": 3, "
	    "\"attempt\": 4, \"world_size\": 8, \"worker_failures_exit\": 5, "
	    "\"worker_failures_spawn\": 1, \"events_lost\": 7}, \"workers\": "
	    "[{\"state\": \"running\"}, {\"state\": \"failed\"}], \"errors\": []}");
	assert_non_null(m = metrics_render(st, NULL, HEALTHY, 0.25, &len));
	assert_int_equal(strlen(m), len);
	assert_true(check_and_get(m, "esv_supervisor_up") == 1);
	assert_true(check_and_get(m, "esv_healthy") == 1);
	assert_true(check_and_get(m, "esv_starting") == 0);
	assert_true(check_and_get(m, "esv_restarts_total") == 2);
	assert_true(check_and_get(m, "esv_group_starts_total") == 4);
	assert_true(check_and_get(m, "esv_events_lost_total") == 7);
	assert_true(check_and_get(m, "esv_workers{state=\"running\"}") == 1);
	assert_true(check_and_get(m, "esv_workers{state=\"failed\"}") == 1);
	assert_true(check_and_get(m,
	    "esv_group_state{state=\"running\"}") == 1);
	assert_true(check_and_get(m,
	    "esv_group_state{state=\"failed\"}") == 0);
	assert_true(check_and_get(m,
	    "esv_worker_failures_total{kind=\"exit\"}") == 5);
	assert_true(check_and_get(m, "esv_seconds_since_last_progress") ==
	    0.25);
	free(m);
	json_decref(st);
}

/* No state yet, and a state whose numbers are text: zeros, no garbage. */
static void
test_garbage(void **state)
{
	json_t *st;
	size_t len;
	char *m;

	(void)state;
	st = status("{\"supervisor\": \"not running\", \"job\": null, "
	    "\"workers\": [], \"errors\": []}");
	assert_non_null(m = metrics_render(st, NULL, UNHEALTHY, 1e300, &len));
	assert_true(check_and_get(m, "esv_supervisor_up") == 0);
	assert_true(check_and_get(m, "esv_healthy") == 0);
	assert_true(check_and_get(m, "esv_starting") == 0);
	assert_true(check_and_get(m, "esv_restarts_total") == 0);
	free(m);
	json_decref(st);
	st = status("{\"supervisor\": \"running\", \"job\": {\"state\": "
	    "\"x\\ny 1\", \"restart_count\": \"1e999\", \"attempt\": "
	    "\"\\u00e9\"}, \"workers\": [{\"state\": \"}{\"}], \"errors\": "
	    "[\"supervise/state: empty\"]}");
	assert_non_null(m = metrics_render(st, NULL, STARTING, 3, &len));
	assert_true(check_and_get(m, "esv_healthy") == 0);
	assert_true(check_and_get(m, "esv_starting") == 1);
	assert_true(check_and_get(m, "esv_restarts_total") == 0);
	assert_null(strstr(m, "x\ny"));
	assert_null(strstr(m, "}{"));
	free(m);
	json_decref(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
