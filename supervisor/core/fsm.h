/*
 * The decisions of esv-supervise's state machine, apart from the doing:
 * what a control letter does in each state of the group, and what follows
 * a stopped group.  Pure functions of the state they are given, so that
 * tests/unit/test_fsm.c checks every letter against every state without a
 * process.  control.c and group.c carry the decisions out.
 */
#ifndef ESV_FSM_H
#define ESV_FSM_H

#include <stdbool.h>

/* The group as supervise/state shows it (see ctldir.h). */
enum group_state { G_DOWN, G_RUNNING, G_STOPPING, G_BACKOFF, G_SUCCEEDED,
	G_FAILED, G_JOINING, G_FINISHING };
#define G_NSTATES	(G_FINISHING + 1)

const char *group_state_name(enum group_state st);

/* Why the group is being stopped: decides what follows. */
enum stop_reason { STOP_NONE, STOP_FAILURE, STOP_MANUAL, STOP_DOWN,
	STOP_SIGNAL, STOP_EXIT, STOP_MEMBERSHIP };

/* The letters of supervise/control (runit's, and s6's where they agree);
 * l is esv's own: read job.ini again (esv-ctl reload). */
#define CONTROL_LETTERS	"uodxtrkpchaiq12l"

enum ctl_effect {
	CTL_NONE,	/* nothing to do in this state */
	CTL_SHOW,	/* only the recorded wish changes: rewrite the state */
	CTL_START,	/* start a group */
	CTL_STOP,	/* stop the group: signo, why */
	CTL_SIGNAL,	/* signal the group: signo */
	CTL_DOWN,	/* leave the round or the backoff: down now */
	CTL_EXIT,	/* exit the supervisor now (after going down) */
	CTL_RELOAD,	/* read job.ini again, for the next start */
};

struct ctl_decision {
	enum ctl_effect	 effect;
	int		 signo;
	enum stop_reason why;
	char		 want;		/* 'u', 'o', 'd', or 0: unchanged */
	bool		 want_exit;
	int		 paused;	/* 1, 0, or -1: unchanged */
};

/* What letter does in state st; effect CTL_NONE for an unknown byte too. */
struct ctl_decision	fsm_control(enum group_state st, unsigned char letter);
bool	fsm_known_letter(unsigned char c);

enum next_step {
	NEXT_EXIT,	/* the supervisor exits 1 (a signal, `x`) */
	NEXT_RESTART,	/* a failure restart, spending one of the budget */
	NEXT_FAILED,	/* the job failed: summary, exit 1 */
	NEXT_START,	/* a new attempt that spends nothing */
	NEXT_DOWN,	/* stay down until `u` */
};

/* What follows a group stopped for why, with the operator's wishes. */
enum next_step	fsm_after_stop(enum stop_reason why, char want, bool want_exit,
	    unsigned restart_count, unsigned max_restarts);

#endif
