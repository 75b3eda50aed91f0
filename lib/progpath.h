/*
 * Where esv-supervise finds the programs it starts (esv-rdzv,
 * esv-watchdogd...): $envvar if set, else beside its own executable
 * (installed), else in the build tree's ../subdir/, else by $PATH.
 */
#ifndef ESV_PROGPATH_H
#define ESV_PROGPATH_H

#include <stddef.h>

void	prog_path(const char *name, const char *subdir, const char *envvar,
	    char *buf, size_t len);

#endif
