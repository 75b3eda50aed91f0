/*
 * timer_load: the request streams of bench/timer.sh, written through
 * watchdog/esv-timer.h (torch's FileTimerClient wire format), so that
 * esv-watchdogd and torch's FileTimerServer get the same bytes.
 *
 * timer_load lateness FIFO N SPACING_MS LEAD_MS
 *	Forks N targets.  Each blocks SIGTERM and waits for it with
 *	sigwaitinfo; on arrival it stamps CLOCK_REALTIME into its slot of a
 *	shared page and exits.  Once all are waiting, the parent arms one
 *	timer per target (scope "lat", SIGTERM) with the deadline
 *	base + i * SPACING_MS, base = now + LEAD_MS, sent in a shuffled
 *	order.  It then reaps every target; one not signalled 10 s after
 *	the last deadline is SIGKILLed and counted as missed.  Prints one
 *	line per target, "lateness_ms X" (arrival minus deadline), then
 *	"arm_ms=A late_arm=L missed=M" (A: time to send the N requests;
 *	L: 1 when the last request went out after the first deadline).
 *
 * timer_load flood FIFO WRITERS PAIRS open|stream PID
 *	WRITERS processes each send PAIRS arm+release pairs for PID (scope
 *	"w<writer>-<i>", deadline an hour away, SIGKILL).  "open" is torch's
 *	client: open, one write, close per request, retried on a full FIFO
 *	(EAGAIN) after 50 us.  "stream" keeps one blocking fd and writes
 *	whole lines in writes of up to PIPE_BUF bytes.  Prints
 *	"write_ms=X" when every writer is done.
 *
 * timer_load mass FIFO N PID
 *	Arms N timers for PID (scopes "m<i>", an hour away) in stream mode.
 *
 * Exit 0, 1 on a failed request, 100 usage, 111 system error.
 */
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "esv-timer.h"

#define FAR_S	3600.0
#define MAX_N	100000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long
num(const char *s, long lo, long hi)
{
	const char *errstr;
	long v;

	v = (long)strtonum(s, lo, hi, &errstr);
	if (errstr != NULL)
		errx(100, "%s: %s", s, errstr);
	return v;
}

/* One request, torch's way; a full FIFO is retried, nothing else. */
static void
request(const char *fifo, pid_t pid, const char *scope, double t, int sig)
{
	const struct timespec pause = { 0, 50000 };

	while (esv_timer_request(fifo, pid, scope, t, sig) == -1) {
		if (errno != EAGAIN)
			err(errno == ENXIO ? 111 : 1, "%s", fifo);
		nanosleep(&pause, NULL);
	}
}

/* Lines into a 4 KiB buffer, flushed as one write before it overflows. */
struct stream {
	int	fd;
	size_t	len;
	char	buf[ESV_TIMER_LINE_MAX];
};

static void
stream_flush(struct stream *s)
{
	ssize_t n;

	if (s->len == 0)
		return;
	if ((n = write(s->fd, s->buf, s->len)) != (ssize_t)s->len)
		err(111, "write");
	s->len = 0;
}

static void
stream_add(struct stream *s, pid_t pid, const char *scope, double t, int sig)
{
	char line[ESV_TIMER_LINE_MAX + 1];
	int n;

	if ((n = esv_timer_format(line, sizeof(line), pid, scope, t, sig)) < 0)
		err(1, "esv_timer_format");
	if (s->len + (size_t)n > sizeof(s->buf))
		stream_flush(s);
	memcpy(s->buf + s->len, line, (size_t)n);
	s->len += (size_t)n;
}

static void
stream_open(struct stream *s, const char *fifo)
{
	if ((s->fd = open(fifo, O_WRONLY | O_CLOEXEC)) == -1)
		err(111, "%s", fifo);
	s->len = 0;
}

static void
target(volatile double *slot, const sigset_t *set)
{
	siginfo_t si;

	slot[1] = 1;	/* waiting */
	while (sigwaitinfo(set, &si) == -1)
		;
	slot[0] = now();
	_exit(0);
}

static int
lateness(const char *fifo, long n, long spacing_ms, long lead_ms)
{
	volatile double *slots;
	double base, t0, t1, dl;
	pid_t *pids;
	long i, j, tmp, *order, missed = 0, waiting;
	unsigned long long rnd = 88172645463325252ULL;
	sigset_t set;
	int status;

	slots = mmap(NULL, n * 2 * sizeof(double), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(n, sizeof(*pids));
	order = calloc(n, sizeof(*order));
	if (slots == MAP_FAILED || pids == NULL || order == NULL)
		err(111, "memory");
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < n; i++) {
		if ((pids[i] = fork()) == -1)
			err(111, "fork");
		if (pids[i] == 0)
			target(slots + 2 * i, &set);
	}
	do {
		usleep(1000);
		for (waiting = 0, i = 0; i < n; i++)
			waiting += slots[2 * i + 1] != 0;
	} while (waiting < n);
	/* A shuffled order: the watchdog must sort, not just append. */
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		j = (long)(rnd % (unsigned long long)(i + 1));
		tmp = order[i], order[i] = order[j], order[j] = tmp;
	}
	t0 = now();
	base = t0 + lead_ms / 1e3;
	for (i = 0; i < n; i++)
		request(fifo, pids[order[i]], "lat",
		    base + order[i] * spacing_ms / 1e3, SIGTERM);
	t1 = now();
	dl = base + (n - 1) * spacing_ms / 1e3 + 10;
	for (i = 0; i < n; i++) {
		while (slots[2 * i] == 0 && now() < dl)
			usleep(2000);
		if (slots[2 * i] == 0) {
			kill(pids[i], SIGKILL);
			missed++;
		}
		waitpid(pids[i], &status, 0);
	}
	for (i = 0; i < n; i++)
		if (slots[2 * i] != 0)
			printf("lateness_ms %.4f\n", (slots[2 * i] -
			    (base + i * spacing_ms / 1e3)) * 1e3);
	printf("arm_ms=%.3f late_arm=%d missed=%ld\n", (t1 - t0) * 1e3,
	    t1 > base, missed);
	return 0;
}

static void
writer(const char *fifo, int w, long pairs, int stream, pid_t pid)
{
	struct stream s;
	char scope[32];
	double far = now() + FAR_S;
	long i;

	if (stream)
		stream_open(&s, fifo);
	for (i = 0; i < pairs; i++) {
		snprintf(scope, sizeof(scope), "w%d-%ld", w, i);
		if (stream) {
			stream_add(&s, pid, scope, far, SIGKILL);
			stream_add(&s, pid, scope, -1, 0);
		} else {
			request(fifo, pid, scope, far, SIGKILL);
			request(fifo, pid, scope, -1, 0);
		}
	}
	if (stream)
		stream_flush(&s);
	_exit(0);
}

static int
flood(const char *fifo, long writers, long pairs, int stream, pid_t pid)
{
	double t0;
	pid_t p;
	int w, status, rc = 0;

	t0 = now();
	for (w = 0; w < writers; w++) {
		if ((p = fork()) == -1)
			err(111, "fork");
		if (p == 0)
			writer(fifo, w, pairs, stream, pid);
	}
	while ((p = wait(&status)) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rc = 1;
	printf("write_ms=%.3f\n", (now() - t0) * 1e3);
	return rc;
}

static int
mass(const char *fifo, long n, pid_t pid)
{
	struct stream s;
	char scope[32];
	double far = now() + FAR_S;
	long i;

	stream_open(&s, fifo);
	for (i = 0; i < n; i++) {
		snprintf(scope, sizeof(scope), "m%ld", i);
		stream_add(&s, pid, scope, far, SIGKILL);
	}
	stream_flush(&s);
	return 0;
}

int
main(int argc, char *argv[])
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 6 && strcmp(argv[1], "lateness") == 0)
		return lateness(argv[2], num(argv[3], 1, MAX_N),
		    num(argv[4], 0, 1000), num(argv[5], 0, 60000));
	if (argc == 7 && strcmp(argv[1], "flood") == 0 &&
	    (strcmp(argv[5], "open") == 0 || strcmp(argv[5], "stream") == 0))
		return flood(argv[2], num(argv[3], 1, 64),
		    num(argv[4], 1, 10000000), strcmp(argv[5], "stream") == 0,
		    (pid_t)num(argv[6], 1, 1 << 30));
	if (argc == 5 && strcmp(argv[1], "mass") == 0)
		return mass(argv[2], num(argv[3], 1, 10000000),
		    (pid_t)num(argv[4], 1, 1 << 30));
	fprintf(stderr, "usage: timer_load lateness FIFO N SPACING_MS LEAD_MS\n"
	    "       timer_load flood FIFO WRITERS PAIRS open|stream PID\n"
	    "       timer_load mass FIFO N PID\n");
	return 100;
}
