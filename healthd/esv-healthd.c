/*
 * esv-healthd: GET /healthz, /status and /metrics of one job, read from
 * its control directory (esv-healthd(8)).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>


#include "confvalue.h"
#include "healthd.h"
#include "msg.h"
#include "netlisten.h"

/* After its supervisor is gone: long enough for a prober to hear why. */
#define LINGER_MS	3000
#define NICENESS	10

static struct {
	struct loop	 lp;
	struct watch	 sigw, supw;
	struct view	 v;
	struct http	*http;
	int		 listenfd;
	long long	 exit_at;
	bool		 quit;
} g = { .listenfd = -1, .exit_at = LLONG_MAX };

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-healthd [-v] --listen ADDR:PORT [--timeout "
	    "DURATION] [--status-paths] [--supervisor-fd N] JOBDIR\n"
	    "       esv-healthd --help | --version\n"
	    "Exit status: 0 stopped by a signal or by the supervisor, or after "
	    "the\nsupervisor died; 100 usage error; 111 system error.\n");
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo si[4];
	int k, n;

	(void)events;
	n = signals_read(w->fd, si, 4);
	for (k = 0; k < n; k++)
		if (si[k].ssi_signo != SIGHUP)
			g.quit = true;
}

/*
 * The supervisor that started us says "exit" when it ends in order; a
 * hang-up without it means it died, which /healthz must tell for a while.
 */
static void
on_supervisor(struct watch *w, uint32_t events)
{
	char buf[64];
	ssize_t r;

	(void)events;
	r = read(w->fd, buf, sizeof(buf) - 1);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 0) {
		buf[r] = '\0';
		if (strstr(buf, "exit\n") != NULL)
			g.quit = true;
		return;
	}
	info_msg("the supervisor went away: /healthz says so for %d s, "
	    "then exiting", LINGER_MS / 1000);
	loop_del(&g.lp, w);
	close(w->fd);
	w->fd = -1;
	g.v.supervisor_gone = true;
	g.exit_at = mono_ms() + LINGER_MS;
}

static void
take_listener(int fd)
{
	/* libmicrohttpd serves one socket: the first address wins. */
	if (g.listenfd == -1)
		g.listenfd = fd;
	else
		close(fd);
}

static void
announce(int supfd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[64], where[80], line[128];
	int n;

	if (getsockname(g.listenfd, (struct sockaddr *)&ss, &sl) == -1)
		die(ESV_EXIT_SYSTEM, "getsockname");
	net_addr_fmt(&ss, ip, sizeof(ip), where, sizeof(where));
	info_msg("listening on %s for %s", where, g.v.jobdir);
	if (supfd == -1)
		return;
	/* esv-supervise records it in supervise/state (esv-control(5)). */
	n = snprintf(line, sizeof(line), "listening %s\n", where);
	if (send(supfd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		warn_sys("unable to tell the supervisor where we listen");
}

/*
 * Answers to probes must not take CPU from the job: under a flood of
 * requests the supervisor (and the workers) go first.  A probe answered a
 * few ms later is still answered.  Our own session is our own autogroup,
 * whose weight the kernel takes from /proc/self/autogroup, not from nice.
 */
static void
yield_to_the_job(void)
{
	FILE *f;

	(void)setpriority(PRIO_PROCESS, 0, NICENESS);
	if ((f = fopen("/proc/self/autogroup", "we")) != NULL) {
		fprintf(f, "%d", NICENESS);
		(void)fclose(f);
	}
}

static void
setup(const char *listen, int supfd, bool verbose)
{
	struct rlimit rl;

	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	yield_to_the_job();
	/* CONN_MAX connections must fit under the usual soft limit of 1024. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 &&
	    rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	net_listen(listen, take_listener);
	if (supfd != -1) {
		g.supw = (struct watch){ .fd = supfd, .fn = on_supervisor };
		if (loop_add(&g.lp, &g.supw, EPOLLIN) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_ctl");
	}
	if ((g.http = http_start(&g.lp, g.listenfd, &g.v, verbose)) == NULL)
		diex(ESV_EXIT_SYSTEM, "unable to start the HTTP server");
	announce(supfd);
}

static void
run(void)
{
	long long now, next, tick = 0;

	while (!g.quit) {
		now = mono_ms();
		if (now >= g.exit_at)
			break;
		if (now >= tick)
			tick = view_tick(&g.v, now);
		next = http_run(g.http, now);
		if (tick < next)
			next = tick;
		if (g.exit_at < next)
			next = g.exit_at;
		if (loop_once(&g.lp, next <= now ? 0 : (int)(next - now)) ==
		    -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
	}
}

/*
 * The supervisor made the socketpair: its pid is the one whose state file
 * counts (view.c), not a previous run's.  0 if unknown.
 */
static pid_t
supervisor_pid(int supfd)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (supfd == -1 || getsockopt(supfd, SOL_SOCKET, SO_PEERCRED, &cr,
	    &sl) == -1)
		return 0;
	return cr.pid;
}

static int
fd_arg(const char *arg)
{
	const char *errstr;
	int fd;

	fd = strtonum(arg, 3, INT_MAX, &errstr);
	if (errstr != NULL)
		diex(ESV_EXIT_USAGE, "--supervisor-fd %s: %s", arg, errstr);
	return fd;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "supervisor-fd", required_argument, NULL, 's' },
		{ "status-paths", no_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = NULL;
	long long timeout_ms = 60000;
	bool verbose = false, paths = false;
	int ch, supfd = -1;

	while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			listen = optarg;
			break;
		case 't':
			if ((timeout_ms = parse_duration_ms(optarg)) <= 0)
				diex(ESV_EXIT_USAGE, "--timeout %s: not a "
				    "duration above 0 (60, 500ms, 2s, 1m)",
				    optarg);
			break;
		case 's':
			supfd = fd_arg(optarg);
			break;
		case 'p':
			paths = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-healthd %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || listen == NULL) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	view_init(&g.v, &g.lp, argv[optind], timeout_ms / 1000.0);
	g.v.status_paths = paths;
	g.v.supervisor_pid = supervisor_pid(supfd);
	setup(listen, supfd, verbose);
	run();
	http_stop(g.http);
	return ESV_EXIT_OK;
}
