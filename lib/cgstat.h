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

/*
 * What cgstat_read opens: a reader that needs CPU time alone (a worker's
 * exit, with no memory controller) opens one file, not five.
 */
#define CGSTAT_CPU	0x1	/* cpu.stat */
#define CGSTAT_MEMORY	0x2	/* memory.current, memory.peak, memory.events */
#define CGSTAT_EVENTS	0x4	/* cgroup.events */
#define CGSTAT_ALL	(CGSTAT_CPU | CGSTAT_MEMORY | CGSTAT_EVENTS)

/*
 * The fields of the directory dirfd that what selects; those not
 * selected, and those of missing files, are -1.
 */
void	cgstat_read(int dirfd, struct cgstat *st, unsigned what);
/* Every field by path; -1 if the directory cannot be opened. */
int	cgstat_read_path(const char *path, struct cgstat *st);
/*
 * The value of "key N" in a flat keyed file (cpu.stat, memory.events,
 * cgroup.events), or -1.
 */
long long cgstat_keyed(const char *text, const char *key);

#endif
