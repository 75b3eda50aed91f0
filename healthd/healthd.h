/*
 * esv-healthd: a job's health, status and metrics over HTTP
 * (esv-healthd(8)).  One thread, one event loop: libmicrohttpd is driven
 * from it, and the job's view is read from its control directory.
 */
#ifndef ESV_HEALTHD_H
#define ESV_HEALTHD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "loop.h"
#include "ratelim.h"
#include "wdchan.h"

/*
 * What the endpoints say, read from JOBDIR's files (esv-control(5)) at
 * most every VIEW_TTL_MS, and from the job's esv-watchdogd.
 */
struct view {
	const char	*jobdir;
	double		 timeout;	/* seconds without progress: unhealthy */
	/*
	 * Wall time of the progress before the watchdog's first report: our
	 * own start, or, when we saw the job start, its group's first start.
	 */
	double		 started;
	bool		 saw_starting;	/* we saw the group not run yet */
	bool		 group_ran;	/* it has run under this supervisor */
	pid_t		 supervisor_pid;	/* --supervisor-fd's peer, or 0 */
	bool		 supervisor_gone;	/* our parent's fd hung up */
	bool		 status_paths;	/* --status-paths: keep them in /status */
	char		 wd_sock[108];	/* the watchdog's socket, or "" */
	struct ratelim	 warnrl;

	json_t		*st;		/* jobstatus_load_files, or NULL */
	long long	 loaded_ms;
	char		*status;	/* /status's body, NULL: to rebuild */
	size_t		 status_len;
	char		*metrics;	/* /metrics's body, as of metrics_ms */
	size_t		 metrics_len;
	long long	 metrics_ms;

	bool		 have_wd;	/* wd is the watchdog's last answer */
	struct wd_status wd;

	/* The query in flight to the watchdog's socket, if any. */
	struct loop	*lp;
	struct watch	 wdq;
	long long	 wdq_deadline;
	size_t		 wdq_len;
	char		 wdq_buf[512];
};

/*
 * /healthz: 200 HEALTHY; 503 STARTING (this supervisor has not run its
 * worker group yet: the rendezvous, a job started down) or UNHEALTHY.
 */
enum health { HEALTHY, STARTING, UNHEALTHY };

void		view_init(struct view *v, struct loop *lp, const char *jobdir,
		    double timeout);
/* Periodic: ask the watchdog again; returns when to be called next. */
long long	view_tick(struct view *v, long long now_ms);
enum health	view_health(struct view *v, char *reason, size_t len);
/* /status's body, owned by the view until its next reload. */
const char	*view_status(struct view *v, size_t *len);
/*
 * /metrics's body, owned by the view; rendered again at most every
 * VIEW_TTL_MS (its seconds since the last progress are that fresh).
 */
const char	*view_metrics(struct view *v, size_t *len);

/* http.c */
struct http;
struct http	*http_start(struct loop *lp, int listenfd, struct view *v,
		    bool verbose);
/* Drive libmicrohttpd; returns its next deadline (CLOCK_MONOTONIC ms). */
long long	http_run(struct http *h, long long now_ms);
void		http_stop(struct http *h);

/* metrics.c */
char		*metrics_render(const json_t *st, const struct wd_status *wd,
		    enum health health, double since_progress, size_t *len);

#endif
