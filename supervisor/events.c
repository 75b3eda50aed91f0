/*
 * JOBDIR/events.jsonl: what happened, one JSON object per line, for
 * programs (the stderr lines are for people and init-system loggers).
 * Each line is one O_APPEND write, so a reader never sees half a line.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "loop.h"
#include "msg.h"
#include "supervise.h"

#define EVENTS_FILE	"events.jsonl"

void
events_open(struct supervisor *sv)
{
	sv->eventsfd = openat(sv->jobfd, EVENTS_FILE,
	    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (sv->eventsfd == -1)
		warn_sys("unable to open %s/%s", sv->cfg->jobdir, EVENTS_FILE);
}

/* Takes a reference to fields (may be NULL). */
void
events_log(struct supervisor *sv, const char *name, json_t *fields)
{
	json_t *ev;
	char *line;
	size_t len;

	if (sv->eventsfd == -1) {
		json_decref(fields);
		return;
	}
	ev = fields != NULL ? fields : json_object();
	json_object_set_new(ev, "time", json_real(wall_now()));
	json_object_set_new(ev, "event", json_string(name));
	json_object_set_new(ev, "attempt", json_integer(sv->attempt));
	json_object_set_new(ev, "restart_count",
	    json_integer(sv->restart_count));
	line = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(ev);
	if (line == NULL)
		return;
	len = strlen(line);
	line[len] = '\n';	/* json_dumps left room: its NUL */
	if (write(sv->eventsfd, line, len + 1) != (ssize_t)len + 1)
		warn_sys("unable to append to %s/%s", sv->cfg->jobdir,
		    EVENTS_FILE);
	free(line);
}
