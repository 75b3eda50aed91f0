#include <signal.h>
#include <string.h>

#include "ctlschema.h"
#include "fsm.h"

static const char *const state_names[] = {
	[G_DOWN] = ESV_GS_DOWN, [G_RUNNING] = ESV_GS_RUNNING,
	[G_STOPPING] = ESV_GS_STOPPING, [G_BACKOFF] = ESV_GS_BACKOFF,
	[G_SUCCEEDED] = ESV_GS_SUCCEEDED, [G_FAILED] = ESV_GS_FAILED,
	[G_JOINING] = ESV_GS_JOINING, [G_FINISHING] = ESV_GS_FINISHING,
};

/* The name supervise/state shows (ctlschema.h). */
const char *
group_state_name(enum group_state st)
{
	return state_names[st];
}

bool
fsm_known_letter(unsigned char c)
{
	return c != 0 && strchr(CONTROL_LETTERS, c) != NULL;
}

static int
letter_signal(unsigned char c)
{
	switch (c) {
	case 'p': return SIGSTOP;
	case 'c': return SIGCONT;
	case 'h': return SIGHUP;
	case 'a': return SIGALRM;
	case 'i': return SIGINT;
	case 'q': return SIGQUIT;
	case '1': return SIGUSR1;
	case '2': return SIGUSR2;
	}
	return 0;
}

struct ctl_decision
fsm_control(enum group_state st, unsigned char c)
{
	struct ctl_decision d = { .effect = CTL_NONE, .paused = -1 };
	bool running = st == G_RUNNING;
	/* Between rounds or restarts: no worker runs, one is coming. */
	bool pending = st == G_BACKOFF || st == G_JOINING;

	switch (c) {
	case 'u':
	case 'o':
		d.want = (char)c;
		d.effect = st == G_DOWN ? CTL_START : CTL_SHOW;
		break;
	case 'd':
		/*
		 * A group already stopping (for a failure, a restart, a
		 * membership change) ends down: fsm_after_stop reads want.
		 */
		d.want = 'd';
		if (running) {
			d.effect = CTL_STOP;
			d.signo = SIGTERM;
			d.why = STOP_DOWN;
		} else
			d.effect = pending ? CTL_DOWN : CTL_SHOW;
		break;
	case 'x':
		d.want_exit = true;
		if (running) {
			d.effect = CTL_STOP;
			d.signo = SIGTERM;
			d.why = STOP_EXIT;
		} else if (st != G_STOPPING)
			d.effect = CTL_EXIT;
		/* Stopping: the supervisor exits once the group is down. */
		break;
	case 't':
	case 'r':
		if (running) {
			d.effect = CTL_STOP;
			d.signo = SIGTERM;
			d.why = STOP_MANUAL;
		}
		break;
	case 'l':
		d.effect = CTL_RELOAD;
		break;
	case 'k':
		if (running) {
			d.effect = CTL_STOP;
			d.signo = SIGKILL;
			d.why = STOP_MANUAL;
		} else if (st == G_STOPPING) {
			d.effect = CTL_SIGNAL;
			d.signo = SIGKILL;
		}
		break;
	default:
		if ((d.signo = letter_signal(c)) != 0) {
			d.effect = CTL_SIGNAL;
			if (c == 'p' || c == 'c')
				d.paused = c == 'p';
		}
	}
	return d;
}

enum next_step
fsm_after_stop(enum stop_reason why, char want, bool want_exit,
    unsigned restart_count, unsigned max_restarts)
{
	if (why == STOP_SIGNAL || why == STOP_EXIT || want_exit)
		return NEXT_EXIT;
	if (want == 'd')
		return NEXT_DOWN;	/* a failure too: recorded, not spent */
	if (why == STOP_FAILURE)
		return want != 'u' || restart_count >= max_restarts ?
		    NEXT_FAILED : NEXT_RESTART;
	return NEXT_START;
}
