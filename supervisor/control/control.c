/*
 * supervise/control: one byte per command, runit's and s6's letters
 * (esv-control(5); fsm.c decides what each does).  Unknown bytes are
 * reported and ignored; nothing a client writes can disturb the running
 * workers.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "contain.h"
#include "control.h"
#include "ctldir.h"
#include "fifodir.h"
#include "group.h"
#include "msg.h"
#include "ratelim.h"
#include "report.h"
#include <jansson.h>


static int
make_fifo(struct supervisor *sv, const char *name)
{
	struct stat st;

	if (fstatat(sv->jobfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISFIFO(st.st_mode))
		return 0;
	unlinkat(sv->jobfd, name, 0);
	return mkfifoat(sv->jobfd, name, 0600);
}

void
control_setup(struct supervisor *sv)
{
	const char *jd = sv->cfg->jobdir;
	char path[PATH_MAX];

	/* event/ first: once ok has a reader, clients may subscribe. */
	pathf(path, sizeof(path), "%s/%s", jd, ESV_EVENT_DIR);
	if (fifodir_make(path) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create %s", path);
	if (make_fifo(sv, ESV_CONTROL) == -1 || make_fifo(sv, ESV_OK) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create the FIFOs in %s/%s", jd,
		    ESV_SUPERVISE_DIR);
	sv->ctl.fd = openat(sv->jobfd, ESV_CONTROL,
	    O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	/* Our own writer: the FIFO never reads EOF when clients go. */
	sv->ctl.keepfd = openat(sv->jobfd, ESV_CONTROL,
	    O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	sv->ctl.okfd = openat(sv->jobfd, ESV_OK,
	    O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (sv->ctl.fd == -1 || sv->ctl.keepfd == -1 || sv->ctl.okfd == -1)
		die(ESV_EXIT_SYSTEM, "unable to open the FIFOs in %s/%s", jd,
		    ESV_SUPERVISE_DIR);
}

/* What each letter asks, for the line on stderr. */
static const char *
letter_name(unsigned char c)
{
	switch (c) {
	case 'u': return "up";
	case 'o': return "once";
	case 'd': return "down";
	case 'x': return "exit";
	case 't': return "restart (SIGTERM)";
	case 'r': return "restart";
	case 'k': return "restart (SIGKILL)";
	case 'p': return "pause";
	case 'c': return "continue";
	case 'l': return "reload";
	case 'h': return "signal SIGHUP";
	case 'a': return "signal SIGALRM";
	case 'i': return "signal SIGINT";
	case 'q': return "signal SIGQUIT";
	case '1': return "signal SIGUSR1";
	case '2': return "signal SIGUSR2";
	}
	return "?";
}

/* c, a known letter, which came n times in one read. */
static void
command(struct supervisor *sv, unsigned char c, unsigned n)
{
	static struct ratelim said = { .what = "lines of control commands" };
	struct ctl_decision d;
	char times[32] = "";

	events_log(sv, "control", json_pack("{ss# si}", "command",
	    (const char *)&c, (size_t)1, "count", (int)n));
	/*
	 * The FIFO does not say who wrote: its name is the source.  A flood
	 * gets ten lines a second; events.jsonl has every command.
	 */
	if (n > 1)
		snprintf(times, sizeof(times), " (%u times)", n);
	if (ratelim_allow(&said))
		info_msg("control: '%c' %s%s, from %s/%s", c, letter_name(c),
		    times, sv->cfg->jobdir, ESV_CONTROL);

	d = fsm_control(sv->grp.state, c);
	/* A start the operator asks for takes what job.ini says now. */
	if (d.effect == CTL_START ||
	    (d.effect == CTL_STOP && d.why == STOP_MANUAL))
		supervisor_reload(sv, "start", true);
	if (d.want != 0)
		sv->grp.want = d.want;
	if (d.want_exit)
		sv->grp.want_exit = sv->rdzv.rz.stopping = true;
	switch (d.effect) {
	case CTL_NONE:
		break;
	case CTL_RELOAD:
		supervisor_reload(sv, "esv-ctl reload", false);
		break;
	case CTL_SHOW:
		report_group(sv);
		break;
	case CTL_START:
		group_start(sv);
		break;
	case CTL_STOP:
		group_stop(sv, d.signo, d.why);
		break;
	case CTL_SIGNAL:
		/*
		 * Frozen whole, the workers cannot notice a pause.  Only a
		 * running group: one being stopped must hear its signal,
		 * and a group to come starts thawed.
		 */
		if (d.paused != -1 && sv->cg.on) {
			if (sv->grp.state == G_RUNNING &&
			    cgroup_freeze(&sv->cg, d.paused == 1) == 0) {
				sv->grp.paused = d.paused;
				report_group(sv);
			}
			break;
		}
		group_signal(sv, d.signo);
		if (d.paused != -1) {
			sv->grp.paused = d.paused;
			report_group(sv);
		}
		break;
	case CTL_DOWN:
		group_go_down(sv);
		break;
	case CTL_EXIT:
		if (sv->grp.state == G_BACKOFF || sv->grp.state == G_JOINING)
			group_go_down(sv);
		supervisor_exit(sv, sv->rep.exit_code);
	}
}

static void
unknown(struct supervisor *sv, unsigned char c, size_t pos)
{
	if (c >= 0x20 && c < 0x7f)
		warn_msg("%s/%s: byte %zu: unknown command '%c' ignored",
		    sv->cfg->jobdir, ESV_CONTROL, pos, c);
	else
		warn_msg("%s/%s: byte %zu: unknown command 0x%02x ignored",
		    sv->cfg->jobdir, ESV_CONTROL, pos, c);
}

/*
 * One buffer per wake-up: a flood (a script writing in a loop) cannot
 * keep SIGTERM, worker exits and the timers waiting; the rest is read on
 * a later turn of the loop, after them.  Within a buffer each letter is
 * obeyed once, where it last appears, so 4096 'p' cost one state write
 * and one event, and the letters leave the state they would one by one.
 */
void
control_read(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;
	static size_t pos;	/* bytes read so far, for the warnings */
	static unsigned bad;	/* unknown bytes since the FIFO was empty */
	unsigned char buf[PIPE_BUF], c;
	unsigned count[UCHAR_MAX + 1] = { 0 };
	ssize_t last[UCHAR_MAX + 1], n, i;

	(void)events;
	if ((n = read(w->fd, buf, sizeof(buf))) <= 0)
		return;		/* EAGAIN; never EOF: we hold a writer */
	for (i = 0; i < n; i++, pos++) {
		c = buf[i];
		if (isspace(c))
			continue;	/* what `echo u > control` adds */
		if (fsm_known_letter(c)) {
			count[c]++;
			last[c] = i;
		} else if (++bad <= 8)
			unknown(sv, c, pos);
	}
	for (i = 0; i < n; i++)
		if (count[buf[i]] > 0 && last[buf[i]] == i)
			command(sv, buf[i], count[buf[i]]);
	/* A flood of garbage gets a few lines, not thousands. */
	if ((size_t)n < sizeof(buf)) {
		if (bad > 8)
			warn_msg("%s/%s: %u more unknown commands ignored",
			    sv->cfg->jobdir, ESV_CONTROL, bad - 8);
		bad = 0;
	}
}
