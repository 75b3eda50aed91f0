/*
 * The guardian: a tiny child that outlives a supervisor killed with
 * SIGKILL and kills the worker process groups it was told about.  A
 * parent-death signal would reach the workers but not their children;
 * killpg on the recorded groups does.
 *
 * Descendants that left those groups are found by the lock file they
 * inherited (holders.c).
 *
 * Protocol on its pipe: "+<pgid>\n" records a group, "-<pgid>\n" forgets
 * it.  EOF means the supervisor is gone: SIGKILL every recorded group.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "supervise.h"

#define GUARDIAN_MAX	ESV_MAX_NPROC

static void __attribute__((noreturn))
guardian_main(int rfd, dev_t dev, ino_t ino)
{
	static pid_t groups[GUARDIAN_MAX];
	char buf[4096], line[32];
	size_t ll = 0, n = 0, i;
	sigset_t none;
	ssize_t r, k;

	/* Terminal signals aimed at the job must not take us down first. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	for (;;) {
		r = read(rfd, buf, sizeof(buf));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (k = 0; k < r; k++) {
			if (buf[k] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[k];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			pid_t pg = (pid_t)strtol(line + 1, NULL, 10);
			if (pg <= 1)
				continue;
			if (line[0] == '+' && n < GUARDIAN_MAX)
				groups[n++] = pg;
			else if (line[0] == '-')
				for (i = 0; i < n; i++)
					if (groups[i] == pg) {
						groups[i] = groups[--n];
						break;
					}
		}
	}
	for (i = 0; i < n; i++)
		killpg(groups[i], SIGKILL);
	/*
	 * Descendants that left the groups still hold the lock file; so does
	 * a worker spawned just before the supervisor died, unrecorded.
	 */
	kill_lock_holders(dev, ino, SIGKILL);
	_exit(0);
}

void
guardian_start(struct supervisor *sv)
{
	int p[2], dropped[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) == -1 || pipe2(dropped, O_CLOEXEC) == -1)
		die(111, "unable to create the guardian's pipe");
	if ((pid = fork()) == -1)
		die(111, "unable to fork the guardian");
	if (pid == 0) {
		/* Nothing of the supervisor's but the pipe: not the locks. */
		if (dup2(p[0], 3) == -1)
			_exit(111);
		closefrom(4);
		guardian_main(3, sv->lock_dev, sv->lock_ino);
	}
	/*
	 * Until its closefrom, the child shares group.lock's open file, and
	 * so its lock: a group ending meanwhile would find the guardian
	 * holding it and kill it.  Wait for the write end to close there.
	 */
	close(dropped[1]);
	while (read(dropped[0], &c, 1) == -1 && errno == EINTR)
		;
	close(dropped[0]);
	close(p[0]);
	if (sv->guardianfd > 0)
		close(sv->guardianfd);
	sv->guardianfd = p[1];
	sv->guardian_pid = pid;
}

/*
 * Messages are batched and written once per start or stop of the group:
 * a write per worker would wake the guardian hundreds of times while the
 * supervisor is busy spawning.  A worker not yet announced is still found
 * by the lock it holds.
 */
static char	pending[4096];
static size_t	npending;

void
guardian_flush(struct supervisor *sv)
{
	if (npending > 0 && write(sv->guardianfd, pending, npending) !=
	    (ssize_t)npending)
		warn_sys("unable to write to the guardian");
	npending = 0;
}

static void
guardian_send(struct supervisor *sv, char op, pid_t pgid)
{
	char line[32];
	int n;

	n = snprintf(line, sizeof(line), "%c%d\n", op, (int)pgid);
	if (npending + n > sizeof(pending))
		guardian_flush(sv);
	memcpy(pending + npending, line, n);
	npending += n;
}

void
guardian_add(struct supervisor *sv, pid_t pgid)
{
	guardian_send(sv, '+', pgid);
}

void
guardian_drop(struct supervisor *sv, pid_t pgid)
{
	guardian_send(sv, '-', pgid);
}

/* Someone killed the guardian: start another and tell it everything. */
void
guardian_died(struct supervisor *sv)
{
	unsigned i;

	warn_msg("the guardian (pid %d) died: starting another",
	    (int)sv->guardian_pid);
	guardian_start(sv);
	npending = 0;	/* the dead one's news: the list below replaces it */
	for (i = 0; i < sv->nworkers; i++)
		if (sv->workers[i].pgid > 1)
			guardian_add(sv, sv->workers[i].pgid);
	guardian_flush(sv);
}
