#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "progpath.h"

void
prog_path(const char *name, const char *subdir, const char *envvar,
    char *buf, size_t len)
{
	char self[PATH_MAX], *dir;
	const char *env = getenv(envvar);
	ssize_t n;

	if (env != NULL && *env != '\0') {
		strlcpy(buf, env, len);
		return;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		dir = dirname(self);
		if (pathf(buf, len, "%s/%s", dir, name) == 0 &&
		    access(buf, X_OK) == 0)
			return;
		if (pathf(buf, len, "%s/../%s/%s", dir, subdir, name) == 0 &&
		    access(buf, X_OK) == 0)
			return;
	}
	strlcpy(buf, name, len);
}
