/*
 * What the supervisor tells the world: runit's supervise/{status,stat,pid},
 * esv's key=value state files, the workers' envdirs, event bytes, and the
 * failure summary.  Formats: esv-control(5).  Every file is replaced
 * atomically, so a reader sees the old or the new one, never a mix.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "atomicfile.h"
#include "contain.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "fifodir.h"
#include "kvfile.h"
#include "msg.h"
#include "report.h"
#include "sig.h"
#include "statusrec.h"
#include "workerenv.h"

/* The state files' keys, by their names in ctlschema.h. */
#define JK(k)	ctl_job_key(JK_##k)
#define WK(k)	ctl_worker_key(WK_##k)

static const char *const worker_state_names[] = {
	[W_STARTING] = ESV_WS_STARTING, [W_RUNNING] = ESV_WS_RUNNING,
	[W_SUCCEEDED] = ESV_WS_SUCCEEDED, [W_FAILED] = ESV_WS_FAILED,
	[W_STOPPED] = ESV_WS_STOPPED,
};

static void
write_at(struct supervisor *sv, const char *name, const void *buf, size_t len)
{
	if (atomic_write_at(sv->jobfd, name, buf, len, 0644) == -1)
		warn_sys("unable to write %s/%s", sv->cfg->jobdir, name);
}

static void
report_runit(struct supervisor *sv)
{
	struct runit_status st;
	uint8_t rec[RUNIT_STATUS_LEN];
	char stat[128], pid[32];
	bool up = sv->grp.alive > 0;

	memset(&st, 0, sizeof(st));
	/* sv(8) waits for this stamp to move: only a start or stop may. */
	st.since.tv_sec = (time_t)sv->rep.pid_since;
	st.since.tv_nsec = (long)((sv->rep.pid_since -
	    (double)st.since.tv_sec) * 1e9);
	st.pid = up ? (uint32_t)sv->grp.workers[0].last_pid : 0;
	st.paused = sv->grp.paused;
	st.want = sv->grp.want == 'd' ? 'd' : 'u';
	st.got_term = sv->grp.state == G_STOPPING;
	st.state = up ? RUNIT_RUN : RUNIT_DOWN;
	runit_status_pack(rec, &st);
	write_at(sv, ESV_STATUS, rec, sizeof(rec));

	snprintf(stat, sizeof(stat), "%s%s%s%s%s\n", up ? "run" : "down",
	    sv->grp.paused ? ", paused" : "",
	    sv->grp.state == G_STOPPING ? ", got TERM" : "",
	    up && sv->grp.want == 'd' ? ", want down" : "",
	    sv->grp.want_exit ? ", want exit" : "");
	write_at(sv, ESV_STAT, stat, strlen(stat));
	if (up)
		snprintf(pid, sizeof(pid), "%d\n", (int)st.pid);
	else
		pid[0] = '\0';
	write_at(sv, ESV_PID, pid, strlen(pid));
}

static void
add_pid_list(struct supervisor *sv, struct kvbuf *kb, const char *key,
    bool pgids)
{
	char *list = NULL;
	size_t len = 0;
	FILE *fp;
	unsigned i;
	pid_t p;

	if ((fp = open_memstream(&list, &len)) == NULL) {
		kb->failed = 1;
		return;
	}
	for (i = 0; i < sv->grp.nworkers; i++) {
		p = pgids ? sv->grp.workers[i].pgid : sv->grp.workers[i].pid;
		if (p > 0)
			fprintf(fp, "%s%d", len > 0 || ftell(fp) > 0 ? " " : "",
			    (int)p);
	}
	fclose(fp);
	kv_add(kb, key, list);
	free(list);
}

void
report_group(struct supervisor *sv)
{
	const struct rank_assignment *r = &sv->rdzv.round.ranks;
	const struct job_config *cfg = sv->cfg;
	struct kvbuf kb = { 0 };
	struct rdzv_status rs;
	const char *want;
	unsigned i;

	report_runit(sv);
	notify_status(sv);
	want = sv->grp.want_exit ? "exit" : sv->grp.want == 'd' ? "down" :
	    sv->grp.want == 'o' ? "once" : "up";
	kv_add(&kb, JK(STATE), group_state_name(sv->grp.state));
	kv_add(&kb, JK(WANT), want);
	kv_addf(&kb, JK(PAUSED), "%d", sv->grp.paused);
	kv_addf(&kb, JK(SINCE), "%.6f", sv->grp.since);
	kv_addf(&kb, JK(SUPERVISOR_PID), "%d", (int)getpid());
	kv_addf(&kb, JK(ATTEMPT), "%u", sv->counts.attempt);
	kv_addf(&kb, JK(RESTART_COUNT), "%u", sv->counts.restart_count);
	kv_addf(&kb, JK(MAX_RESTARTS), "%u", cfg->max_restarts);
	kv_addf(&kb, JK(MANUAL_RESTARTS), "%u", sv->counts.manual_restarts);
	kv_add(&kb, JK(RUN_ID), cfg->run_id);
	kv_add(&kb, JK(ROLE), cfg->role);
	kv_add(&kb, JK(RDZV_BACKEND), cfg->rdzv_backend);
	rdzv_status(&sv->rdzv.rz, &rs);
	kv_add(&kb, JK(RDZV_ENDPOINT), rs.endpoint);
	kv_addf(&kb, JK(RDZV_CONNECTED), "%d", rs.connected);
	if (sv->rdzv.have_round)
		kv_addf(&kb, JK(RDZV_ROUND), "%u", sv->rdzv.round.round);
	else
		kv_add(&kb, JK(RDZV_ROUND), "");
	kv_addf(&kb, JK(RDZV_PARTICIPANTS), "%u", rs.participants);
	kv_addf(&kb, JK(NODES_WAITING), "%u", rs.nodes_waiting);
	kv_addf(&kb, JK(MEMBERSHIP_RESTARTS), "%u", sv->counts.membership_restarts);
	kv_add(&kb, JK(WATCHDOG_SOCKET), sv->wd.fifo_fd != -1 ? sv->wd.sock : "");
	kv_addf(&kb, JK(TIMERS_EXPIRED), "%u", sv->wd.timers_expired);
	kv_addf(&kb, JK(FAILURES_EXIT), "%u", sv->counts.failures_exit);
	kv_addf(&kb, JK(FAILURES_SIGNAL), "%u", sv->counts.failures_signal);
	kv_addf(&kb, JK(FAILURES_EXEC), "%u", sv->counts.failures_exec);
	kv_addf(&kb, JK(FAILURES_SPAWN), "%u", sv->counts.failures_spawn);
	kv_addf(&kb, JK(EVENTS_LOST), "%u", sv->events.lost);
	kv_addf(&kb, JK(LOG_LINES_LOST), "%u", sv->log_lines.lost);
	kv_add(&kb, JK(HEALTH_LISTEN), sv->hd.where);
	kv_add(&kb, JK(STORE_LISTEN), sv->st.where);
	kv_addf(&kb, JK(GROUP_RANK), "%u", r->group_rank);
	kv_addf(&kb, JK(GROUP_WORLD_SIZE), "%u", r->group_world_size);
	kv_addf(&kb, JK(LOCAL_WORLD_SIZE), "%u", r->local_world_size);
	kv_addf(&kb, JK(WORLD_SIZE), "%u", r->world_size);
	kv_addf(&kb, JK(BASE_RANK), "%u", r->base_rank);
	kv_add(&kb, JK(MASTER_ADDR), sv->rdzv.round.master_addr);
	if (sv->rdzv.have_round)
		kv_addf(&kb, JK(MASTER_PORT), "%u", sv->rdzv.round.master_port);
	else
		kv_add(&kb, JK(MASTER_PORT), "");
	add_pid_list(sv, &kb, JK(PIDS), false);
	add_pid_list(sv, &kb, JK(PGIDS), true);
	kv_add(&kb, JK(ATTEMPT_DIR), sv->dirs.attempt_dir);
	if (sv->grp.state == G_BACKOFF)
		kv_addf(&kb, JK(NEXT_START), "%.3f",
		    sv->grp.next_start_wall / 1000.0);
	else
		kv_add(&kb, JK(NEXT_START), "");
	if (sv->grp.state == G_SUCCEEDED || sv->grp.state == G_FAILED ||
	    sv->grp.state == G_FINISHING)
		kv_addf(&kb, JK(EXIT_CODE), "%d", sv->rep.exit_code);
	else
		kv_add(&kb, JK(EXIT_CODE), "");
	kv_add(&kb, JK(CONTAINMENT), sv->cg.on ? "cgroup2" : "process-groups");
	kv_add(&kb, JK(CONTAINMENT_WHY), sv->cg.why);
	kv_add(&kb, JK(CGROUP), sv->cg.on ? sv->cg.job : "");
	if (kv_write_at(&kb, sv->jobfd, ESV_STATE) == -1)
		warn_sys("unable to write %s/%s", cfg->jobdir, ESV_STATE);

	/* For a successor after our kill -9 (see take_group_lock). */
	kv_reset(&kb);
	for (i = 0; i < sv->grp.nworkers; i++)
		if (sv->grp.workers[i].pgid > 0)
			kv_addf(&kb, "pgid", "%d",
			    (int)sv->grp.workers[i].pgid);
	write_at(sv, ESV_PGIDS, kb.buf ? kb.buf + 0 : "", kb.len);
	kv_free(&kb);
}

static int
worker_dir(struct worker *wk, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u", ESV_WORKERS_DIR, wk->local_rank);
	return wk->dir_ok ? 0 : -1;
}

/* workers/N/ for every worker, once: the reports only write into them. */
void
report_setup(struct supervisor *sv)
{
	char dir[64];
	unsigned i;

	for (i = 0; i < sv->grp.nworkers; i++) {
		snprintf(dir, sizeof(dir), "%s/%u", ESV_WORKERS_DIR, i);
		sv->grp.workers[i].dir_ok =
		    mkdirat(sv->jobfd, dir, 0755) == 0 || errno == EEXIST;
		if (!sv->grp.workers[i].dir_ok)
			warn_sys("unable to create %s/%s", sv->cfg->jobdir, dir);
	}
}

/* A counter of the kernel's, or "" when it has none. */
static void
add_count(struct kvbuf *kb, const char *key, long long v)
{
	if (v < 0)
		kv_add(kb, key, "");
	else
		kv_addf(kb, key, "%lld", v);
}

void
report_worker(struct supervisor *sv, struct worker *wk)
{
	struct kvbuf kb = { 0 };
	char dir[64], path[128], err[PATH_MAX], rel[32], cgpath[PATH_MAX];
	bool gone = wk->pid == 0;

	if (worker_dir(wk, dir, sizeof(dir)) == -1)
		return;
	if (ctl_error_path(err, sizeof(err), sv->dirs.attempt_dir,
	    wk->local_rank) == -1 ||
	    ctl_error_path(rel, sizeof(rel), NULL, wk->local_rank) == -1 ||
	    sv->dirs.attemptfd == -1 || faccessat(sv->dirs.attemptfd, rel, F_OK,
	    AT_SYMLINK_NOFOLLOW) != 0)
		err[0] = '\0';
	kv_add(&kb, WK(STATE), worker_state_names[wk->state]);
	kv_addf(&kb, WK(LOCAL_RANK), "%u", wk->local_rank);
	kv_addf(&kb, WK(RANK), "%u",
	    sv->rdzv.round.ranks.base_rank + wk->local_rank);
	kv_addf(&kb, WK(ROLE_RANK), "%u",
	    sv->rdzv.round.ranks.base_role_rank + wk->local_rank);
	kv_addf(&kb, WK(PID), "%d", (int)wk->last_pid);
	kv_addf(&kb, WK(PGID), "%d", (int)wk->last_pid);
	kv_addf(&kb, WK(ATTEMPT), "%u", sv->counts.attempt);
	kv_addf(&kb, WK(RESTART_COUNT), "%u", sv->counts.restart_count);
	kv_addf(&kb, WK(STARTED), "%.6f", wk->started);
	if (gone) {
		kv_addf(&kb, WK(EXITED), "%.6f", wk->exited);
		if (wk->exitcode >= 0)
			kv_addf(&kb, WK(EXIT_CODE), "%d", wk->exitcode);
		else
			kv_add(&kb, WK(EXIT_CODE), "");
		kv_add(&kb, WK(SIGNAL), wk->exitcode < 0 ?
		    sig_name(-wk->exitcode) : "");
	} else {
		kv_add(&kb, WK(EXITED), "");
		kv_add(&kb, WK(EXIT_CODE), "");
		kv_add(&kb, WK(SIGNAL), "");
	}
	kv_add(&kb, WK(ERROR_FILE), err);
	/*
	 * A running worker's counters are the kernel's, read live from its
	 * cgroup by esv-ctl and esv-healthd; the supervisor writes them once,
	 * at the exit.
	 */
	cgroup_worker_path(&sv->cg, wk, cgpath, sizeof(cgpath));
	kv_add(&kb, WK(CGROUP), gone ? "" : cgpath);
	add_count(&kb, WK(CGROUP_CPU_BASE), gone || cgpath[0] == '\0' ? -1 :
	    wk->cg_cpu_base);
	add_count(&kb, WK(CPU_USEC), gone ? wk->cg.cpu_usec : -1);
	add_count(&kb, WK(MEMORY_PEAK), gone ? wk->cg.memory_peak : -1);
	add_count(&kb, WK(OOM_KILL), gone ? wk->cg.oom_kill : -1);
	pathf(path, sizeof(path), "%s/state", dir);
	if (kv_write_at(&kb, sv->jobfd, path) == -1)
		warn_sys("unable to write %s/%s", sv->cfg->jobdir, path);
	kv_free(&kb);

	/*
	 * The worker's own error file, next to its state: read by the
	 * attempt's fd, never through a symlink, and kept private, as a
	 * traceback may show secrets.
	 */
	pathf(path, sizeof(path), "%s/%s", dir, ESV_ERROR_FILE);
	if (err[0] != '\0' && gone) {
		size_t len;
		char *text = read_text_at(sv->dirs.attemptfd, rel, O_NOFOLLOW,
		    16 * 1024 * 1024, &len);

		if (text != NULL && atomic_write_at(sv->jobfd, path, text, len,
		    0600) == -1)
			warn_sys("unable to write %s/%s", sv->cfg->jobdir, path);
		free(text);
	} else if (!gone)
		unlinkat(sv->jobfd, path, 0);
}

static void
write_env_file(struct supervisor *sv, int dfd, const char *dir,
    const char *var)
{
	const char *eq = strchr(var, '=');
	struct iovec iov[2];
	char name[256];
	size_t vl;
	int fd;

	if (eq == NULL || (size_t)(eq - var) >= sizeof(name))
		return;
	memcpy(name, var, eq - var);
	name[eq - var] = '\0';
	vl = strlen(eq + 1);
	iov[0] = (struct iovec){ (void *)(eq + 1), vl };
	iov[1] = (struct iovec){ "\n", 1 };	/* envdir: the first line */
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 || writev(fd, iov, 2) != (ssize_t)vl + 1)
		warn_sys("unable to write %s/%s/%s", sv->cfg->jobdir, dir, name);
	if (fd != -1)
		close(fd);
}

/*
 * workers/N/env/ is an envdir (runit's chpst -e, s6-envdir): one file per
 * variable esv set.  It is filled beside, without a temp file per
 * variable, and swapped in whole with RENAME_EXCHANGE.
 */
int
report_env(struct supervisor *sv, struct worker *wk, char **own,
    bool (*stop)(struct supervisor *))
{
	char dir[64], tmp[80], cur[80];
	size_t i;
	int dfd;

	if (worker_dir(wk, dir, sizeof(dir)) == -1)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/env.new", dir);
	snprintf(cur, sizeof(cur), "%s/env", dir);
	remove_tree_at(sv->jobfd, tmp);
	/* job.ini's [env] may hold secrets: for our user only. */
	if (mkdirat(sv->jobfd, tmp, 0700) == -1 ||
	    (dfd = openat(sv->jobfd, tmp, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1) {
		warn_sys("unable to create %s/%s", sv->cfg->jobdir, tmp);
		return 0;
	}
	for (i = 0; own[i] != NULL; i++) {
		if (stop != NULL && stop(sv)) {
			close(dfd);
			return -1;	/* env.new is cleared on the next try */
		}
		write_env_file(sv, dfd, tmp, own[i]);
	}
	close(dfd);
	if (renameat2(sv->jobfd, tmp, sv->jobfd, cur, RENAME_EXCHANGE) == 0)
		remove_tree_at(sv->jobfd, tmp);	/* the old one, now there */
	else if (errno != ENOENT ||
	    renameat(sv->jobfd, tmp, sv->jobfd, cur) == -1)
		warn_sys("unable to replace %s/%s", sv->cfg->jobdir, cur);
	return 0;
}

void
event_broadcast(const struct job_config *cfg, char ev)
{
	char path[PATH_MAX];

	pathf(path, sizeof(path), "%s/%s", cfg->jobdir, ESV_EVENT_DIR);
	fifodir_broadcast(path, ev);
}

void
report_failure(struct supervisor *sv, bool final)
{
	const char *name = sv->rep.job_name;
	const char *dest;
	char *json;
	size_t root;

	if (sv->grp.nfailures == 0)
		return;
	json = failure_summary_json(name, sv->host.name, sv->grp.failures,
	    sv->grp.nfailures);
	if (json != NULL) {
		write_at(sv, ESV_FAILURE, json, strlen(json));
		free(json);
	}
	if (!final)
		return;
	failure_summary_text(stderr, name, sv->host.name, sv->grp.failures,
	    sv->grp.nfailures);
	fflush(stderr);
	root = failure_root_cause(sv->grp.failures, sv->grp.nfailures);
	dest = env_lookup(sv->env.environ, "TORCHELASTIC_ERROR_FILE");
	if (dest != NULL && dest[0] != '\0' &&
	    failure_copy_root_cause(dest, &sv->grp.failures[root]) == -1)
		warn_sys("unable to write %s", dest);
}
