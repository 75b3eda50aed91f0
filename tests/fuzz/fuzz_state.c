/*
 * A job's state files as esv-ctl status and esv-healthd read them
 * (lib/kvfile.c, lib/jobstatus.c): the input is supervise/state; what it
 * holds after the first NUL-free line "--\n" is workers/0/state.  The
 * status always loads, always serializes to JSON, and always prints.
 */
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "jobstatus.h"
#include "kvfile.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char sep[] = "\n--\n";
	const uint8_t *w = NULL;
	size_t statelen = size, i;
	struct kvlist kl;
	json_t *st;
	char *s;

	for (i = 0; i + sizeof(sep) - 1 <= size; i++)
		if (memcmp(data + i, sep, sizeof(sep) - 1) == 0) {
			statelen = i + 1;
			w = data + i + sizeof(sep) - 1;
			break;
		}
	fuzz_put("supervise/state", data, statelen);
	if (w != NULL)
		fuzz_put("workers/0/state", w, size - (w - data));
	else
		fuzz_put("workers/0/state", (const uint8_t *)"", 0);

	CHECK((st = jobstatus_load_files(fuzz_dir())) != NULL);
	CHECK((s = json_dumps(st, 0)) != NULL);
	free(s);
	jobstatus_print_job(fuzz_null(), st, 1.7e9);
	jobstatus_print_workers(fuzz_null(), st, 1.7e9);
	json_decref(st);

	/* The parser alone, on the raw bytes. */
	s = fuzz_str(data, size);
	CHECK(kv_parse(s, &kl) == 0);
	for (i = 0; i < kl.n; i++)
		CHECK(strchr(kl.pairs[i].key, '=') == NULL &&
		    strchr(kl.pairs[i].value, '\n') == NULL);
	kv_list_free(&kl);
	return 0;
}
