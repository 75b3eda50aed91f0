/*
 * esv-watchdogd's parts, top down.  esv-watchdogd.c has main, the loop
 * and the signals; it owns every part's state and hands each part the
 * others it may use, so that no call runs back up:
 *	fifo.c		the FIFO of timer requests (request.h): arms and
 *			releases timers, holds requests of pids not listed yet
 *	query.c		the status socket: reads the counts, changes nothing
 *	expiry.c	the timers' deadlines on the timerfd, and expiry:
 *			signals a worker, reports on the control channel
 *	ctlchan.c	the control channel from esv-supervise (wdchan.h): the
 *			workers' list in, reports out; it tells whoever set
 *			its "listed" callback (fifo.c) that a list came
 *	workers.c	the workers named by that list, and their pidfds
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

/* The workers esv-supervise named (workers.c). */
struct workers {
	pid_t		*pids;		/* sorted */
	int		*pidfds;	/* of pids[i], or -1 */
	size_t		 n;
	bool		 listed;	/* a control channel names them */
	bool		 any_pid;	/* no list: any other pid is one */
};

/* What the status socket and SIGHUP tell; fifo.c and expiry.c count. */
struct counts {
	double		 last_progress;
	unsigned long	 requests, refused, expired;
};

/* The control channel (ctlchan.c). */
struct ctlchan {
	struct watch	 w;		/* fd -1: no supervisor */
	struct loop	*lp;
	struct workers	*wk;		/* set anew by each list */
	struct timers	*ts;		/* timers of pids unlisted dropped */
	bool		 verbose;
	bool		 gone;		/* the supervisor went away */
	/* A list of workers was taken in (may be NULL). */
	void		(*listed)(void *ctx);
	void		*listed_ctx;

	char		*in, *out;
	size_t		 inlen, outlen;
	unsigned long long off;		/* stream offset of in[0] */
	/*
	 * Received pidfds (-1: some were lost), by the read that brought
	 * them: at is the stream offset of that read's last byte.
	 */
	struct pend {
		int			 fd;
		unsigned long long	 at;
	}		*pend;
	size_t		 npend;
	bool		 skipping, want_out;
	unsigned long	 dropped;
};

/* The timerfd and expiry (expiry.c). */
struct expiry {
	struct watch	 w;
	struct timers	*ts;
	const struct workers *wk;
	struct ctlchan	*ctl;		/* reports go there */
	struct counts	*cnt;
	bool		 verbose;
	bool		 set;		/* the timerfd holds dl */
	double		 dl;
	bool		 no_pidfd;	/* the last send had none to use */
};

/* The FIFO of requests (fifo.c). */
struct fifo {
	struct watch	 w;
	int		 wfd;		/* ours, so no end-of-file */
	struct reqreader rr;
	struct timers	*ts;
	const struct workers *wk;
	struct ctlchan	*ctl;		/* drained before each read */
	struct counts	*cnt;
	bool		 verbose;
	struct ratelim	 badrl, refrl;
};

struct query {
	struct watch		w;
	struct queries		*qs;
	TAILQ_ENTRY(query)	entry;
	long long		deadline;	/* CLOCK_MONOTONIC ms */
	size_t			len;
	char			buf[QUERY_LINE];
};
TAILQ_HEAD(queryq, query);

/* The status socket (query.c). */
struct queries {
	struct watch	 w;		/* listening; fd -1: none */
	struct loop	*lp;
	const char	*path;
	int		 spare_fd;	/* given up to take a client off */
	struct queryq	 q;
	unsigned	 n;
	/* What a status line shows. */
	const struct counts *cnt;
	const struct timers *ts;
	const struct workers *wk;
};

/* workers.c */
int	pid_cmp(const void *a, const void *b);
bool	is_worker(const struct workers *wk, pid_t pid);
/* pid's pidfd; -1 if it has none (or is not listed). */
int	worker_pidfd(const struct workers *wk, pid_t pid);
/* ctlchan.c */
void	ctl_open(struct ctlchan *c, int fd);
void	ctl_send(struct ctlchan *c, char *line);
void	ctl_drain(struct ctlchan *c);
void	on_ctl(struct watch *w, uint32_t events);
/* expiry.c */
void	expiry_open(struct expiry *e);
void	run_expiries(struct expiry *e);
void	arm_timer(struct expiry *e);
void	on_timer(struct watch *w, uint32_t events);
/* fifo.c */
void	fifo_open(struct fifo *f, const char *path);
void	on_fifo(struct watch *w, uint32_t events);
/* Requests of pids not yet listed, judged again once a list came. */
void	replay_held(void *fifo);
/* query.c */
void	query_open(struct queries *qs, const char *path);
void	on_listen(struct watch *w, uint32_t events);
long long queries_tick(struct queries *qs, long long now);

#endif
