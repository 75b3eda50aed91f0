#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "failure.h"
#include "utf8.h"

#define NOT_AVAILABLE	"<N/A>"
#define NO_TRACEBACK	"To enable traceback see: " \
			"https://pytorch.org/docs/stable/elastic/errors.html"
/* A worker writes a traceback, not a data set; don't slurp a runaway file. */
#define ERROR_FILE_MAX	(16 * 1024 * 1024)
#define SUMMARY_WIDTH_MAX 60

/* What torch takes from a parsed error file (ProcessFailure._get_error_data). */
struct file_info {
	const char	*text;		/* for the traceback line; NULL: none */
	long long	 ts;
	int		 have_ts;
	int		 dict;		/* message is an object: indent its text */
	const char	*why;		/* not torch's shape: the reason */
};

/*
 * Python's names (signal.Signals), which differ from glibc's abbreviations
 * for SIGIO and the real-time bounds.
 */
static const char *
signal_name(int signo, char *buf, size_t len)
{
	const char *abbrev;

	if (signo == SIGIO)
		return "SIGIO";
	if (signo == SIGRTMIN)
		return "SIGRTMIN";
	if (signo == SIGRTMAX)
		return "SIGRTMAX";
	if ((abbrev = sigabbrev_np(signo)) != NULL)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "SIG%d", signo);
	return buf;
}

/* Python's int() of a JSON value: an integer, a float, or a numeral. */
static int
parse_ts(const json_t *v, long long *out)
{
	const char *s;
	char *end;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		if (!(d > (double)LLONG_MIN && d < (double)LLONG_MAX))
			return -1;
		*out = (long long)d;
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	s = json_string_value(v);
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (end == s || errno != 0)
		return -1;
	while (*end == ' ' || *end == '\t' || *end == '\n')
		end++;
	return *end == '\0' ? 0 : -1;
}

/* extraInfo.py_callstack, else message.message, else <N/A>. */
static const char *
dict_traceback(const json_t *msg)
{
	const json_t *extra, *v;

	extra = json_object_get(msg, "extraInfo");
	if (json_is_string(v = json_object_get(extra, "py_callstack")))
		return json_string_value(v);
	if (json_is_string(v = json_object_get(msg, "message")))
		return json_string_value(v);
	return NOT_AVAILABLE;
}

static void
inspect(const json_t *root, struct file_info *fi)
{
	const json_t *msg, *extra, *ts;

	memset(fi, 0, sizeof(*fi));
	msg = json_object_get(root, "message");
	if (json_is_string(msg)) {
		/* The "new format": a missing timestamp is 0 in torch. */
		fi->text = json_string_value(msg);
		ts = json_object_get(root, "timestamp");
		fi->have_ts = ts == NULL || parse_ts(ts, &fi->ts) == 0;
	} else if (json_is_object(msg)) {
		/* An empty dict is falsy to torch: it makes up a message. */
		if (json_object_size(msg) > 0) {
			fi->dict = 1;
			fi->text = dict_traceback(msg);
		}
		extra = json_object_get(msg, "extraInfo");
		fi->have_ts = parse_ts(json_object_get(extra, "timestamp"),
		    &fi->ts) == 0;
	} else
		fi->why = "no \"message\" string or object";
	if (fi->text != NULL && fi->text[0] == '\0')
		fi->text = NULL;
}

/* The file's text; NULL with errno 0 when there is no regular file. */
static char *
slurp(int dirfd, const char *name, int flags)
{
	char *text = read_text_at(dirfd, name, flags, ERROR_FILE_MAX - 1,
	    NULL);

	if (text == NULL && (errno == ENOENT || errno == ENOTDIR ||
	    errno == EINVAL))
		errno = 0;
	return text;
}

static char *
made_up_message(const struct worker_failure *f)
{
	char buf[32], *s;

	if (f->exitcode >= 0)
		return strdup(NO_TRACEBACK);
	if (asprintf(&s, "Signal %d (%s) received by PID %ld", -f->exitcode,
	    signal_name(-f->exitcode, buf, sizeof(buf)), (long)f->pid) == -1)
		return NULL;
	return s;
}

/* Message and timestamp from the file's text; never fails but on ENOMEM. */
static int
from_file(struct worker_failure *f, time_t now)
{
	struct file_info fi;
	json_error_t err;
	json_t *root;
	int rc;

	root = json_loads(f->error_json, JSON_DECODE_ANY, &err);
	if (root == NULL) {
		f->timestamp = now;
		rc = asprintf(&f->message, "error file %s: %s at line %d "
		    "column %d", f->error_file, err.text, err.line, err.column);
		return rc == -1 ? -1 : 0;
	}
	inspect(root, &fi);
	f->timestamp = fi.have_ts ? fi.ts : now;
	if (fi.why != NULL)
		rc = asprintf(&f->message, "error file %s: %s", f->error_file,
		    fi.why) == -1 ? -1 : 0;
	else if (fi.text != NULL)
		rc = (f->message = strdup(fi.text)) == NULL ? -1 : 0;
	else
		rc = (f->message = made_up_message(f)) == NULL ? -1 : 0;
	json_decref(root);
	return rc;
}

/* The file exists but cannot be read: say why in the summary. */
static int
unreadable(struct worker_failure *f, const char *path, int e)
{
	if ((f->error_file = strdup(path)) == NULL)
		return -1;
	return asprintf(&f->message, "error file %s: %s", path,
	    strerror(e)) == -1 ? -1 : 0;
}

/*
 * The message and the path come from the worker (a broken file, jansson's
 * complaint that quotes it): both are printed and put into JSON.
 */
static int
make_valid(char **s)
{
	char *fixed;

	if (utf8_valid(*s, strlen(*s)))
		return 0;
	if ((fixed = utf8_fix(*s)) == NULL)
		return -1;
	free(*s);
	*s = fixed;
	return 0;
}

int
failure_init(struct worker_failure *f, unsigned local_rank, unsigned rank,
    pid_t pid, int exitcode, const char *error_path, time_t now)
{
	return failure_init_at(f, local_rank, rank, pid, exitcode, AT_FDCWD,
	    error_path, 0, error_path, now);
}

int
failure_init_at(struct worker_failure *f, unsigned local_rank, unsigned rank,
    pid_t pid, int exitcode, int dirfd, const char *name, int flags,
    const char *error_path, time_t now)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->local_rank = local_rank;
	f->rank = rank;
	f->pid = pid;
	f->exitcode = exitcode;
	f->timestamp = now;
	if (name != NULL && name[0] != '\0' &&
	    (f->error_json = slurp(dirfd, name, flags)) == NULL &&
	    errno != 0) {
		if (errno == ENOMEM)
			return -1;
		rc = unreadable(f, error_path, errno);
	} else if (f->error_json != NULL) {
		rc = (f->error_file = strdup(error_path)) == NULL ? -1 :
		    from_file(f, now);
	} else
		rc = (f->message = made_up_message(f)) == NULL ? -1 : 0;
	if (rc == 0)
		rc = make_valid(&f->message);
	if (rc == 0 && f->error_file != NULL)
		rc = make_valid(&f->error_file);
	if (rc == -1)
		failure_free(f);
	return rc;
}

int
failure_note_oom(struct worker_failure *f, long long oom_kill,
    long long memory_peak)
{
	char *msg, peak[64] = "";

	if (f->exitcode != -SIGKILL || oom_kill <= 0)
		return 0;
	if (memory_peak >= 0)
		snprintf(peak, sizeof(peak), " at %.1f GiB (memory.peak of its "
		    "cgroup)", (double)memory_peak / (1 << 30));
	if (asprintf(&msg, "Signal 9 (SIGKILL) received by PID %ld: killed "
	    "by the OOM killer%s", (long)f->pid, peak) == -1)
		return -1;
	free(f->message);
	f->message = msg;
	return 1;
}

void
failure_free(struct worker_failure *f)
{
	free(f->error_file);
	free(f->error_json);
	free(f->message);
	f->error_file = f->error_json = f->message = NULL;
}

/* Ties go to the lower rank, as torch's min() over its rank-ordered dict. */
size_t
failure_root_cause(const struct worker_failure *fs, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (fs[i].timestamp < fs[best].timestamp ||
		    (fs[i].timestamp == fs[best].timestamp &&
		    fs[i].rank < fs[best].rank))
			best = i;
	return best;
}

/* Positions of fs in rank order: torch's failures dict is keyed by rank. */
static size_t *
rank_order(const struct worker_failure *fs, size_t n)
{
	size_t *order, i, j, t;

	if ((order = reallocarray(NULL, n ? n : 1, sizeof(*order))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		order[i] = i;
		for (j = i; j > 0 && fs[order[j - 1]].rank > fs[order[j]].rank;
		    j--) {
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	}
	return order;
}

static const char *
format_time(long long ts, char *buf, size_t len)
{
	time_t t = (time_t)ts;
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d_%H:%M:%S", &tm) == 0)
		snprintf(buf, len, "%lld", ts);
	return buf;
}

/* Whether the file's message is a dict, which torch shows indented. */
static int
message_is_dict(const struct worker_failure *f)
{
	struct file_info fi;
	json_t *root;

	if (f->error_json == NULL ||
	    (root = json_loads(f->error_json, JSON_DECODE_ANY, NULL)) == NULL)
		return 0;
	inspect(root, &fi);
	json_decref(root);
	return fi.dict;
}

/* One "[idx]:" block without its final newline; NULL on ENOMEM. */
static char *
format_block(size_t idx, const char *host, const struct worker_failure *f)
{
	char tbuf[64], *out = NULL;
	const char *p;
	size_t outlen;
	FILE *mf;
	int indent = message_is_dict(f);

	if ((mf = open_memstream(&out, &outlen)) == NULL)
		return NULL;
	fprintf(mf, "[%zu]:\n"
	    "  time      : %s\n"
	    "  host      : %s\n"
	    "  rank      : %u (local_rank: %u)\n"
	    "  exitcode  : %d (pid: %ld)\n"
	    "  error_file: %s\n"
	    "  traceback : ",
	    idx, format_time(f->timestamp, tbuf, sizeof(tbuf)), host,
	    f->rank, f->local_rank, f->exitcode, (long)f->pid,
	    f->error_file != NULL ? f->error_file : NOT_AVAILABLE);
	for (p = f->message; *p != '\0'; p++) {
		fputc(*p, mf);
		if (*p == '\n' && indent)
			fputs("  ", mf);
	}
	if (fclose(mf) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Python's len() of the longest line: code points, not bytes. */
static size_t
widest_line(const char *s)
{
	size_t w = 0, max = 0;

	for (; *s != '\0'; s++) {
		if (*s == '\n') {
			w = 0;
			continue;
		}
		if (((unsigned char)*s & 0xc0) != 0x80 && ++w > max)
			max = w;
	}
	return max;
}

static void
put_rule(FILE *fp, int c, size_t width)
{
	while (width-- > 0)
		fputc(c, fp);
	fputc('\n', fp);
}

/* Each failure as torch formats it, in rank order; NULL on ENOMEM. */
static char **
format_blocks(const char *host, const struct worker_failure *fs,
    const size_t *order, size_t n)
{
	char **blocks;
	size_t i;

	if ((blocks = calloc(n, sizeof(*blocks))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if ((blocks[i] = format_block(i, host, &fs[order[i]])) == NULL)
			break;
	if (i == n)
		return blocks;
	while (i-- > 0)
		free(blocks[i]);
	free(blocks);
	return NULL;
}

static void
put_summary(FILE *fp, const char *name, char **blocks, size_t n,
    size_t root)
{
	size_t i, width;

	width = widest_line(name) + strlen(" FAILED");
	for (i = 0; i < n; i++)
		if (widest_line(blocks[i]) > width)
			width = widest_line(blocks[i]);
	if (width > SUMMARY_WIDTH_MAX)
		width = SUMMARY_WIDTH_MAX;
	put_rule(fp, '=', width);
	fprintf(fp, "%s FAILED\n", name);
	put_rule(fp, '-', width);
	fputs("Failures:\n", fp);
	for (i = 0; i < n; i++)
		if (i != root)
			fprintf(fp, "%s\n", blocks[i]);
	if (n == 1)
		fputs("  <NO_OTHER_FAILURES>\n", fp);
	put_rule(fp, '-', width);
	fputs("Root Cause (first observed failure):\n", fp);
	fprintf(fp, "%s\n", blocks[root]);
	put_rule(fp, '=', width);
}

void
failure_summary_text(FILE *fp, const char *name, const char *host,
    const struct worker_failure *fs, size_t n)
{
	char **blocks = NULL;
	size_t *order, i, root, pos = 0;

	if (n == 0)
		return;
	if ((order = rank_order(fs, n)) != NULL)
		blocks = format_blocks(host, fs, order, n);
	if (blocks == NULL) {
		/* Out of memory: at least the verdict reaches the log. */
		fprintf(fp, "%s FAILED\n", name);
		free(order);
		return;
	}
	root = failure_root_cause(fs, n);
	while (order[pos] != root)
		pos++;
	put_summary(fp, name, blocks, n, pos);
	for (i = 0; i < n; i++)
		free(blocks[i]);
	free(blocks);
	free(order);
}

/* Sets key to v, taking it; a NULL v (out of memory) just leaves key out. */
static void
put(json_t *o, const char *key, json_t *v)
{
	if (v != NULL)
		json_object_set_new(o, key, v);
}

/*
 * Every string is made valid UTF-8 (json_text): one worker's broken bytes
 * must not cost the record of every failure.
 */
static json_t *
failure_json(const struct worker_failure *f)
{
	char tbuf[64], sbuf[32];
	json_t *o;

	if ((o = json_object()) == NULL)
		return NULL;
	put(o, "rank", json_integer(f->rank));
	put(o, "local_rank", json_integer(f->local_rank));
	put(o, "pid", json_integer(f->pid));
	put(o, "exitcode", json_integer(f->exitcode));
	put(o, "signal", f->exitcode < 0 ?
	    json_string(signal_name(-f->exitcode, sbuf, sizeof(sbuf))) :
	    json_null());
	put(o, "error_file", f->error_file != NULL ?
	    json_text(f->error_file) : json_null());
	put(o, "message", json_text(f->message != NULL ? f->message : ""));
	put(o, "timestamp", json_integer(f->timestamp));
	put(o, "time", json_text(format_time(f->timestamp, tbuf,
	    sizeof(tbuf))));
	/* jansson checks what it parses: a file it takes is valid UTF-8. */
	put(o, "error_file_data", f->error_json != NULL ?
	    json_loads(f->error_json, JSON_DECODE_ANY, NULL) : NULL);
	if (json_object_get(o, "error_file_data") == NULL)
		put(o, "error_file_data", json_null());
	return o;
}

char *
failure_summary_json(const char *name, const char *host,
    const struct worker_failure *fs, size_t n)
{
	json_t *doc, *list;
	size_t *order, i;
	char *out;

	if ((doc = json_object()) == NULL)
		return NULL;
	put(doc, "name", json_text(name));
	put(doc, "host", json_text(host));
	put(doc, "root_cause", n > 0 ?
	    failure_json(&fs[failure_root_cause(fs, n)]) : json_null());
	if ((list = json_array()) != NULL &&
	    (order = rank_order(fs, n)) != NULL) {
		for (i = 0; i < n; i++)
			json_array_append_new(list, failure_json(&fs[order[i]]));
		free(order);
	}
	put(doc, "failures", list);
	out = json_dumps(doc, 0);
	json_decref(doc);
	return out;
}

/* The copy's bytes: torch re-serializes the parsed file with errorCode. */
static char *
root_cause_copy(const struct worker_failure *root)
{
	json_t *doc, *msg;
	char *out;

	doc = json_loads(root->error_json, JSON_DECODE_ANY, NULL);
	if (doc == NULL)	/* torch would crash; pass the bytes on as they are */
		return strdup(root->error_json);
	msg = json_object_get(doc, "message");
	if (root->exitcode != 0 && json_is_object(msg) &&
	    json_object_set_new(msg, "errorCode",
	    json_integer(root->exitcode)) == -1) {
		json_decref(doc);
		return NULL;
	}
	/* Python's json.dumps: ", " and ": " separators, ASCII only. */
	out = json_dumps(doc, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	json_decref(doc);
	return out;
}

int
failure_copy_root_cause(const char *dest, const struct worker_failure *root)
{
	char *buf;
	int rc;

	if (root == NULL || root->error_file == NULL ||
	    root->error_json == NULL)
		return 1;
	if ((buf = root_cause_copy(root)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	/* The worker's traceback may hold secrets: ours to show, not all's. */
	rc = atomic_write(dest, buf, strlen(buf), 0600);
	free(buf);
	return rc;
}

/* A resolver's answer is bytes too: it is printed and put into JSON. */
static void
set_name(char *buf, size_t len, const char *name)
{
	char *fixed = utf8_fix(name);

	utf8_strlcpy(buf, fixed != NULL ? fixed : "localhost", len);
	free(fixed);
}

void
host_fqdn(char *buf, size_t len)
{
	struct addrinfo hints, *res;
	char name[HOST_NAME_MAX + 1];
	struct hostent *he = NULL;
	const void *addr;
	socklen_t alen;
	char **alias;

	if (gethostname(name, sizeof(name)) == -1)
		strlcpy(name, "localhost", sizeof(name));
	name[sizeof(name) - 1] = '\0';
	set_name(buf, len, name);
	/*
	 * Python's getfqdn: the reverse lookup of the host's address, then
	 * the first of its names that has a dot, else its primary name.
	 */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return;
	if (res->ai_family == AF_INET) {
		addr = &((struct sockaddr_in *)res->ai_addr)->sin_addr;
		alen = sizeof(struct in_addr);
	} else {
		addr = &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
		alen = sizeof(struct in6_addr);
	}
	he = gethostbyaddr(addr, alen, res->ai_family);
	freeaddrinfo(res);
	if (he == NULL || he->h_name == NULL)
		return;
	if (strchr(he->h_name, '.') != NULL) {
		set_name(buf, len, he->h_name);
		return;
	}
	for (alias = he->h_aliases; alias != NULL && *alias != NULL; alias++)
		if (strchr(*alias, '.') != NULL) {
			set_name(buf, len, *alias);
			return;
		}
	set_name(buf, len, he->h_name);
}
