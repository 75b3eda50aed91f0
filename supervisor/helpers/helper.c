/*
 * The supervisor's helper daemons (esv-watchdogd, esv-healthd): started
 * with one end of a socketpair as their fd 3, the other end watched here;
 * what they send back is lines.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers.h"
#include "msg.h"
#include "progpath.h"

int
helper_spawn(struct supervisor *sv, const char *prog, const char *subdir,
    const char *envvar, char *argv[], bool stdout_to_stderr, pid_t *pid,
    struct watch *w, watch_fn *fn)
{
	char path[PATH_MAX];
	int sp[2], e;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		warn_sys("unable to create a socketpair for %s", prog);
		return -1;
	}
	prog_path(prog, subdir, envvar, path, sizeof(path));
	argv[0] = path;
	e = prog_spawn(argv, sp[1], stdout_to_stderr, pid);
	close(sp[1]);
	if (e != 0) {
		warn_msg("unable to start %s: %s", path, strerror(e));
		close(sp[0]);
		*pid = 0;
		return -1;
	}
	*w = (struct watch){ .fd = sp[0], .fn = fn, .ctx = sv };
	if (loop_add(&sv->loop, w, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to watch %s", prog);
	return 0;
}

void
helper_lost(struct loop *loop, struct watch *w)
{
	loop_del(loop, w);
	close(w->fd);
	w->fd = -1;
}

int
helper_read_lines(struct supervisor *sv, int fd, char *buf, size_t size,
    size_t *len, void (*line)(struct supervisor *, char *))
{
	char *nl, *p;
	ssize_t r;

	r = read(fd, buf + *len, size - 1 - *len);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	*len += r;
	buf[*len] = '\0';
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		line(sv, p);
	}
	*len -= p - buf;
	memmove(buf, p, *len);
	if (*len == size - 1)
		*len = 0;	/* no line is that long: resync */
	return 0;
}
