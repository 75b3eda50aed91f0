/*
 * The one event-loop idiom of esv: epoll over fds that each carry their
 * handler, with signalfd for signals and timerfd for deadlines.
 */
#ifndef ESV_LOOP_H
#define ESV_LOOP_H

#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

struct watch;
typedef void	watch_fn(struct watch *w, uint32_t events);

struct watch {
	int		 fd;
	watch_fn	*fn;
	void		*ctx;
};

#define LOOP_BATCH	64

struct loop {
	int			epfd;
	/* The batch being run: loop_del and loop_add cancel what is left. */
	struct epoll_event	batch[LOOP_BATCH];
	int			next, nbatch;
};

int	loop_init(struct loop *lp);
/*
 * Watch w->fd, which is made non-blocking: an event can be stale by the
 * time its handler runs (another handler of the batch consumed the data),
 * and a handler must then see EAGAIN, never sleep.
 */
int	loop_add(struct loop *lp, struct watch *w, uint32_t events);
int	loop_mod(struct loop *lp, struct watch *w, uint32_t events);
/*
 * Stop watching w; call it before closing w->fd or freeing w.  Either,
 * or w given a new fd and added again, may happen inside a handler: what
 * the current batch still holds for w is dropped, so w's handler never
 * runs for an fd it no longer has.
 */
int	loop_del(struct loop *lp, struct watch *w);
/*
 * Wait for events (timeout_ms -1: forever) and run their handlers; the
 * number of handlers run, or -1.
 */
int	loop_once(struct loop *lp, int timeout_ms);

/*
 * A timerfd on clock, non-blocking, close-on-exec: CLOCK_MONOTONIC for
 * delays; CLOCK_REALTIME for deadlines given in wall-clock time (torch's
 * timer expirations), armed with TFD_TIMER_ABSTIME.
 */
int	timer_open(clockid_t clock);
/* One-shot in ms from now (0 still fires, at once); disarm with -1. */
int	timer_arm_ms(int tfd, long long ms);
/* Consume the expiration count so the fd stops being readable. */
void	timer_ack(int tfd);

/*
 * The start of every esv daemon's loop: SIGPIPE ignored (writes report
 * EPIPE), SIGTERM, SIGINT and SIGHUP read from a signalfd that sigw
 * watches with fn.  Exits 111 on failure.
 */
void	loop_daemon_init(struct loop *lp, struct watch *sigw, watch_fn *fn);

/* Block set and return a signalfd for it. */
int	signals_open(const sigset_t *set);
/*
 * The signals pending on a signalfd now, at most max, in one read: a
 * handler that reads until none is left may never return while they keep
 * coming (SIGCHLD in a loop of failing workers).  Returns how many.
 */
struct signalfd_siginfo;
int	signals_read(int sfd, struct signalfd_siginfo *si, int max);

/* Milliseconds on CLOCK_MONOTONIC; and wall time as a double. */
long long	mono_ms(void);
double		wall_now(void);

#endif
