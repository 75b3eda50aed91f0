/*
 * An attempt's start: the run's and the attempt's directories under the
 * log base, and each worker's birth (its argv, its fds, its cgroup, its
 * process group) by a child that only execs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "clone_into.h"
#include "contain.h"
#include "ctldir.h"
#include "ctlschema.h"
#include "group.h"
#include "group_int.h"
#include "guardproto.h"
#include "helpers.h"
#include "msg.h"
#include "pidfd.h"
#include "report.h"
#include "sig.h"
#include "spawning.h"
#include "subst.h"
#include "trust.h"
#include "utf8.h"
#include "workerenv.h"

/*
 * The log base may be shared by many jobs and users (--log-dir): it is
 * trusted if nobody but us or root can write it, or if it has the sticky
 * bit (like /tmp), so that nobody else can rename or remove what we make
 * in it; and so is every directory above it, as the workers are handed
 * paths through it (trust_open_dir).  Below it, everything is reached by
 * directory fd and made with mkdirat, so no name another user placed
 * there is ever followed.
 */
static int make_run_dir(struct supervisor *sv);

void
logs_setup(struct supervisor *sv)
{
	char base[PATH_MAX], why[1024];

	if (sv->cfg->log_dir[0] != '\0')
		strlcpy(base, sv->cfg->log_dir, sizeof(base));
	else
		pathf(base, sizeof(base), "%s/%s", sv->cfg->jobdir,
		    ESV_DEFAULT_LOG_DIR);
	/* log_base: others read these paths, from other directories. */
	sv->dirs.logfd = trust_open_dir(base, TRUST_MKDIR | TRUST_STICKY_OK,
	    0755, sv->dirs.log_base, sizeof(sv->dirs.log_base), why,
	    sizeof(why));
	if (sv->dirs.logfd == -1) {
		int code = errno == EPERM ? ESV_EXIT_USAGE : ESV_EXIT_SYSTEM;
		size_t n = strlen(base);

		/* why names the directory at fault: name the base too. */
		if (strncmp(why, base, n) == 0 && why[n] == ':')
			diex(code, "log directory %s", why);
		diex(code, "log directory %s: %s", base, why);
	}
	/* Now, so that the first line can say where the logs go. */
	(void)make_run_dir(sv);
}

/* torch's mkdtemp(prefix=run_id + "_"): eight random characters. */
static int
make_run_dir(struct supervisor *sv)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
	char rnd[9], name[NAME_MAX + 1];
	struct stat st;
	int tries, i;

	for (tries = 0; tries < 100; tries++) {
		for (i = 0; i < 8; i++)
			rnd[i] = set[arc4random_uniform(sizeof(set) - 1)];
		rnd[8] = '\0';
		if (pathf(name, sizeof(name), "%s_%s", sv->cfg->run_id,
		    rnd) == -1 || pathf(sv->dirs.run_dir,
		    sizeof(sv->dirs.run_dir), "%s/%s", sv->dirs.log_base,
		    name) == -1)
			break;
		if (mkdirat(sv->dirs.logfd, name, 0700) == 0) {
			sv->dirs.runfd = openat(sv->dirs.logfd, name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sv->dirs.runfd == -1)
				break;
			/* Nobody can swap it in a trusted base: make sure. */
			if (fstat(sv->dirs.runfd, &st) == 0 &&
			    st.st_uid == geteuid())
				return 0;
			close(sv->dirs.runfd);
			sv->dirs.runfd = -1;
			errno = EPERM;
			break;
		}
		if (errno != EEXIST)
			break;
	}
	warn_sys("unable to create a run directory in %s", sv->dirs.log_base);
	sv->dirs.run_dir[0] = '\0';
	return -1;
}

/*
 * Every start of the group gets a directory of its own, and no log is
 * ever removed or overwritten: the first start of a restart count has
 * torch's name, attempt_<restart_count>; a later start that keeps the
 * count (a manual or membership restart) gets attempt_<restart_count>.<n>,
 * n = 1, 2, ... (esv-supervise(8), FILES).  torch reuses and empties the
 * directory instead, losing the earlier run's output.
 */
int
prepare_attempt_dir(struct supervisor *sv)
{
	char name[48], sub[16];
	unsigned i, n;

	if (sv->dirs.runfd == -1 && make_run_dir(sv) == -1)
		return -1;
	if (sv->dirs.attemptfd != -1)
		close(sv->dirs.attemptfd);
	sv->dirs.attemptfd = -1;
	for (n = 0; ; n++) {
		if (n == 0)
			snprintf(name, sizeof(name), "attempt_%u",
			    sv->counts.restart_count);
		else
			snprintf(name, sizeof(name), "attempt_%u.%u",
			    sv->counts.restart_count, n);
		pathf(sv->dirs.attempt_dir, sizeof(sv->dirs.attempt_dir),
		    "%s/%s", sv->dirs.run_dir, name);
		if (mkdirat(sv->dirs.runfd, name, 0755) == 0)
			break;
		if (errno != EEXIST || n == UINT_MAX - 1) {
			warn_sys("unable to create %s", sv->dirs.attempt_dir);
			return -1;
		}
	}
	sv->dirs.attemptfd = openat(sv->dirs.runfd, name, O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sv->dirs.attemptfd == -1) {
		warn_sys("unable to open %s", sv->dirs.attempt_dir);
		return -1;
	}
	for (i = 0; i < sv->grp.nworkers; i++) {
		snprintf(sub, sizeof(sub), "%u", i);
		if (mkdirat(sv->dirs.attemptfd, sub, 0755) == -1) {
			warn_sys("unable to create %s/%s",
			    sv->dirs.attempt_dir, sub);
			return -1;
		}
	}
	return 0;
}

/* argv of a worker: [python -u [-m]] entrypoint args, ${local_rank} done. */
static char **
worker_argv(struct supervisor *sv, unsigned local_rank)
{
	const struct job_config *cfg = sv->cfg;
	char lr[16];
	struct subst_var vars[] = { { "local_rank", lr } };
	char **av;
	int i, n = 0;

	snprintf(lr, sizeof(lr), "%u", local_rank);
	if ((av = calloc(cfg->argc + 4, sizeof(*av))) == NULL)
		return NULL;
	if (!cfg->no_python) {
		av[n++] = strdup(sv->env.python);
		av[n++] = strdup("-u");
		if (cfg->module)
			av[n++] = strdup("-m");
	}
	for (i = 0; i < cfg->argc; i++)
		av[n++] = subst_dup(cfg->argv[i], vars, 1);
	for (i = 0; i < n; i++)
		if (av[i] == NULL) {
			while (n > 0)
				free(av[--n]);
			free(av);
			return NULL;
		}
	return av;
}

/*
 * The signals a worker must get back at their default: those we found
 * ignored (a supervisor started in the background of a script has SIGINT
 * ignored; workers must not inherit that).  Looked up once, so each spawn
 * makes a few sigaction calls instead of one per signal.
 */
static const sigset_t *
ignored_signals(void)
{
	static sigset_t ignored;
	static bool ready;
	struct sigaction sa;
	int sig;

	if (ready)
		return &ignored;
	sigemptyset(&ignored);
	for (sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigaddset(&ignored, sig);
	ready = true;
	return &ignored;
}

/* What the child half of spawn_worker needs, and what it says back. */
struct spawn_args {
	char		**av, **envp;
	int		  out, err;	/* its stdout and stderr, or -1 */
	int		  lockfd, guardianfd;
	int		  cgprocs;	/* its cgroup's cgroup.procs, or -1 */
	const sigset_t	 *sigdef;
	const struct rlimit *nofile;
	const char *volatile step;	/* what failed ... */
	volatile int	  error;	/* ... with this errno, or 0: it exec'd */
};

/*
 * The worker, between clone and exec, on its own stack in our memory
 * while we wait (as posix_spawn's child).  It leads a new session (so
 * stops reach its children too) and announces its group to the guardian
 * itself: a supervisor killed at any moment of a spawn leaves no worker
 * the guardian does not know.  Only system calls here: no sanitizer
 * bookkeeping on a stack the sanitizer does not know.
 */
__attribute__((no_sanitize("address", "undefined")))
static int
worker_child(void *arg)
{
	struct spawn_args *a = arg;
	char line[GUARD_LINE_MAX];
	size_t n;
	sigset_t none;
	int sig;

	/* First: nothing of the job may run outside its cgroup. */
	a->step = "cgroup";
	if (a->cgprocs != -1 && write(a->cgprocs, "0", 1) != 1)
		goto fail;
	a->step = "setsid";
	if (setsid() == -1)
		goto fail;
	n = guard_line(line, '+', getpid());
	/* One line, so one atomic write; a dead guardian is replaced. */
	(void)!write(a->guardianfd, line, n);
	a->step = "dup2";
	if ((a->out != -1 && dup2(a->out, STDOUT_FILENO) == -1) ||
	    (a->err != -1 && dup2(a->err, STDERR_FILENO) == -1))
		goto fail;
	/* Inherited on purpose: see holders.c. */
	a->step = "fcntl";
	if (fcntl(a->lockfd, F_SETFD, 0) == -1)
		goto fail;
	a->step = "setrlimit";
	if (a->nofile->rlim_max != 0 && setrlimit(RLIMIT_NOFILE,
	    a->nofile) == -1)
		goto fail;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(a->sigdef, sig) == 1)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	a->step = NULL;
	execvpe(a->av[0], a->av, a->envp);
fail:
	a->error = errno;
	_exit(WORKER_EXEC_FAILED);
}

static void
spawn_failed(struct supervisor *sv, struct worker *wk, const char *step,
    int e)
{
	/* As a shell would: 127, and the reason in the summary. */
	wk->pid = wk->last_pid = wk->pgid = 0;
	wk->state = W_FAILED;
	wk->exitcode = 127;
	wk->exec_errno = e;
	wk->spawn_step = step;
	wk->exit_pending = true;
	output_close(sv, wk);
}

/*
 * clone(CLONE_VM | CLONE_VFORK) and exec, as glibc's posix_spawn does: no
 * page tables to copy, and a failed exec is an error returned here instead
 * of a child that must report it.  Unlike posix_spawn, the child can tell
 * the guardian about itself before it execs.  With cgroups, the same clone
 * through clone3 makes it in its cgroup, where the kernel allows.
 */
int
spawn_worker(struct supervisor *sv, struct worker *wk, char **envp)
{
	static char *stack;
	static const char birth[] = "its cgroup (died at birth)";
	const size_t stack_size = 256 * 1024;
	struct spawn_args a = { .envp = envp, .lockfd = sv->locks.grouplockfd,
	    .guardianfd = sv->guard.fd, .sigdef = ignored_signals(),
	    .nofile = &sv->env.nofile };
	const char *step = "clone";
	int fds[2], i, e;
	pid_t pid;

	wk->started = wk->exited = wall_now();
	wk->exitcode = 0;
	wk->exec_errno = 0;
	wk->spawn_step = NULL;
	wk->cg = (struct cgstat){ -1, -1, -1, -1, -1, -1 };
	if (cgroup_worker_prepare(sv, wk) == -1) {
		/* Better no worker than one that could escape. */
		spawn_failed(sv, wk, "its cgroup", errno);
		return -1;
	}
	a.cgprocs = wk->cgprocs;
	if (output_open(sv, wk, fds) == -1) {
		e = errno;
		spawn_failed(sv, wk, "its output", e);
		return -1;
	}
	if ((stack == NULL && (stack = malloc(stack_size)) == NULL) ||
	    (a.av = worker_argv(sv, wk->local_rank)) == NULL) {
		step = "memory";
		e = ENOMEM;
		pid = -1;
		goto out;
	}
	a.out = fds[0];
	a.err = fds[1];
	pid = -1;
	e = 0;
	if (sv->cg.on && sv->cg.clone_into) {
		/* Born in its cgroup: no move, no window (clone_into.c). */
		a.step = birth;
		pid = clone_into_cgroup(worker_child, &a, stack, stack_size,
		    wk->cgfd);
		e = errno;
		step = "its cgroup";
		/*
		 * Not this kernel, or not under this seccomp filter; or the
		 * child died before its first step (it returns only once the
		 * child has exec'd or died): a kernel that killed it at birth.
		 * Its zombie is reaped as a stranger's.  The worker then moves
		 * itself (a->cgprocs), as it does where it is not born in it.
		 */
		if ((pid == -1 && (e == ENOSYS || e == EINVAL || e == E2BIG ||
		    e == EPERM)) || (pid > 0 && a.step == birth)) {
			if (cgroup_no_clone_into(sv, wk, pid == -1 ?
			    strerror(e) : "the child was killed at birth") ==
			    -1) {
				e = errno;
				pid = -1;
				goto out;
			}
			a.cgprocs = wk->cgprocs;
			a.step = NULL;
			pid = -1;
		}
	}
	if (pid == -1 && (!sv->cg.on || !sv->cg.clone_into)) {
		step = "clone";
		pid = clone(worker_child, stack + stack_size, CLONE_VM |
		    CLONE_VFORK | SIGCHLD, &a);
		e = errno;
	}
out:
	for (i = 0; a.av != NULL && a.av[i] != NULL; i++)
		free(a.av[i]);
	free(a.av);
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
	if (pid == -1) {
		spawn_failed(sv, wk, step, e);
		return -1;
	}
	if (a.error != 0) {
		/* It announced its group: take it back, before its pid is free. */
		guardian_drop(&sv->guard, pid);
		guardian_flush(&sv->guard);
		spawn_failed(sv, wk, a.step, a.error);
		return -1;
	}
	wk->pid = wk->last_pid = wk->pgid = pid;
	worker_pidfd(wk, pid);
	wk->state = W_RUNNING;
	wk->exited = 0;
	sv->grp.alive++;
	output_started(sv, wk);
	return 0;
}

/*
 * The worker's pidfd, taken while it is our unreaped child: it is that
 * process, whatever happens to its pid later.
 */
void
worker_pidfd(struct worker *wk, pid_t pid)
{
	if (wk->pidfd != -1)
		close(wk->pidfd);
	if ((wk->pidfd = esv_pidfd_open(pid)) == -1)
		warn_sys("worker %u (pid %d): no pidfd: signals go by pid "
		    "while it is not reaped, and its timers are refused",
		    wk->local_rank, (int)pid);
}

void
worker_pidfd_close(struct worker *wk)
{
	if (wk->pidfd != -1)
		close(wk->pidfd);
	wk->pidfd = -1;
}
