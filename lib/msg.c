#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"

/*
 * One fprintf per message on an unbuffered stderr would still split into
 * several writes; format into a buffer and write once so that lines from
 * the supervisor and its helpers never interleave mid-line.
 */
static void
emit(const char *level, int errnum, const char *fmt, va_list ap)
{
	char buf[2048];
	size_t n = 0, room = sizeof(buf) - 1;	/* keep a byte for '\n' */
	int m;

	m = snprintf(buf, room, "%s: %s", getprogname(), level);
	n = m > 0 ? (size_t)m : 0;
	if (n < room) {
		m = vsnprintf(buf + n, room - n, fmt, ap);
		n += m > 0 ? (size_t)m : 0;
	}
	if (errnum != 0 && n < room) {
		m = snprintf(buf + n, room - n, ": %s", strerror(errnum));
		n += m > 0 ? (size_t)m : 0;
	}
	if (n > room - 1)
		n = room - 1;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

void
die(int code, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	emit("fatal: ", e, fmt, ap);
	va_end(ap);
	exit(code);
}

void
diex(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("fatal: ", 0, fmt, ap);
	va_end(ap);
	exit(code);
}

void
warn_sys(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	emit("warning: ", e, fmt, ap);
	va_end(ap);
	errno = e;
}

void
warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning: ", 0, fmt, ap);
	va_end(ap);
}

void
info_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("", 0, fmt, ap);
	va_end(ap);
}
