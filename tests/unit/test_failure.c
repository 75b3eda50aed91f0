/*
 * The failure summary against real torch 1.13.  failure_golden_*.txt were
 * printed by torch's own ChildFailedError for the inputs built here:
 *
 *	cd tests/unit && TZ=UTC /usr/bin/python3 failure_golden.py
 *
 * That script holds the same error files, pids, timestamps and host names
 * as this file; keep both in step.
 */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atomicfile.h"
#include "../../supervisor/report/failure.h"
#include "utf8.h"

/* Where the goldens are: meson passes it; by hand, run from the top. */
#ifndef ESV_SOURCE_DIR
#define ESV_SOURCE_DIR "tests/unit"
#endif

#define NO_TRACEBACK "To enable traceback see: " \
	"https://pytorch.org/docs/stable/elastic/errors.html"

/* The error files of failure_golden.py, byte for byte as json.dump wrote. */
#define ERR0 "{\"message\": {\"message\": \"ValueError: boom from rank 0\", " \
	"\"extraInfo\": {\"py_callstack\": \"Traceback (most recent call " \
	"last):\\n  File \\\"train.py\\\", line 3, in <module>\\nValueError: " \
	"boom from rank 0\\n\", \"timestamp\": \"1700000100\"}}}"
#define ERR2 "{\"message\": \"plain text\\nsecond line\", " \
	"\"timestamp\": \"1700000200\"}"
#define E30 "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9" \
	"\\u00e9\\u00e9"
#define ERR3 "{\"message\": \"Gr\\u00f6\\u00dfe \\u2260 drei " E30 E30 E30 \
	"\", \"timestamp\": 1700000001}"

/* What torch's @record wrote for ERR0 and exit code 1 (dump_error_file). */
#define COPY0 "{\"message\": {\"message\": \"ValueError: boom from rank 0\", " \
	"\"extraInfo\": {\"py_callstack\": \"Traceback (most recent call " \
	"last):\\n  File \\\"train.py\\\", line 3, in <module>\\nValueError: " \
	"boom from rank 0\\n\", \"timestamp\": \"1700000100\"}, " \
	"\"errorCode\": 1}}"

static char golden_dir[PATH_MAX];
static char scratch[] = "/tmp/esv-test-failure.XXXXXX";

static void
put_file(const char *path, const char *text)
{
	char dir[PATH_MAX], *slash;

	strlcpy(dir, path, sizeof(dir));
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		assert_int_equal(mkdir_p(dir, 0755), 0);
	}
	assert_int_equal(atomic_write(path, text, strlen(text), 0644), 0);
}

static char *
get_file(const char *path)
{
	char *buf;
	long len;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL)
		return NULL;
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	rewind(fp);
	buf = calloc(1, len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, fp), (size_t)len);
	fclose(fp);
	return buf;
}

static char *
golden(const char *name)
{
	char path[PATH_MAX * 2];
	char *text;

	snprintf(path, sizeof(path), "%s/%s", golden_dir, name);
	text = get_file(path);
	if (text == NULL)
		fail_msg("cannot read golden %s", path);
	return text;
}

static char *
summary(const char *name, const char *host, const struct worker_failure *fs,
    size_t n)
{
	char *out = NULL;
	size_t len;
	FILE *mf;

	mf = open_memstream(&out, &len);
	assert_non_null(mf);
	failure_summary_text(mf, name, host, fs, n);
	assert_int_equal(fclose(mf), 0);
	return out;
}

static void
expect_golden(const char *file, const char *name, const char *host,
    const struct worker_failure *fs, size_t n)
{
	char *want = golden(file), *got = summary(name, host, fs, n);

	assert_string_equal(got, want);
	free(want);
	free(got);
}

static int
setup(void **state)
{
	(void)state;
	if (realpath(ESV_SOURCE_DIR, golden_dir) == NULL)
		return -1;
	/* Goldens were made with TZ=UTC; paths print relative to here. */
	setenv("TZ", "UTC", 1);
	tzset();
	if (mkdtemp(scratch) == NULL || chdir(scratch) == -1)
		return -1;
	put_file("err/0.json", ERR0);
	put_file("err/2.json", ERR2);
	put_file("e/3.json", ERR3);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (chdir("/") == -1)
		return -1;
	return remove_tree(scratch);
}

static void
test_golden_single(void **state)
{
	struct worker_failure f;

	(void)state;
	assert_int_equal(failure_init(&f, 1, 1, 14139, 3, "err/1.json",
	    1796224999), 0);
	assert_null(f.error_file);
	assert_null(f.error_json);
	assert_string_equal(f.message, NO_TRACEBACK);
	assert_int_equal(f.timestamp, 1796224999);
	expect_golden("failure_golden_single.txt", "fail.py", "localhost",
	    &f, 1);
	failure_free(&f);
}

/* Given out of rank order: torch's dict is keyed by rank, so is the text. */
static void
test_golden_multi(void **state)
{
	struct worker_failure fs[3];

	(void)state;
	assert_int_equal(failure_init(&fs[0], 2, 2, 44, 1, "err/2.json", 9), 0);
	assert_int_equal(failure_init(&fs[1], 0, 0, 40, 1, "err/0.json", 9), 0);
	assert_int_equal(failure_init(&fs[2], 1, 1, 42, -9, "err/1.json",
	    1700000050), 0);
	assert_int_equal(fs[0].timestamp, 1700000200);
	assert_int_equal(fs[1].timestamp, 1700000100);
	assert_string_equal(fs[0].message, "plain text\nsecond line");
	assert_string_equal(fs[1].error_file, "err/0.json");
	assert_string_equal(fs[1].error_json, ERR0);
	/* The traceback line of a dict message is its py_callstack. */
	assert_string_equal(fs[1].message, "Traceback (most recent call "
	    "last):\n  File \"train.py\", line 3, in <module>\n"
	    "ValueError: boom from rank 0\n");
	assert_int_equal(failure_root_cause(fs, 3), 2);
	expect_golden("failure_golden_multi.txt", "train.py",
	    "node0.example.com", fs, 3);
	failure_free(&fs[0]);
	failure_free(&fs[1]);
	failure_free(&fs[2]);
}

/* Width counts code points, as Python's len(). */
static void
test_golden_narrow(void **state)
{
	struct worker_failure fs[2];

	(void)state;
	assert_int_equal(failure_init(&fs[0], 0, 2, 42, -9, "e/2.json",
	    1700000000), 0);
	assert_int_equal(failure_init(&fs[1], 1, 3, 43, 1, "e/3.json", 5), 0);
	assert_int_equal(fs[1].timestamp, 1700000001);
	expect_golden("failure_golden_narrow.txt", "w", "h", fs, 2);
	failure_free(&fs[0]);
	failure_free(&fs[1]);
}

static void
test_root_cause_ties(void **state)
{
	struct worker_failure fs[3];

	(void)state;
	memset(fs, 0, sizeof(fs));
	fs[0].rank = 5;
	fs[0].timestamp = 10;
	fs[1].rank = 3;
	fs[1].timestamp = 10;
	fs[2].rank = 1;
	fs[2].timestamp = 11;
	assert_int_equal(failure_root_cause(fs, 3), 1);
	fs[2].timestamp = 9;
	assert_int_equal(failure_root_cause(fs, 3), 2);
	assert_int_equal(failure_root_cause(fs, 1), 0);
}

static void
test_signal(void **state)
{
	struct worker_failure f;
	char *text;

	(void)state;
	assert_int_equal(failure_init(&f, 0, 0, 42, -9, NULL, 77), 0);
	assert_string_equal(f.message, "Signal 9 (SIGKILL) received by PID 42");
	assert_null(f.error_file);
	assert_int_equal(f.timestamp, 77);
	text = summary("x.py", "h", &f, 1);
	assert_non_null(strstr(text, "  exitcode  : -9 (pid: 42)\n"
	    "  error_file: <N/A>\n"
	    "  traceback : Signal 9 (SIGKILL) received by PID 42\n"));
	free(text);
	failure_free(&f);
	/* Python's name, not glibc's SIGPOLL. */
	assert_int_equal(failure_init(&f, 0, 0, 7, -29, NULL, 77), 0);
	assert_string_equal(f.message, "Signal 29 (SIGIO) received by PID 7");
	failure_free(&f);
}

static void
test_malformed(void **state)
{
	static const char bad[] = "{\"message\": {\"message\": \"x\",\n  oops";
	struct worker_failure f;
	char *text;

	(void)state;
	put_file("err/bad.json", bad);
	assert_int_equal(failure_init(&f, 0, 4, 9, 1, "err/bad.json", 123), 0);
	assert_string_equal(f.error_file, "err/bad.json");
	assert_string_equal(f.error_json, bad);
	assert_int_equal(f.timestamp, 123);
	assert_true(strncmp(f.message, "error file err/bad.json: ", 25) == 0);
	assert_non_null(strstr(f.message, " at line 2 column "));
	text = summary("x.py", "h", &f, 1);
	assert_non_null(strstr(text, "  error_file: err/bad.json\n"
	    "  traceback : error file err/bad.json: "));
	free(text);
	/* Not a dict: the copy is the bytes as they were. */
	assert_int_equal(failure_copy_root_cause("bad-copy.json", &f), 0);
	text = get_file("bad-copy.json");
	assert_string_equal(text, bad);
	free(text);
	failure_free(&f);

	put_file("err/list.json", "[1, 2]");
	assert_int_equal(failure_init(&f, 0, 4, 9, 1, "err/list.json", 5), 0);
	assert_string_equal(f.message, "error file err/list.json: "
	    "no \"message\" string or object");
	assert_int_equal(f.timestamp, 5);
	failure_free(&f);
}

/*
 * A bad escape, then a two-byte character: jansson's complaint quotes the
 * file and ends inside the character.  The record must still be written,
 * valid UTF-8, and so must the text summary be.
 */
static void
test_broken_utf8(void **state)
{
	static const char bad[] = "{\"message\": \"x\\\xc3\xa9\"}";
	static const char raw[] = "{\"message\": \"\xff\xfe\"}";
	struct worker_failure fs[3];
	json_error_t err;
	json_t *doc;
	char *text;

	(void)state;
	put_file("err/utf8.json", bad);
	put_file("err/raw.json", raw);
	put_file("err/\xe9t\xe9.json", "{\"message\": \"ok\"}");
	assert_int_equal(failure_init(&fs[0], 0, 0, 9, 1, "err/utf8.json", 5),
	    0);
	assert_int_equal(failure_init(&fs[1], 1, 1, 10, 1, "err/raw.json", 6),
	    0);
	assert_int_equal(failure_init(&fs[2], 2, 2, 11, 1,
	    "err/\xe9t\xe9.json", 7), 0);
	assert_non_null(strstr(fs[0].message, "error file err/utf8.json: "));
	assert_true(utf8_valid(fs[0].message, strlen(fs[0].message)));
	assert_true(utf8_valid(fs[1].message, strlen(fs[1].message)));
	assert_string_equal(fs[2].error_file, "err/\xef\xbf\xbdt\xef\xbf\xbd.json");

	text = failure_summary_json("x.py", "h\xff", fs, 3);
	assert_non_null(text);
	doc = json_loads(text, 0, &err);
	if (doc == NULL)
		fail_msg("%s: %s", text, err.text);
	free(text);
	assert_int_equal(json_array_size(json_object_get(doc, "failures")), 3);
	assert_string_equal(json_string_value(json_object_get(doc, "host")),
	    "h\xef\xbf\xbd");
	json_decref(doc);
	text = summary("x.py", "h", fs, 3);
	assert_true(utf8_valid(text, strlen(text)));
	free(text);
	failure_free(&fs[0]);
	failure_free(&fs[1]);
	failure_free(&fs[2]);
}

static void
test_string_form(void **state)
{
	struct worker_failure f;

	(void)state;
	put_file("err/s.json", "{\"message\": \"text\", \"timestamp\": \"123\"}");
	assert_int_equal(failure_init(&f, 0, 0, 9, 2, "err/s.json", 999), 0);
	assert_string_equal(f.message, "text");
	assert_int_equal(f.timestamp, 123);
	failure_free(&f);
	/* torch's default for a missing timestamp here is 0, not now. */
	put_file("err/s.json", "{\"message\": \"text\"}");
	assert_int_equal(failure_init(&f, 0, 0, 9, 2, "err/s.json", 999), 0);
	assert_int_equal(f.timestamp, 0);
	failure_free(&f);
	/* An empty message is falsy to torch: it makes one up. */
	put_file("err/s.json", "{\"message\": \"\", \"timestamp\": 5}");
	assert_int_equal(failure_init(&f, 0, 0, 9, 2, "err/s.json", 999), 0);
	assert_string_equal(f.message, NO_TRACEBACK);
	assert_int_equal(f.timestamp, 5);
	failure_free(&f);
}

static void
test_dict_without_callstack(void **state)
{
	struct worker_failure f;

	(void)state;
	put_file("err/d.json", "{\"message\": {\"message\": \"E: x\", "
	    "\"extraInfo\": {\"timestamp\": 1700000000}}}");
	assert_int_equal(failure_init(&f, 0, 0, 9, 2, "err/d.json", 999), 0);
	assert_string_equal(f.message, "E: x");
	assert_int_equal(f.timestamp, 1700000000);
	failure_free(&f);
	put_file("err/d.json", "{\"message\": {\"extraInfo\": {}}}");
	assert_int_equal(failure_init(&f, 0, 0, 9, 2, "err/d.json", 999), 0);
	assert_string_equal(f.message, "<N/A>");
	assert_int_equal(f.timestamp, 999);
	failure_free(&f);
}

static void
check_failure_json(const json_t *o, json_int_t rank, json_int_t exitcode)
{
	assert_true(json_is_object(o));
	assert_int_equal(json_integer_value(json_object_get(o, "rank")), rank);
	assert_int_equal(json_integer_value(json_object_get(o, "exitcode")),
	    exitcode);
}

static void
test_summary_json(void **state)
{
	struct worker_failure fs[2];
	json_t *doc, *root, *list, *data;
	json_error_t err;
	char *text;

	(void)state;
	assert_int_equal(failure_init(&fs[0], 1, 1, 42, -9, NULL, 1700000050),
	    0);
	assert_int_equal(failure_init(&fs[1], 0, 0, 40, 1, "err/0.json", 9), 0);
	text = failure_summary_json("train.py", "node0", fs, 2);
	assert_non_null(text);
	doc = json_loads(text, 0, &err);
	if (doc == NULL)
		fail_msg("%s: %s", text, err.text);
	free(text);
	assert_string_equal(json_string_value(json_object_get(doc, "name")),
	    "train.py");
	assert_string_equal(json_string_value(json_object_get(doc, "host")),
	    "node0");
	root = json_object_get(doc, "root_cause");
	check_failure_json(root, 1, -9);
	assert_int_equal(json_integer_value(json_object_get(root, "pid")), 42);
	assert_int_equal(json_integer_value(json_object_get(root,
	    "local_rank")), 1);
	assert_string_equal(json_string_value(json_object_get(root, "signal")),
	    "SIGKILL");
	assert_true(json_is_null(json_object_get(root, "error_file")));
	assert_true(json_is_null(json_object_get(root, "error_file_data")));
	assert_string_equal(json_string_value(json_object_get(root, "message")),
	    "Signal 9 (SIGKILL) received by PID 42");
	assert_int_equal(json_integer_value(json_object_get(root, "timestamp")),
	    1700000050);
	assert_string_equal(json_string_value(json_object_get(root, "time")),
	    "2023-11-14_22:14:10");

	list = json_object_get(doc, "failures");
	assert_int_equal(json_array_size(list), 2);
	check_failure_json(json_array_get(list, 0), 0, 1);
	check_failure_json(json_array_get(list, 1), 1, -9);
	root = json_array_get(list, 0);
	assert_true(json_is_null(json_object_get(root, "signal")));
	assert_string_equal(json_string_value(json_object_get(root,
	    "error_file")), "err/0.json");
	data = json_object_get(json_object_get(root, "error_file_data"),
	    "message");
	assert_string_equal(json_string_value(json_object_get(data, "message")),
	    "ValueError: boom from rank 0");
	json_decref(doc);
	failure_free(&fs[0]);
	failure_free(&fs[1]);
}

static void
test_copy_root_cause(void **state)
{
	struct worker_failure f;
	struct stat sb;
	mode_t old;
	char *text;
	int dfd;

	(void)state;
	assert_int_equal(failure_init(&f, 0, 0, 40, 1, "err/0.json", 9), 0);
	put_file("torchrun-error.json", "stale");
	assert_int_equal(failure_copy_root_cause("torchrun-error.json", &f), 0);
	text = get_file("torchrun-error.json");
	assert_string_equal(text, COPY0);
	free(text);
	/* A worker's traceback is the agent's user's to read, whatever umask. */
	old = umask(0);
	assert_int_equal(failure_copy_root_cause("torchrun-error.json", &f), 0);
	umask(old);
	assert_int_equal(stat("torchrun-error.json", &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	failure_free(&f);

	/* Read by fd with O_NOFOLLOW: a symlink in its place is not read. */
	assert_int_equal(symlink("0.json", "err/link.json"), 0);
	dfd = open("err", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_not_equal(dfd, -1);
	assert_int_equal(failure_init_at(&f, 0, 0, 40, 1, dfd, "link.json",
	    O_NOFOLLOW, "shown/link.json", 9), 0);
	assert_null(f.error_json);
	assert_non_null(strstr(f.message, "shown/link.json"));
	failure_free(&f);
	assert_int_equal(failure_init_at(&f, 0, 0, 40, 1, dfd, "0.json",
	    O_NOFOLLOW, "shown/0.json", 9), 0);
	assert_non_null(f.error_json);
	assert_string_equal(f.error_file, "shown/0.json");
	failure_free(&f);
	close(dfd);

	/* Exit code 0: torch leaves the message alone. */
	assert_int_equal(failure_init(&f, 0, 0, 40, 0, "err/0.json", 9), 0);
	assert_int_equal(failure_copy_root_cause("c0.json", &f), 0);
	text = get_file("c0.json");
	assert_null(strstr(text, "errorCode"));
	free(text);
	failure_free(&f);

	/* The string form is copied without errorCode. */
	assert_int_equal(failure_init(&f, 2, 2, 44, 1, "err/2.json", 9), 0);
	assert_int_equal(failure_copy_root_cause("c2.json", &f), 0);
	text = get_file("c2.json");
	assert_string_equal(text, ERR2);
	free(text);
	failure_free(&f);

	/* No error file: nothing is written. */
	assert_int_equal(failure_init(&f, 1, 1, 42, -9, NULL, 9), 0);
	assert_int_equal(failure_copy_root_cause("none.json", &f), 1);
	assert_int_equal(access("none.json", F_OK), -1);
	failure_free(&f);
}

static void
test_unreadable(void **state)
{
	struct worker_failure f;

	(void)state;
	/* A directory is not torch's isfile(): no error file at all. */
	assert_int_equal(mkdir_p("err/dir.json", 0755), 0);
	assert_int_equal(failure_init(&f, 0, 0, 1, 1, "err/dir.json", 3), 0);
	assert_null(f.error_file);
	assert_string_equal(f.message, NO_TRACEBACK);
	failure_free(&f);
	/* A dangling path component is "no file", not an error. */
	assert_int_equal(failure_init(&f, 0, 0, 1, 1, "err/0.json/x", 3), 0);
	assert_null(f.error_file);
	failure_free(&f);
}

static void
test_host_fqdn(void **state)
{
	char buf[256], small[4];

	(void)state;
	memset(buf, 0, sizeof(buf));
	host_fqdn(buf, sizeof(buf));
	assert_true(buf[0] != '\0');
	host_fqdn(small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_single),
		cmocka_unit_test(test_golden_multi),
		cmocka_unit_test(test_golden_narrow),
		cmocka_unit_test(test_root_cause_ties),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_broken_utf8),
		cmocka_unit_test(test_string_form),
		cmocka_unit_test(test_dict_without_callstack),
		cmocka_unit_test(test_summary_json),
		cmocka_unit_test(test_copy_root_cause),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_host_fqdn),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
