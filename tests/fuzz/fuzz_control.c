/*
 * The control FIFO's bytes against every state (supervisor/core/fsm.c): an
 * unknown byte does nothing, a known one always decides something
 * consistent.
 */
#include <signal.h>
#include <string.h>

#include "../../supervisor/core/fsm.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_decision d;
	size_t i;
	int st;

	for (i = 0; i < size; i++)
		for (st = 0; st < G_NSTATES; st++) {
			d = fsm_control(st, data[i]);
			if (!fsm_known_letter(data[i])) {
				CHECK(d.effect == CTL_NONE && d.want == 0 &&
				    !d.want_exit);
				continue;
			}
			if (d.effect == CTL_STOP)
				CHECK(st == G_RUNNING && d.why != STOP_NONE &&
				    (d.signo == SIGTERM || d.signo == SIGKILL));
			if (d.effect == CTL_START)
				CHECK(st == G_DOWN);
			if (d.effect == CTL_SIGNAL)
				CHECK(d.signo > 0 && d.signo < NSIG);
			CHECK(d.want == 0 || strchr("uod", d.want) != NULL);
		}
	return 0;
}
