/*
 * soak_worker: one worker of bench/soak.sh.  Prints "rank R line N" every
 * SOAK_PERIOD_MS (100) ms on stdout, numbered from 1; on SIGTERM it writes
 * how many lines it printed to $SOAK_DIR/count.R and exits 0, so that the
 * soak can count what reached the log files against what was written.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t term;

static void
on_term(int signo)
{
	(void)signo;
	term = 1;
}

int
main(void)
{
	const char *rank = getenv("RANK"), *dir = getenv("SOAK_DIR");
	const char *period = getenv("SOAK_PERIOD_MS");
	struct timespec ts;
	unsigned long n = 0;
	char path[4096];
	long ms;
	FILE *fp;

	if (rank == NULL || dir == NULL)
		return 100;
	ms = period != NULL ? atol(period) : 100;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	signal(SIGTERM, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!term) {
		if (printf("rank %s line %lu\n", rank, n + 1) < 0)
			break;
		n++;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !term)
			;
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000L;
	}
	snprintf(path, sizeof(path), "%s/count.%s", dir, rank);
	if ((fp = fopen(path, "w")) == NULL)
		return 111;
	fprintf(fp, "%lu\n", n);
	return fclose(fp) == 0 ? 0 : 111;
}
