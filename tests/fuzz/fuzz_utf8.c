/*
 * lib/utf8.c: what it calls valid is what jansson takes; what it fixes is
 * valid; a cut copy of valid text is valid.
 */
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "utf8.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *fixed, buf[16];
	size_t len;
	json_t *j;

	s = fuzz_str(data, size);
	len = strlen(s);	/* up to the first NUL, as C strings go */
	j = json_stringn(s, len);
	CHECK((j != NULL) == utf8_valid(s, len));
	json_decref(j);
	CHECK((fixed = utf8_fix(s)) != NULL);
	CHECK(utf8_valid(fixed, strlen(fixed)));
	if (utf8_valid(s, len))
		CHECK(strcmp(fixed, s) == 0);
	CHECK(utf8_strlcpy(buf, fixed, sizeof(buf)) == strlen(fixed));
	CHECK(utf8_valid(buf, strlen(buf)));
	CHECK(strncmp(buf, fixed, strlen(buf)) == 0);
	CHECK((j = json_text(s)) != NULL);
	json_decref(j);
	free(fixed);
	free(s);
	return 0;
}
