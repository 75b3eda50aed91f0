/*
 * job.ini and the command line (lib/config.c): the input is the file's
 * text up to the first NUL, then the options before JOBDIR, NUL-separated
 * (at most 32).  Every call either loads a valid configuration or says
 * why in one line; never both, never neither.
 */
#include <stdio.h>
#include <string.h>

#include "../../supervisor/config/config.h"
#include "fuzz.h"

#define ARGS_MAX	32

static char jobdir[4096];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* --help prints the usage: not what is being tested. */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	snprintf(jobdir, sizeof(jobdir), "%s/job", fuzz_dir());
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *envp[] = { NULL };
	char *argv[ARGS_MAX + 3], err[512], *text, *p, *end;
	const uint8_t *nul;
	struct job_config cfg;
	size_t inilen;
	int argc = 0, rc;

	nul = memchr(data, '\0', size);
	inilen = nul != NULL ? (size_t)(nul - data) : size;
	fuzz_put("job/job.ini", data, inilen);
	text = fuzz_str(data, size);
	argv[argc++] = "esv-supervise";
	if (nul != NULL)
		for (p = text + inilen + 1, end = text + size;
		    p < end && argc < ARGS_MAX + 1; p += strlen(p) + 1)
			argv[argc++] = p;
	argv[argc++] = jobdir;
	argv[argc] = NULL;
	memset(err, 0, sizeof(err));
	rc = config_load(&cfg, argc, argv, envp, err, sizeof(err));
	CHECK(rc == -1 || rc == 0 || rc == 1);
	if (rc == -1) {
		CHECK(err[0] != '\0');
		CHECK(strchr(err, '\n') == NULL);
	}
	config_free(&cfg);
	free(text);
	return 0;
}
