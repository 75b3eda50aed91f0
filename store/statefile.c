/*
 * esv-stored's --state-file (see statefile.h).
 */
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "ctlschema.h"
#include "kvfile.h"
#include "loop.h"
#include "msg.h"
#include "statefile.h"

long long
statefile_tick(struct statefile *sf, long long now, size_t keys,
    unsigned conns, size_t waiting)
{
	struct kvbuf kb = { 0 };

	if (sf->path == NULL || (sf->said && keys == sf->said_keys &&
	    conns == sf->said_conns && waiting == sf->said_waiting))
		return LLONG_MAX;
	if (sf->said && now - sf->said_ms < STATE_EVERY_MS)
		return sf->said_ms + STATE_EVERY_MS;
	kv_add(&kb, ctl_store_key(SK_LISTEN), sf->listen_name);
	kv_addf(&kb, ctl_store_key(SK_PID), "%d", (int)getpid());
	kv_addf(&kb, ctl_store_key(SK_KEYS), "%zu", keys);
	kv_addf(&kb, ctl_store_key(SK_CONNECTIONS), "%u", conns);
	kv_addf(&kb, ctl_store_key(SK_WAITING), "%zu", waiting);
	kv_addf(&kb, ctl_store_key(SK_UPDATED), "%.3f", wall_now());
	sf->said_ms = now;
	if (kv_write_at(&kb, AT_FDCWD, sf->path) == -1) {
		if (!sf->warned)
			warn_sys("%s: unable to write (again every %d ms, "
			    "said once)", sf->path, STATE_EVERY_MS);
		sf->warned = true;
		kv_free(&kb);
		return now + STATE_EVERY_MS;
	}
	kv_free(&kb);
	sf->said = true;
	sf->said_keys = keys;
	sf->said_conns = conns;
	sf->said_waiting = waiting;
	return LLONG_MAX;
}
