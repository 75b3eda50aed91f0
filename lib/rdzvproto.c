#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nelem.h"
#include "rdzvproto.h"

#define MAXFIELDS	16

enum ftype { F_UINT, F_MONO, F_NAME, F_ADDR, F_NONCE, F_STATE };

/*
 * One table drives both parsing and formatting, so that the writer can
 * never produce a line the reader refuses.
 */
struct field {
	const char	*name;
	enum ftype	 type;
	long long	 lo, hi;
	size_t		 off;
};

#define M(m)		offsetof(struct rdzv_msg, u.m)
#define UINT(n, lo, hi, m)	{ n, F_UINT, lo, hi, M(m) }
#define ROUNDNO(m)	UINT("round", 0, INT_MAX, m)

static const struct field hello_f[] = {
	UINT("version", 0, 65535, hello.version),
	{ "nonce", F_NONCE, 0, 0, M(hello.nonce) },
	UINT("heartbeat_ms", 1, 3600000, hello.heartbeat_ms),
	UINT("lease_ms", 0, 3600000, hello.lease_ms),
};
static const struct field joined_f[] = {
	ROUNDNO(joined.round),
	UINT("participants", 0, INT_MAX, joined.participants),
	UINT("waiting", 0, INT_MAX, joined.waiting),
};
static const struct field round_f[] = {
	ROUNDNO(round.round),
	UINT("group_rank", 0, INT_MAX, round.group_rank),
	UINT("group_world_size", 1, INT_MAX, round.group_world_size),
	UINT("base_rank", 0, INT_MAX, round.base_rank),
	UINT("world_size", 1, INT_MAX, round.world_size),
	UINT("base_role_rank", 0, INT_MAX, round.base_role_rank),
	UINT("role_world_size", 1, INT_MAX, round.role_world_size),
	{ "master_addr", F_ADDR, 0, 0, M(round.master_addr) },
	UINT("master_port", 1, 65535, round.master_port),
};
static const struct field member_f[] = {
	ROUNDNO(member.round),
	{ "addr", F_ADDR, 0, 0, M(member.addr) },
};
static const struct field round_n_f[] = { ROUNDNO(n) };
static const struct field ping_f[] = {
	UINT("acked", 0, INT_MAX, ping.acked),
	{ "lease_end", F_MONO, 1, LLONG_MAX, M(ping.lease_end) },
};
static const struct field count_f[] = { UINT("nodes", 0, INT_MAX, n) };
static const struct field join_f[] = {
	UINT("version", 0, 65535, join.version),
	{ "run_id", F_NAME, 0, 0, M(join.run_id) },
	{ "node_id", F_NAME, 0, 0, M(join.node_id) },
	{ "cnonce", F_NONCE, 0, 0, M(join.cnonce) },
	UINT("nproc", 1, 4096, join.nproc),
	UINT("min", 1, INT_MAX, join.min_nodes),
	UINT("max", 1, INT_MAX, join.max_nodes),
	UINT("last_call_ms", 0, 86400000, join.last_call_ms),
	{ "role", F_NAME, 0, 0, M(join.role) },
	{ "addr", F_ADDR, 0, 0, M(join.addr) },
	UINT("port", 1, 65535, join.port),
	{ "state", F_STATE, 0, 0, M(join.state) },
	ROUNDNO(join.round),
	UINT("group_rank", 0, INT_MAX, join.group_rank),
	UINT("group_world_size", 1, INT_MAX, join.group_world_size),
};
#define JOIN_NEW_FIELDS	13	/* up to the first round it may join */
#define JOIN_STATE	11	/* index of the state field */

struct verbdef {
	const char		*word;
	enum rdzv_verb		 verb;
	const struct field	*f;
	size_t			 nf;
};

#define V(w, v, t)	{ w, v, t, NELEM(t) }
#define V0(w, v)	{ w, v, NULL, 0 }
static const struct verbdef verbs[] = {
	V("ESV-RDZV", RV_HELLO, hello_f),
	V("JOINED", RV_JOINED, joined_f),
	V("MEMBER", RV_MEMBER, member_f),
	V("ROUND", RV_ROUND, round_f),
	V("RESTART", RV_RESTART, round_n_f),
	V("WAITING", RV_WAITING, count_f),
	V("RELEASE", RV_RELEASE, round_n_f),
	V0("CLOSED", RV_CLOSED),
	V("LOST", RV_LOST, round_n_f),
	V0("ERR", RV_ERR),		/* fields of its own: see parse_err */
	V("JOIN", RV_JOIN, join_f),
	V("BARRIER", RV_BARRIER, round_n_f),
	V0("LEAVE", RV_LEAVE),
	V0("CLOSE", RV_CLOSE),
	V("PING", RV_PING, ping_f),	/* 0, 1 or 2 fields */
};

static const char *const states[] = { "new", "running", "done" };

static const struct verbdef *
verb_by_word(const char *w)
{
	size_t i;

	for (i = 0; i < NELEM(verbs); i++)
		if (strcmp(verbs[i].word, w) == 0)
			return &verbs[i];
	return NULL;
}

static const struct verbdef *
verb_by_id(enum rdzv_verb v)
{
	size_t i;

	for (i = 0; i < NELEM(verbs); i++)
		if (verbs[i].verb == v)
			return &verbs[i];
	return NULL;
}

static bool
chars_ok(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) || !isascii(s[i]))
			if (strchr(extra, s[i]) == NULL)
				return false;
	return true;
}

bool
rdzv_name_ok(const char *s)
{
	return chars_ok(s, RDZV_NAME_MAX, "._:@+-");
}

static bool
addr_ok(const char *s)
{
	return chars_ok(s, RDZV_ADDR_MAX, "._:%-");
}

bool
rdzv_addr_ok(const char *s)
{
	return addr_ok(s);
}

static bool
hex_ok(const char *s, size_t len)
{
	size_t i;

	if (strlen(s) != len)
		return false;
	for (i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]) && (s[i] < 'a' || s[i] > 'f'))
			return false;
	return true;
}

/* strtonum alone would take a sign or leading blanks. */
static int
parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	const char *errstr;
	long long v;

	if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
		return -1;
	v = strtonum(s, lo, hi, &errstr);
	if (errstr != NULL)
		return -1;
	*out = v;
	return 0;
}

static int
parse_uint(const char *s, long long lo, long long hi, unsigned *out)
{
	long long v;

	if (parse_ll(s, lo, hi, &v) == -1)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
parse_field(const struct field *f, const char *s, struct rdzv_msg *m,
    char *why, size_t whylen)
{
	char *dst = (char *)m + f->off;
	size_t i;

	switch (f->type) {
	case F_UINT:
		if (parse_uint(s, f->lo, f->hi, (unsigned *)(void *)dst) == 0)
			return 0;
		snprintf(why, whylen, "not a number in %lld..%lld", f->lo,
		    f->hi);
		return -1;
	case F_MONO:
		if (parse_ll(s, f->lo, f->hi, (long long *)(void *)dst) == 0)
			return 0;
		snprintf(why, whylen, "not a number in %lld..%lld", f->lo,
		    f->hi);
		return -1;
	case F_NAME:
		if (rdzv_name_ok(s))
			break;
		snprintf(why, whylen, "not a name of 1..%d characters of "
		    "[A-Za-z0-9._:@+-]", RDZV_NAME_MAX);
		return -1;
	case F_ADDR:
		if (addr_ok(s))
			break;
		snprintf(why, whylen, "not an address of 1..%d characters",
		    RDZV_ADDR_MAX);
		return -1;
	case F_NONCE:
		if (hex_ok(s, RDZV_NONCE_LEN))
			break;
		snprintf(why, whylen, "not %d lowercase hex digits",
		    RDZV_NONCE_LEN);
		return -1;
	case F_STATE:
		for (i = 0; i < NELEM(states); i++)
			if (strcmp(s, states[i]) == 0) {
				*(enum rdzv_node_state *)(void *)dst = i;
				return 0;
			}
		snprintf(why, whylen, "not new, running or done");
		return -1;
	}
	/* Every string field was checked to fit by its length limit. */
	strlcpy(dst, s, strlen(s) + 1);
	return 0;
}

/* Relations between fields, the same for reader and writer. */
static int
check_msg(const struct rdzv_msg *m, char *err, size_t errlen)
{
	const struct rdzv_round_msg *r = &m->u.round;
	const struct rdzv_join *j = &m->u.join;

	if (m->verb == RV_ROUND && (r->group_rank >= r->group_world_size ||
	    r->base_rank >= r->world_size ||
	    r->base_role_rank >= r->role_world_size)) {
		snprintf(err, errlen, "ROUND: a rank is not below its size");
		return -1;
	}
	if (m->verb != RV_JOIN)
		return 0;
	if (j->min_nodes > j->max_nodes) {
		snprintf(err, errlen, "JOIN: min %u above max %u",
		    j->min_nodes, j->max_nodes);
		return -1;
	}
	if (j->state != RS_NEW && j->group_rank >= j->group_world_size) {
		snprintf(err, errlen, "JOIN: group rank %u not below group "
		    "world size %u", j->group_rank, j->group_world_size);
		return -1;
	}
	return 0;
}

static bool
text_ok(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

static bool
code_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < sizeof(((struct rdzv_msg *)0)->u.err.code) &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz") == n;
}

/* ERR <code> <text...>: the text is the rest of the line, spaces and all. */
static int
parse_err(const char *rest, struct rdzv_msg *m, char *err, size_t errlen)
{
	size_t n = strcspn(rest, " ");
	const char *text = rest[n] == ' ' ? rest + n + 1 : rest + n;

	if (n >= sizeof(m->u.err.code)) {
		snprintf(err, errlen, "ERR: field 1 (code): too long");
		return -1;
	}
	memcpy(m->u.err.code, rest, n);
	m->u.err.code[n] = '\0';
	if (!code_ok(m->u.err.code)) {
		snprintf(err, errlen, "ERR: field 1 (code): not a word of "
		    "lowercase letters");
		return -1;
	}
	if (strlen(text) > RDZV_TEXT_MAX || !text_ok(text)) {
		snprintf(err, errlen, "ERR: field 2 (text): not up to %d "
		    "printable characters", RDZV_TEXT_MAX);
		return -1;
	}
	strlcpy(m->u.err.text, text, sizeof(m->u.err.text));
	return 0;
}

static size_t
split(char *s, char *fields[MAXFIELDS + 1])
{
	size_t n = 0;

	for (;;) {
		if (n == MAXFIELDS + 1)
			return n;
		fields[n++] = s;
		if ((s = strchr(s, ' ')) == NULL)
			return n;
		*s++ = '\0';
	}
}

static size_t
field_count(const struct verbdef *vd, const struct rdzv_msg *m)
{
	if (vd->verb == RV_JOIN && m->u.join.state == RS_NEW)
		return JOIN_NEW_FIELDS;
	if (vd->verb == RV_PING)
		return !m->u.ping.has_ack ? 0 : m->u.ping.has_end ? 2 : 1;
	return vd->nf;
}

static int
parse_fields(const struct verbdef *vd, char **fields, size_t n,
    struct rdzv_msg *m, char *err, size_t errlen)
{
	char why[128];
	size_t i, want;

	if (vd->verb == RV_JOIN && n > JOIN_STATE)
		want = strcmp(fields[JOIN_STATE], "new") == 0 ?
		    JOIN_NEW_FIELDS : vd->nf;
	else if (vd->verb == RV_PING && n < vd->nf)
		want = n;
	else
		want = vd->nf;
	if (vd->verb == RV_PING) {
		m->u.ping.has_ack = n > 0;
		m->u.ping.has_end = n > 1;
	}
	if (n != want) {
		if (vd->verb == RV_JOIN)
			snprintf(err, errlen, "JOIN: %zu fields, expected %d "
			    "(new) or %zu (running, done)", n,
			    JOIN_NEW_FIELDS, vd->nf);
		else
			snprintf(err, errlen, "%s: %zu fields, expected %zu",
			    vd->word, n, vd->nf);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (parse_field(&vd->f[i], fields[i], m, why, sizeof(why)) ==
		    -1) {
			snprintf(err, errlen, "%s: field %zu (%s): %s",
			    vd->word, i + 1, vd->f[i].name, why);
			return -1;
		}
	}
	return check_msg(m, err, errlen);
}

int
rdzv_msg_parse(const char *line, struct rdzv_msg *m, char *err,
    size_t errlen)
{
	char buf[RDZV_LINE_MAX + 1], *fields[MAXFIELDS + 1];
	const struct verbdef *vd;
	size_t len = strlen(line), n;

	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len == 0) {
		snprintf(err, errlen, "empty line");
		return -1;
	}
	if (len >= RDZV_LINE_MAX) {
		snprintf(err, errlen, "line longer than %d bytes",
		    RDZV_LINE_MAX);
		return -1;
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (!text_ok(buf)) {
		snprintf(err, errlen, "control or non-ASCII byte in line");
		return -1;
	}
	memset(m, 0, sizeof(*m));
	n = strcspn(buf, " ");
	buf[n] = '\0';
	if ((vd = verb_by_word(buf)) == NULL) {
		snprintf(err, errlen, "unknown verb");
		return -1;
	}
	m->verb = vd->verb;
	if (vd->verb == RV_ERR)
		return parse_err(buf + n + (n < len), m, err, errlen);
	if (n == len)
		n = 0;
	else
		n = split(buf + n + 1, fields);
	return parse_fields(vd, fields, n, m, err, errlen);
}

static int
format_field(char *buf, size_t len, const struct field *f,
    const struct rdzv_msg *m)
{
	const char *src = (const char *)m + f->off;
	char why[128];
	long long t;
	unsigned v;

	if (f->type == F_UINT) {
		v = *(const unsigned *)(const void *)src;
		if (v < f->lo || v > f->hi)
			return -1;
		return snprintf(buf, len, " %u", v);
	}
	if (f->type == F_MONO) {
		t = *(const long long *)(const void *)src;
		if (t < f->lo || t > f->hi)
			return -1;
		return snprintf(buf, len, " %lld", t);
	}
	if (f->type == F_STATE) {
		v = *(const enum rdzv_node_state *)(const void *)src;
		if (v >= NELEM(states))
			return -1;
		return snprintf(buf, len, " %s", states[v]);
	}
	/* A string is valid exactly when the reader would take it. */
	if (parse_field(f, src, &(struct rdzv_msg){ 0 }, why, sizeof(why)) ==
	    -1)
		return -1;
	return snprintf(buf, len, " %s", src);
}

int
rdzv_msg_format(char *buf, size_t len, const struct rdzv_msg *m)
{
	const struct verbdef *vd;
	char err[128];
	size_t i, n, off;
	int k;

	if ((vd = verb_by_id(m->verb)) == NULL || len == 0)
		return -1;
	if (len > RDZV_LINE_MAX)
		len = RDZV_LINE_MAX;	/* the reader's limit, '\n' included */
	if (check_msg(m, err, sizeof(err)) == -1)
		return -1;
	k = snprintf(buf, len, "%s", vd->word);
	if (m->verb == RV_ERR) {
		if (!code_ok(m->u.err.code) || !text_ok(m->u.err.text) ||
		    strlen(m->u.err.text) > RDZV_TEXT_MAX)
			return -1;
		k = snprintf(buf, len, "ERR %s %s", m->u.err.code,
		    m->u.err.text);
	}
	if (k < 0 || (size_t)k >= len)
		return -1;
	off = k;
	n = field_count(vd, m);
	for (i = 0; i < n; i++) {
		k = format_field(buf + off, len - off, &vd->f[i], m);
		if (k < 0 || (size_t)k >= len - off)
			return -1;
		off += k;
	}
	if (off + 1 >= len)
		return -1;
	buf[off++] = '\n';
	buf[off] = '\0';
	return (int)off;
}

int
rdzv_token_load(const char *path, char *token, size_t len, char *err,
    size_t errlen)
{
	char buf[RDZV_TOKEN_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t tl;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* Whoever else owns it knows the token and can play the server. */
	if (S_ISREG(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s: owner uid %u, mode %04o: owned by "
		    "another user, so esv does not trust it; chown it to uid "
		    "%u", path, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: %s", path, !S_ISREG(st.st_mode) ?
		    "not a regular file" : "readable or writable by group or "
		    "others (chmod 600 it)");
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	tl = strcspn(buf, "\n");
	buf[tl] = '\0';
	if (tl < RDZV_TOKEN_MIN || tl > RDZV_TOKEN_MAX || !text_ok(buf) ||
	    tl >= len) {
		snprintf(err, errlen, "%s: the first line must be %d..%d "
		    "printable characters", path, RDZV_TOKEN_MIN,
		    RDZV_TOKEN_MAX);
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	strlcpy(token, buf, len);
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

static void
hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

void
rdzv_nonce(char out[RDZV_NONCE_LEN + 1])
{
	uint8_t raw[RDZV_NONCE_LEN / 2];

	arc4random_buf(raw, sizeof(raw));
	hex(raw, sizeof(raw), out);
}

/* RFC 2104 over SHA-256. */
static void
hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
    uint8_t out[SHA256_DIGEST_LENGTH])
{
	uint8_t k[SHA256_BLOCK_LENGTH], pad[SHA256_BLOCK_LENGTH];
	size_t i;
	SHA2_CTX ctx;

	memset(k, 0, sizeof(k));
	if (klen > sizeof(k)) {
		SHA256Init(&ctx);
		SHA256Update(&ctx, key, klen);
		SHA256Final(k, &ctx);
	} else
		memcpy(k, key, klen);
	for (i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x36;
	SHA256Init(&ctx);
	SHA256Update(&ctx, pad, sizeof(pad));
	SHA256Update(&ctx, msg, mlen);
	SHA256Final(out, &ctx);
	for (i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x5c;
	SHA256Init(&ctx);
	SHA256Update(&ctx, pad, sizeof(pad));
	SHA256Update(&ctx, out, SHA256_DIGEST_LENGTH);
	SHA256Final(out, &ctx);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
}

void
rdzv_hmac_hex(const void *key, size_t keylen, const char *msg,
    char out[RDZV_MAC_LEN + 1])
{
	uint8_t d[SHA256_DIGEST_LENGTH];

	hmac_sha256(key, keylen, msg, strlen(msg), d);
	hex(d, sizeof(d), out);
}

void
rdzv_session_key(const char *token, const char *snonce, const char *cnonce,
    uint8_t key[RDZV_KEY_LEN])
{
	char msg[2 * RDZV_NONCE_LEN + 32];

	snprintf(msg, sizeof(msg), "esv-rdzv 2 session %s %s", snonce, cnonce);
	hmac_sha256(token, strlen(token), msg, strlen(msg), key);
}

/* The MAC of one line: "<dir> <seq> <line>" under the session key. */
static void
seal_mac(const char *line, size_t len, const uint8_t key[RDZV_KEY_LEN],
    char dir, uint64_t seq, char out[RDZV_MAC_LEN + 1])
{
	char msg[RDZV_LINE_MAX + 32];
	int n;

	n = snprintf(msg, sizeof(msg), "%c %llu %.*s", dir,
	    (unsigned long long)seq, (int)len, line);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = 0;	/* longer than any line: its seal will not hold */
	rdzv_hmac_hex(key, RDZV_KEY_LEN, n > 0 ? msg : "", out);
}

int
rdzv_seal(char *buf, size_t len, const char *text,
    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq)
{
	char mac[RDZV_MAC_LEN + 1];
	int n;

	seal_mac(text, strlen(text), key, dir, seq, mac);
	n = snprintf(buf, len, "%s %s\n", text, mac);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int
rdzv_msg_format_sealed(char *buf, size_t len, const struct rdzv_msg *m,
    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq)
{
	char mac[RDZV_MAC_LEN + 1];
	int n;

	/* Room for the seal within the reader's limit. */
	if (len > RDZV_LINE_MAX)
		len = RDZV_LINE_MAX;
	if (len <= RDZV_SEAL_LEN ||
	    (n = rdzv_msg_format(buf, len - RDZV_SEAL_LEN, m)) == -1)
		return -1;
	seal_mac(buf, n - 1, key, dir, seq, mac);
	snprintf(buf + n - 1, len - (n - 1), " %s\n", mac);
	return n + RDZV_SEAL_LEN;
}

int
rdzv_unseal_split(char *line, char mac[RDZV_MAC_LEN + 1])
{
	size_t len = strlen(line);

	if (len <= RDZV_SEAL_LEN || line[len - RDZV_SEAL_LEN] != ' ' ||
	    !hex_ok(line + len - RDZV_MAC_LEN, RDZV_MAC_LEN))
		return -1;
	strlcpy(mac, line + len - RDZV_MAC_LEN, RDZV_MAC_LEN + 1);
	line[len - RDZV_SEAL_LEN] = '\0';
	return 0;
}

bool
rdzv_seal_ok(const char *line, const char *mac,
    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq)
{
	char want[RDZV_MAC_LEN + 1];

	seal_mac(line, strlen(line), key, dir, seq, want);
	return rdzv_mac_equal(want, mac);
}

int
rdzv_msg_parse_sealed(char *line, struct rdzv_msg *m,
    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq, char *err,
    size_t errlen)
{
	char mac[RDZV_MAC_LEN + 1];
	size_t len = strlen(line);

	if (len > 0 && line[len - 1] == '\n')
		line[len - 1] = '\0';
	if (rdzv_unseal_split(line, mac) == -1) {
		snprintf(err, errlen, "not sealed (no MAC at the end)");
		return -1;
	}
	if (!rdzv_seal_ok(line, mac, key, dir, seq)) {
		snprintf(err, errlen, "bad MAC");
		return -1;
	}
	return rdzv_msg_parse(line, m, err, errlen);
}

bool
rdzv_mac_equal(const char *a, const char *b)
{
	unsigned char diff = 0;
	size_t i;

	if (strlen(a) != RDZV_MAC_LEN || strlen(b) != RDZV_MAC_LEN)
		return false;
	for (i = 0; i < RDZV_MAC_LEN; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return diff == 0;
}
