#ifndef ESV_CLONE_INTO_H
#define ESV_CLONE_INTO_H
/*
 * clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP): fn(arg) runs in a
 * child born in the cgroup cgroupfd names, on stack (16-aligned), while
 * the caller waits for it to exec or die.  -1 with errno, ENOSYS where
 * not built for this architecture.  Also compiled into bench/floor.c.
 */
#include <stddef.h>
#include <sys/types.h>

pid_t	clone_into_cgroup(int (*fn)(void *), void *arg, char *stack,
	    size_t stack_size, int cgroupfd);

#endif
