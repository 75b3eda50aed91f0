/*
 * Readiness for init systems (esv-supervise(8), READINESS):
 * systemd's protocol on $NOTIFY_SOCKET (READY=1, STATUS=, RELOADING=1,
 * STOPPING=1, and WATCHDOG=1 at half of $WATCHDOG_USEC), and s6's
 * notification-fd (a newline, then the fd is closed).  Ready means: the
 * first group runs after its rendezvous.  No libsystemd: a datagram per
 * message, sent without blocking; a lost one is said once and not retried
 * (systemd's own sd_notify does not retry either).
 *
 * The variables are removed from the environment at once, so that no
 * worker or helper notifies on the supervisor's behalf (sd_notify's
 * unset_environment).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "msg.h"
#include "report.h"

/* Only this file sees it; main.c holds the pointer notify_claim_fd gives. */
struct readiness {
	int			 fd;		/* datagram socket, or -1 */
	struct sockaddr_un	 addr;
	socklen_t		 addrlen;
	char			 name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	bool			 failed;
	long long		 watchdog_ms;	/* 0: no WATCHDOG=1 */
	struct watch		 wdw;
	int			 s6_fd;		/* -1 once written */
	bool			 ready;
	char			 status[256];
};

static struct readiness readiness;

static void
send_text(struct readiness *n, const char *text)
{
	ssize_t sent;

	if (n->fd == -1)
		return;
	sent = sendto(n->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL,
	    (struct sockaddr *)&n->addr, n->addrlen);
	if (sent == -1 && !n->failed) {
		warn_sys("unable to notify %s (said once)", n->name);
		n->failed = true;
	} else if (sent != -1)
		n->failed = false;
}

static void
on_watchdog(struct watch *w, uint32_t events)
{
	struct readiness *n = w->ctx;

	(void)events;
	timer_ack(w->fd);
	/* This handler running is the proof that the loop is alive. */
	send_text(n, "WATCHDOG=1");
	timer_arm_ms(w->fd, n->watchdog_ms);
}

static int
notify_address(struct readiness *n, const char *path)
{
	struct sockaddr_un *sun = &n->addr;
	size_t len = strlen(path);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(sun->sun_path))
		return -1;
	memcpy(sun->sun_path, path, len);
	if (path[0] == '@')
		sun->sun_path[0] = '\0';	/* Linux's abstract namespace */
	n->addrlen = offsetof(struct sockaddr_un, sun_path) + len +
	    (path[0] == '/');
	return 0;
}

void
notify_setup(struct readiness *n, struct loop *loop)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	const char *usec = getenv("WATCHDOG_USEC");
	const char *wpid = getenv("WATCHDOG_PID");
	unsigned long long us = 0;
	char *end;

	n->fd = -1;
	n->wdw.fd = -1;
	if (sock != NULL && sock[0] != '\0') {
		strlcpy(n->name, sock, sizeof(n->name));
		if (notify_address(n, sock) == -1)
			warn_msg("NOTIFY_SOCKET=%s: not a socket path (/...) "
			    "or abstract name (@...): no readiness", sock);
		else if ((n->fd = socket(AF_UNIX, SOCK_DGRAM |
		    SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) == -1)
			warn_sys("NOTIFY_SOCKET: unable to create a socket");
	}
	if (usec != NULL && sock != NULL) {
		errno = 0;
		us = strtoull(usec, &end, 10);
		if (errno != 0 || end == usec || *end != '\0' || us == 0)
			warn_msg("WATCHDOG_USEC=%s: not a number of "
			    "microseconds: no watchdog pings", usec);
		else if (wpid != NULL && strtol(wpid, NULL, 10) != getpid())
			us = 0;		/* meant for another process */
		else {
			n->watchdog_ms = (long long)(us / 2000);
			if (n->watchdog_ms < 1)
				n->watchdog_ms = 1;
		}
	}
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (n->fd != -1 && n->watchdog_ms > 0) {
		n->wdw = (struct watch){ .fn = on_watchdog, .ctx = n };
		if ((n->wdw.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
		    loop_add(loop, &n->wdw, EPOLLIN) == -1)
			die(ESV_EXIT_SYSTEM, "unable to create a timer");
		timer_arm_ms(n->wdw.fd, n->watchdog_ms);
	}
}

/*
 * s6: the fd must be open, and is ours alone (close-on-exec).  Checked
 * before the supervisor opens anything, which could take its number.
 */
struct readiness *
notify_claim_fd(const struct job_config *cfg)
{
	struct readiness *n = &readiness;
	int fd = (int)cfg->notification_fd;

	n->s6_fd = -1;
	if (fd == 0)
		return n;
	if (fcntl(fd, F_GETFD) == -1)
		diex(ESV_EXIT_USAGE, "--notification-fd %d: not an open file "
		    "descriptor", fd);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	n->s6_fd = fd;
	return n;
}

/* The group runs after its rendezvous: ready, once. */
void
notify_ready(struct supervisor *sv)
{
	char text[512];

	notify_status(sv);
	if (sv->notify->ready)
		return;
	sv->notify->ready = true;
	snprintf(text, sizeof(text), "READY=1\nSTATUS=%s", sv->notify->status);
	send_text(sv->notify, text);
	if (sv->notify->s6_fd != -1) {
		if (write(sv->notify->s6_fd, "\n", 1) != 1)
			warn_sys("unable to write to the notification fd %d",
			    sv->notify->s6_fd);
		close(sv->notify->s6_fd);
		sv->notify->s6_fd = -1;
	}
}

/* STATUS=: one line saying what the group does, sent when it changes. */
void
notify_status(struct supervisor *sv)
{
	char line[sizeof(sv->notify->status)], text[sizeof(line) + 8];

	if (sv->notify->fd == -1)
		return;
	if (sv->grp.state == G_RUNNING)
		snprintf(line, sizeof(line), "running: %u workers, attempt %u, "
		    "restart %u/%u", sv->grp.alive, sv->counts.attempt,
		    sv->counts.restart_count, sv->cfg->max_restarts);
	else
		snprintf(line, sizeof(line), "%s: attempt %u, restart %u/%u",
		    group_state_name(sv->grp.state), sv->counts.attempt,
		    sv->counts.restart_count, sv->cfg->max_restarts);
	if (strcmp(line, sv->notify->status) == 0)
		return;
	strlcpy(sv->notify->status, line, sizeof(sv->notify->status));
	snprintf(text, sizeof(text), "STATUS=%s", line);
	send_text(sv->notify, text);
}

/* systemd's Type=notify-reload wants the time with RELOADING=1. */
void
notify_reloading(struct readiness *n, bool done)
{
	struct timespec ts;
	char text[128];

	if (!done) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(text, sizeof(text), "RELOADING=1\nMONOTONIC_USEC=%llu",
		    (unsigned long long)ts.tv_sec * 1000000ULL +
		    (unsigned long long)ts.tv_nsec / 1000);
		send_text(n, text);
	} else if (n->ready)
		send_text(n, "READY=1");
}

void
notify_stopping(struct readiness *n)
{
	send_text(n, "STOPPING=1");
}
