/*
 * s6's event fifodir (s6-ftrig-listen, s6-svwait): each listener owns a
 * FIFO named "ftrig1:..." in the directory; the supervisor writes one byte
 * per event into every such FIFO, never blocking.  A listener subscribes
 * before it reads the status, so it cannot miss a transition.
 */
#ifndef ESV_FIFODIR_H
#define ESV_FIFODIR_H

#include <limits.h>

/* Create dir (mode 03730) if missing.  0 or -1/errno. */
int	fifodir_make(const char *dir);
/* Write ev into every listener FIFO of dir; unlink the dead ones. */
void	fifodir_broadcast(const char *dir, char ev);

struct fifodir_listener {
	int	fd;		/* read end, O_NONBLOCK: poll it for events */
	int	keep;		/* our own writer, so we never read EOF */
	char	path[PATH_MAX];
};

/* Subscribe to dir.  0 or -1/errno. */
int	fifodir_listen(const char *dir, struct fifodir_listener *l);
void	fifodir_unlisten(struct fifodir_listener *l);

#endif
