/*
 * Worker failures: torch's error file (written by @record), the
 * ProcessFailure fields derived from it, and the failure summary torchrun
 * prints when the restart budget is spent, as text and as JSON.
 */
#ifndef ESV_FAILURE_H
#define ESV_FAILURE_H

#include <stdio.h>
#include <sys/types.h>
#include <time.h>

struct worker_failure {
	unsigned	 local_rank;
	unsigned	 rank;		/* global rank: the summary's key */
	pid_t		 pid;
	int		 exitcode;	/* negative signal number if killed */
	char		*error_file;	/* path if the file exists, else NULL */
	char		*error_json;	/* its raw text, else NULL */
	char		*message;	/* as torch derives it */
	long long	 timestamp;	/* from the file, else when noticed */
};

/*
 * Fill f from what waitpid said and from the error file at path (may not
 * exist).  now is the wall-clock time the exit was noticed.
 * Returns 0, or -1 on allocation failure.  A malformed file is not an
 * error: its text is kept and the message says why it could not be read.
 */
int	failure_init(struct worker_failure *f, unsigned local_rank,
	    unsigned rank, pid_t pid, int exitcode, const char *error_path,
	    time_t now);
/*
 * The same with the error file at dirfd/name, opened with flags added
 * (O_NOFOLLOW); error_path is how it is shown.
 */
int	failure_init_at(struct worker_failure *f, unsigned local_rank,
	    unsigned rank, pid_t pid, int exitcode, int dirfd, const char *name,
	    int flags, const char *error_path, time_t now);
void	failure_free(struct worker_failure *f);

/*
 * The worker's cgroup says the OOM killer took oom_kill processes of it
 * (memory.events) and memory_peak bytes was its high mark (-1 unknown):
 * if it died by SIGKILL, its message says so instead of torch's bare
 * "Signal 9".  Returns 1 if the message changed, 0 if not, -1 on
 * allocation failure.
 */
int	failure_note_oom(struct worker_failure *f, long long oom_kill,
	    long long memory_peak);

/* Index of the root cause: the smallest timestamp, first on ties. */
size_t	failure_root_cause(const struct worker_failure *fs, size_t n);

/*
 * Write torchrun's summary block: "<name> FAILED", other failures, root
 * cause, in torch's layout, border at most 60 columns.
 */
void	failure_summary_text(FILE *fp, const char *name, const char *host,
	    const struct worker_failure *fs, size_t n);

/* The same as a JSON document (caller frees); NULL on allocation failure. */
char	*failure_summary_json(const char *name, const char *host,
	    const struct worker_failure *fs, size_t n);

/*
 * torch's @record on the launcher: copy the root cause's error file to
 * dest with message.errorCode = exitcode; dest is replaced atomically.
 * Returns 0, 1 if the root cause has no error file (nothing written),
 * -1 on error with errno set.  dest is made 0600.
 */
int	failure_copy_root_cause(const char *dest,
	    const struct worker_failure *root);

/*
 * socket.getfqdn(): the canonical name of this host, into buf.  Blocks
 * on DNS: esv-supervise calls it only in a child (supervisor/report/hostname.c).
 */
void	host_fqdn(char *buf, size_t len);

#endif
