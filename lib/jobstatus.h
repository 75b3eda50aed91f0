/*
 * A job's status as one JSON object, read from its control directory
 * (esv-control(5)); esv-ctl prints it and esv-healthd serves it, so both
 * say the same thing:
 *
 *   {"jobdir": "...", "supervisor": "running" | "not running",
 *    "job": {every key of supervise/state} | null,
 *    "workers": [{every key of workers/N/state}, ...],
 *    "watchdog": {esv-watchdogd's status (wdchan.h)} | null,
 *    "errors": ["supervise/state: line 3: not key=value", ...]}
 *
 * Values that are integers become JSON integers and decimal fractions
 * (wall-clock times) JSON reals; empty values become null; pids and pgids
 * become arrays of integers; names and paths (esv's string keys) stay
 * strings whatever they look like.  Workers come in local-rank order.
 * A number that is not finite (400 digits) stays a string.  A file that
 * is not what the supervisor writes (empty, truncated, binary, not
 * key=value, not UTF-8, unreadable) is named in "errors", and what can be
 * read of it is still there.
 */
#ifndef ESV_JOBSTATUS_H
#define ESV_JOBSTATUS_H

#include <stdio.h>

#include <jansson.h>

/*
 * Is a supervisor serving jobdir?  Probes supervise/ok as runit's sv(8):
 * 1 yes, 0 no (no reader, or never supervised), -1/errno if unknown.
 */
int	 jobstatus_probe(const char *jobdir);

/*
 * Read jobdir's state files and ask its watchdog, if it runs one, for its
 * status (waiting up to 500 ms).  A new reference, or NULL/errno.
 */
json_t	*jobstatus_load(const char *jobdir);

/*
 * The same in two steps, for a caller that must not wait: the files only
 * (no "watchdog" key), the watchdog socket they name (or NULL), and the
 * "watchdog" value for a status it got itself (NULL: json null).
 */
json_t	*jobstatus_load_files(const char *jobdir);
const char *jobstatus_watchdog_socket(const json_t *st);
struct wd_status;
json_t	*jobstatus_watchdog(const struct wd_status *ws);

/*
 * The human form, for a status object and the wall-clock time now:
 * "JOBDIR: running (pid 1234) 12s, attempt 2, ..., want up\n" and, for
 * jobstatus_print_workers, "  worker 0: running, rank 0, pid 1235, 5s\n"
 * per worker.
 */
void	 jobstatus_print_job(FILE *fp, const json_t *st, double now);
void	 jobstatus_print_workers(FILE *fp, const json_t *st, double now);

#endif
