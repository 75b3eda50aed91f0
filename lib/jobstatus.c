#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "cgstat.h"
#include "jobstatus.h"
#include "utf8.h"
#include "wdchan.h"
#include "kvfile.h"

typedef const struct ctl_key *schema_fn(const char *name);

static int
job_path(char *buf, size_t size, const char *jobdir, const char *rel)
{
	if ((size_t)snprintf(buf, size, "%s/%s", jobdir, rel) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
jobstatus_probe(const char *jobdir)
{
	char path[PATH_MAX];
	int fd;

	if (job_path(path, sizeof(path), jobdir, ESV_OK) == -1)
		return -1;
	/* Opening a FIFO to write without blocking needs a reader. */
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return errno == ENXIO || errno == ENOENT || errno == ENOTDIR ?
		    0 : -1;
	close(fd);
	return 1;
}

/* What a key of a state file is made of. */
#define KEY_CHARS	"abcdefghijklmnopqrstuvwxyz0123456789_"

static int
is_decimal(const char *s)
{
	size_t n;

	if (*s == '-')
		s++;
	if ((n = strspn(s, "0123456789")) == 0 || s[n] != '.')
		return 0;
	s += n + 1;
	return (n = strspn(s, "0123456789")) > 0 && s[n] == '\0';
}

static json_t *
json_scalar(const char *v)
{
	const char *errstr;
	long long n;
	double d;

	if (*v == '\0')
		return json_null();
	if (v[strspn(v, "-0123456789")] == '\0') {
		n = strtonum(v, LLONG_MIN, LLONG_MAX, &errstr);
		if (errstr == NULL)
			return json_integer(n);
	}
	/* 400 digits make inf, which JSON cannot hold: keep the text. */
	if (is_decimal(v) && isfinite(d = strtod(v, NULL)))
		return json_real(d);
	return json_text(v);
}

static json_t *
json_scalar_list(const char *v)
{
	json_t *a;
	char *copy, *p, *item;

	if ((a = json_array()) == NULL || (copy = strdup(v)) == NULL) {
		json_decref(a);
		return NULL;
	}
	for (p = copy; (item = strsep(&p, " \t")) != NULL; ) {
		if (*item == '\0')
			continue;
		if (json_array_append_new(a, json_scalar(item)) == -1) {
			json_decref(a);
			a = NULL;
			break;
		}
	}
	free(copy);
	return a;
}

/*
 * Each value as its key's type says (ctlschema.h): a run id such as "42"
 * must not turn into a number.  A key the schema does not know (from a
 * newer supervisor) is read as a number if it looks like one.
 */
static json_t *
kv_to_json(const struct kvlist *kl, schema_fn *schema)
{
	const struct ctl_key *k;
	const struct kvpair *kp;
	json_t *o, *v;
	size_t i;

	if ((o = json_object()) == NULL)
		return NULL;
	for (i = 0; i < kl->n; i++) {
		kp = &kl->pairs[i];
		/* Anything but a well-formed key is noise, ignored as unknown. */
		if (kp->key[strspn(kp->key, KEY_CHARS)]
		    != '\0')
			continue;
		k = schema(kp->key);
		if (k != NULL && k->type == CTL_PIDS)
			v = json_scalar_list(kp->value);
		else if (*kp->value == '\0')
			v = json_null();
		else if (k != NULL && (k->type == CTL_NAME ||
		    k->type == CTL_PATH))
			v = json_text(kp->value);
		else
			v = json_scalar(kp->value);
		if (json_object_set_new(o, kp->key, v) == -1) {
			json_decref(o);
			errno = ENOMEM;
			return NULL;
		}
	}
	return o;
}

/*
 * What is wrong with a state file's text, into why; 0 if nothing.  The
 * supervisor writes whole files of key=value lines; anything else was
 * truncated by a full disk, edited, or is not a state file at all.
 */
static int
kv_text_problem(const char *text, size_t len, char *why, size_t whylen)
{
	const char *line, *end, *eq;
	size_t lineno = 1;

	if (len == 0)
		return snprintf(why, whylen, "empty"), 1;
	if ((end = memchr(text, '\0', len)) != NULL)
		return snprintf(why, whylen, "binary: a NUL byte at offset %zu",
		    (size_t)(end - text)), 1;
	for (line = text; line < text + len; line = end + 1, lineno++) {
		if ((end = memchr(line, '\n', text + len - line)) == NULL)
			return snprintf(why, whylen, "line %zu: truncated: no "
			    "newline at the end", lineno), 1;
		eq = memchr(line, '=', end - line);
		if (eq == NULL || eq == line || line[strspn(line,
		    KEY_CHARS)] != '=')
			return snprintf(why, whylen, "line %zu: not key=value",
			    lineno), 1;
		if (!utf8_valid(line, end - line))
			return snprintf(why, whylen, "line %zu: not UTF-8",
			    lineno), 1;
	}
	return 0;
}

/* Say that rel is bad (errors is an array); -1 only when out of memory. */
static int
bad_file(json_t *errors, const char *rel, const char *why)
{
	char *s;
	int rc;

	if (asprintf(&s, "%s: %s", rel, why) == -1)
		return -1;
	rc = json_array_append_new(errors, json_text(s));
	free(s);
	return rc;
}

/*
 * *out is NULL when the file does not exist or cannot be read at all.
 * What is wrong with it goes to errors; what can be read of it is kept.
 * -1/ENOMEM only.
 */
static int
load_kv(const char *jobdir, const char *rel, schema_fn *schema,
    json_t *errors, json_t **out)
{
	struct kvlist kl;
	char path[PATH_MAX], why[128];
	size_t len;
	char *text;

	*out = NULL;
	if (job_path(path, sizeof(path), jobdir, rel) == -1)
		return bad_file(errors, rel, strerror(errno));
	if ((text = read_text(path, KV_FILE_MAX, &len)) == NULL) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		if (errno == ENOMEM)
			return -1;
		return bad_file(errors, rel, errno == EINVAL ?
		    "not a regular file" : errno == EFBIG ?
		    "too big for a state file" : strerror(errno));
	}
	if (kv_text_problem(text, len, why, sizeof(why)) &&
	    bad_file(errors, rel, why) == -1) {
		free(text);
		return -1;
	}
	if (kv_parse(text, &kl) == -1) {
		free(text);
		return -1;
	}
	*out = kv_to_json(&kl, schema);
	kv_list_free(&kl);
	return *out == NULL ? -1 : 0;
}

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The local ranks that have a directory under workers/, sorted. */
static int
worker_ranks(const char *jobdir, int **ranks, size_t *n)
{
	char path[PATH_MAX], canon[16];
	struct dirent *de;
	const char *errstr;
	size_t cap = 0;
	int *nr, r;
	DIR *d;

	*ranks = NULL;
	*n = 0;
	if (job_path(path, sizeof(path), jobdir, ESV_WORKERS_DIR) == -1)
		return -1;
	if ((d = opendir(path)) == NULL)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		r = (int)strtonum(de->d_name, 0, INT_MAX, &errstr);
		snprintf(canon, sizeof(canon), "%d", r);
		if (errstr != NULL || strcmp(canon, de->d_name) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nr = reallocarray(*ranks, cap, sizeof(*nr))) == NULL) {
				closedir(d);
				free(*ranks);
				*ranks = NULL;
				return -1;
			}
			*ranks = nr;
		}
		(*ranks)[(*n)++] = r;
	}
	closedir(d);
	if (*n > 0)	/* an empty workers/ leaves *ranks NULL */
		qsort(*ranks, *n, sizeof(**ranks), cmp_int);
	return 0;
}

static void
set_count(json_t *w, const char *key, long long v)
{
	if (v >= 0)
		json_object_set_new(w, key, json_integer(v));
}

/*
 * A running worker's counters are the kernel's: read them from the
 * cgroup its state names (the supervisor writes them only at the exit),
 * less the CPU time the cgroup had counted at the worker's start.
 * memory_current exists only so, while it runs.
 */
static void
live_counters(json_t *w)
{
	const char *cg = json_string_value(json_object_get(w,
	    ctl_worker_key(WK_CGROUP)));
	json_t *jbase = json_object_get(w, ctl_worker_key(WK_CGROUP_CPU_BASE));
	/* Absent: a supervisor that made a fresh cgroup at every start. */
	long long base = jbase == NULL ? 0 : json_is_integer(jbase) ?
	    json_integer_value(jbase) : -1;
	struct cgstat st;

	if (cg == NULL || cg[0] != '/' || cgstat_read_path(cg, &st) == -1)
		return;
	if (st.cpu_usec >= 0)
		st.cpu_usec = base < 0 ? -1 : st.cpu_usec > base ?
		    st.cpu_usec - base : 0;
	set_count(w, ctl_worker_key(WK_CPU_USEC), st.cpu_usec);
	set_count(w, ctl_worker_key(WK_MEMORY_PEAK), st.memory_peak);
	set_count(w, ctl_worker_key(WK_OOM_KILL), st.oom_kill);
	set_count(w, "memory_current", st.memory_current);
}

static json_t *
load_workers(const char *jobdir, json_t *errors)
{
	char rel[PATH_MAX];
	json_t *a, *w;
	size_t i, n;
	int *ranks;

	if (worker_ranks(jobdir, &ranks, &n) == -1)
		return NULL;
	if ((a = json_array()) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/%d/state", ESV_WORKERS_DIR,
		    ranks[i]);
		if (load_kv(jobdir, rel, ctl_worker_lookup, errors, &w) == -1)
			goto fail;
		if (w == NULL)
			continue;
		if (json_object_get(w, ctl_worker_key(WK_LOCAL_RANK)) == NULL &&
		    json_object_set_new(w, ctl_worker_key(WK_LOCAL_RANK),
		    json_integer(ranks[i])) == -1) {
			json_decref(w);
			goto fail;
		}
		live_counters(w);
		if (json_array_append_new(a, w) == -1)
			goto fail;
	}
	free(ranks);
	return a;
fail:
	free(ranks);
	json_decref(a);
	return NULL;
}

json_t *
jobstatus_watchdog(const struct wd_status *ws)
{
	if (ws == NULL)
		return json_null();
	return json_pack("{sf sI sI sI sI sI si}", "last_progress",
	    ws->last_progress, "armed", (json_int_t)ws->armed, "requests",
	    (json_int_t)ws->requests, "refused", (json_int_t)ws->refused,
	    "expired", (json_int_t)ws->expired, "workers",
	    (json_int_t)ws->workers, "pid", (int)ws->pid);
}

const char *
jobstatus_watchdog_socket(const json_t *st)
{
	const char *sock = json_string_value(json_object_get(
	    json_object_get(st, "job"), ctl_job_key(JK_WATCHDOG_SOCKET)));

	return sock != NULL && *sock != '\0' ? sock : NULL;
}

json_t *
jobstatus_load_files(const char *jobdir)
{
	json_t *st, *job = NULL, *workers = NULL, *store = NULL, *errors;
	const char *listen;
	int up;

	if ((up = jobstatus_probe(jobdir)) == -1)
		return NULL;
	if ((errors = json_array()) == NULL ||
	    load_kv(jobdir, ESV_STATE, ctl_job_lookup, errors, &job) == -1 ||
	    (workers = load_workers(jobdir, errors)) == NULL)
		goto nomem;
	/* The file outlives its store: it counts while store_listen is set. */
	listen = json_string_value(json_object_get(job,
	    ctl_job_key(JK_STORE_LISTEN)));
	if (listen != NULL && *listen != '\0' && load_kv(jobdir,
	    ESV_STORE_STATE, ctl_store_lookup, errors, &store) == -1)
		goto nomem;
	if ((st = json_object()) == NULL)
		goto nomem;
	if (json_object_set_new(st, "jobdir", json_text(jobdir)) == -1 ||
	    json_object_set_new(st, "supervisor",
	    json_string(up ? ESV_SUPERVISOR_RUNNING :
	    ESV_SUPERVISOR_NOT_RUNNING)) == -1 ||
	    json_object_set_new(st, "job", job ? job : json_null()) == -1 ||
	    json_object_set_new(st, "workers", workers) == -1 ||
	    json_object_set_new(st, "store", store ? store : json_null()) ==
	    -1 ||
	    json_object_set_new(st, "errors", errors) == -1) {
		/* set_new consumed what it was given, even on failure. */
		json_decref(st);
		errno = ENOMEM;
		return NULL;
	}
	return st;
nomem:
	json_decref(errors);
	json_decref(job);
	json_decref(workers);
	json_decref(store);
	errno = ENOMEM;
	return NULL;
}

json_t *
jobstatus_load(const char *jobdir)
{
	struct wd_status ws;
	const char *sock;
	json_t *st;
	bool asked;

	if ((st = jobstatus_load_files(jobdir)) == NULL)
		return NULL;
	sock = jobstatus_watchdog_socket(st);
	asked = sock != NULL && strcmp(json_string_value(json_object_get(st,
	    "supervisor")), ESV_SUPERVISOR_RUNNING) == 0 &&
	    wdchan_query(sock, 500, &ws) == 0;
	if (json_object_set_new(st, "watchdog",
	    jobstatus_watchdog(asked ? &ws : NULL)) == -1) {
		json_decref(st);
		errno = ENOMEM;
		return NULL;
	}
	return st;
}

/* The text of a scalar field, or NULL when absent, null or empty. */
static const char *
field(const json_t *o, const char *key, char *buf, size_t size)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, size, "%.3f", json_real_value(v));
	else if (json_is_string(v) && json_string_length(v) > 0)
		return json_string_value(v);
	else
		return NULL;
	return buf;
}

static void
print_field(FILE *fp, const json_t *o, const char *key, const char *label)
{
	char buf[64];
	const char *v;

	if ((v = field(o, key, buf, sizeof(buf))) != NULL)
		fprintf(fp, "%s%s", label, v);
}

/*
 * Whole seconds of a difference of two times, 0 if negative (clocks of two
 * hosts may disagree); an edited file may hold any finite number, so the
 * conversion clamps instead of overflowing.
 */
static long long
whole_seconds(double d)
{
	if (!(d > 0))
		return 0;
	if (d >= 9.2e18)
		return LLONG_MAX;
	return (long long)d;
}

static int
seconds_since(const json_t *o, const char *key, double now, long long *secs)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		return 0;
	*secs = whole_seconds(now - json_number_value(v));
	return 1;
}

static void
print_job_details(FILE *fp, const json_t *job, double now)
{
	json_t *v;
	char b1[64], b2[64];
	const char *x, *y;
	long long secs;

	if ((v = json_object_get(job, ctl_job_key(JK_PAUSED))) != NULL &&
	    json_is_integer(v) && json_integer_value(v) != 0)
		fputs(", paused", fp);
	print_field(fp, job, "attempt", ", attempt ");
	if ((x = field(job, ctl_job_key(JK_RESTART_COUNT), b1, sizeof(b1))) != NULL) {
		fprintf(fp, ", restarts %s", x);
		print_field(fp, job, "max_restarts", "/");
	}
	if ((v = json_object_get(job, ctl_job_key(JK_MANUAL_RESTARTS))) != NULL &&
	    json_is_integer(v) && json_integer_value(v) != 0)
		fprintf(fp, ", manual restarts %lld",
		    (long long)json_integer_value(v));
	x = field(job, ctl_job_key(JK_GROUP_RANK), b1, sizeof(b1));
	y = field(job, ctl_job_key(JK_GROUP_WORLD_SIZE), b2, sizeof(b2));
	if (x != NULL && y != NULL)
		fprintf(fp, ", node %s/%s", x, y);
	print_field(fp, job, "world_size", ", world ");
	if ((x = field(job, ctl_job_key(JK_MASTER_ADDR), b1, sizeof(b1))) != NULL) {
		fprintf(fp, ", master %s", x);
		print_field(fp, job, "master_port", ":");
	}
	if ((x = field(job, ctl_job_key(JK_RDZV_ENDPOINT), b1, sizeof(b1))) != NULL) {
		fprintf(fp, ", rendezvous %s", x);
		v = json_object_get(job, ctl_job_key(JK_RDZV_CONNECTED));
		if (json_is_integer(v) && json_integer_value(v) == 0)
			fputs(" (disconnected)", fp);
	}
	print_field(fp, job, "rdzv_round", " round ");
	if ((v = json_object_get(job, ctl_job_key(JK_NODES_WAITING))) != NULL &&
	    json_is_integer(v) && json_integer_value(v) != 0)
		fprintf(fp, ", nodes waiting %lld",
		    (long long)json_integer_value(v));
	if ((v = json_object_get(job, ctl_job_key(JK_MEMBERSHIP_RESTARTS))) != NULL &&
	    json_is_integer(v) && json_integer_value(v) != 0)
		fprintf(fp, ", membership restarts %lld",
		    (long long)json_integer_value(v));
	if ((v = json_object_get(job, ctl_job_key(JK_NEXT_START))) != NULL &&
	    json_is_number(v)) {
		secs = whole_seconds(json_number_value(v) - now + 0.999);
		fprintf(fp, ", restart in %llds", secs);
	}
	print_field(fp, job, "exit_code", ", exit ");
	/* The attempt's log directory: the workers' output, error files. */
	print_field(fp, job, ctl_job_key(JK_ATTEMPT_DIR), ", logs ");
	print_field(fp, job, "want", ", want ");
}

static void
print_errors(FILE *fp, const json_t *st)
{
	const json_t *errors = json_object_get(st, "errors");
	size_t i;

	for (i = 0; i < json_array_size(errors); i++)
		fprintf(fp, "  bad file: %s\n",
		    json_string_value(json_array_get(errors, i)));
}

void
jobstatus_print_job(FILE *fp, const json_t *st, double now)
{
	const json_t *job = json_object_get(st, "job");
	const char *jobdir, *sup, *state, *pid, *where;
	char b1[64], b2[64];
	long long secs;
	json_t *v;
	int up;

	jobdir = json_string_value(json_object_get(st, "jobdir"));
	sup = json_string_value(json_object_get(st, "supervisor"));
	up = sup != NULL && strcmp(sup, ESV_SUPERVISOR_RUNNING) == 0;
	fprintf(fp, "%s: ", jobdir != NULL ? jobdir : "?");
	if (!json_is_object(job)) {
		fputs(up ? "supervisor running, no state yet\n" :
		    "not running\n", fp);
		print_errors(fp, st);
		return;
	}
	if (!up)
		fputs("not running, last state: ", fp);
	state = field(job, ctl_job_key(JK_STATE), b1, sizeof(b1));
	fputs(state != NULL ? state : "unknown", fp);
	if (up && (pid = field(job, ctl_job_key(JK_SUPERVISOR_PID), b2, sizeof(b2))) != NULL)
		fprintf(fp, " (pid %s)", pid);
	if (seconds_since(job, ctl_job_key(JK_SINCE), now, &secs))
		fprintf(fp, " %llds", secs);
	print_job_details(fp, job, now);
	v = json_object_get(json_object_get(st, "watchdog"), "last_progress");
	if (json_is_number(v))
		fprintf(fp, ", last timer request %llds ago",
		    whole_seconds(now - json_number_value(v)));
	if (up && (where = field(job, ctl_job_key(JK_HEALTH_LISTEN), b2, sizeof(b2))) != NULL)
		fprintf(fp, ", health http://%s/healthz", where);
	if (up && (where = field(job, ctl_job_key(JK_STORE_LISTEN), b2,
	    sizeof(b2))) != NULL) {
		fprintf(fp, ", agent store %s", where);
		v = json_object_get(json_object_get(st, "store"),
		    ctl_store_key(SK_KEYS));
		if (json_is_integer(v))
			fprintf(fp, " (%lld keys)",
			    (long long)json_integer_value(v));
	}
	fputc('\n', fp);
	/* How its processes are held, and why so: a line of its own. */
	v = json_object_get(job, ctl_job_key(JK_CONTAINMENT_WHY));
	if (up && json_is_string(v))
		fprintf(fp, "  containment: %s\n", json_string_value(v));
	print_errors(fp, st);
}

static void
print_worker(FILE *fp, const json_t *w, double now)
{
	char b1[64], b2[64];
	const char *lr, *state;
	const json_t *v;
	long long secs;

	lr = field(w, ctl_worker_key(WK_LOCAL_RANK), b1, sizeof(b1));
	state = field(w, ctl_worker_key(WK_STATE), b2, sizeof(b2));
	fprintf(fp, "  worker %s: %s", lr != NULL ? lr : "?",
	    state != NULL ? state : "unknown");
	print_field(fp, w, "rank", ", rank ");
	if (state != NULL && (strcmp(state, ESV_WS_RUNNING) == 0 ||
	    strcmp(state, ESV_WS_STARTING) == 0)) {
		print_field(fp, w, "pid", ", pid ");
		if (seconds_since(w, ctl_worker_key(WK_STARTED), now, &secs))
			fprintf(fp, ", %llds", secs);
	} else {
		print_field(fp, w, "exit_code", ", exit ");
		print_field(fp, w, "signal", ", signal ");
	}
	v = json_object_get(w, ctl_worker_key(WK_CPU_USEC));
	if (json_is_integer(v))
		fprintf(fp, ", cpu %.1f s", json_integer_value(v) / 1e6);
	v = json_object_get(w, "memory_current");
	if (!json_is_integer(v))
		v = json_object_get(w, ctl_worker_key(WK_MEMORY_PEAK));
	if (json_is_integer(v))
		fprintf(fp, ", memory %.1f MiB", json_integer_value(v) /
		    1048576.0);
	v = json_object_get(w, ctl_worker_key(WK_OOM_KILL));
	if (json_is_integer(v) && json_integer_value(v) > 0)
		fprintf(fp, ", OOM-killed");
	fputc('\n', fp);
}

void
jobstatus_print_workers(FILE *fp, const json_t *st, double now)
{
	const json_t *workers = json_object_get(st, "workers");
	size_t i;

	for (i = 0; i < json_array_size(workers); i++)
		print_worker(fp, json_array_get(workers, i), now);
}
