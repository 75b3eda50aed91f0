/*
 * Files an operator or the kernel hands the supervisor, read as it reads
 * them: a JOBDIR/env/ file (supervisor/spawn/envdir.c: the first line, trailing
 * blanks removed, NULs as newlines; empty unsets) and a cgroup's flat
 * keyed files (lib/cgstat.c: cpu.stat, memory.events, cgroup.events).
 */
#include <string.h>

#include "../../supervisor/spawn/envdir.h"
#include "cgstat.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "usage_usec", "oom_kill",
	    "populated", "frozen" };
	char out[1024], *text;
	size_t i, len;
	long long v;
	int r;

	r = envdir_value((const char *)data, size, out, sizeof(out));
	CHECK(r >= -1 && r <= 1);
	CHECK((r == 0) == (size == 0));
	if (r == 1) {
		len = strlen(out);
		CHECK(len <= size && len < sizeof(out));
		CHECK(len == 0 || (out[len - 1] != ' ' && out[len - 1] != '\t'));
		for (i = 0; i < len; i++)
			CHECK(out[i] == (data[i] == '\0' ? '\n' : (char)data[i]));
		CHECK(len == size || data[len] == '\n' || data[len] == ' ' ||
		    data[len] == '\t');
	}
	text = fuzz_str(data, size);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = cgstat_keyed(text, keys[i]);
		CHECK(v >= -1);
	}
	free(text);
	return 0;
}
