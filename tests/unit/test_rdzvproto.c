#include <sys/stat.h>

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

#include "rdzvproto.h"

#define MAC_A	"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
#define NONCE	"0123456789abcdef0123456789abcdef"
#define JOIN_HEAD	"JOIN 3 job-1 node.a " NONCE

/* Format, parse back, format again: the same line both times. */
static void
round_trip(const struct rdzv_msg *m, const char *want)
{
	char a[RDZV_LINE_MAX + 1], b[RDZV_LINE_MAX + 1], err[256];
	struct rdzv_msg back;
	int n;

	n = rdzv_msg_format(a, sizeof(a), m);
	assert_int_not_equal(n, -1);
	assert_int_equal((size_t)n, strlen(a));
	assert_string_equal(a, want);
	if (rdzv_msg_parse(a, &back, err, sizeof(err)) == -1)
		fail_msg("%s: %s", a, err);
	assert_int_equal(back.verb, m->verb);
	assert_int_not_equal(rdzv_msg_format(b, sizeof(b), &back), -1);
	assert_string_equal(a, b);
}

static void
test_round_trips(void **state)
{
	struct rdzv_msg m;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.verb = RV_HELLO;
	m.u.hello.version = 1;
	strlcpy(m.u.hello.nonce, NONCE, sizeof(m.u.hello.nonce));
	m.u.hello.heartbeat_ms = 500;
	m.u.hello.lease_ms = 2500;
	round_trip(&m, "ESV-RDZV 1 " NONCE " 500 2500\n");

	memset(&m, 0, sizeof(m));
	m.verb = RV_ROUND;
	m.u.round = (struct rdzv_round_msg){ 2, 1, 3, 4, 12, 4, 8,
	    "10.0.0.1", 29500 };
	round_trip(&m, "ROUND 2 1 3 4 12 4 8 10.0.0.1 29500\n");

	memset(&m, 0, sizeof(m));
	m.verb = RV_JOINED;
	m.u.joined.round = 7;
	m.u.joined.participants = 2;
	m.u.joined.waiting = 1;
	round_trip(&m, "JOINED 7 2 1\n");

	memset(&m, 0, sizeof(m));
	m.verb = RV_ERR;
	strlcpy(m.u.err.code, "mismatch", sizeof(m.u.err.code));
	strlcpy(m.u.err.text, "job x has min:max 2:3, you asked 2:4",
	    sizeof(m.u.err.text));
	round_trip(&m, "ERR mismatch job x has min:max 2:3, you asked 2:4\n");

	memset(&m, 0, sizeof(m));
	m.verb = RV_JOIN;
	m.u.join = (struct rdzv_join){ 3, "job-1", "node.a", NONCE, 4, 2, 3,
	    0, "trainer", "fe80::1%eth0", 29500, RS_NEW, 0, 0, 0 };
	round_trip(&m, JOIN_HEAD " 4 2 3 0 trainer fe80::1%eth0 29500 new 0\n");
	m.u.join.state = RS_RUNNING;
	m.u.join.round = 3;
	m.u.join.group_rank = 1;
	m.u.join.group_world_size = 2;
	round_trip(&m, JOIN_HEAD " 4 2 3 0 trainer fe80::1%eth0 29500 "
	    "running 3 1 2\n");
	m.u.join.state = RS_DONE;
	round_trip(&m, JOIN_HEAD " 4 2 3 0 trainer fe80::1%eth0 29500 "
	    "done 3 1 2\n");

	memset(&m, 0, sizeof(m));
	m.verb = RV_RESTART;
	m.u.n = 4;
	round_trip(&m, "RESTART 4\n");
	m.verb = RV_WAITING;
	round_trip(&m, "WAITING 4\n");
	m.verb = RV_RELEASE;
	round_trip(&m, "RELEASE 4\n");
	m.verb = RV_BARRIER;
	round_trip(&m, "BARRIER 4\n");
	m.verb = RV_CLOSED;
	round_trip(&m, "CLOSED\n");
	m.verb = RV_LEAVE;
	round_trip(&m, "LEAVE\n");
	m.verb = RV_CLOSE;
	round_trip(&m, "CLOSE\n");
	m.verb = RV_PING;
	round_trip(&m, "PING\n");
	/* esv-rdzv's PING acknowledges the node's lines (its lease). */
	m.u.ping.has_ack = true;
	m.u.ping.acked = 17;
	round_trip(&m, "PING 17\n");
	/* esv-rdzv-etcd's also tells when its etcd lease ends (mono ms). */
	m.u.ping.has_end = true;
	m.u.ping.lease_end = 4000000000123LL;
	round_trip(&m, "PING 17 4000000000123\n");
}

static void
test_parse_fields(void **state)
{
	struct rdzv_msg m;
	char err[256];

	(void)state;
	assert_int_equal(rdzv_msg_parse(JOIN_HEAD " 8 1 4 30000 default "
	    "host-1.example 29500 new 7", &m, err, sizeof(err)), 0);
	assert_int_equal(m.verb, RV_JOIN);
	assert_string_equal(m.u.join.run_id, "job-1");
	assert_string_equal(m.u.join.node_id, "node.a");
	assert_int_equal(m.u.join.nproc, 8);
	assert_int_equal(m.u.join.min_nodes, 1);
	assert_int_equal(m.u.join.max_nodes, 4);
	assert_int_equal(m.u.join.last_call_ms, 30000);
	assert_string_equal(m.u.join.addr, "host-1.example");
	assert_int_equal(m.u.join.port, 29500);
	assert_int_equal(m.u.join.state, RS_NEW);
	assert_int_equal(m.u.join.round, 7);
	assert_int_equal(rdzv_msg_parse("ERR auth bad token\n", &m, err,
	    sizeof(err)), 0);
	assert_string_equal(m.u.err.code, "auth");
	assert_string_equal(m.u.err.text, "bad token");
	assert_int_equal(rdzv_msg_parse("ERR closed", &m, err, sizeof(err)),
	    0);
	assert_string_equal(m.u.err.text, "");
}

struct bad {
	const char	*line;
	const char	*why;
};

static const struct bad bad_lines[] = {
	{ "", "empty line" },
	{ "\n", "empty line" },
	{ "HELLO", "unknown verb" },
	{ "ping", "unknown verb" },
	{ "PING ", "PING: field 1 (acked): not a number" },
	{ "PING 1 2 3", "PING: 3 fields, expected 2" },
	{ "PING 1 0", "PING: field 2 (lease_end): not a number" },
	{ "PING 1 -5", "PING: field 2 (lease_end): not a number" },
	{ "PING\r", "control" },
	{ "PING\x01", "control" },
	{ "PING \xc3\xa9", "non-ASCII" },
	{ "RESTART", "RESTART: 0 fields, expected 1" },
	{ "RESTART -1", "RESTART: field 1 (round): not a number" },
	{ "RESTART +1", "RESTART: field 1 (round): not a number" },
	{ "RESTART 1 2", "RESTART: 2 fields, expected 1" },
	{ "BARRIER 99999999999", "BARRIER: field 1 (round): not a number" },
	{ "BARRIER  1", "BARRIER: 2 fields" },
	{ "ESV-RDZV 1 0123 500 0", "ESV-RDZV: field 2 (nonce): not 32" },
	{ "ESV-RDZV 1 " NONCE " 0 0", "field 3 (heartbeat_ms): not a number in "
	    "1..3600000" },
	{ "ESV-RDZV 3 " NONCE " 300", "ESV-RDZV: 3 fields, expected 4" },
	{ "ROUND 0 2 2 0 8 0 8 a 1", "ROUND: a rank is not below its size" },
	{ "ROUND 0 0 1 8 8 0 8 a 1", "ROUND: a rank is not below its size" },
	{ "ROUND 0 0 1 0 8 0 8 a 0", "field 9 (master_port): not a number in "
	    "1..65535" },
	{ "ROUND 0 0 1 0 8 0 8 a[b] 1", "field 8 (master_addr)" },
	{ "ERR", "ERR: field 1 (code)" },
	{ "ERR Auth x", "ERR: field 1 (code)" },
	{ "ERR waytoolongacodexx x", "ERR: field 1 (code): too long" },
	{ JOIN_HEAD " 0 2 3 0 r a 1 new 0", "JOIN: field 5 (nproc): not a "
	    "number in 1..4096" },
	{ JOIN_HEAD " 4097 2 3 0 r a 1 new 0", "field 5 (nproc)" },
	{ JOIN_HEAD " 4 0 3 0 r a 1 new 0", "field 6 (min)" },
	{ JOIN_HEAD " 4 2 x 0 r a 1 new 0", "field 7 (max)" },
	{ JOIN_HEAD " 4 3 2 0 r a 1 new 0", "JOIN: min 3 above max 2" },
	{ JOIN_HEAD " 4 2 3 86400001 r a 1 new 0", "field 8 (last_call_ms)" },
	{ JOIN_HEAD " 4 2 3 0 r/w a 1 new 0", "field 9 (role): not a name" },
	{ JOIN_HEAD " 4 2 3 0 r a! 1 new 0", "field 10 (addr)" },
	{ JOIN_HEAD " 4 2 3 0 r a 65536 new 0", "field 11 (port)" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 old 0", "JOIN: 13 fields, expected 13 (new) "
	    "or 15" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 new", "JOIN: 12 fields, expected 13 (new) "
	    "or 15" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 gone 1 0 2", "field 12 (state): not new, "
	    "running or done" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 running", "JOIN: 12 fields" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 new 1 0 2", "JOIN: 15 fields" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 running 1 2 2", "JOIN: group rank 2 not "
	    "below group world size 2" },
	{ JOIN_HEAD " 4 2 3 0 r a 1 running 1 0 0", "field 15 "
	    "(group_world_size)" },
	{ "JOIN x job-1 node.a " NONCE " 4 2 3 0 r a 1 new 0", "field 1 "
	    "(version)" },
	{ "JOIN 3 job/1 node.a " NONCE " 4 2 3 0 r a 1 new 0", "field 2 "
	    "(run_id): not a name" },
	{ "JOIN 3 job-1 node a " NONCE " 4 2 3 0 r a 1 new 0", "JOIN: 14 fields" },
	{ "JOIN 3 job-1 node.a " MAC_A " 4 2 3 0 r a 1 new 0", "field 4 (cnonce): "
	    "not 32 lowercase hex digits" },
	{ "JOIN 3 job-1 node.a 0123456789ABCDEF0123456789abcdef"
	    " 4 2 3 0 r a 1 new 0", "field 4 (cnonce)" },
	{ "JOIN 3 job-1 node.a " NONCE " 4 2 3 0 r a 1 new 1 2 3 4 5 6 7 8 9",
	    "JOIN: 17 fields" },
};

static void
test_parse_bad(void **state)
{
	struct rdzv_msg m;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		err[0] = '\0';
		if (rdzv_msg_parse(bad_lines[i].line, &m, err, sizeof(err)) !=
		    -1)
			fail_msg("accepted: %s", bad_lines[i].line);
		if (strstr(err, bad_lines[i].why) == NULL)
			fail_msg("%s: got \"%s\", want \"%s\"",
			    bad_lines[i].line, err, bad_lines[i].why);
	}
}

static void
test_names(void **state)
{
	char longname[RDZV_NAME_MAX + 2];

	(void)state;
	assert_true(rdzv_name_ok("a"));
	assert_true(rdzv_name_ok("Host_1.example:0@x+y-z"));
	assert_false(rdzv_name_ok(""));
	assert_false(rdzv_name_ok("a b"));
	assert_false(rdzv_name_ok("a/b"));
	assert_false(rdzv_name_ok("caf\xc3\xa9"));
	memset(longname, 'n', sizeof(longname));
	longname[RDZV_NAME_MAX] = '\0';
	assert_true(rdzv_name_ok(longname));
	longname[RDZV_NAME_MAX] = 'n';
	longname[RDZV_NAME_MAX + 1] = '\0';
	assert_false(rdzv_name_ok(longname));
}

static void
test_format_refuses(void **state)
{
	struct rdzv_msg m;
	char buf[RDZV_LINE_MAX + 1];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.verb = RV_JOIN;
	m.u.join = (struct rdzv_join){ 2, "job 1", "n", NONCE, 4, 2, 3, 0,
	    "r", "a", 1, RS_NEW, 0, 0, 0 };
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	strlcpy(m.u.join.run_id, "job-1", sizeof(m.u.join.run_id));
	assert_int_not_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	assert_int_equal(rdzv_msg_format(buf, 20, &m), -1);
	m.u.join.port = 0;
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	m.u.join.port = 1;
	m.u.join.min_nodes = 4;
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	m.u.join.min_nodes = 1;
	m.u.join.cnonce[3] = 'X';
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);

	memset(&m, 0, sizeof(m));
	m.verb = RV_ERR;
	strlcpy(m.u.err.code, "proto", sizeof(m.u.err.code));
	strlcpy(m.u.err.text, "two\nlines", sizeof(m.u.err.text));
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	strlcpy(m.u.err.code, "", sizeof(m.u.err.code));
	strlcpy(m.u.err.text, "x", sizeof(m.u.err.text));
	assert_int_equal(rdzv_msg_format(buf, sizeof(buf), &m), -1);
	assert_int_equal(rdzv_msg_format(buf, 0, &m), -1);

	memset(&m, 0, sizeof(m));
	m.verb = RV_PING;
	assert_int_equal(rdzv_msg_format(buf, 5, &m), -1);
	assert_int_equal(rdzv_msg_format(buf, 6, &m), 5);
}

/* RFC 4231 test cases 2 and 6. */
static void
test_mac_known_answer(void **state)
{
	char key[132], mac[RDZV_MAC_LEN + 1];

	(void)state;
	rdzv_hmac_hex("Jefe", 4, "what do ya want for nothing?", mac);
	assert_string_equal(mac, MAC_A);
	memset(key, 0xaa, 131);
	key[131] = '\0';
	rdzv_hmac_hex(key, 131, "Test Using Larger Than Block-Size Key - "
	    "Hash Key First", mac);
	assert_string_equal(mac, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc621"
	    "3728c5140546040f0ee37f54");
	assert_true(rdzv_mac_equal(mac, mac));
	assert_true(rdzv_mac_equal(MAC_A, MAC_A));
	assert_false(rdzv_mac_equal(mac, MAC_A));
	assert_false(rdzv_mac_equal(MAC_A, "5bdc"));
	assert_false(rdzv_mac_equal("", ""));
}

/*
 * A sealed line holds only as the line it was, in its direction, at its
 * place in the sequence, under the key of its session.
 */
static void
test_seal(void **state)
{
	uint8_t key[RDZV_KEY_LEN], other[RDZV_KEY_LEN];
	char line[RDZV_LINE_MAX + 1], copy[RDZV_LINE_MAX + 1], err[128];
	struct rdzv_msg m, back;
	int n;

	(void)state;
	rdzv_session_key("0123456789abcdef-token", NONCE,
	    "fedcba9876543210fedcba9876543210", key);
	rdzv_session_key("0123456789abcdef-token", NONCE,
	    "fedcba9876543210fedcba9876543211", other);
	assert_memory_not_equal(key, other, RDZV_KEY_LEN);
	memset(&m, 0, sizeof(m));
	m.verb = RV_ROUND;
	m.u.round = (struct rdzv_round_msg){ 2, 1, 3, 4, 12, 4, 8,
	    "10.0.0.1", 29500 };
	n = rdzv_msg_format_sealed(line, sizeof(line), &m, key,
	    RDZV_TO_CLIENT, 5);
	assert_int_equal((size_t)n, strlen(line));
	assert_int_equal(strncmp(line, "ROUND 2 1 3 4 12 4 8 10.0.0.1 29500 ",
	    36), 0);
	assert_int_equal(n, 36 + RDZV_MAC_LEN + 1);

	strlcpy(copy, line, sizeof(copy));
	assert_int_equal(rdzv_msg_parse_sealed(copy, &back, key,
	    RDZV_TO_CLIENT, 5, err, sizeof(err)), 0);
	assert_int_equal(back.u.round.master_port, 29500);
	/* Replayed, reflected, under another key, altered, unsealed. */
	strlcpy(copy, line, sizeof(copy));
	assert_int_equal(rdzv_msg_parse_sealed(copy, &back, key,
	    RDZV_TO_CLIENT, 6, err, sizeof(err)), -1);
	assert_string_equal(err, "bad MAC");
	strlcpy(copy, line, sizeof(copy));
	assert_int_equal(rdzv_msg_parse_sealed(copy, &back, key,
	    RDZV_TO_SERVER, 5, err, sizeof(err)), -1);
	strlcpy(copy, line, sizeof(copy));
	assert_int_equal(rdzv_msg_parse_sealed(copy, &back, other,
	    RDZV_TO_CLIENT, 5, err, sizeof(err)), -1);
	strlcpy(copy, line, sizeof(copy));
	copy[strlen("ROUND 2 1 3 4 12 4 8 10.0.0.")] = '9';
	assert_int_equal(rdzv_msg_parse_sealed(copy, &back, key,
	    RDZV_TO_CLIENT, 5, err, sizeof(err)), -1);
	assert_string_equal(err, "bad MAC");
	assert_int_equal(rdzv_msg_parse_sealed(strcpy(copy,
	    "ROUND 2 1 3 4 12 4 8 10.0.0.1 29500\n"), &back, key,
	    RDZV_TO_CLIENT, 5, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not sealed"));
	/* No room for the seal: refused, never cut. */
	assert_int_equal(rdzv_msg_format_sealed(line, 40, &m, key,
	    RDZV_TO_CLIENT, 5), -1);
}

static void
test_nonce(void **state)
{
	char a[RDZV_NONCE_LEN + 1], b[RDZV_NONCE_LEN + 1];

	(void)state;
	rdzv_nonce(a);
	rdzv_nonce(b);
	assert_int_equal(strlen(a), RDZV_NONCE_LEN);
	assert_int_equal(strspn(a, "0123456789abcdef"), RDZV_NONCE_LEN);
	assert_string_not_equal(a, b);
}

static int
write_file(const char *path, const char *text, mode_t mode)
{
	int fd;

	unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) == -1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void
test_token_load(void **state)
{
	char dir[] = "/tmp/test_rdzvproto.XXXXXX", path[PATH_MAX];
	char tok[RDZV_TOKEN_MAX + 1], err[512], big[RDZV_TOKEN_MAX + 3];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);

	assert_int_equal(write_file(path, "0123456789abcdef token\nignored\n",
	    0600), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), 0);
	assert_string_equal(tok, "0123456789abcdef token");
	assert_int_equal(write_file(path, "0123456789abcdef", 0400), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), 0);
	assert_string_equal(tok, "0123456789abcdef");

	assert_int_equal(write_file(path, "0123456789abcdef\n", 0640), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "chmod 600"));
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	assert_int_equal(write_file(path, "0123456789abcdef\n", 0604), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);

	assert_int_equal(write_file(path, "short\n", 0600), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "16..256"));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(write_file(path, big, 0600), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);
	assert_int_equal(write_file(path, "0123456789abcdef\tx\n", 0600), 0);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);

	assert_int_equal(rdzv_token_load(dir, tok, sizeof(tok), err,
	    sizeof(err)), -1);
	unlink(path);
	assert_int_equal(rdzv_token_load(path, tok, sizeof(tok), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_format_refuses),
		cmocka_unit_test(test_mac_known_answer),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_nonce),
		cmocka_unit_test(test_token_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
