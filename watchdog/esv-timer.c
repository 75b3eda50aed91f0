/*
 * esv-timer: arm and release watchdog timers from shell workers.  Every
 * request goes through esv-timer.h, the one writer of the wire format.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "confvalue.h"
#include "esv-timer.h"
#include "msg.h"
#include "nelem.h"
#include "sig.h"

#define DEFAULT_SCOPE	"esv-timer"
#define SCOPE_MAX	256	/* esv-watchdogd refuses longer scopes */
#define RETRY_MS	1000	/* on a full FIFO */

#define USAGE \
"usage: esv-timer arm DURATION [--scope NAME] [--signal SIG] [--pid PID]\n" \
"                 [--fifo PATH]\n" \
"       esv-timer release [--scope NAME] [--pid PID] [--fifo PATH]\n" \
"       esv-timer run DURATION [--scope NAME] [--signal SIG] [--pid PID]\n" \
"                 [--fifo PATH] -- COMMAND [ARG...]\n" \
"       esv-timer --help | --version\n" \
"Exit status: arm, release: 0 written, 1 refused (FIFO full, line too long),\n" \
"100 usage error, 111 system error (no watchdog reads the FIFO...); run: the\n" \
"command's status (128+signal if killed, 127 not found, 126 not runnable),\n" \
"100 or 111 when the timer could not be armed or released.\n"

struct opts {
	const char	*scope, *fifo;
	pid_t		 pid;
	int		 sig;
	double		 seconds;
};

extern char **environ;

static volatile sig_atomic_t child_pid;

static void __attribute__((noreturn))
usage(void)
{
	fputs(USAGE, stderr);
	exit(ESV_EXIT_USAGE);
}

static int
parse_signal(const char *s)
{
	int sig;

	/* sig_from_name says 0 for unknown, so 0 itself is checked first. */
	if (strcmp(s, "0") == 0)
		return 0;
	if ((sig = sig_from_name(s)) <= 0 || sig > ESV_TIMER_SIG_MAX)
		diex(ESV_EXIT_USAGE, "--signal: unknown signal: %s", s);
	return sig;
}

static pid_t
parse_pid(const char *s)
{
	const char *errstr;
	pid_t pid;

	pid = (pid_t)strtonum(s, 1, INT32_MAX, &errstr);
	if (errstr != NULL)
		diex(ESV_EXIT_USAGE, "--pid: %s: %s", s, errstr);
	return pid;
}

/*
 * esv-timer is a child of the worker that runs it, and exits at once: the
 * process the watchdog must signal when the worker hangs is that worker.
 * A parent of 1 means the worker is already gone (or esv-timer was
 * exec'd by init): there is no worker to name.
 */
static pid_t
default_pid(void)
{
	pid_t pid = getppid();

	if (pid <= 1)
		diex(ESV_EXIT_USAGE, "the parent process is gone: give --pid");
	return pid;
}

/* Options of a command, up to argc; the words left in *rest. */
static void
parse_opts(int argc, char *argv[], struct opts *o, bool with_duration,
    bool with_signal, char ***rest, int *nrest)
{
	static const struct option longopts[] = {
		{ "scope", required_argument, NULL, 's' },
		{ "signal", required_argument, NULL, 'S' },
		{ "pid", required_argument, NULL, 'p' },
		{ "fifo", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long ms;
	int ch;

	o->scope = DEFAULT_SCOPE;
	o->fifo = NULL;
	o->pid = 0;
	o->sig = SIGKILL;	/* torch's FileTimerClient default */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			o->scope = optarg;
			break;
		case 'S':
			if (!with_signal)
				diex(ESV_EXIT_USAGE, "--signal goes with arm "
				    "and run only");
			o->sig = parse_signal(optarg);
			break;
		case 'p':
			o->pid = parse_pid(optarg);
			break;
		case 'f':
			o->fifo = optarg;
			break;
		case 'h':
			fputs(USAGE, stdout);
			exit(ESV_EXIT_OK);
		default:
			usage();
		}
	}
	*rest = argv + optind;
	*nrest = argc - optind;
	if (with_duration) {
		if (*nrest < 1)
			usage();
		if ((ms = parse_duration_ms(**rest)) < 0)
			diex(ESV_EXIT_USAGE, "bad duration: %s (30, 30s, "
			    "500ms, 2m, 1h)", **rest);
		o->seconds = ms / 1000.0;
		(*rest)++;
		(*nrest)--;
	}
	if (strlen(o->scope) > SCOPE_MAX)
		diex(ESV_EXIT_USAGE, "--scope: longer than %d bytes",
		    SCOPE_MAX);
	if (o->fifo == NULL) {
		o->fifo = getenv(ESV_TIMER_ENV);
		if (o->fifo == NULL || *o->fifo == '\0')
			diex(ESV_EXIT_USAGE, "%s is not set: not run under "
			    "a watchdog? (or give --fifo)", ESV_TIMER_ENV);
	}
	if (o->pid == 0)
		o->pid = default_pid();
}

/* One request; a full FIFO is retried for a while, as the reader drains. */
static void
send_request(const struct opts *o, bool arm)
{
	const struct timespec ms = { 0, 1000000 };
	int r, tries = 0;

	for (;;) {
		r = arm ? esv_timer_arm_pid_path(o->fifo, o->pid, o->seconds,
		    o->scope, o->sig) :
		    esv_timer_release_pid_path(o->fifo, o->pid, o->scope);
		if (r == 0)
			return;
		if (errno != EAGAIN || ++tries >= RETRY_MS)
			break;
		nanosleep(&ms, NULL);
	}
	switch (errno) {
	case ENXIO:
		diex(ESV_EXIT_SYSTEM, "%s: no watchdog reads FIFO", o->fifo);
	case EAGAIN:
		diex(ESV_EXIT_FAILED, "%s: FIFO full for %d ms: the watchdog "
		    "is not keeping up", o->fifo, RETRY_MS);
	case EINVAL:
		diex(ESV_EXIT_USAGE, "%s: not a FIFO", o->fifo);
	case EILSEQ:
		diex(ESV_EXIT_USAGE, "--scope: not valid UTF-8");
	case EMSGSIZE:
		diex(ESV_EXIT_FAILED, "request refused: longer than %d bytes",
		    ESV_TIMER_LINE_MAX);
	default:
		die(ESV_EXIT_SYSTEM, "%s", o->fifo);
	}
}

/*
 * TERM and HUP sent to esv-timer alone are passed on, so that the command
 * ends and the timer is released; INT and QUIT come from the terminal to
 * the whole process group, the command gets its own.
 */
static void
on_signal(int sig)
{
	if (child_pid > 0 && (sig == SIGTERM || sig == SIGHUP))
		kill(child_pid, sig);
}

/* The child's pid, or minus the shell's status for a command not run. */
static pid_t
spawn(char *argv[], const sigset_t *mask)
{
	posix_spawnattr_t attr;
	pid_t pid;
	int e;

	if ((e = posix_spawnattr_init(&attr)) != 0 ||
	    (e = posix_spawnattr_setsigmask(&attr, mask)) != 0 ||
	    (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK)) != 0)
		diex(ESV_EXIT_SYSTEM, "posix_spawnattr: %s", strerror(e));
	e = posix_spawnp(&pid, argv[0], NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (e != 0) {
		errno = e;
		warn_sys("%s", argv[0]);
		return e == ENOENT ? -127 : -126;
	}
	return pid;
}

static int
run(const struct opts *o, char *argv[])
{
	struct sigaction sa = { .sa_handler = on_signal };
	static const int sigs[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
	sigset_t block, old;
	pid_t pid;
	size_t i;
	int status, rc;

	sigemptyset(&block);
	for (i = 0; i < NELEM(sigs); i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	send_request(o, true);
	/* The command starts with default handlers and our old mask. */
	if ((pid = spawn(argv, &old)) < 0)
		rc = -pid;
	else {
		child_pid = pid;
		sigemptyset(&sa.sa_mask);
		for (i = 0; i < NELEM(sigs); i++)
			sigaction(sigs[i], &sa, NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		while (waitpid(pid, &status, 0) == -1)
			if (errno != EINTR)
				die(ESV_EXIT_SYSTEM, "waitpid");
		rc = WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status);
	}
	if (rc == 0) {
		send_request(o, false);
		return 0;
	}
	/* The command's status matters more than a failed release. */
	if (esv_timer_release_pid_path(o->fifo, o->pid, o->scope) == -1)
		warn_sys("%s: release", o->fifo);
	return rc;
}

/* Index of the first "--", or argc. */
static int
find_dashes(int argc, char *argv[])
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i;
	return argc;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	char **rest;
	const char *cmd;
	int nrest, dd;

	if (argc < 2)
		usage();
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(USAGE, stdout);
		return ESV_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0) {
		puts("esv-timer " ESV_VERSION);
		return ESV_EXIT_OK;
	}
	argc--;
	argv++;
	if (strcmp(cmd, "arm") == 0) {
		parse_opts(argc, argv, &o, true, true, &rest, &nrest);
		if (nrest != 0)
			usage();
		send_request(&o, true);
		return ESV_EXIT_OK;
	}
	if (strcmp(cmd, "release") == 0) {
		parse_opts(argc, argv, &o, false, false, &rest, &nrest);
		if (nrest != 0)
			usage();
		send_request(&o, false);
		return ESV_EXIT_OK;
	}
	if (strcmp(cmd, "run") == 0) {
		/* Only the words before "--" are ours; the command keeps its. */
		if ((dd = find_dashes(argc, argv)) >= argc - 1)
			diex(ESV_EXIT_USAGE, "run: -- COMMAND missing");
		parse_opts(dd, argv, &o, true, true, &rest, &nrest);
		if (nrest != 0)
			usage();
		return run(&o, argv + dd + 1);
	}
	diex(ESV_EXIT_USAGE, "unknown command: %s (arm, release, run)", cmd);
}
