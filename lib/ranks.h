/*
 * Rank assignment, as torch's agent does it:
 * global ranks are laid out in group-rank order, role ranks likewise among
 * the groups that share a role.
 */
#ifndef ESV_RANKS_H
#define ESV_RANKS_H

struct group_info {
	const char	*role;
	unsigned	 local_world_size;
};

struct rank_assignment {
	unsigned	group_rank;
	unsigned	group_world_size;
	unsigned	local_world_size;
	unsigned	base_rank;		/* RANK of local rank 0 */
	unsigned	world_size;
	unsigned	base_role_rank;
	unsigned	role_world_size;
};

/*
 * groups[0..ngroups) indexed by group rank; fills out for group_rank.
 * Returns -1 if group_rank is out of range or a sum overflows.
 */
int	ranks_assign(const struct group_info *groups, unsigned ngroups,
	    unsigned group_rank, struct rank_assignment *out);

/* The static rendezvous: every node has the same nproc and role. */
int	ranks_assign_static(unsigned node_rank, unsigned nnodes, unsigned nproc,
	    struct rank_assignment *out);

#endif
