/*
 * A TCPStore load generator in torch 1.13's dialect, the same for every
 * server, so that the clients are not what is measured: N client threads,
 * each on its own connection, each doing M operations of one kind back to
 * back, as a torch worker does them (one outstanding request).
 *
 *	store_load PORT CLIENTS OPS get|add|set|wait|fill [VALUE_BYTES]
 *
 * get: GET of a key set beforehand; add: ADD 1 to the client's counter;
 * set: SET of the client's key (no reply in the protocol: a GETNUMKEYS
 * after every 100 keeps the client honest, and its reply closes the
 * timing of those 100).
 * wait: OPS rounds; in each, every client WAITs on the round's key and,
 * once all have sent their WAIT, the main thread SETs it: the latency is
 * from just before that SET to each waiter's wake-up (STOP_WAITING).
 * fill: each client SETs OPS keys of its own, then a GETNUMKEYS: a store
 * of CLIENTS x OPS keys, to measure the server's memory after.
 * Prints one line: ops, seconds, ops/s, and the latency percentiles of
 * the replies (p50, p99, max) in microseconds.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <err.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SET = 0, GET = 2, ADD = 3, WAIT = 5, NUMKEYS = 6 };

static int port, nops, vbytes = 16;
static char kind[8];
static pthread_barrier_t go;
/* wait: all WAITs sent (clients + the setter), and the SET's time. */
static pthread_barrier_t parked, woken;
static volatile double set_at;

struct client {
	pthread_t	 t;
	int		 id;
	double		*lat;	/* us, one per timed reply */
	int		 nlat;
};

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
put(char *buf, size_t *n, const void *p, size_t len)
{
	uint64_t l = len;

	memcpy(buf + *n, &l, 8);
	memcpy(buf + *n + 8, p, len);
	*n += 8 + len;
}

static void
sendall(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t k;

	while (n > 0) {
		if ((k = send(fd, c, n, 0)) <= 0)
			err(1, "send");
		c += k;
		n -= k;
	}
}

static void
recvall(int fd, void *p, size_t n)
{
	char *c = p;
	ssize_t k;

	while (n > 0) {
		if ((k = recv(fd, c, n, 0)) <= 0)
			errx(1, "recv: the server closed");
		c += k;
		n -= k;
	}
}

static int
dial(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001) };
	int fd, on = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		err(1, "connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	return fd;
}

/* One waiter: a WAIT per round, timed from the setter's clock reading. */
static void
run_wait(struct client *cl, int fd)
{
	char key[32], req[64];
	size_t n, klen;
	uint64_t one = 1;
	uint8_t b;
	int i;

	for (i = 0; i < nops; i++) {
		klen = snprintf(key, sizeof(key), "/wait/%d/%d", (int)getpid(), i);
		n = 0;
		req[n++] = WAIT;
		memcpy(req + n, &one, 8);
		n += 8;
		put(req, &n, key, klen);
		sendall(fd, req, n);
		pthread_barrier_wait(&parked);
		recvall(fd, &b, 1);
		cl->lat[cl->nlat++] = now_us() - set_at;
		pthread_barrier_wait(&woken);
	}
}

/* fill: OPS keys of this client's own, then a reply to wait for. */
static void
run_fill(struct client *cl, int fd, const char *val)
{
	char key[32], req[64 + 65536];
	size_t n, klen;
	int64_t r;
	double t0;
	int i;

	t0 = now_us();
	for (i = 0; i < nops; i++) {
		klen = snprintf(key, sizeof(key), "/fill/%d/%d", cl->id, i);
		n = 0;
		req[n++] = SET;
		put(req, &n, key, klen);
		put(req, &n, val, vbytes);
		sendall(fd, req, n);
	}
	req[0] = NUMKEYS;
	sendall(fd, req, 1);
	recvall(fd, &r, 8);
	cl->lat[cl->nlat++] = now_us() - t0;
}

static void *
run(void *arg)
{
	struct client *cl = arg;
	char key[32], req[64 + 65536], *val;
	size_t n, klen;
	uint64_t len;
	int64_t one = 1, r;
	double t0;
	int fd, i;

	fd = dial();
	/* A counter is decimal ASCII: ADD has a key of its own. */
	klen = snprintf(key, sizeof(key), "/%s/%d",
	    strcmp(kind, "add") == 0 ? "ctr" : "load", cl->id);
	if ((val = malloc(vbytes)) == NULL)
		err(1, NULL);
	memset(val, 'v', vbytes);
	/* The key of a get is there before the clock starts. */
	n = 0;
	if (strcmp(kind, "add") != 0) {
		req[n++] = SET;
		put(req, &n, key, klen);
		put(req, &n, val, vbytes);
	}
	req[n++] = NUMKEYS;
	sendall(fd, req, n);
	recvall(fd, &r, 8);
	pthread_barrier_wait(&go);
	if (strcmp(kind, "wait") == 0 || strcmp(kind, "fill") == 0) {
		if (kind[0] == 'w')
			run_wait(cl, fd);
		else
			run_fill(cl, fd, val);
		close(fd);
		free(val);
		return NULL;
	}
	for (i = 0; i < nops; i++) {
		n = 0;
		t0 = now_us();
		if (strcmp(kind, "get") == 0) {
			req[n++] = GET;
			put(req, &n, key, klen);
			sendall(fd, req, n);
			recvall(fd, &len, 8);
			if (len > sizeof(req))
				errx(1, "a value of %llu bytes",
				    (unsigned long long)len);
			recvall(fd, req, len);
		} else if (strcmp(kind, "add") == 0) {
			req[n++] = ADD;
			put(req, &n, key, klen);
			memcpy(req + n, &one, 8);
			n += 8;
			sendall(fd, req, n);
			recvall(fd, &r, 8);
		} else {
			req[n++] = SET;
			put(req, &n, key, klen);
			put(req, &n, val, vbytes);
			if ((i + 1) % 100 == 0)
				req[n++] = NUMKEYS;
			sendall(fd, req, n);
			if ((i + 1) % 100 != 0)
				continue;
			recvall(fd, &r, 8);
		}
		cl->lat[cl->nlat++] = now_us() - t0;
	}
	close(fd);
	free(val);
	return NULL;
}

/*
 * wait: the setter.  The WAITs are sent when the barrier opens, not
 * necessarily parked in the server yet; one that arrives after the SET
 * is answered at once, which the latency still counts from the SET.
 */
static void
set_rounds(void)
{
	char key[32], req[64], val[1] = { 'x' };
	size_t n, klen;
	int fd = dial(), i;

	for (i = 0; i < nops; i++) {
		pthread_barrier_wait(&parked);
		klen = snprintf(key, sizeof(key), "/wait/%d/%d", (int)getpid(), i);
		n = 0;
		req[n++] = SET;
		put(req, &n, key, klen);
		put(req, &n, val, 1);
		set_at = now_us();
		sendall(fd, req, n);
		pthread_barrier_wait(&woken);
	}
	close(fd);
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	struct client *cls;
	double t0, t1, *all;
	int nclients, i, j, total = 0;

	if (argc < 5)
		errx(100, "usage: store_load PORT CLIENTS OPS "
		    "get|add|set|wait|fill [VALUE_BYTES]");
	port = atoi(argv[1]);
	nclients = atoi(argv[2]);
	nops = atoi(argv[3]);
	snprintf(kind, sizeof(kind), "%s", argv[4]);
	if (argc > 5)
		vbytes = atoi(argv[5]);
	if (nclients < 1 || nops < 1 || vbytes < 0 || vbytes > 65536)
		errx(100, "bad arguments");
	cls = calloc(nclients, sizeof(*cls));
	pthread_barrier_init(&go, NULL, nclients + 1);
	pthread_barrier_init(&parked, NULL, nclients + 1);
	pthread_barrier_init(&woken, NULL, nclients + 1);
	for (i = 0; i < nclients; i++) {
		cls[i].id = i;
		if ((cls[i].lat = calloc(nops, sizeof(double))) == NULL)
			err(1, NULL);
		if (pthread_create(&cls[i].t, NULL, run, &cls[i]) != 0)
			errx(1, "pthread_create");
	}
	pthread_barrier_wait(&go);
	t0 = now_us();
	if (strcmp(kind, "wait") == 0)
		set_rounds();
	for (i = 0; i < nclients; i++)
		pthread_join(cls[i].t, NULL);
	t1 = now_us();
	for (i = 0; i < nclients; i++)
		total += cls[i].nlat;
	all = calloc(total > 0 ? total : 1, sizeof(double));
	for (i = 0, j = 0; i < nclients; i++) {
		memcpy(all + j, cls[i].lat, cls[i].nlat * sizeof(double));
		j += cls[i].nlat;
	}
	qsort(all, total, sizeof(double), cmp);
	printf("ops=%d seconds=%.3f ops_per_s=%.0f p50_us=%.1f p99_us=%.1f "
	    "max_us=%.1f\n", nclients * nops, (t1 - t0) / 1e6,
	    nclients * nops / ((t1 - t0) / 1e6), all[total / 2],
	    all[(int)(total * 0.99)], all[total - 1]);
	return 0;
}
