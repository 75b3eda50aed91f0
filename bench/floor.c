/*
 * floor [--spawn] [--cgroup DIR] [--restart] N worker [args...]
 *
 * The least a supervisor can do to start N workers: start them in a loop,
 * each with RANK, LOCAL_RANK and LOCAL_WORLD_SIZE set, then wait for them.
 * No state files, no process groups, no pipes, no restarts.  The benchmark
 * compares esv-supervise's launch time with this one's.
 *
 * By default each worker is started with fork and exec, the issue's
 * "bare C loop that forks and execs".  With --spawn it is started with
 * posix_spawnp instead (glibc: clone(CLONE_VM|CLONE_VFORK) and exec, no
 * page tables copied), which is how esv-supervise starts workers; that is
 * the lower floor a spawning supervisor should be held to.
 *
 * With --cgroup DIR (implies --spawn), each worker is born in a cgroup
 * DIR/<i> of its own, made at its first start, kept for the restart and
 * removed at the end,
 * exactly esv's way where the memory controller is not enabled:
 * clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP) and exec, with
 * esv-supervise's own supervisor/spawn/clone_into.c.  DIR must be a directory
 * of a cgroup v2 hierarchy we may write; the difference to --spawn is the
 * least a cgroup per worker costs.
 *
 * It does act on a failure the least a supervisor can: the first worker
 * that exits non-zero makes it send SIGTERM to the others, which gives the
 * benchmark the kernel's own exit-to-signal latency as a bar.
 *
 * With --restart, a group that failed is started once more, whole, with
 * TORCHELASTIC_RESTART_COUNT=1, as soon as its last worker is reaped: the
 * least work a restart is (SIGTERM the others, reap them, spawn all N
 * again), the bar for esv-supervise's restart.
 *
 * Exits 0 when every worker of the last group exited 0, 1 otherwise.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clone_into.h"

extern char **environ;

/* The per-worker part of a posix_spawn environment. */
struct spawnenv {
	char	**envp;
	char	 rank[32];
	char	 local_rank[32];
};

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

static pid_t
fork_worker(unsigned i, char *argv[])
{
	pid_t pid;

	if ((pid = fork()) == -1) {
		perror("floor: fork");
		return -1;
	}
	if (pid == 0)
		run_worker(i, argv);
	return pid;
}

/*
 * One copy of environ with two slots at the end whose strings are
 * rewritten per worker, so a launch costs no allocation.
 */
static int
spawnenv_init(struct spawnenv *se)
{
	size_t n, k;
	char **e;

	for (n = 0; environ[n] != NULL; n++)
		;
	if ((se->envp = calloc(n + 3, sizeof(*se->envp))) == NULL)
		return -1;
	for (e = environ, k = 0; *e != NULL; e++)
		if (strncmp(*e, "RANK=", 5) != 0 &&
		    strncmp(*e, "LOCAL_RANK=", 11) != 0)
			se->envp[k++] = *e;
	se->envp[k++] = se->rank;
	se->envp[k] = se->local_rank;
	return 0;
}

/* Worker i's slots of the shared environment. */
static void
spawnenv_set(struct spawnenv *se, unsigned i)
{
	snprintf(se->rank, sizeof(se->rank), "RANK=%u", i);
	snprintf(se->local_rank, sizeof(se->local_rank), "LOCAL_RANK=%u", i);
}

/*
 * execve has copied the strings by the time posix_spawnp returns (the
 * parent stays suspended until then), so the slots can be reused.
 */
static pid_t
spawn_worker(struct spawnenv *se, unsigned i, char *argv[])
{
	pid_t pid;
	int e;

	spawnenv_set(se, i);
	if ((e = posix_spawnp(&pid, argv[0], NULL, NULL, argv,
	    se->envp)) != 0) {
		fprintf(stderr, "floor: posix_spawnp: %s\n", strerror(e));
		return -1;
	}
	return pid;
}

struct cgchild {
	char	**argv, **envp;
};

static int
cgchild_exec(void *arg)
{
	struct cgchild *c = arg;

	execvpe(c->argv[0], c->argv, c->envp);
	_exit(127);
}

/* DIR/<i>, made at its first start, then a child born in it. */
static pid_t
spawn_worker_cgroup(struct spawnenv *se, const char *dir, unsigned i,
    char *argv[])
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct cgchild c = { argv, se->envp };
	char path[4096];
	pid_t pid;
	int fd;

	spawnenv_set(se, i);
	snprintf(path, sizeof(path), "%s/%u", dir, i);
	if ((mkdir(path, 0755) == -1 && errno != EEXIST) ||
	    (fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if ((pid = clone_into_cgroup(cgchild_exec, &c, stack, sizeof(stack),
	    fd)) == -1)
		perror("floor: clone3");
	close(fd);
	return pid;
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

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: floor [--spawn] [--cgroup DIR] [--restart] N "
	    "worker [args...]\n");
	exit(100);
}

/* Start n workers, wait for them all; 1 if one failed, -1 on error. */
static int
run_group(unsigned long n, int spawn, const char *cgdir, char *argv[],
    pid_t *pids)
{
	struct spawnenv se;
	unsigned i, started = 0, alive;
	int st, failed = 0;
	pid_t pid;

	if (spawn && spawnenv_init(&se) == -1) {
		perror("floor");
		return -1;
	}
	for (i = 0; i < n; i++) {
		pid = cgdir != NULL ? spawn_worker_cgroup(&se, cgdir, i, argv) :
		    spawn ? spawn_worker(&se, i, argv) : fork_worker(i, argv);
		if (pid == -1) {
			failed = 1;
			break;
		}
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
	if (spawn)
		free(se.envp);
	return failed;
}

int
main(int argc, char *argv[])
{
	unsigned long n;
	int spawn = 0, restart = 0, failed;
	const char *cgdir = NULL;
	pid_t *pids;
	char *end;

	for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++)
		if (strcmp(argv[1], "--spawn") == 0)
			spawn = 1;
		else if (strcmp(argv[1], "--restart") == 0)
			restart = 1;
		else if (strcmp(argv[1], "--cgroup") == 0 && argc > 2) {
			cgdir = argv[2];
			spawn = 1;
			argc--, argv++;
		}
		else
			usage();
	if (argc < 3 || (n = strtoul(argv[1], &end, 10)) == 0 ||
	    *end != '\0' || n > 65536)
		usage();
	if ((pids = calloc(n, sizeof(*pids))) == NULL) {
		perror("floor");
		return 111;
	}
	setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
	setenv("LOCAL_WORLD_SIZE", argv[1], 1);
	failed = run_group(n, spawn, cgdir, argv + 2, pids);
	if (failed == 1 && restart) {
		/* spawnenv_init copies environ again: it sees the new count. */
		setenv("TORCHELASTIC_RESTART_COUNT", "1", 1);
		failed = run_group(n, spawn, cgdir, argv + 2, pids);
	}
	/* Every worker is reaped: the next run makes its cgroups again. */
	for (unsigned long i = 0; cgdir != NULL && i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%lu", cgdir, i);
		rmdir(path);
	}
	free(pids);
	return failed == -1 ? 111 : failed;
}
