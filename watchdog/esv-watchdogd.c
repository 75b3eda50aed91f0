/*
 * esv-watchdogd: the timer watchdog of esv.  Workers arm and release
 * timers through a FIFO in the wire format of torch's FileTimerClient; a
 * timer not released by its deadline gets its worker signalled.  Unlike
 * torch's FileTimerServer it signals only the workers esv-supervise names
 * on the control channel, and it sleeps until the next deadline instead of
 * polling.  It signals them through the pidfds the supervisor sends with
 * the list (wdchan.h), never by pid: a worker reaped just before its timer
 * fires leaves a dead pidfd, not a pid that another process may have.
 */
#include "watchdogd.h"

struct watchdogd g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-watchdogd [-v] --fifo PATH [--socket PATH] "
	    "[--control-fd N | --any-pid]\n"
	    "       esv-watchdogd --help | --version\n"
	    "Exit status: 0 stopped by a signal or by the supervisor, 100 usage "
	    "error,\n111 system error.\n");
}

static void
open_fifo(const char *path)
{
	struct stat sb;

	g.fifow.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g.fifow.fd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (fstat(g.fifow.fd, &sb) == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (!S_ISFIFO(sb.st_mode))
		diex(ESV_EXIT_USAGE, "%s: not a FIFO", path);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		warn_msg("%s: others may write it and arm timers", path);
	/* Never read end-of-file when the last worker closes it. */
	g.fifo_wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (g.fifo_wfd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	g.fifow.fn = on_fifo;
}

static void
open_socket(const char *path)
{
	struct sockaddr_un sun;
	struct stat sb;
	mode_t um;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		diex(ESV_EXIT_USAGE, "--socket %s: path too long", path);
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			diex(ESV_EXIT_USAGE, "%s: exists and is not a socket",
			    path);
		if (unlink(path) == -1)
			die(ESV_EXIT_SYSTEM, "unlink %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		die(ESV_EXIT_SYSTEM, "socket");
	um = umask(077);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		die(ESV_EXIT_SYSTEM, "bind %s", path);
	umask(um);
	if (chmod(path, 0600) == -1)
		die(ESV_EXIT_SYSTEM, "chmod %s", path);
	if (listen(fd, QUERY_MAX) == -1)
		die(ESV_EXIT_SYSTEM, "listen %s", path);
	g.listenw.fd = fd;
	g.listenw.fn = on_listen;
	g.sockpath = path;
}

static void
open_control(int fd)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		die(ESV_EXIT_USAGE, "--control-fd %d", fd);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		die(ESV_EXIT_SYSTEM, "--control-fd %d", fd);
	if ((g.ctl_in = malloc(WDCHAN_LINE_MAX)) == NULL ||
	    (g.ctl_out = malloc(CTL_OUT_MAX)) == NULL ||
	    (g.pend = calloc(PEND_MAX, sizeof(*g.pend))) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	g.ctlw.fd = fd;
	g.ctlw.fn = on_ctl;
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo sis[4], si;
	int k, n;

	(void)events;
	n = signals_read(w->fd, sis, 4);
	for (k = 0; k < n; k++) {
		si = sis[k];
		if (si.ssi_signo != SIGHUP) {
			g.quit = true;
			continue;
		}
		/* Nothing to reload: say where things stand instead. */
		info_msg("status: %zu armed, %lu requests, %lu refused, "
		    "%lu expired, %zu workers", g.ts.n, g.requests, g.refused,
		    g.expired, g.npids);
	}
}

static void
add(struct watch *w)
{
	if (w->fd != -1 && loop_add(&g.lp, w, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
}

static void
setup_loop(void)
{
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	/* Expirations are wall-clock times, as torch's clients send them. */
	g.timerw.fd = timer_open(CLOCK_REALTIME);
	if (g.timerw.fd == -1)
		die(ESV_EXIT_SYSTEM, "timerfd_create");
	g.timerw.fn = on_timer;
	if ((g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	add(&g.timerw);
	add(&g.ctlw);
	add(&g.fifow);
	add(&g.listenw);
}

static void
run(void)
{
	long long now, next;

	while (!g.quit) {
		/*
		 * The supervisor's latest list first: a timer of a worker
		 * that list no longer names is dropped, not fired.
		 */
		ctl_drain();
		run_expiries();
		arm_timer();
		now = mono_ms();
		next = queries_tick(now);
		next = ratelim_tick(&g.badrl, now, next);
		next = ratelim_tick(&g.refrl, now, next);
		if (loop_once(&g.lp, next == LLONG_MAX ? -1 :
		    (int)(next - now)) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
	}
}

static int
fd_arg(const char *arg)
{
	const char *errstr;
	int fd;

	fd = strtonum(arg, 0, INT_MAX, &errstr);
	if (errstr != NULL)
		diex(ESV_EXIT_USAGE, "--control-fd %s: %s", arg, errstr);
	return fd;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "fifo", required_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "control-fd", required_argument, NULL, 'c' },
		{ "any-pid", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *fifo = NULL, *sock = NULL;
	int ch, ctlfd = -1;

	while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			fifo = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'c':
			ctlfd = fd_arg(optarg);
			break;
		case 'a':
			g.any_pid = true;
			break;
		case 'v':
			g.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-watchdogd %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc || fifo == NULL || (ctlfd != -1 && g.any_pid)) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	g.ctlw.fd = g.listenw.fd = -1;
	g.badrl.what = "bad requests";
	g.refrl.what = "refused requests";
	timers_init(&g.ts);
	TAILQ_INIT(&g.queries);
	if (ctlfd != -1)
		open_control(ctlfd);
	else if (!g.any_pid)
		warn_msg("neither --control-fd nor --any-pid: every request "
		    "will be refused");
	open_fifo(fifo);
	if (sock != NULL)
		open_socket(sock);
	setup_loop();
	/* The default 50 us of timer slack is half our lateness budget. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	g.last_progress = wall_now();
	run();
	/* A burst just before the end is still counted, before we hang up. */
	ratelim_flush(&g.badrl, 0);
	ratelim_flush(&g.refrl, 0);
	if (g.sockpath != NULL)
		unlink(g.sockpath);
	return ESV_EXIT_OK;
}
