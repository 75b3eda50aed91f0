/*
 * esv-timer.h: arm and release watchdog timers from a C worker, header only
 * (no library to link), C99 or later, POSIX.1-2008.
 *
 * It writes torch's FileTimerClient wire format, so the same calls work
 * against esv-watchdogd(8) and against torch's FileTimerServer: one JSON
 * object per line,
 *
 *	{"version": 1, "pid": P, "scope_id": "S", "expiration_time": T,
 *	 "signal": N}
 *
 * with T the absolute deadline in epoch seconds (CLOCK_REALTIME, written
 * with 6 decimals), and a release written as torch writes it:
 * "expiration_time": -1 and "signal": 0.  Each request is one write(2) on
 * the FIFO opened O_WRONLY|O_NONBLOCK|O_CLOEXEC and closed at once, so
 * a call never blocks and lines from concurrent writers never interleave
 * (a pipe write of at most PIPE_BUF bytes is atomic).
 *
 * The timer is keyed by (pid, scope): arming it again replaces the
 * deadline and signal.  When the deadline passes the watchdog sends the
 * signal to pid (0 or less: the timer is cleared and nothing is sent).
 *
 *	int esv_timer_arm(double seconds, const char *scope, int sig);
 *	int esv_timer_release(const char *scope);
 *		for the calling process (getpid()), on the FIFO named by
 *		$TORCHELASTIC_TIMER_FILE
 *	int esv_timer_arm_pid(pid_t pid, double seconds, const char *scope,
 *	    int sig);
 *	int esv_timer_release_pid(pid_t pid, const char *scope);
 *		for another pid
 *	int esv_timer_arm_path(const char *fifo, double seconds,
 *	    const char *scope, int sig);
 *	int esv_timer_release_path(const char *fifo, const char *scope);
 *		on an explicit FIFO (NULL: $TORCHELASTIC_TIMER_FILE)
 *	int esv_timer_arm_pid_path(const char *fifo, pid_t pid,
 *	    double seconds, const char *scope, int sig);
 *	int esv_timer_release_pid_path(const char *fifo, pid_t pid,
 *	    const char *scope);
 *		both
 *	int esv_timer_request(const char *fifo, pid_t pid, const char *scope,
 *	    double expiration_time, int sig);
 *		the raw request: an absolute deadline in epoch seconds; a
 *		negative one is a release (written as -1)
 *	int esv_timer_format(char *buf, size_t len, pid_t pid,
 *	    const char *scope, double expiration_time, int sig);
 *		the line alone (with its '\n', NUL-terminated), returns
 *		its length; EMSGSIZE also when it does not fit in len
 *
 * seconds counts from now, rounded to the microsecond; sig is a signal
 * number (torch's client default is SIGKILL).  esv-watchdogd takes only
 * pids of the job's current workers, and scopes of at most 256 bytes.
 *
 * Every function returns 0 (esv_timer_format: the length) or -1 with
 * errno set:
 *	ENXIO		no watchdog reads the FIFO (no reader at open, or the
 *			reader left before the write)
 *	EAGAIN		the FIFO is full, the watchdog is behind; nothing was
 *			written, the caller may retry
 *	EMSGSIZE	the line would exceed PIPE_BUF (4096) bytes; torch's
 *			client refuses those too
 *	EILSEQ		scope is not valid UTF-8 (JSON strings must be)
 *	EINVAL		seconds negative or not finite, pid <= 0, sig outside
 *			0..64, scope NULL, or the path is not a FIFO
 *	EDESTADDRREQ	no path given and TORCHELASTIC_TIMER_FILE unset
 *	and whatever open(2) reports (ENOENT, EACCES...).
 * SIGPIPE is never raised: it is blocked around the write in the calling
 * thread and a SIGPIPE caused by that write is consumed.
 *
 * Feature macros: define _POSIX_C_SOURCE 200809L (or _GNU_SOURCE, or use
 * -std=gnu99 and later) before the first system header, or include this
 * header first; it says so with an #error otherwise.
 * See esv-timer(1).
 */
#ifndef ESV_TIMER_H
#define ESV_TIMER_H

#if !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && \
    !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if !defined(O_CLOEXEC) || !defined(CLOCK_REALTIME)
#error "esv-timer.h needs POSIX.1-2008: define _POSIX_C_SOURCE 200809L first"
#endif

#define ESV_TIMER_LINE_MAX	4096	/* PIPE_BUF on Linux, torch's limit */
#define ESV_TIMER_ENV		"TORCHELASTIC_TIMER_FILE"
#define ESV_TIMER_SIG_MAX	64

/* Appends to a bounded buffer; *n keeps counting past the end. */
static inline void
esv_timer__put(char *buf, size_t len, size_t *n, const char *s, size_t slen)
{
	size_t i;

	for (i = 0; i < slen; i++, (*n)++)
		if (*n < len)
			buf[*n] = s[i];
}

/*
 * Length of the UTF-8 sequence at s, 0 when invalid: jansson, as any JSON
 * parser, rejects overlong forms, surrogates and code points past U+10FFFF.
 */
static inline size_t
esv_timer__utf8(const unsigned char *s)
{
	unsigned long cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* scope as a JSON string body; -1 (EILSEQ) on invalid UTF-8. */
static inline int
esv_timer__escape(char *buf, size_t len, size_t *n, const char *scope)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)scope;
	char esc[6] = { '\\', 'u', '0', '0', 0, 0 };
	size_t k;

	while (*s != '\0') {
		if (*s == '"' || *s == '\\') {
			esc[1] = (char)*s;
			esv_timer__put(buf, len, n, esc, 2);
			s++;
			continue;
		}
		if (*s < 0x20) {
			esc[1] = 'u';
			esc[4] = hex[*s >> 4];
			esc[5] = hex[*s & 0xf];
			esv_timer__put(buf, len, n, esc, 6);
			s++;
			continue;
		}
		if ((k = esv_timer__utf8(s)) == 0) {
			errno = EILSEQ;
			return -1;
		}
		esv_timer__put(buf, len, n, (const char *)s, k);
		s += k;
	}
	return 0;
}

/*
 * The number is written from integers: a printf of a double would follow
 * the caller's LC_NUMERIC, and a decimal comma is not JSON.
 */
static inline int
esv_timer_format(char *buf, size_t len, pid_t pid, const char *scope,
    double expiration_time, int sig)
{
	char num[64];
	long long us;
	size_t n = 0;
	int m;

	if (pid <= 0 || scope == NULL || sig < 0 || sig > ESV_TIMER_SIG_MAX ||
	    expiration_time != expiration_time ||
	    expiration_time > 1e12 || expiration_time < -1e12) {
		errno = EINVAL;
		return -1;
	}
	m = snprintf(num, sizeof(num), "{\"version\": 1, \"pid\": %ld, "
	    "\"scope_id\": \"", (long)pid);
	esv_timer__put(buf, len, &n, num, (size_t)m);
	if (esv_timer__escape(buf, len, &n, scope) == -1)
		return -1;
	if (expiration_time < 0) {
		m = snprintf(num, sizeof(num), "\", \"expiration_time\": -1, "
		    "\"signal\": %d}\n", sig);
	} else {
		us = (long long)(expiration_time * 1e6 + 0.5);
		m = snprintf(num, sizeof(num), "\", \"expiration_time\": "
		    "%lld.%06lld, \"signal\": %d}\n", us / 1000000,
		    us % 1000000, sig);
	}
	esv_timer__put(buf, len, &n, num, (size_t)m);
	if (n > ESV_TIMER_LINE_MAX || n >= len) {
		errno = EMSGSIZE;
		return -1;
	}
	buf[n] = '\0';
	return (int)n;
}

/* One write; a SIGPIPE it causes is taken back, one pending before kept. */
static inline ssize_t
esv_timer__write(int fd, const char *line, size_t n)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t pipe_set, old, pending;
	int e, was_pending;
	ssize_t w;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pending);
	if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0)
		return write(fd, line, n);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	w = write(fd, line, n);
	e = errno;
	if (w == -1 && e == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &zero) == -1 &&
		    errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return w;
}

static inline int
esv_timer_request(const char *fifo, pid_t pid, const char *scope,
    double expiration_time, int sig)
{
	char line[ESV_TIMER_LINE_MAX + 1];
	struct stat st;
	ssize_t w;
	int fd, len, e;

	if (fifo == NULL || *fifo == '\0')
		fifo = getenv(ESV_TIMER_ENV);
	if (fifo == NULL || *fifo == '\0') {
		errno = EDESTADDRREQ;
		return -1;
	}
	if ((len = esv_timer_format(line, sizeof(line), pid, scope,
	    expiration_time, sig)) == -1)
		return -1;
	if ((fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	w = esv_timer__write(fd, line, (size_t)len);
	e = errno;
	close(fd);
	if (w == (ssize_t)len)
		return 0;
	/* A reader that left between open and write: nobody is reading. */
	errno = w == -1 ? (e == EPIPE ? ENXIO : e) : EIO;
	return -1;
}

/* The deadline now + seconds; -1 when seconds makes no deadline. */
static inline double
esv_timer__deadline(double seconds)
{
	struct timespec ts;

	if (!(seconds >= 0 && seconds <= 1e9)) {
		errno = EINVAL;
		return -1;
	}
	if (clock_gettime(CLOCK_REALTIME, &ts) == -1)
		return -1;
	return (double)ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
}

static inline int
esv_timer_arm_pid_path(const char *fifo, pid_t pid, double seconds,
    const char *scope, int sig)
{
	double t;

	if ((t = esv_timer__deadline(seconds)) < 0)
		return -1;
	return esv_timer_request(fifo, pid, scope, t, sig);
}

static inline int
esv_timer_release_pid_path(const char *fifo, pid_t pid, const char *scope)
{
	return esv_timer_request(fifo, pid, scope, -1, 0);
}

static inline int
esv_timer_arm(double seconds, const char *scope, int sig)
{
	return esv_timer_arm_pid_path(NULL, getpid(), seconds, scope, sig);
}

static inline int
esv_timer_release(const char *scope)
{
	return esv_timer_release_pid_path(NULL, getpid(), scope);
}

static inline int
esv_timer_arm_pid(pid_t pid, double seconds, const char *scope, int sig)
{
	return esv_timer_arm_pid_path(NULL, pid, seconds, scope, sig);
}

static inline int
esv_timer_release_pid(pid_t pid, const char *scope)
{
	return esv_timer_release_pid_path(NULL, pid, scope);
}

static inline int
esv_timer_arm_path(const char *fifo, double seconds, const char *scope,
    int sig)
{
	return esv_timer_arm_pid_path(fifo, getpid(), seconds, scope, sig);
}

static inline int
esv_timer_release_path(const char *fifo, const char *scope)
{
	return esv_timer_release_pid_path(fifo, getpid(), scope);
}

#endif
