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

/* Every part's state, owned here; each part is handed what it may use. */
static struct {
	struct loop	 lp;
	struct watch	 sigw;
	bool		 verbose, quit;
	struct timers	 ts;
	struct workers	 wk;
	struct counts	 cnt;
	struct ctlchan	 ctl;
	struct expiry	 exp;
	struct fifo	 fifo;
	struct queries	 qs;
} g;

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
		    "%lu expired, %zu workers", g.ts.n, g.cnt.requests,
		    g.cnt.refused, g.cnt.expired, g.wk.n);
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
	expiry_open(&g.exp);
	if ((g.qs.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	add(&g.exp.w);
	add(&g.ctl.w);
	add(&g.fifo.w);
	add(&g.qs.w);
}

static void
run(void)
{
	long long now, next;

	while (!g.quit && !g.ctl.gone) {
		/*
		 * The supervisor's latest list first: a timer of a worker
		 * that list no longer names is dropped, not fired.
		 */
		ctl_drain(&g.ctl);
		run_expiries(&g.exp);
		arm_timer(&g.exp);
		now = mono_ms();
		next = queries_tick(&g.qs, now);
		next = ratelim_tick(&g.fifo.badrl, now, next);
		next = ratelim_tick(&g.fifo.refrl, now, next);
		if (loop_once(&g.lp, next == LLONG_MAX ? -1 :
		    (int)(next - now)) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
	}
}

/* Each part is told the others it uses, down the layers only. */
static void
wire(void)
{
	g.ctl.w.fd = -1;
	g.ctl.lp = &g.lp;
	g.ctl.wk = &g.wk;
	g.ctl.ts = &g.ts;
	g.ctl.verbose = g.verbose;
	g.ctl.listed = replay_held;
	g.ctl.listed_ctx = &g.fifo;

	g.exp.ts = &g.ts;
	g.exp.wk = &g.wk;
	g.exp.ctl = &g.ctl;
	g.exp.cnt = &g.cnt;
	g.exp.verbose = g.verbose;

	g.fifo.ts = &g.ts;
	g.fifo.wk = &g.wk;
	g.fifo.ctl = &g.ctl;
	g.fifo.cnt = &g.cnt;
	g.fifo.verbose = g.verbose;
	g.fifo.badrl.what = "bad requests";
	g.fifo.refrl.what = "refused requests";

	g.qs.w.fd = -1;
	g.qs.lp = &g.lp;
	g.qs.cnt = &g.cnt;
	g.qs.ts = &g.ts;
	g.qs.wk = &g.wk;
	TAILQ_INIT(&g.qs.q);
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
			g.wk.any_pid = true;
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
	if (optind != argc || fifo == NULL || (ctlfd != -1 && g.wk.any_pid)) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	timers_init(&g.ts);
	wire();
	if (ctlfd != -1)
		ctl_open(&g.ctl, ctlfd);
	else if (!g.wk.any_pid)
		warn_msg("neither --control-fd nor --any-pid: every request "
		    "will be refused");
	g.wk.listed = ctlfd != -1;
	fifo_open(&g.fifo, fifo);
	if (sock != NULL)
		query_open(&g.qs, sock);
	setup_loop();
	/* The default 50 us of timer slack is half our lateness budget. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	g.cnt.last_progress = wall_now();
	run();
	/* A burst just before the end is still counted, before we hang up. */
	ratelim_flush(&g.fifo.badrl, 0);
	ratelim_flush(&g.fifo.refrl, 0);
	if (g.qs.path != NULL)
		unlink(g.qs.path);
	return ESV_EXIT_OK;
}
