/*
 * esv-run: torchrun's command line, unchanged, run by esv.  The options,
 * their PET_* variables, and the script first with its own arguments
 * after it: esv-supervise reads them all (one parser, esv-supervise(8)),
 * given --torchrun, and makes the job directory up from the run id.  This
 * program only execs it, so nothing of ours stays between whoever
 * started the job (a shell, an init system) and the agent.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "progpath.h"

int
main(int argc, char *argv[])
{
	char path[PATH_MAX], **av;
	int i;

	prog_path("esv-supervise", "supervisor", "ESV_SUPERVISE", path,
	    sizeof(path));
	if ((av = calloc((size_t)argc + 2, sizeof(*av))) == NULL) {
		fprintf(stderr, "esv-run: fatal: out of memory\n");
		return ESV_EXIT_SYSTEM;
	}
	av[0] = path;
	av[1] = "--torchrun";
	for (i = 1; i < argc; i++)
		av[i + 1] = argv[i];
	execv(path, av);
	fprintf(stderr, "esv-run: fatal: unable to run %s: %s\n", path,
	    strerror(errno));
	return ESV_EXIT_SYSTEM;
}
