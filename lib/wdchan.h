/*
 * The channels of esv-watchdogd besides its FIFO, one JSON object per line
 * (jansson), documented in esv-watchdogd(8):
 *
 *   control (a socketpair: fd 3 of the watchdog, kept by esv-supervise)
 *     supervisor -> watchdog	{"pids": [123, 124]}
 *				the current workers; replaces the last list;
 *				timers of pids no longer listed are dropped.
 *				The line carries one pidfd per pid, in the
 *				same order, as SCM_RIGHTS ancillary data
 *				(at most WDCHAN_FDS_MAX per sendmsg: the
 *				first chunks are one byte of the line each,
 *				the last one the rest); a pidfd belongs to
 *				the line that holds the last byte of the read
 *				that brought it.  The watchdog signals a
 *				worker only through its pidfd.
 *     watchdog -> supervisor	{"expired": {"pid": 123, "scope": "step",
 *				 "signal": 9, "deadline": 1796.25,
 *				 "lateness_ms": 0.41, "sent": true}}
 *				a timer fired (sent: false when signal <= 0
 *				or the pid was gone)
 *
 *   query (a UNIX stream socket, JOBDIR/supervise/watchdog.sock, mode 0600;
 *   peers of another uid than the watchdog's, root aside, are refused)
 *     client -> watchdog	"status\n"
 *     watchdog -> client	{"last_progress": 1796.5, "armed": 3,
 *				 "requests": 10, "refused": 1, "expired": 1,
 *				 "workers": 2, "pid": 4242}
 *				then the watchdog closes the connection.
 *				last_progress: wall time of the last valid
 *				request, or of the watchdog's start.
 */
#ifndef ESV_WDCHAN_H
#define ESV_WDCHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define WDCHAN_LINE_MAX		65536	/* a pids line of 4096 workers fits */
#define WDCHAN_SCOPE_MAX	256
#define WDCHAN_FDS_MAX		250	/* pidfds per sendmsg (the kernel: 253) */

struct wd_expired {
	pid_t	pid;
	char	scope[WDCHAN_SCOPE_MAX + 1];	/* truncated if longer */
	int	signal;
	double	deadline;			/* epoch seconds */
	double	lateness_ms;
	bool	sent;
};

struct wd_status {
	double		last_progress;
	unsigned long	armed, requests, refused, expired, workers;
	pid_t		pid;
};

/* Each formatter returns a malloc'd line ending in '\n', or NULL. */
char	*wdchan_pids(const pid_t *pids, size_t n);
/*
 * Send the pids line on sock with pidfds[i] the pidfd of pids[i], without
 * blocking: 0, or -1/errno (the line may then be cut short).
 */
int	wdchan_send_pids(int sock, const pid_t *pids, const int *pidfds,
	    size_t n);
char	*wdchan_expired(const struct wd_expired *e);
char	*wdchan_status(const struct wd_status *st);

/*
 * Parse a control line.  Returns 'p' (pids: *pids malloc'd, *n set),
 * 'e' (expired, *e filled) or -1 with a reason in err.
 */
int	wdchan_parse_control(const char *line, pid_t **pids, size_t *n,
	    struct wd_expired *e, char *err, size_t errlen);
int	wdchan_parse_status(const char *line, struct wd_status *st, char *err,
	    size_t errlen);

/*
 * Ask the watchdog at sockpath for its status (connect, "status\n", one
 * line back), waiting at most timeout_ms.  0, or -1 with errno set.
 */
int	wdchan_query(const char *sockpath, int timeout_ms, struct wd_status *st);

#endif
