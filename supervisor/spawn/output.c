/*
 * Worker output (torchrun's --redirects, --tee and --log-dir; see
 * esv-supervise(8)).  A redirected stream goes straight to its file.
 * Everything bound for the console passes through
 * the supervisor as whole lines, so workers never interleave mid-line;
 * tee'd streams go to the file and to the console with the line prefix.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "atomicfile.h"
#include "config.h"
#include "msg.h"
#include "spawning.h"
#include "subst.h"

enum { STD_OUT = 1, STD_ERR = 2 };

static void
write_all(int fd, struct iovec *iov, int n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = writev(fd, iov, n)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* a closed console loses output, not us */
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
}

/*
 * One whole line to a log file, or none: what a full file system cut
 * short is taken back (we are the file's only writer, and it is
 * O_APPEND), and the line is counted as lost.  Said once per episode.
 */
static void
log_line(struct stream *s, const char *line, size_t len)
{
	struct supervisor *sv = s->sv;
	struct stat st;
	size_t off;
	ssize_t w;
	unsigned lost;
	int e;

	for (off = 0; off < len; off += w)
		if ((w = write(s->file, line + off, len - off)) == -1) {
			if (errno != EINTR)
				break;
			w = 0;
		}
	if (off == len) {
		if (sv->log_lines.failing) {
			sv->log_lines.failing = false;
			lost = sv->log_lines.lost - sv->log_lines.lost_said;
			sv->log_lines.lost_said = sv->log_lines.lost;
			info_msg("writing worker logs again: %u line%s lost",
			    lost, lost == 1 ? "" : "s");
		}
		return;
	}
	e = errno;
	/* The offset too, in case the file is not O_APPEND. */
	if (off > 0 && (fstat(s->file, &st) == -1 ||
	    (size_t)st.st_size < off ||
	    ftruncate(s->file, st.st_size - off) == -1 ||
	    lseek(s->file, st.st_size - off, SEEK_SET) == -1))
		warn_sys("worker %u: unable to take back a partial log line",
		    s->wk->local_rank);
	sv->log_lines.lost++;
	if (!sv->log_lines.failing) {
		sv->log_lines.failing = true;
		warn_msg("worker %u: unable to write its log: %s: lines are "
		    "lost until it works again", s->wk->local_rank,
		    strerror(e));
	}
}

static void
emit_line(void *ctx, const char *line, size_t len)
{
	struct stream *s = ctx;
	struct iovec iov[2];

	if (s->file != -1)
		log_line(s, line, len);
	if (s->console == -1)
		return;
	iov[0] = (struct iovec){ s->wk->prefix, s->prefixed ?
	    s->wk->prefix_len : 0 };
	iov[1] = (struct iovec){ (void *)line, len };
	write_all(s->console, iov, 2);
}

static void
stream_close(struct supervisor *sv, struct stream *s)
{
	if (s->w.fd != -1) {
		loop_del(&sv->loop, &s->w);
		close(s->w.fd);
		s->w.fd = -1;
	}
	linebuf_flush(&s->lb, emit_line, s);
	linebuf_free(&s->lb);
	if (s->file != -1) {
		close(s->file);
		s->file = -1;
	}
}

/*
 * Read what is there, at most max buffers: a worker (or a grandchild
 * that outlived it) writing without pause must not keep the loop from the
 * rest.  Returns false at EOF.
 */
static bool
stream_drain(struct stream *s, int max)
{
	char buf[65536];
	ssize_t n;
	int reads = 0;

	for (;;) {
		n = read(s->w.fd, buf, sizeof(buf));
		if (n > 0) {
			linebuf_feed(&s->lb, buf, n, emit_line, s);
			if ((size_t)n < sizeof(buf) || ++reads == max)
				return true;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		return n == -1 && errno == EAGAIN;
	}
}

static void
stream_readable(struct watch *w, uint32_t events)
{
	struct stream *s = w->ctx;

	(void)events;
	if (!stream_drain(s, 4))
		stream_close(s->sv, s);
}

static int
open_log(struct supervisor *sv, struct worker *wk, const char *name)
{
	char rel[64];
	int fd;

	/*
	 * By the attempt's fd: nobody's symlink is written through.  The
	 * directory is new for every start (prepare_attempt_dir): O_EXCL, as
	 * nothing may be there to truncate.
	 */
	snprintf(rel, sizeof(rel), "%u/%s", wk->local_rank, name);
	fd = openat(sv->dirs.attemptfd, rel, O_WRONLY | O_CREAT | O_EXCL |
	    O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd == -1)
		warn_sys("unable to open %s/%s", sv->dirs.attempt_dir, rel);
	return fd;
}

/*
 * Decide where one stream goes; *child gets the fd the worker writes to
 * (-1 on error).
 */
static int
stream_open(struct supervisor *sv, struct worker *wk, struct stream *s,
    int which, int *child)
{
	const struct job_config *cfg = sv->cfg;
	int redir = std_for_rank(cfg->redirects, wk->local_rank);
	int tee = std_for_rank(cfg->tee, wk->local_rank);
	bool shown = rank_in_filter(cfg->local_ranks_filter, wk->local_rank);
	int p[2];

	memset(s, 0, sizeof(*s));
	s->w.fd = s->file = -1;
	s->sv = sv;
	s->wk = wk;
	s->console = -1;
	*child = -1;
	if (((redir | tee) & which) != 0) {
		if ((s->file = open_log(sv, wk, which == STD_OUT ?
		    "stdout.log" : "stderr.log")) == -1)
			return -1;
		if ((tee & which) == 0 || !shown) {
			*child = s->file;	/* closed after the fork */
			s->file = -1;
			return 0;
		}
		s->prefixed = true;
	} else if (!shown) {
		*child = open("/dev/null", O_WRONLY | O_CLOEXEC);
		return *child == -1 ? -1 : 0;
	}
	s->console = which == STD_OUT ? STDOUT_FILENO : STDERR_FILENO;
	if (pipe2(p, O_CLOEXEC) == -1) {
		warn_sys("unable to create a pipe");
		return -1;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	s->w.fd = p[0];
	s->w.fn = stream_readable;
	s->w.ctx = s;
	*child = p[1];
	return 0;
}

int
output_open(struct supervisor *sv, struct worker *wk, int fds[2])
{
	char lr[16], rank[16];
	struct subst_var vars[] = {
		{ "role_name", sv->cfg->role },
		{ "local_rank", lr },
		{ "rank", rank },
	};

	fds[0] = fds[1] = -1;
	snprintf(lr, sizeof(lr), "%u", wk->local_rank);
	snprintf(rank, sizeof(rank), "%u",
	    sv->rdzv.round.ranks.base_rank + wk->local_rank);
	/* Built once per attempt, and only where a stream is tee'd. */
	free(wk->prefix);
	wk->prefix = NULL;
	wk->prefix_len = 0;
	if (std_for_rank(sv->cfg->tee, wk->local_rank) != 0) {
		wk->prefix = subst_dup(sv->cfg->log_line_prefix, vars, 3);
		if (wk->prefix == NULL) {
			warn_sys("unable to build the line prefix");
			return -1;
		}
		wk->prefix_len = strlen(wk->prefix);
	}
	if (stream_open(sv, wk, &wk->out, STD_OUT, &fds[0]) == -1 ||
	    stream_open(sv, wk, &wk->err, STD_ERR, &fds[1]) == -1) {
		int e = errno;	/* the worker's failure names it */

		if (fds[0] != -1)
			close(fds[0]);
		if (fds[1] != -1)
			close(fds[1]);
		output_close(sv, wk);
		errno = e;
		return -1;
	}
	return 0;
}

void
output_started(struct supervisor *sv, struct worker *wk)
{
	struct stream *ss[2] = { &wk->out, &wk->err };
	int i;

	for (i = 0; i < 2; i++)
		if (ss[i]->w.fd != -1 &&
		    loop_add(&sv->loop, &ss[i]->w, EPOLLIN) == -1)
			warn_sys("unable to watch the output of worker %u",
			    wk->local_rank);
}

/*
 * The attempt is over: take what is left in the pipes, lose nothing (a
 * pipe holds at most 1 MiB unless root raised fs.pipe-max-size).
 */
void
output_close(struct supervisor *sv, struct worker *wk)
{
	struct stream *ss[2] = { &wk->out, &wk->err };
	int i;

	for (i = 0; i < 2; i++) {
		if (ss[i]->w.fd != -1)
			(void)stream_drain(ss[i], 16);
		stream_close(sv, ss[i]);
	}
}
