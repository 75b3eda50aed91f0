/*
 * esv-watchdogd's parts (esv-watchdogd.c has main and the setup): the
 * state they share, owned by the one process, and what each part offers
 * the others.
 *	ctlchan.c	the control channel from esv-supervise (wdchan.h)
 *	expiry.c	the timers' deadlines on the timerfd, and expiry
 *	fifo.c		the FIFO of timer requests (request.h)
 *	query.c		the status socket
 */
#ifndef ESV_WATCHDOGD_H
#define ESV_WATCHDOGD_H

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "loop.h"
#include "msg.h"
#include "pidfd.h"
#include "ratelim.h"
#include "request.h"
#include "sig.h"
#include "timers.h"
#include "utf8.h"
#include "wdchan.h"

#define FIFO_READ	65536	/* per wake-up, then expiries run again */
#define TIMERS_MAX	1000000	/* a runaway worker cannot eat the host */
#define CTL_OUT_MAX	(1024 * 1024)
#define QUERY_MAX	64
#define QUERY_MS	1000	/* for a query client to send its line */
#define QUERY_LINE	64
#define DEADLINE_MAX	1e11	/* year 5138: far enough, and fits time_t */
#define PEND_MAX	65536	/* pidfds received, not yet given to a line */

struct query {
	struct watch		w;
	TAILQ_ENTRY(query)	entry;
	long long		deadline;	/* CLOCK_MONOTONIC ms */
	size_t			len;
	char			buf[QUERY_LINE];
};
TAILQ_HEAD(queryq, query);

struct watchdogd {
	struct loop	 lp;
	struct watch	 sigw, timerw, fifow, ctlw, listenw;
	int		 fifo_wfd, spare_fd;
	const char	*sockpath;
	bool		 verbose, any_pid, quit;

	struct reqreader rr;
	struct timers	 ts;
	bool		 timer_set;	/* the timerfd holds timer_dl */
	double		 timer_dl;

	pid_t		*pids;		/* sorted workers */
	int		*pidfds;	/* of pids[i], or -1 */
	size_t		 npids;

	char		*ctl_in, *ctl_out;
	size_t		 ctl_inlen, ctl_outlen;
	unsigned long long ctl_off;	/* stream offset of ctl_in[0] */
	/* Received pidfds (-1: some were lost), by the read that brought them. */
	struct pend {
		int			 fd;
		unsigned long long	 at;	/* offset of that read's last byte */
	}		*pend;
	size_t		 npend;
	bool		 ctl_skipping, ctl_want_out;
	bool		 no_pidfd;	/* the last send had none to use */
	unsigned long	 ctl_dropped;

	struct queryq	 queries;
	unsigned	 nqueries;

	double		 last_progress;
	unsigned long	 requests, refused, expired;
	struct ratelim	 badrl, refrl;
};

extern struct watchdogd g;

/* ctlchan.c */
void	ctl_send(char *line);
int	pid_cmp(const void *a, const void *b);
void	ctl_drain(void);
void	on_ctl(struct watch *w, uint32_t events);
/* expiry.c */
bool	is_worker(pid_t pid);
void	run_expiries(void);
void	arm_timer(void);
void	on_timer(struct watch *w, uint32_t events);
/* fifo.c */
void	refuse(unsigned long lineno, const struct request *r, const char *why);
void	apply(unsigned long lineno, const struct request *r);
void	on_fifo(struct watch *w, uint32_t events);
/* Requests of pids not yet listed, judged again once a list came. */
void	replay_held(void);
/* query.c */
void	on_listen(struct watch *w, uint32_t events);
long long queries_tick(long long now);

#endif
