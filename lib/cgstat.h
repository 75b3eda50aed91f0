/*
 * What the kernel counts for a cgroup v2 directory: CPU time
 * (cpu.stat), memory (memory.current, memory.peak, memory.events'
 * oom_kill, where the memory controller is enabled) and whether anything
 * still runs in it (cgroup.events).  esv-supervise reads it at a worker's
 * exit; esv-ctl and esv-healthd read a running worker's live, from the
 * cgroup path its workers/N/state names.
 */
#ifndef ESV_CGSTAT_H
#define ESV_CGSTAT_H

struct cgstat {
	long long	cpu_usec;	/* -1: unknown */
	long long	memory_current;
	long long	memory_peak;
	long long	oom_kill;	/* processes the OOM killer took */
	int		populated;	/* 1, 0, -1 unknown */
	int		frozen;
};

/* Every field of the directory dirfd; the files missing stay -1. */
void	cgstat_read(int dirfd, struct cgstat *st);
/* The same by path; -1 if the directory cannot be opened. */
int	cgstat_read_path(const char *path, struct cgstat *st);
/*
 * The value of "key N" in a flat keyed file (cpu.stat, memory.events,
 * cgroup.events), or -1.
 */
long long cgstat_keyed(const char *text, const char *key);

#endif
