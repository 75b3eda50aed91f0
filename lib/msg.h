/* Diagnostics in the s6/runit shape: "prog: fatal: what: why". */
#ifndef ESV_MSG_H
#define ESV_MSG_H

#include <stdarg.h>

/* Exit codes shared by every esv program (documented in each man page). */
enum {
	ESV_EXIT_OK = 0,
	ESV_EXIT_FAILED = 1,	/* the job failed, as torchrun */
	ESV_EXIT_TIMEOUT = 99,	/* waited and gave up, as s6 */
	ESV_EXIT_USAGE = 100,	/* usage or configuration error */
	ESV_EXIT_DIED = 102,	/* the supervisor we waited on went away */
	ESV_EXIT_SYSTEM = 111,	/* a system call failed */
};

/* Print "prog: fatal: <fmt>: <strerror(errno)>" and exit with code. */
void	die(int code, const char *fmt, ...)
	    __attribute__((noreturn, format(printf, 2, 3)));
/* Same without the errno text. */
void	diex(int code, const char *fmt, ...)
	    __attribute__((noreturn, format(printf, 2, 3)));
void	warn_sys(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	info_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
