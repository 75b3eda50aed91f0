/*
 * The control directory's schema (lib/ctlschema.h) against its one reader
 * (lib/jobstatus.c): every key the supervisor can write (it writes by the
 * schema's names only) is read back, with the type the schema gives it.
 */
#include <sys/stat.h>

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "jobstatus.h"

static char jobdir[64];

static int
setup(void **state)
{
	(void)state;
	strlcpy(jobdir, "/tmp/test_ctlschema.XXXXXX", sizeof(jobdir));
	return mkdtemp(jobdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	return remove_tree(jobdir);
}

static void
put(const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX], *slash;

	snprintf(path, sizeof(path), "%s/%s", jobdir, rel);
	strlcpy(dir, path, sizeof(dir));
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	assert_int_equal(mkdir_p(dir, 0755), 0);
	assert_int_equal(atomic_write(path, text, strlen(text), 0644), 0);
}

/* A value of each type that a careless reader would get wrong. */
static const char *
sample(enum ctl_type t)
{
	switch (t) {
	case CTL_NAME:
		return "42";		/* a name, not a number */
	case CTL_PATH:
		return "/run/esv/7";
	case CTL_INT:
		return "7";
	case CTL_TIME:
		return "1700000000.250000";
	case CTL_PIDS:
		return "12 13";
	}
	return "";
}

static void
check_type(const json_t *v, enum ctl_type t, const char *key)
{
	if (v == NULL)
		fail_msg("key %s not read back", key);
	switch (t) {
	case CTL_NAME:
	case CTL_PATH:
		if (!json_is_string(v))
			fail_msg("key %s: not a string", key);
		break;
	case CTL_INT:
		if (!json_is_integer(v) || json_integer_value(v) != 7)
			fail_msg("key %s: not the integer 7", key);
		break;
	case CTL_TIME:
		if (!json_is_real(v) || json_real_value(v) != 1700000000.25)
			fail_msg("key %s: not the time", key);
		break;
	case CTL_PIDS:
		if (!json_is_array(v) || json_array_size(v) != 2 ||
		    json_integer_value(json_array_get(v, 1)) != 13)
			fail_msg("key %s: not the pid list [12, 13]", key);
		break;
	}
}

/* Write every key of a table with its sample (or empty) value. */
static void
put_all(const char *rel, const struct ctl_key *keys, size_t n, bool empty)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;

	assert_non_null(f = open_memstream(&text, &len));
	for (i = 0; i < n; i++)
		fprintf(f, "%s=%s\n", keys[i].name,
		    empty ? "" : sample(keys[i].type));
	assert_int_equal(fclose(f), 0);
	put(rel, text);
	free(text);
}

static void
test_unique_names(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < JK_COUNT; i++) {
		assert_true(strspn(ctl_job_keys[i].name,
		    "abcdefghijklmnopqrstuvwxyz_") ==
		    strlen(ctl_job_keys[i].name));
		for (j = i + 1; j < JK_COUNT; j++)
			assert_string_not_equal(ctl_job_keys[i].name,
			    ctl_job_keys[j].name);
		assert_ptr_equal(ctl_job_lookup(ctl_job_keys[i].name),
		    &ctl_job_keys[i]);
	}
	for (i = 0; i < WK_COUNT; i++) {
		for (j = i + 1; j < WK_COUNT; j++)
			assert_string_not_equal(ctl_worker_keys[i].name,
			    ctl_worker_keys[j].name);
		assert_ptr_equal(ctl_worker_lookup(ctl_worker_keys[i].name),
		    &ctl_worker_keys[i]);
	}
	assert_null(ctl_job_lookup("no_such_key"));
	assert_string_equal(ctl_job_key(JK_STATE), "state");
	assert_string_equal(ctl_worker_key(WK_ERROR_FILE), "error_file");
}

static void
test_every_key_read_back(void **state)
{
	const json_t *job, *w;
	json_t *st;
	size_t i;

	(void)state;
	put_all(ESV_STATE, ctl_job_keys, JK_COUNT, false);
	put_all("workers/0/state", ctl_worker_keys, WK_COUNT, false);
	assert_non_null(st = jobstatus_load_files(jobdir));
	assert_int_equal(json_array_size(json_object_get(st, "errors")), 0);
	job = json_object_get(st, "job");
	assert_true(json_is_object(job));
	assert_int_equal(json_object_size(job), JK_COUNT);
	for (i = 0; i < JK_COUNT; i++)
		check_type(json_object_get(job, ctl_job_keys[i].name),
		    ctl_job_keys[i].type, ctl_job_keys[i].name);
	w = json_array_get(json_object_get(st, "workers"), 0);
	assert_true(json_is_object(w));
	assert_int_equal(json_object_size(w), WK_COUNT);
	for (i = 0; i < WK_COUNT; i++)
		check_type(json_object_get(w, ctl_worker_keys[i].name),
		    ctl_worker_keys[i].type, ctl_worker_keys[i].name);
	json_decref(st);
}

static void
test_empty_is_null(void **state)
{
	const json_t *job;
	json_t *st;
	size_t i;

	(void)state;
	put_all(ESV_STATE, ctl_job_keys, JK_COUNT, true);
	assert_non_null(st = jobstatus_load_files(jobdir));
	job = json_object_get(st, "job");
	for (i = 0; i < JK_COUNT; i++) {
		const json_t *v = json_object_get(job, ctl_job_keys[i].name);

		/* A pid list with no pid is an empty list, all else none. */
		if (ctl_job_keys[i].type == CTL_PIDS)
			assert_true(json_is_array(v) && json_array_size(v) == 0);
		else
			assert_true(json_is_null(v));
	}
	json_decref(st);
}

/* Every key and state name is in esv-control(5), where users look. */
static void
test_documented(void **state)
{
	char path[PATH_MAX], line[1024], *man = NULL, *tok, *save;
	size_t len = 0, i;
	FILE *f, *mem;

	(void)state;
	snprintf(path, sizeof(path), "%s/../../man/esv-control.5",
	    ESV_SOURCE_DIR);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(mem = open_memstream(&man, &len));
	/* Each ".It Cm a , b" and ".Cm a" names its words; keep " a b ". */
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, ".It Cm ", 7) != 0 &&
		    strncmp(line, ".Cm ", 4) != 0)
			continue;
		for (tok = strtok_r(line + 3, " ,\n", &save); tok != NULL;
		    tok = strtok_r(NULL, " ,\n", &save))
			fprintf(mem, " %s ", tok);
	}
	fclose(f);
	assert_int_equal(fclose(mem), 0);
#define DOCUMENTED(name) do {						\
	char word[128];							\
	snprintf(word, sizeof(word), " %s ", (name));			\
	if (strstr(man, word) == NULL)					\
		fail_msg("%s is not in esv-control(5)", (name));	\
} while (0)
	for (i = 0; i < JK_COUNT; i++)
		DOCUMENTED(ctl_job_keys[i].name);
	for (i = 0; i < WK_COUNT; i++)
		DOCUMENTED(ctl_worker_keys[i].name);
	for (i = 0; i < SK_COUNT; i++)
		DOCUMENTED(ctl_store_keys[i].name);
	for (i = 0; ctl_group_states[i] != NULL; i++)
		DOCUMENTED(ctl_group_states[i]);
	for (i = 0; ctl_worker_states[i] != NULL; i++)
		DOCUMENTED(ctl_worker_states[i]);
#undef DOCUMENTED
	free(man);
}

static void
test_error_path(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(ctl_error_path(buf, sizeof(buf), "/j/logs/a1", 3), 0);
	assert_string_equal(buf, "/j/logs/a1/3/error.json");
	assert_int_equal(ctl_error_path(buf, sizeof(buf), NULL, 12), 0);
	assert_string_equal(buf, "12/error.json");
	assert_int_equal(ctl_error_path(buf, 8, "/j/logs/a1", 3), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unique_names),
		cmocka_unit_test_setup_teardown(test_every_key_read_back, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_empty_is_null, setup,
		    teardown),
		cmocka_unit_test(test_documented),
		cmocka_unit_test(test_error_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
