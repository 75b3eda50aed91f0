/*
 * stamp_worker: the benchmark's worker, and its launcher.
 *
 * As a worker (no arguments) it reads the wall clock before anything
 * else, so the stamp marks the moment the kernel handed it the CPU after
 * fork and exec, and appends one line to $ESV_BENCH_STAMPS:
 *
 *	<RANK> <attempt> <ns> start <pid>
 *
 * then behaves as $ESV_BENCH_MODE says:
 *	exit0		exit 0 at once
 *	sleep		wait for a signal; stamp "signal" on arrival; die
 *	failonce	attempt 0: LOCAL_RANK 1 stamps "exit" and exits 1
 *			$ESV_BENCH_FAIL_MS (200) ms after all
 *			$LOCAL_WORLD_SIZE workers have stamped their start;
 *			the others behave as "sleep";
 *			later attempts exit 0 at once
 *	failalways	as failonce, but in every attempt, so that the
 *			supervisor restarts the group in a loop
 *			(bench/healthd.sh); LOCAL_RANK 1 waits for the
 *			start lines of its own attempt, and dies of a stop
 *			signal that comes while it waits (stamping
 *			"signal", as "sleep" does)
 *
 * As a launcher (stamp_worker --exec cmd args...) it stamps
 * "- 0 <ns> launch <pid>" and execs cmd, so that every program under test
 * is timed from the same point: just before its own execve.
 *
 * The attempt is TORCHELASTIC_RESTART_COUNT.  Wall clock, because the
 * stamps of different processes are compared; each line is one write(2)
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

/* failalways: an attempt's stamps are near the end, ~40 bytes a line. */
#define TAIL	(64 * 1024)

static int stampfd = -1;

static long long
ns_of(const struct timespec *ts)
{
	return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

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
	    attempt, ns_of(ts), event, (long)getpid());
	if (len > 0 && (size_t)len < sizeof(line))
		(void)write(stampfd, line, (size_t)len);
}

/* Signals a supervisor may use to stop a worker. */
static void
stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
}

static void __attribute__((noreturn))
stopped(const char *rank, long attempt, int sig)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	stamp(rank, attempt, &ts, "signal");
	_exit(sig == -1 ? 111 : 128 + sig);
}

static void __attribute__((noreturn))
wait_for_stop(const char *rank, long attempt, const sigset_t *set)
{
	int sig;

	while ((sig = sigwaitinfo(set, NULL)) == -1 && errno == EINTR)
		;
	stopped(rank, attempt, sig);
}

static void
nap_ms(long ms)
{
	struct timespec nap = { ms / 1000, ms % 1000 * 1000000L };

	while (nanosleep(&nap, &nap) == -1 && errno == EINTR)
		;
}

/* Start lines in the stamps file; in attempt 0 nothing else is there yet. */
static long
started(const char *path)
{
	static char buf[1 << 20];
	const char *p;
	ssize_t len;
	long n = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	for (p = buf; (p = strstr(p, " start ")) != NULL; p++)
		n++;
	return n;
}

/*
 * Sleep, but die of a stop signal: the supervisor may stop the group
 * while this worker still waits for the others, and they never come.
 */
static void
nap_or_stop(const char *rank, long attempt, const sigset_t *set, long ms)
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

/*
 * Start lines of this attempt in the file's tail: after thousands of
 * attempts the file is too long to read whole every few ms.
 */
static long
started_in(const char *path, long attempt)
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

/*
 * A failure while the supervisor is still starting workers, or still
 * recording their start, would measure its start-up instead of its
 * reaction (and kill workers that have not yet blocked signals, so they
 * leave no stamp): wait for the whole group, then give it time to settle.
 */
static void __attribute__((noreturn))
fail_later(const char *rank, long attempt)
{
	const char *path = getenv("ESV_BENCH_STAMPS");
	long n = env_long("LOCAL_WORLD_SIZE", 0);
	struct timespec ts;

	while (path != NULL && started(path) < n)
		nap_ms(10);
	nap_ms(env_long("ESV_BENCH_FAIL_MS", 200));
	clock_gettime(CLOCK_REALTIME, &ts);
	stamp(rank, attempt, &ts, "exit");
	_exit(1);
}

/* fail_later for failalways: any attempt, and a stop signal ends the wait. */
static void __attribute__((noreturn))
fail_every(const char *rank, long attempt, const sigset_t *set)
{
	const char *path = getenv("ESV_BENCH_STAMPS");
	long n = env_long("LOCAL_WORLD_SIZE", 0);
	struct timespec ts;

	while (path != NULL && started_in(path, attempt) < n)
		nap_or_stop(rank, attempt, set, 5);
	nap_or_stop(rank, attempt, set, env_long("ESV_BENCH_FAIL_MS", 200));
	clock_gettime(CLOCK_REALTIME, &ts);
	stamp(rank, attempt, &ts, "exit");
	_exit(1);
}

int
main(int argc, char *argv[])
{
	struct timespec t0;
	const char *path, *mode, *rank;
	sigset_t set;
	long attempt;

	clock_gettime(CLOCK_REALTIME, &t0);

	/* Blocked before the start line is out: the runner may signal then. */
	stop_signals(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((path = getenv("ESV_BENCH_STAMPS")) != NULL)
		stampfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		    0644);

	if (argc >= 3 && strcmp(argv[1], "--exec") == 0) {
		stamp("-", 0, &t0, "launch");
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "stamp_worker: unable to exec %s: %s\n",
		    argv[2], strerror(errno));
		return 111;
	}

	rank = getenv("RANK") != NULL ? getenv("RANK") : "?";
	attempt = env_long("TORCHELASTIC_RESTART_COUNT", 0);
	stamp(rank, attempt, &t0, "start");

	mode = getenv("ESV_BENCH_MODE") != NULL ? getenv("ESV_BENCH_MODE") :
	    "exit0";
	if (strcmp(mode, "sleep") == 0)
		wait_for_stop(rank, attempt, &set);
	if (strcmp(mode, "failonce") == 0 && attempt == 0) {
		if (env_long("LOCAL_RANK", -1) == 1)
			fail_later(rank, attempt);
		wait_for_stop(rank, attempt, &set);
	}
	if (strcmp(mode, "failalways") == 0) {
		if (env_long("LOCAL_RANK", -1) == 1)
			fail_every(rank, attempt, &set);
		wait_for_stop(rank, attempt, &set);
	}
	return 0;
}
