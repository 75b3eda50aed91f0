/*
 * esv-healthd's request handling (healthd/http.c over libmicrohttpd, and
 * the view it answers from): the input is what one client sends on one
 * connection before it half-closes.  The server must answer or hang up,
 * and keep serving: each run ends with a well-formed request that must get
 * its 200.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../../healthd/healthd.h"
#include "fuzz.h"
#include "loop.h"

/*
 * Idle turns of the loop (1 ms each) one connection may take before it
 * counts as a hang, and turns with work to do.
 */
#define TURNS_MAX	2000
#define BUSY_MAX	100000

static struct loop lp;
static struct view v;
static struct http *h;
static struct sockaddr_in addr;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char state[] = "state=running\nsince=1700000000.5\n";
	socklen_t len = sizeof(addr);
	int fd;

	(void)argc;
	(void)argv;
	fuzz_put("supervise/state", (const uint8_t *)state, sizeof(state) - 1);
	if (loop_init(&lp) == -1)
		abort();
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ==
	    -1 || listen(fd, 64) == -1 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) == -1)
		abort();
	view_init(&v, &lp, fuzz_dir(), 60);
	if ((h = http_start(&lp, fd, &v, false)) == NULL)
		abort();
	return 0;
}

/* The client's socket wakes the loop, so no turn sleeps past an answer. */
static void
client_ready(struct watch *w, uint32_t events)
{
	(void)w;
	(void)events;
}

/* Send data, half-close, and read until the server hangs up. */
static size_t
exchange(const uint8_t *data, size_t size, char *out, size_t outlen)
{
	size_t sent = 0, got = 0;
	struct linger lg = { 1, 0 };
	bool shut = false;
	ssize_t n;
	char sink[4096];
	struct watch cw = { .fn = client_ready };
	long long next;
	int fd, turn, busy = 0;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(fd != -1);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == -1)
		CHECK(errno == EINPROGRESS);
	cw.fd = fd;
	CHECK(loop_add(&lp, &cw, EPOLLIN | EPOLLRDHUP) == 0);
	for (turn = 0; turn < TURNS_MAX; turn++) {
		if (sent < size && (n = write(fd, data + sent, size - sent)) > 0)
			sent += n;
		if (sent == size && !shut)
			shut = shutdown(fd, SHUT_WR) == 0;
		while ((n = read(fd, got < outlen ? out + got : sink,
		    got < outlen ? outlen - got : sizeof(sink))) > 0)
			got += got < outlen ? (size_t)n : 0;
		if (n == 0 || (n == -1 && errno != EAGAIN &&
		    errno != ENOTCONN))
			break;
		/*
		 * Turns that find work are cheap; an idle one waits 1 ms, or
		 * less when libmicrohttpd has work due (as esv-healthd's loop
		 * waits until http_run's deadline).
		 */
		next = http_run(h, mono_ms());
		if ((loop_once(&lp, 0) > 0 || next <= mono_ms()) &&
		    ++busy < BUSY_MAX)
			turn--;
		else
			loop_once(&lp, 1);
	}
	/* An answer or a hang-up, never a connection left hanging. */
	CHECK(turn < TURNS_MAX);
	loop_del(&lp, &cw);
	/* No TIME_WAIT left behind: millions of runs share the ports. */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	if (got < outlen)
		out[got] = '\0';
	else
		out[outlen - 1] = '\0';
	return got;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char probe[] = "GET /status HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n";
	char out[256];

	exchange(data, size, out, sizeof(out));
	exchange((const uint8_t *)probe, sizeof(probe) - 1, out, sizeof(out));
	if (strncmp(out, "HTTP/1.1 200 ", 13) != 0)
		fprintf(stderr, "probe got [%s]\n", out);
	CHECK(strncmp(out, "HTTP/1.1 200 ", 13) == 0);
	return 0;
}
