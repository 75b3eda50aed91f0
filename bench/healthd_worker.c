/*
 * healthd_worker: the worker of bench/healthd.sh, a group that fails in
 * every attempt, so that the supervisor restarts it in a loop.
 *
 * It reads the wall clock before anything else and appends to
 * $ESV_BENCH_STAMPS the same lines as bench/stamp_worker.c:
 *
 *	<RANK> <attempt> <ns> start|signal|exit <pid>
 *
 * LOCAL_RANK 1 waits until all $LOCAL_WORLD_SIZE workers of its attempt
 * have stamped their start, sleeps $ESV_BENCH_FAIL_MS (200) ms, stamps
 * "exit" and exits 1.  The others wait for a stop signal, stamp "signal"
 * and exit 128+sig, as stamp_worker's "sleep" does; so does LOCAL_RANK 1
 * when it is stopped before it has failed.  stamp_worker's
 * "failonce" fails in attempt 0 only; this one fails in every attempt.
 *
 * The attempt is TORCHELASTIC_RESTART_COUNT.  Each line is one write(2)
 * on an O_APPEND file, so lines of concurrent workers never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The stamps of one attempt are near the end: 5 lines of ~40 bytes each. */
#define TAIL	(64 * 1024)

static int stampfd = -1;

static long
env_long(const char *name, long dflt)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return dflt;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return dflt;
	return v;
}

static void
stamp(const char *rank, long attempt, const struct timespec *ts,
    const char *event)
{
	char line[128];
	int len;

	if (stampfd == -1)
		return;
	len = snprintf(line, sizeof(line), "%s %ld %lld %s %ld\n", rank,
	    attempt, (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec, event,
	    (long)getpid());
	if (len > 0 && (size_t)len < sizeof(line))
		(void)write(stampfd, line, (size_t)len);
}

static void __attribute__((noreturn))
stopped(const char *rank, long attempt, int sig)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	stamp(rank, attempt, &ts, "signal");
	_exit(sig == -1 ? 111 : 128 + sig);
}

/*
 * Sleep, but die of a stop signal: the supervisor may stop the group
 * while this worker still waits for the others, and they never come.
 */
static void
nap_ms(const char *rank, long attempt, const sigset_t *set, long ms)
{
	struct timespec end, now, left;
	long long ns;
	int sig;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += ms % 1000 * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ns = (long long)(end.tv_sec - now.tv_sec) * 1000000000LL +
		    (end.tv_nsec - now.tv_nsec);
		if (ns <= 0)
			return;
		left.tv_sec = ns / 1000000000LL;
		left.tv_nsec = ns % 1000000000LL;
		if ((sig = sigtimedwait(set, NULL, &left)) > 0)
			stopped(rank, attempt, sig);
		if (sig == -1 && errno != EAGAIN && errno != EINTR)
			stopped(rank, attempt, -1);
	}
}

/* Start lines of this attempt in the file's tail. */
static long
started(const char *path, long attempt)
{
	static char buf[TAIL + 1];
	char event[16], *line, *next;
	struct stat sb;
	ssize_t len;
	off_t off;
	long n = 0, a;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	off = fstat(fd, &sb) == 0 && sb.st_size > TAIL ? sb.st_size - TAIL : 0;
	len = pread(fd, buf, TAIL, off);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	/* A first line cut by the tail fails to parse or names another rank. */
	for (line = buf; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (sscanf(line, "%*s %ld %*s %15s", &a, event) == 2 &&
		    a == attempt && strcmp(event, "start") == 0)
			n++;
	}
	return n;
}

int
main(void)
{
	struct timespec t0, ts;
	const char *path, *rank;
	sigset_t set;
	long attempt, n;
	int sig;

	clock_gettime(CLOCK_REALTIME, &t0);

	/* Blocked before the start line is out: the supervisor may signal. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((path = getenv("ESV_BENCH_STAMPS")) != NULL)
		stampfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		    0644);
	rank = getenv("RANK") != NULL ? getenv("RANK") : "?";
	attempt = env_long("TORCHELASTIC_RESTART_COUNT", 0);
	stamp(rank, attempt, &t0, "start");

	if (env_long("LOCAL_RANK", -1) == 1) {
		n = env_long("LOCAL_WORLD_SIZE", 0);
		/* A failure during the launch would time the launch. */
		while (path != NULL && started(path, attempt) < n)
			nap_ms(rank, attempt, &set, 5);
		nap_ms(rank, attempt, &set, env_long("ESV_BENCH_FAIL_MS", 200));
		clock_gettime(CLOCK_REALTIME, &ts);
		stamp(rank, attempt, &ts, "exit");
		_exit(1);
	}
	while ((sig = sigwaitinfo(&set, NULL)) == -1 && errno == EINTR)
		;
	stopped(rank, attempt, sig);
}
