/*
 * The helper daemons esv-supervise runs beside the workers: esv-watchdogd
 * (run_watchdogd.c), esv-healthd (run_healthd.c), esv-stored
 * (run_stored.c), started alike by helper.c.
 *
 * Owns: each helper's pid, channel and timers (supervise.h).
 * May call: reporting (a helper's news rewrites the state files, an
 * event), lib/.  It never calls the state machine: a helper's end is
 * found by the group's reaping (store_exited, watchdog_died,
 * healthd_died), which then decides.
 */
#ifndef ESV_HELPERS_H
#define ESV_HELPERS_H

#include "supervise.h"

int	store_prepare(struct supervisor *sv);
int	store_round(struct supervisor *sv);
void	store_drop(struct store_run *st);
void	store_stop(struct store_run *st);
/* Static, after a success: keep it for the other nodes (store_linger). */
bool	store_linger(struct supervisor *sv);
/* A child was reaped: was it the store, and was it the one kept? */
enum store_exit { STORE_NOT_OURS, STORE_REAPED, STORE_LINGER_OVER };
enum store_exit store_exited(struct store_run *st, pid_t pid, int status);

/* run_watchdogd.c: the supervisor's side of esv-watchdogd */
void	watchdog_setup(struct supervisor *sv);
void	watchdog_pids(const struct watchdog_run *wd,
	    const struct group_run *g);
void	watchdog_died(struct supervisor *sv, int status);
void	watchdog_timer(struct watch *w, uint32_t events);
void	watchdog_stop(struct supervisor *sv);

/*
 * helper.c: start prog (found by prog_path(prog, subdir, envvar)) with
 * argv (argv[0] is set here) and a socketpair as its fd 3, whose other end
 * w watches with fn.  0 with *pid set, or -1 (said) with *pid 0.
 */
int	helper_spawn(struct supervisor *sv, const char *prog,
	    const char *subdir, const char *envvar, char *argv[],
	    bool stdout_to_stderr, pid_t *pid, struct watch *w, watch_fn *fn);
/* Stop watching w and close it. */
void	helper_lost(struct loop *loop, struct watch *w);
/*
 * Read what a helper daemon sent on fd into buf (len bytes kept
 * of an unfinished line) and hand each whole line, without its newline,
 * to line.  -1 when it hung up (its exit comes with SIGCHLD), else 0.
 */
int	helper_read_lines(struct supervisor *sv, int fd, char *buf,
	    size_t size, size_t *len, void (*line)(struct supervisor *, char *));

/* run_healthd.c: the supervisor's side of esv-healthd */
void	healthd_setup(struct supervisor *sv);
void	healthd_died(struct supervisor *sv, int status);
void	healthd_timer(struct watch *w, uint32_t events);
void	healthd_stop(struct healthd_run *hd, struct loop *loop);

#endif
