/*
 * floor N worker [args...]
 *
 * The least a supervisor can do to start N workers: fork and exec them
 * in a loop, each with RANK, LOCAL_RANK and LOCAL_WORLD_SIZE set, then
 * wait for them.  No state files, no process groups, no pipes, no
 * restarts.  The benchmark compares esv-supervise's launch time with this
 * one's.
 *
 * It does act on a failure the least a supervisor can: the first worker
 * that exits non-zero makes it send SIGTERM to the others, which gives the
 * benchmark the kernel's own exit-to-signal latency as a bar.
 *
 * Exits 0 when every worker exited 0, 1 otherwise.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void __attribute__((noreturn))
run_worker(unsigned i, char *argv[])
{
	char num[16];

	snprintf(num, sizeof(num), "%u", i);
	setenv("RANK", num, 1);
	setenv("LOCAL_RANK", num, 1);
	execvp(argv[0], argv);
	_exit(127);
}

static void
stop_others(const pid_t *pids, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
}

static void
forget(pid_t *pids, unsigned n, pid_t pid)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			pids[i] = 0;
}

int
main(int argc, char *argv[])
{
	unsigned long n;
	unsigned i, started = 0, alive;
	pid_t *pids, pid;
	char *end;
	int st, failed = 0;

	if (argc < 3 || (n = strtoul(argv[1], &end, 10)) == 0 || *end != '\0' ||
	    n > 65536) {
		fprintf(stderr, "usage: floor N worker [args...]\n");
		return 100;
	}
	if ((pids = calloc(n, sizeof(*pids))) == NULL) {
		perror("floor");
		return 111;
	}
	setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
	setenv("LOCAL_WORLD_SIZE", argv[1], 1);
	for (i = 0; i < n; i++) {
		if ((pid = fork()) == -1) {
			perror("floor: fork");
			failed = 1;
			break;
		}
		if (pid == 0)
			run_worker(i, argv + 2);
		pids[started++] = pid;
	}
	for (alive = started; alive > 0; alive--) {
		while ((pid = wait(&st)) == -1 && errno == EINTR)
			;
		if (pid == -1)
			break;
		forget(pids, started, pid);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		if (!failed)
			stop_others(pids, started);
		failed = 1;
	}
	free(pids);
	return failed;
}
