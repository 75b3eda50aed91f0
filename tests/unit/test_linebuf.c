#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/spawn/linebuf.h"

/* Every emitted line, concatenated, with each line's length. */
struct sink {
	char	*text;
	size_t	 len;
	size_t	 lens[64];
	size_t	 nlines;
};

static void
collect(void *ctx, const char *line, size_t len)
{
	struct sink *s = ctx;

	/* Each piece handed out must be one line, terminated. */
	assert_true(len > 0);
	assert_int_equal(line[len - 1], '\n');
	assert_null(memchr(line, '\n', len - 1));
	assert_true(s->nlines < 64);
	s->lens[s->nlines++] = len;
	s->text = realloc(s->text, s->len + len + 1);
	assert_non_null(s->text);
	memcpy(s->text + s->len, line, len);
	s->len += len;
	s->text[s->len] = '\0';
}

static int
setup(void **state)
{
	struct sink *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -1;
	*state = s;
	return 0;
}

static int
teardown(void **state)
{
	struct sink *s = *state;

	free(s->text);
	free(s);
	return 0;
}

static void
feed_str(struct linebuf *lb, const char *str, struct sink *s)
{
	linebuf_feed(lb, str, strlen(str), collect, s);
}

static void
test_whole_lines_once(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };

	feed_str(&lb, "one\n", s);
	assert_int_equal(s->nlines, 1);
	feed_str(&lb, "two\n", s);
	assert_int_equal(s->nlines, 2);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 2);
	assert_string_equal(s->text, "one\ntwo\n");
	/* Whole lines need no buffer (linebuf.h). */
	assert_null(lb.buf);
	linebuf_free(&lb);
}

static void
test_several_in_one_feed(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };

	feed_str(&lb, "a\nbb\n\nccc\n", s);
	assert_int_equal(s->nlines, 4);
	assert_int_equal(s->lens[0], 2);
	assert_int_equal(s->lens[1], 3);
	assert_int_equal(s->lens[2], 1);	/* an empty line is a line */
	assert_int_equal(s->lens[3], 4);
	assert_string_equal(s->text, "a\nbb\n\nccc\n");
	linebuf_free(&lb);
}

static void
test_split_bytewise(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	const char *line = "hello, split world\n";
	size_t i;

	for (i = 0; line[i] != '\0'; i++) {
		linebuf_feed(&lb, line + i, 1, collect, s);
		assert_int_equal(s->nlines, line[i + 1] == '\0' ? 1 : 0);
	}
	assert_string_equal(s->text, line);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 1);
	linebuf_free(&lb);
}

static void
test_split_mixed(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };

	feed_str(&lb, "ab", s);
	feed_str(&lb, "c\nde", s);
	assert_int_equal(s->nlines, 1);
	feed_str(&lb, "f\ng", s);
	assert_int_equal(s->nlines, 2);
	feed_str(&lb, "\nh\ni", s);
	assert_int_equal(s->nlines, 4);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 5);
	assert_string_equal(s->text, "abc\ndef\ng\nh\ni\n");
	assert_int_equal(s->lens[0], 4);
	assert_int_equal(s->lens[1], 4);
	assert_int_equal(s->lens[2], 2);
	assert_int_equal(s->lens[3], 2);
	assert_int_equal(s->lens[4], 2);
	linebuf_free(&lb);
}

static void
test_flush_partial(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };

	feed_str(&lb, "done\ntail", s);
	assert_int_equal(s->nlines, 1);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 2);
	assert_string_equal(s->text, "done\ntail\n");
	/* Flushed once: a second flush and a flush of nothing emit nothing. */
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 2);
	linebuf_free(&lb);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 2);
}

static void
test_empty_feed(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };

	linebuf_feed(&lb, "", 0, collect, s);
	assert_int_equal(s->nlines, 0);
	assert_null(lb.buf);
	feed_str(&lb, "part", s);
	linebuf_feed(&lb, "", 0, collect, s);
	assert_int_equal(s->nlines, 0);
	feed_str(&lb, "ial\n", s);
	assert_int_equal(s->nlines, 1);
	assert_string_equal(s->text, "partial\n");
	linebuf_free(&lb);
}

/*
 * A line longer than LINEBUF_MAX comes out in pieces: with the '\n's
 * the cuts add taken out, the bytes are exactly those fed in.
 */
static void
check_long(struct sink *s, const char *in, size_t n, size_t maxpiece)
{
	size_t i, j;

	assert_true(s->nlines >= 2);
	for (i = 0; i < s->nlines; i++)
		assert_true(s->lens[i] <= maxpiece);
	for (i = j = 0; i < s->len; i++)
		if (s->text[i] != '\n') {
			assert_true(j < n);
			assert_int_equal(s->text[i], in[j]);
			j++;
		}
	assert_int_equal(j, n);
}

static char *
pattern(size_t n)
{
	char *p;
	size_t i;

	assert_non_null(p = malloc(n));
	for (i = 0; i < n; i++)
		p[i] = 'a' + (i * 7 + i / 251) % 26;	/* never '\n' */
	return p;
}

static void
test_long_line_chunked(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	size_t n = 3 * LINEBUF_MAX + 1234, off, k;
	char *in = pattern(n);

	for (off = 0; off < n; off += k) {
		k = n - off < 1000 ? n - off : 1000;
		linebuf_feed(&lb, in + off, k, collect, s);
	}
	linebuf_feed(&lb, "\n", 1, collect, s);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 4);
	check_long(s, in, n, LINEBUF_MAX);
	linebuf_free(&lb);
	free(in);
}

/* One feed holding all of it, as a single large read would. */
static void
test_long_line_one_feed(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	size_t n = 2 * LINEBUF_MAX + 77;
	char *in = pattern(n);

	linebuf_feed(&lb, in, n, collect, s);
	assert_true(s->nlines >= 2);
	linebuf_flush(&lb, collect, s);
	check_long(s, in, n, LINEBUF_MAX);
	linebuf_free(&lb);
	free(in);
}

/*
 * The same with its '\n' in the feed: linebuf passes a whole line on
 * without copying, so only "nothing lost" is asserted, not the piece size.
 */
static void
test_long_line_one_feed_nl(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	size_t n = 2 * LINEBUF_MAX + 77, i, j;
	char *in = pattern(n + 1);

	in[n] = '\n';
	linebuf_feed(&lb, in, n + 1, collect, s);
	linebuf_flush(&lb, collect, s);
	assert_true(s->nlines >= 1);
	for (i = j = 0; i < s->len; i++)
		if (s->text[i] != '\n')
			assert_int_equal(s->text[i], in[j++]);
	assert_int_equal(j, n);
	/* Cut into pieces of at most LINEBUF_MAX, as the header promises. */
	assert_true(s->nlines >= 3);
	linebuf_free(&lb);
	free(in);
}

/* A buffered start, then a line one byte too long to fit with it. */
static void
test_long_line_boundary(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	size_t n = LINEBUF_MAX - 10, total = 10 + n;
	char *in = pattern(total + 1);

	in[total] = '\n';
	linebuf_feed(&lb, in, 10, collect, s);
	assert_int_equal(s->nlines, 0);
	linebuf_feed(&lb, in + 10, n + 1, collect, s);
	linebuf_flush(&lb, collect, s);
	check_long(s, in, total, LINEBUF_MAX);
	linebuf_free(&lb);
	free(in);
}

/* Exactly the longest line that fits in one piece stays whole. */
static void
test_longest_whole_line(void **state)
{
	struct sink *s = *state;
	struct linebuf lb = { 0 };
	size_t n = LINEBUF_MAX - 1;
	char *in = pattern(n + 1);

	in[n] = '\n';
	linebuf_feed(&lb, in, 100, collect, s);
	linebuf_feed(&lb, in + 100, n + 1 - 100, collect, s);
	linebuf_flush(&lb, collect, s);
	assert_int_equal(s->nlines, 1);
	assert_int_equal(s->lens[0], LINEBUF_MAX);
	assert_memory_equal(s->text, in, n + 1);
	linebuf_free(&lb);
	free(in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_whole_lines_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_several_in_one_feed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_split_bytewise, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_split_mixed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_flush_partial, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_empty_feed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_long_line_chunked, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_long_line_one_feed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_long_line_one_feed_nl,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line_boundary, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_longest_whole_line, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
