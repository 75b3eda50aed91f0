/*
 * torch's error file, as any worker may leave it (supervisor/report/failure.c): the
 * failure is always recorded, failure.json always renders and parses, the
 * text summary always prints, and the root-cause copy is always written.
 */
#include <limits.h>
#include <string.h>

#include <jansson.h>

#include "../../supervisor/report/failure.h"
#include "fuzz.h"
#include "utf8.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX], copy[PATH_MAX], *json;
	struct worker_failure f[2];
	json_t *doc;

	fuzz_put("error.json", data, size);
	snprintf(path, sizeof(path), "%s/error.json", fuzz_dir());
	snprintf(copy, sizeof(copy), "%s/copy.json", fuzz_dir());
	CHECK(failure_init(&f[0], 0, 0, 100, 1, path, 1700000000) == 0);
	CHECK(failure_init(&f[1], 1, 1, 101, -9, NULL, 1700000001) == 0);
	CHECK(f[0].message != NULL &&
	    utf8_valid(f[0].message, strlen(f[0].message)));
	CHECK((json = failure_summary_json("train.py", "host", f, 2)) != NULL);
	CHECK((doc = json_loads(json, 0, NULL)) != NULL);
	CHECK(json_array_size(json_object_get(doc, "failures")) == 2);
	json_decref(doc);
	free(json);
	failure_summary_text(fuzz_null(), "train.py", "host", f, 2);
	CHECK(failure_copy_root_cause(copy, &f[0]) != -1);
	failure_free(&f[0]);
	failure_free(&f[1]);
	return 0;
}
