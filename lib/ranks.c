#include <string.h>

#include "ranks.h"

/* Sums are checked: a corrupt rendezvous must not wrap ranks around. */
static int
add_checked(unsigned *sum, unsigned v)
{
	return __builtin_add_overflow(*sum, v, sum) ? -1 : 0;
}

static int
same_role(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

int
ranks_assign(const struct group_info *groups, unsigned ngroups,
    unsigned group_rank, struct rank_assignment *out)
{
	const struct group_info *me;
	struct rank_assignment ra;
	unsigned g;

	if (groups == NULL || group_rank >= ngroups)
		return -1;
	me = &groups[group_rank];
	memset(&ra, 0, sizeof(ra));
	ra.group_rank = group_rank;
	ra.group_world_size = ngroups;
	ra.local_world_size = me->local_world_size;
	for (g = 0; g < ngroups; g++) {
		unsigned lws = groups[g].local_world_size;
		int same = same_role(groups[g].role, me->role);

		if (add_checked(&ra.world_size, lws) == -1)
			return -1;
		if (g < group_rank && add_checked(&ra.base_rank, lws) == -1)
			return -1;
		if (!same)
			continue;
		if (add_checked(&ra.role_world_size, lws) == -1)
			return -1;
		if (g < group_rank && add_checked(&ra.base_role_rank, lws) == -1)
			return -1;
	}
	*out = ra;
	return 0;
}

int
ranks_assign_static(unsigned node_rank, unsigned nnodes, unsigned nproc,
    struct rank_assignment *out)
{
	struct rank_assignment ra;

	if (node_rank >= nnodes)
		return -1;
	memset(&ra, 0, sizeof(ra));
	ra.group_rank = node_rank;
	ra.group_world_size = nnodes;
	ra.local_world_size = nproc;
	if (__builtin_mul_overflow(node_rank, nproc, &ra.base_rank) ||
	    __builtin_mul_overflow(nnodes, nproc, &ra.world_size))
		return -1;
	ra.base_role_rank = ra.base_rank;
	ra.role_world_size = ra.world_size;
	*out = ra;
	return 0;
}
