/*
 * A TCP port free now, for the backends that offer one (MASTER_PORT, the
 * port a node's workers' store will listen on).  Kept apart from rdzv.c,
 * which picks the backend, so that the backends use it without calling
 * back up into the file that names them.
 */
#ifndef ESV_FREEPORT_H
#define ESV_FREEPORT_H

#include "lookup.h"

/*
 * A TCP port free now on the first address of a (bind port 0); 0 on
 * error.  Names are resolved before the loop runs (lookup_now).
 */
unsigned rdzv_free_port(const struct lookup_answer *a);

#endif
