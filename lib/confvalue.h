/*
 * Values of single settings, whatever their source: booleans, bounded
 * numbers, durations, shell-like argument lists, torch's Std specs and
 * local-rank filters.  Errors go into why (one phrase, no newline).
 */
#ifndef ESV_CONFVALUE_H
#define ESV_CONFVALUE_H

#include <stdbool.h>
#include <stddef.h>

/* true/false, yes/no, 1/0 (any case).  0, or -1 if none of those. */
int	parse_bool(const char *v, bool *out);
/* A number in min..max.  0, or -1 with why set. */
int	parse_uint(const char *v, long long min, long long max, unsigned *out,
	    char *why, size_t whylen);
/* "30", "30s", "500ms", "2m", "1.5s", "1h" to milliseconds; -1 on error. */
long long parse_duration_ms(const char *s);

/*
 * Split like sh(1) without any expansion ('...', "...", backslash), so
 * that ${local_rank} survives; words are appended to *argvp (NULL-ended).
 */
int	split_args(const char *s, char ***argvp, int *argcp, char *why,
	    size_t whylen);

/* Workers a node may run (nproc_per_node), and local ranks. */
#define ESV_MAX_NPROC		4096

/* Online CPUs, and /dev/nvidia[0-9]* devices, capped at ESV_MAX_NPROC. */
unsigned count_cpus(void);
unsigned count_gpus(void);

/*
 * torch's Std bitmask for one local rank, from a --redirects/--tee value
 * ("0".."3" for all ranks, or "0:3,1:1" per rank; missing ranks get 0).
 * Returns -1 when spec is malformed.
 */
int	std_for_rank(const char *spec, unsigned local_rank);
bool	std_spec_valid(const char *spec);

/* A "0,2" filter: -1 when malformed, else whether rank is listed. */
int	filter_scan(const char *filter, unsigned rank);
/* Whether local_rank passes a filter; an empty filter passes all. */
bool	rank_in_filter(const char *filter, unsigned local_rank);

#endif
