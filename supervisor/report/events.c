/*
 * JOBDIR/events.jsonl: what happened, one JSON object per line, for
 * programs (the stderr lines are for people and init-system loggers).
 * Each line is one O_APPEND write, so a reader never sees half a line:
 * a write the file system cut short (it is full) is taken back at once,
 * and the event is counted as lost instead (events_lost in supervise/state).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ctldir.h"
#include "loop.h"
#include "msg.h"
#include "report.h"


/*
 * Cut the file back to its last newline: a tail left by an earlier
 * supervisor that died in the middle of a write is not glued to our
 * first line.
 */
static void
trim_tail(struct supervisor *sv)
{
	char buf[4096];
	struct stat st;
	off_t end;
	ssize_t n, i;

	if (fstat(sv->events.fd, &st) == -1)
		return;
	for (end = st.st_size; end > 0; end -= n) {
		n = end < (off_t)sizeof(buf) ? (ssize_t)end :
		    (ssize_t)sizeof(buf);
		if (pread(sv->events.fd, buf, n, end - n) != n)
			return;
		for (i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				break;
		if (i > 0) {
			end -= n - i;
			break;
		}
	}
	if (end == st.st_size)
		return;
	warn_msg("%s/%s: its last line was cut short: removed",
	    sv->cfg->jobdir, ESV_EVENTS_FILE);
	if (ftruncate(sv->events.fd, end) == -1)
		warn_sys("unable to truncate %s/%s", sv->cfg->jobdir,
		    ESV_EVENTS_FILE);
}

void
events_open(struct supervisor *sv)
{
	sv->events.fd = openat(sv->jobfd, ESV_EVENTS_FILE,
	    O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (sv->events.fd == -1)
		warn_sys("unable to open %s/%s", sv->cfg->jobdir, ESV_EVENTS_FILE);
	else
		trim_tail(sv);
}

/*
 * Undo the n bytes (maybe 0) that a failed append left.  With O_APPEND
 * they are the file's last n bytes: we are its only writer.
 */
static void
take_back(struct supervisor *sv, size_t n)
{
	struct stat st;

	if (n == 0)
		return;
	if (fstat(sv->events.fd, &st) == -1 || (size_t)st.st_size < n ||
	    ftruncate(sv->events.fd, st.st_size - n) == -1)
		warn_sys("unable to take back a partial line of %s/%s",
		    sv->cfg->jobdir, ESV_EVENTS_FILE);
}

/* Takes a reference to fields (may be NULL). */
void
events_log(struct supervisor *sv, const char *name, json_t *fields)
{
	json_t *ev;
	char *line;
	size_t len, off;
	ssize_t w;
	unsigned lost;
	int e;

	if (sv->events.fd == -1) {
		json_decref(fields);
		return;
	}
	ev = fields != NULL ? fields : json_object();
	json_object_set_new(ev, "time", json_real(wall_now()));
	json_object_set_new(ev, "event", json_string(name));
	json_object_set_new(ev, "attempt", json_integer(sv->counts.attempt));
	json_object_set_new(ev, "restart_count",
	    json_integer(sv->counts.restart_count));
	line = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(ev);
	if (line == NULL)
		return;
	len = strlen(line);
	line[len] = '\n';	/* json_dumps left room: its NUL */
	/* After a short write, the next one says why (or completes it). */
	for (off = 0; off < len + 1; off += w)
		if ((w = write(sv->events.fd, line + off, len + 1 - off)) == -1) {
			if (errno != EINTR)
				break;
			w = 0;
		}
	e = errno;
	free(line);
	if (off == len + 1) {
		if (!sv->events.failing)
			return;
		/* Said once per episode, at its end, in the file too. */
		sv->events.failing = false;
		lost = sv->events.lost - sv->events.lost_said;
		sv->events.lost_said = sv->events.lost;
		info_msg("appending to %s/%s again: %u event%s lost",
		    sv->cfg->jobdir, ESV_EVENTS_FILE, lost, lost == 1 ? "" : "s");
		events_log(sv, "events.lost", json_pack("{si}", "lost",
		    (int)lost));
		return;
	}
	take_back(sv, off);
	sv->events.lost++;
	if (sv->events.failing)
		return;
	sv->events.failing = true;
	warn_msg("unable to append to %s/%s: %s: events are lost until "
	    "it works again", sv->cfg->jobdir, ESV_EVENTS_FILE, strerror(e));
}
