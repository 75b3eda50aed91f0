/*
 * A worker born in its cgroup: clone3(CLONE_VM | CLONE_VFORK |
 * CLONE_INTO_CGROUP), posix_spawn's kind of clone with the cgroup chosen
 * at birth.
 *
 * The other way, a child that writes "0" to its cgroup's cgroup.procs
 * before it execs, is a migration: the kernel takes its
 * cgroup_threadgroup_rwsem for writing, which waits for an RCU grace
 * period unless the hierarchy is mounted with favordynmods.  Measured on
 * the benchmark host (bench/README.md, "Containment"): 12-20 ms for the
 * first move after a quiet moment, 1-3 ms for the next ones, at every
 * start of the group; a clone into the cgroup costs what a plain clone
 * does.
 *
 * glibc (before 2.41) has no clone3 wrapper, and the child of a clone
 * with CLONE_VM must not return through syscall(2)'s frame, which the
 * parent still needs: the child starts on its own stack, here, in a few
 * instructions per architecture.  Elsewhere the call fails with ENOSYS
 * and the caller falls back to the move.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/sched.h>

#include "clone_into.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP	0x200000000ULL
#endif

/*
 * struct clone_args as of Linux 5.7, the first with its cgroup field;
 * our own, so that older kernel headers build it too.
 */
struct clone_args_v2 {
	uint64_t	flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t	stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

pid_t
clone_into_cgroup(int (*fn)(void *), void *arg, char *stack,
    size_t stack_size, int cgroupfd)
{
#if defined(__x86_64__) && defined(SYS_clone3)
	struct clone_args_v2 ca;
	long r;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
	ca.exit_signal = SIGCHLD;
	ca.stack = (uintptr_t)stack;
	ca.stack_size = stack_size;
	ca.cgroup = (uint64_t)cgroupfd;
	/*
	 * The child gets rax 0 and the stack's top (16-aligned: the call
	 * pushes its return address, as the ABI expects); it runs fn(arg)
	 * and exits with its value, never coming back into C here.
	 */
	__asm__ volatile(
	    "syscall\n\t"
	    "test %%rax, %%rax\n\t"
	    "jnz 1f\n\t"
	    "mov %[arg], %%rdi\n\t"
	    "call *%[fn]\n\t"
	    "mov %%eax, %%edi\n\t"
	    "mov %[nr_exit], %%eax\n\t"
	    "syscall\n\t"
	    "ud2\n"
	    "1:"
	    : "=a" (r)
	    : "0" ((long)SYS_clone3), "D" (&ca), "S" (sizeof(ca)),
	      [fn] "r" (fn), [arg] "r" (arg), [nr_exit] "i" (SYS_exit)
	    : "rcx", "r11", "memory");
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (pid_t)r;
#else
	(void)fn;
	(void)arg;
	(void)stack;
	(void)stack_size;
	(void)cgroupfd;
	errno = ENOSYS;
	return -1;
#endif
}
