/*
 * /metrics: Prometheus' text exposition format, version 0.0.4.  Every
 * family is always present (zero when the job has no value yet), so that
 * a dashboard's queries never meet a gap between a restart and the next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlschema.h"
#include "healthd.h"
#include "nelem.h"


struct family {
	const char	*name, *type, *help;
	enum job_key	 key;		/* of supervise/state */
};

/* Values read as they are from supervise/state (esv-control(5)). */
static const struct family job_families[] = {
	{ "esv_restarts_total", "counter",
	    "Group restarts after a worker failure (torch's restart count).",
	    JK_RESTART_COUNT },
	{ "esv_max_restarts", "gauge",
	    "Failure restarts allowed before the job fails.", JK_MAX_RESTARTS },
	{ "esv_manual_restarts_total", "counter",
	    "Group restarts asked for by an operator.", JK_MANUAL_RESTARTS },
	{ "esv_membership_restarts_total", "counter",
	    "Group restarts because nodes joined or left.",
	    JK_MEMBERSHIP_RESTARTS },
	{ "esv_group_starts_total", "counter",
	    "Times the worker group was started (attempts).", JK_ATTEMPT },
	{ "esv_rendezvous_rounds_total", "counter",
	    "Rendezvous rounds this node took part in.", JK_RDZV_ROUND },
	{ "esv_timers_expired_total", "counter",
	    "Worker timers that expired in esv-watchdogd.", JK_TIMERS_EXPIRED },
	{ "esv_events_lost_total", "counter",
	    "Lines of events.jsonl not written (a full file system).",
	    JK_EVENTS_LOST },
	{ "esv_log_lines_lost_total", "counter",
	    "Worker output lines the supervisor could not write to their "
	    "log files.", JK_LOG_LINES_LOST },
	{ "esv_nodes_waiting", "gauge",
	    "Nodes waiting at the rendezvous to join the next round.",
	    JK_NODES_WAITING },
	{ "esv_group_rank", "gauge", "This node's group rank.", JK_GROUP_RANK },
	{ "esv_group_world_size", "gauge", "Nodes in the current round.",
	    JK_GROUP_WORLD_SIZE },
	{ "esv_local_world_size", "gauge", "Workers on this node.",
	    JK_LOCAL_WORLD_SIZE },
	{ "esv_world_size", "gauge", "Workers in the whole job.",
	    JK_WORLD_SIZE },
};

static const struct {
	const char	*kind;
	enum job_key	 key;
} failure_kinds[] = {
	{ "exit", JK_FAILURES_EXIT },
	{ "signal", JK_FAILURES_SIGNAL },
	{ "exec", JK_FAILURES_EXEC },
	{ "spawn", JK_FAILURES_SPAWN },
};

static double
num(const json_t *job, enum job_key key)
{
	return json_number_value(json_object_get(job, ctl_job_key(key)));
}

/* The agent store's counts (supervise/store); zero while none runs. */
static const struct {
	const char	*name, *help;
	enum store_key	 key;
} store_families[] = {
	{ "esv_store_keys", "Keys in the agent's store (esv-stored).",
	    SK_KEYS },
	{ "esv_store_connections", "Workers' connections to the agent's "
	    "store.", SK_CONNECTIONS },
	{ "esv_store_waiting", "Connections of the agent's store waiting "
	    "for keys (WAIT, blocking GET).", SK_WAITING },
};

static void
head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
states(FILE *f, const char *name, const char *help,
    const char *const *names, const json_t *workers, const char *current)
{
	const char *s;
	size_t i, n;
	json_t *w;

	head(f, name, "gauge", help);
	for (; *names != NULL; names++) {
		if (workers == NULL)
			n = current != NULL && strcmp(current, *names) == 0;
		else {
			n = 0;
			json_array_foreach(workers, i, w) {
				s = json_string_value(json_object_get(w,
				    ctl_worker_key(WK_STATE)));
				n += s != NULL && strcmp(s, *names) == 0;
			}
		}
		fprintf(f, "%s{state=\"%s\"} %zu\n", name, *names, n);
	}
}

/*
 * One sample per worker that has the counter (under cgroup containment:
 * read live from its cgroup while it runs, kept from its exit after).
 */
static void
per_worker(FILE *f, const json_t *workers, const char *name,
    const char *type, const char *help, const char *key, double scale)
{
	const json_t *w, *v, *lr, *rk;
	size_t i;

	head(f, name, type, help);
	json_array_foreach(workers, i, w) {
		v = json_object_get(w, key);
		lr = json_object_get(w, ctl_worker_key(WK_LOCAL_RANK));
		rk = json_object_get(w, ctl_worker_key(WK_RANK));
		if (!json_is_integer(v) || !json_is_integer(lr))
			continue;
		fprintf(f, "%s{local_rank=\"%lld\",rank=\"%lld\"} %.6g\n", name,
		    (long long)json_integer_value(lr), json_is_integer(rk) ?
		    (long long)json_integer_value(rk) : -1LL,
		    (double)json_integer_value(v) * scale);
	}
}

char *
metrics_render(const json_t *st, const struct wd_status *wd,
    enum health health, double since_progress, size_t *len)
{
	const json_t *job = json_object_get(st, "job");
	const char *sup = json_string_value(json_object_get(st, "supervisor"));
	char *buf = NULL;
	size_t i;
	FILE *f;

	if ((f = open_memstream(&buf, len)) == NULL)
		return NULL;
	head(f, "esv_build_info", "gauge",
	    "The esv version serving these metrics.");
	fprintf(f, "esv_build_info{version=\"%s\"} 1\n", ESV_VERSION);
	head(f, "esv_supervisor_up", "gauge",
	    "1 while esv-supervise serves the job.");
	fprintf(f, "esv_supervisor_up %d\n",
	    sup != NULL && strcmp(sup, ESV_SUPERVISOR_RUNNING) == 0);
	head(f, "esv_healthy", "gauge", "1 while /healthz answers 200.");
	fprintf(f, "esv_healthy %d\n", health == HEALTHY);
	head(f, "esv_starting", "gauge", "1 while /healthz answers 503 "
	    "starting: the worker group has not run yet.");
	fprintf(f, "esv_starting %d\n", health == STARTING);
	states(f, "esv_group_state", "The worker group's state (1: current).",
	    ctl_group_states, NULL, json_string_value(json_object_get(job,
	    ctl_job_key(JK_STATE))));
	states(f, "esv_workers", "Workers of this node by state.",
	    ctl_worker_states, json_object_get(st, "workers"), NULL);
	per_worker(f, json_object_get(st, "workers"),
	    "esv_worker_cpu_seconds_total", "counter", "CPU time of everything "
	    "in the worker's cgroup (cgroup containment only).",
	    ctl_worker_key(WK_CPU_USEC), 1e-6);
	per_worker(f, json_object_get(st, "workers"), "esv_worker_memory_bytes",
	    "gauge", "Memory of the running worker's cgroup (memory.current; "
	    "with the memory controller).", "memory_current", 1);
	per_worker(f, json_object_get(st, "workers"),
	    "esv_worker_memory_peak_bytes", "gauge", "The worker cgroup's "
	    "memory.peak (with the memory controller).",
	    ctl_worker_key(WK_MEMORY_PEAK), 1);
	per_worker(f, json_object_get(st, "workers"),
	    "esv_worker_oom_kills_total", "counter", "Processes of the "
	    "worker's cgroup the OOM killer took (memory.events).",
	    ctl_worker_key(WK_OOM_KILL), 1);
	head(f, "esv_worker_failures_total", "counter",
	    "Workers that failed, by how: exit (a non-zero exit status), "
	    "signal (killed by a signal), exec (could not be started).");
	for (i = 0; i < NELEM(failure_kinds); i++)
		fprintf(f, "esv_worker_failures_total{kind=\"%s\"} %.0f\n",
		    failure_kinds[i].kind, num(job, failure_kinds[i].key));
	for (i = 0; i < NELEM(job_families); i++) {
		head(f, job_families[i].name, job_families[i].type,
		    job_families[i].help);
		fprintf(f, "%s %.0f\n", job_families[i].name,
		    num(job, job_families[i].key));
	}
	for (i = 0; i < NELEM(store_families); i++) {
		head(f, store_families[i].name, "gauge",
		    store_families[i].help);
		fprintf(f, "%s %.0f\n", store_families[i].name,
		    json_number_value(json_object_get(json_object_get(st,
		    "store"), ctl_store_key(store_families[i].key))));
	}
	head(f, "esv_seconds_since_last_progress", "gauge",
	    "Seconds since the last timer request (or, without timers, "
	    "since the supervisor was last seen alive).");
	fprintf(f, "esv_seconds_since_last_progress %.3f\n", since_progress);
	head(f, "esv_timers_armed", "gauge",
	    "Timers armed in esv-watchdogd.");
	fprintf(f, "esv_timers_armed %lu\n", wd != NULL ? wd->armed : 0);
	head(f, "esv_timer_requests_total", "counter",
	    "Requests esv-watchdogd accepted (by its current process).");
	fprintf(f, "esv_timer_requests_total %lu\n",
	    wd != NULL ? wd->requests : 0);
	head(f, "esv_timer_requests_refused_total", "counter",
	    "Requests esv-watchdogd refused: not for one of the workers.");
	fprintf(f, "esv_timer_requests_refused_total %lu\n",
	    wd != NULL ? wd->refused : 0);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
