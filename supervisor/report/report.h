/*
 * Reporting: what the outside sees of the job.  The state files of
 * supervise/ and the workers' records (report.c), events.jsonl
 * (events.c), the failure summary (failure.c), runit's status record
 * (statusrec.c), readiness for systemd and s6 (notify.c), and the host's
 * name for the summary (hostname.c).
 *
 * Owns: the files it writes, the notify socket.
 * May call: containment (a worker's cgroup path), spawning's environment
 * helpers, lib/.  It never calls the state machine: what it reports is in
 * struct supervisor, the state's name comes from fsm.h.
 */
#ifndef ESV_REPORT_H
#define ESV_REPORT_H

#include "supervise.h"

/* report.c */
void	report_setup(struct supervisor *sv);
void	report_group(struct supervisor *sv);
void	report_worker(struct supervisor *sv, struct worker *wk);
/* Returns -1 if interrupted because stop(sv) said so between files. */
int	report_env(struct supervisor *sv, struct worker *wk, char **own,
	    bool (*stop)(struct supervisor *));
/* Wake the waiters of JOBDIR/event/ with ev. */
void	event_broadcast(const struct job_config *cfg, char ev);
void	report_failure(struct supervisor *sv, bool final);

/* events.c: fields is a jansson object (or NULL), consumed. */
struct json_t;
void	events_open(struct supervisor *sv);
void	events_log(struct supervisor *sv, const char *name,
	    struct json_t *fields);

/* notify.c: readiness for systemd and s6. */
struct readiness *notify_claim_fd(const struct job_config *cfg);
void	notify_setup(struct readiness *n, struct loop *loop);
void	notify_ready(struct supervisor *sv);
void	notify_status(struct supervisor *sv);
void	notify_reloading(struct readiness *n, bool done);
void	notify_stopping(struct readiness *n);

/*
 * hostname.c: the host's canonical name for the failure summary, looked
 * up by a child; sv->host.name holds gethostname() until it answers.
 */
void	hostname_start(struct supervisor *sv);

#endif
