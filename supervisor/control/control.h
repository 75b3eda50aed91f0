/*
 * The operator's hand: the control FIFO's letters (control.c) and a
 * reload of job.ini (reload.c).
 *
 * Owns: supervise/control and its keeping fd.
 * May call: the state machine (a letter starts, stops or signals the
 * group), configuration, spawning, containment, reporting.  Only main.c
 * calls it.
 */
#ifndef ESV_CONTROL_H
#define ESV_CONTROL_H

#include "supervise.h"

/* control.c */
void	control_setup(struct supervisor *sv);
void	control_read(struct watch *w, uint32_t events);

/* reload.c: read job.ini again; source says who asked, for the messages. */
void	supervisor_reload(struct supervisor *sv, const char *source,
	    bool quiet);

#endif
