/*
 * The host's name as torch's failure summary prints it (socket.getfqdn()):
 * a reverse lookup, which can wait on DNS for many seconds.  A child makes
 * it and the answer arrives on a pipe the loop watches, as OpenBSD's ntpd
 * resolves; until it has, and if it never does, the summary names what
 * gethostname() says.
 */
#include <sys/prctl.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "report.h"

static void
hostname_read(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;
	char buf[sizeof(sv->host.name)];
	ssize_t n;

	(void)events;
	/* One short write, then the child exits: one read has it all. */
	if ((n = read(w->fd, buf, sizeof(buf) - 1)) == -1 && errno == EAGAIN)
		return;
	if (n > 0) {
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (buf[0] != '\0')
			strlcpy(sv->host.name, buf, sizeof(sv->host.name));
	}
	loop_del(&sv->loop, w);
	close(w->fd);
	w->fd = -1;
}

void
hostname_start(struct supervisor *sv)
{
	char name[sizeof(sv->host.name)];
	int p[2], fd;
	pid_t pid;

	if (gethostname(sv->host.name, sizeof(sv->host.name)) == -1)
		strlcpy(sv->host.name, "localhost", sizeof(sv->host.name));
	sv->host.name[sizeof(sv->host.name) - 1] = '\0';
	sv->host.w.fd = -1;
	if (pipe2(p, O_CLOEXEC) == -1) {
		warn_sys("unable to create a pipe for the host name");
		return;
	}
	if ((pid = fork()) == -1) {
		warn_sys("unable to fork to look up the host name");
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		/* Nothing of ours but the pipe: no lock outlives us here. */
		if ((fd = fcntl(p[1], F_DUPFD, 3)) == -1 || dup2(fd, 3) == -1)
			_exit(ESV_EXIT_SYSTEM);
		closefrom(4);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		host_fqdn(name, sizeof(name));
		(void)!write(3, name, strlen(name));
		_exit(ESV_EXIT_OK);
	}
	close(p[1]);
	sv->host.pid = pid;
	sv->host.w = (struct watch){ .fd = p[0], .fn = hostname_read, .ctx = sv };
	if (loop_add(&sv->loop, &sv->host.w, EPOLLIN) == -1) {
		warn_sys("unable to watch the host name's pipe");
		close(p[0]);
		sv->host.w.fd = -1;
	}
}
