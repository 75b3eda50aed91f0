#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atomicfile.h"
#include "jobstatus.h"

static char jobdir[64];

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

static int
setup(void **state)
{
	(void)state;
	strlcpy(jobdir, "/tmp/test_jobstatus.XXXXXX", sizeof(jobdir));
	return mkdtemp(jobdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	return remove_tree(jobdir);
}

static void
put_job(void)
{
	put("supervise/state",
	    "state=running\nwant=up\npaused=0\nsince=1000.5\n"
	    "supervisor_pid=1234\nattempt=2\nrestart_count=1\n"
	    "max_restarts=3\nmanual_restarts=0\nrun_id=007\n"
	    "group_rank=0\ngroup_world_size=2\nworld_size=4\n"
	    "master_addr=127.0.0.1\nmaster_port=29500\n"
	    "pids=12 13\npgids=\nnext_start=\nexit_code=\nrdzv_round=3\n"
	    "rdzv_endpoint=10.0.0.1:29400\nrdzv_connected=0\nnodes_waiting=1\n"
	    "Bad Key=x\nnoequals\n");
	put("workers/10/state", "state=failed\nrank=10\nexit_code=3\n"
	    "signal=\nexited=1010.25\n");
	put("workers/2/state", "state=running\nlocal_rank=2\nrank=2\n"
	    "pid=12\nstarted=1005\n");
	put("workers/01/state", "state=bogus\n");
	put("workers/tmp/state", "state=bogus\n");
	put("workers/3/other", "no state file here\n");
}

static void
test_types(void **state)
{
	json_t *st, *job, *w;

	(void)state;
	put_job();
	assert_non_null(st = jobstatus_load(jobdir));
	assert_string_equal(json_string_value(json_object_get(st, "jobdir")),
	    jobdir);
	assert_string_equal(json_string_value(json_object_get(st,
	    "supervisor")), "not running");
	job = json_object_get(st, "job");
	assert_true(json_is_object(job));
	assert_string_equal(json_string_value(json_object_get(job, "state")),
	    "running");
	/* A run id that looks like a number stays the name it is. */
	assert_string_equal(json_string_value(json_object_get(job, "run_id")),
	    "007");
	assert_true(json_is_integer(json_object_get(job, "attempt")));
	assert_int_equal(json_integer_value(json_object_get(job, "attempt")), 2);
	assert_true(json_is_real(json_object_get(job, "since")));
	assert_true(json_real_value(json_object_get(job, "since")) == 1000.5);
	assert_true(json_is_null(json_object_get(job, "exit_code")));
	assert_true(json_is_null(json_object_get(job, "next_start")));
	assert_int_equal(json_integer_value(json_object_get(job, "rdzv_round")), 3);
	assert_int_equal(json_array_size(json_object_get(job, "pids")), 2);
	assert_int_equal(json_integer_value(json_array_get(
	    json_object_get(job, "pids"), 1)), 13);
	assert_true(json_is_array(json_object_get(job, "pgids")));
	assert_int_equal(json_array_size(json_object_get(job, "pgids")), 0);
	assert_null(json_object_get(job, "Bad Key"));

	/* Workers in local-rank order, not directory order; 01, tmp, 3 out. */
	assert_int_equal(json_array_size(json_object_get(st, "workers")), 2);
	w = json_array_get(json_object_get(st, "workers"), 0);
	assert_int_equal(json_integer_value(json_object_get(w, "local_rank")),
	    2);
	w = json_array_get(json_object_get(st, "workers"), 1);
	/* local_rank filled in from the directory name when missing. */
	assert_int_equal(json_integer_value(json_object_get(w, "local_rank")),
	    10);
	assert_int_equal(json_integer_value(json_object_get(w, "exit_code")),
	    3);
	assert_true(json_is_null(json_object_get(w, "signal")));
	json_decref(st);
}

static char *
print(const json_t *st, int workers)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	assert_non_null(fp = open_memstream(&buf, &len));
	jobstatus_print_job(fp, st, 1012.9);
	if (workers)
		jobstatus_print_workers(fp, st, 1012.9);
	fclose(fp);
	return buf;
}

static void
test_human(void **state)
{
	char path[PATH_MAX], want[1024], *text;
	json_t *st;
	int fd;

	(void)state;
	put_job();
	snprintf(path, sizeof(path), "%s/supervise/ok", jobdir);
	assert_int_equal(mkfifo(path, 0600), 0);

	/* No reader on ok: the last recorded state. */
	assert_int_equal(jobstatus_probe(jobdir), 0);
	assert_non_null(st = jobstatus_load(jobdir));
	text = print(st, 0);
	snprintf(want, sizeof(want), "%s: not running, last state: running "
	    "12s, attempt 2, restarts 1/3, node 0/2, world 4, "
	    "master 127.0.0.1:29500, rendezvous 10.0.0.1:29400 (disconnected) "
	    "round 3, nodes waiting 1, want up\n"
	    "  bad file: supervise/state: line 24: not key=value\n", jobdir);
	assert_string_equal(text, want);
	free(text);
	json_decref(st);

	/* A reader, as a live supervisor holds. */
	assert_true((fd = open(path, O_RDONLY | O_NONBLOCK)) != -1);
	assert_int_equal(jobstatus_probe(jobdir), 1);
	assert_non_null(st = jobstatus_load(jobdir));
	text = print(st, 1);
	snprintf(want, sizeof(want), "%s: running (pid 1234) 12s, attempt 2, "
	    "restarts 1/3, node 0/2, world 4, master 127.0.0.1:29500, "
	    "rendezvous 10.0.0.1:29400 (disconnected) round 3, nodes waiting 1, "
	    "want up\n"
	    "  bad file: supervise/state: line 24: not key=value\n"
	    "  worker 2: running, rank 2, pid 12, 7s\n"
	    "  worker 10: failed, rank 10, exit 3\n", jobdir);
	assert_string_equal(text, want);
	free(text);
	json_decref(st);
	close(fd);
	assert_int_equal(jobstatus_probe(jobdir), 0);
}

static void
test_missing(void **state)
{
	char path[PATH_MAX + 8], *text;
	json_t *st;

	(void)state;
	snprintf(path, sizeof(path), "%s/nope", jobdir);
	assert_int_equal(jobstatus_probe(path), 0);
	assert_non_null(st = jobstatus_load(path));
	assert_true(json_is_null(json_object_get(st, "job")));
	assert_int_equal(json_array_size(json_object_get(st, "workers")), 0);
	text = print(st, 1);
	snprintf(path, sizeof(path), "%s/nope: not running\n", jobdir);
	assert_string_equal(text, path);
	free(text);
	json_decref(st);
}

/* Load, dump and print: none may fail, whatever the files hold. */
static char *
load_and_print(json_t **stp)
{
	json_t *st;
	char *dump;

	assert_non_null(st = jobstatus_load(jobdir));
	assert_non_null(dump = json_dumps(st, 0));
	free(dump);
	*stp = st;
	return print(st, 1);
}

/*
 * State files a full disk truncated, an operator edited or something
 * else overwrote: status still says what it can, and which file is bad.
 */
static void
test_corrupt(void **state)
{
	static const struct {
		const char	*text;
		const char	*said;		/* NULL: nothing is wrong */
		const char	*shown;		/* in the status line */
	} cases[] = {
		{ "", "supervise/state: empty", "last state: unknown\n" },
		{ "state=running\nsin", "supervise/state: line 2: truncated: "
		    "no newline at the end", "last state: running\n" },
		{ "state=running\n\0\1\2garbage\n", "supervise/state: binary: "
		    "a NUL byte at offset 14", "last state: running\n" },
		{ "state=run\xffning\n", "supervise/state: line 1: not UTF-8",
		    "last state: run\xef\xbf\xbdning\n" },
		{ "\x7f" "ELF\2\1\1\n", "supervise/state: line 1: not key=value",
		    "last state: unknown" },
		/* Not finite: kept as text, and no "since" figure. */
		{ "state=running\nsince=" "1" "000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "00000000000000000.5\n", NULL, "last state: running\n" },
		/* Finite but far beyond long long: clamped, not undefined. */
		{ "state=running\nsince=-1" "0000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    ".0\nnext_start=1" "00000000000000000000000000000000000000000.0\n",
		    NULL, "last state: running 9223372036854775807s, "
		    "restart in 9223372036854775807s" },
		{ "state=running\nsince=1e999\nattempt=99999999999999999999999\n",
		    NULL, "last state: running, attempt 99999999999999999999999" },
	};
	char path[PATH_MAX], *text;
	const char *said;
	json_t *st, *errors;
	size_t i, len;
	int fd;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "%s/supervise/state", jobdir);
		put("supervise/x", "");
		assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC,
		    0644)) != -1);
		/* The texts may hold NULs: their length is their array's. */
		len = strlen(cases[i].text);
		if (strncmp(cases[i].said ? cases[i].said : "",
		    "supervise/state: binary", 23) == 0)
			len += 1 + strlen(cases[i].text + len + 1) ;
		assert_true(write(fd, cases[i].text, len) == (ssize_t)len);
		close(fd);
		text = load_and_print(&st);
		if (strstr(text, cases[i].shown) == NULL)
			fail_msg("case %zu: %s: wanted %s", i, text,
			    cases[i].shown);
		errors = json_object_get(st, "errors");
		said = json_string_value(json_array_get(errors, 0));
		if (cases[i].said == NULL && said != NULL)
			fail_msg("case %zu: said %s", i, said);
		if (cases[i].said != NULL && (said == NULL ||
		    strcmp(said, cases[i].said) != 0))
			fail_msg("case %zu: said %s, wanted %s", i,
			    said ? said : "nothing", cases[i].said);
		if (said != NULL && strstr(text, said) == NULL)
			fail_msg("case %zu: %s does not say %s", i, text, said);
		free(text);
		json_decref(st);
	}

	/* Not a file, and too big: named; the workers are still shown. */
	put("workers/0/state", "state=running\nrank=0\n");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	text = load_and_print(&st);
	assert_non_null(strstr(text, "bad file: supervise/state: not a regular "
	    "file\n"));
	assert_non_null(strstr(text, "  worker 0: running, rank 0\n"));
	free(text);
	json_decref(st);
	assert_int_equal(rmdir(path), 0);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0644)) != -1);
	assert_int_equal(ftruncate(fd, 17 * 1024 * 1024), 0);
	close(fd);
	text = load_and_print(&st);
	assert_non_null(strstr(text, "bad file: supervise/state: too big for a "
	    "state file\n"));
	free(text);
	json_decref(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_human, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
