/*
 * etcd's JSON conventions: bytes in base64 (libresolv's codec), int64s as
 * strings, zero values left out.  Apart from etcd.c so that the fuzzer
 * drives node*.c with them and without a network.
 */
#include <errno.h>
#include <resolv.h>
#include <stdlib.h>

#include "etcd.h"

json_t *
etcd_b64(const char *s, size_t len)
{
	char *out;
	size_t olen = 4 * ((len + 2) / 3) + 1;
	json_t *j;

	if ((out = malloc(olen)) == NULL)
		return NULL;
	if (b64_ntop((const unsigned char *)s, len, out, olen) == -1) {
		free(out);
		return NULL;
	}
	j = json_string(out);
	free(out);
	return j;
}

int
etcd_unb64(json_t *field, char *buf, size_t len)
{
	const char *s;
	int n;

	if (field == NULL) {
		if (len > 0)
			buf[0] = '\0';
		return 0;
	}
	if ((s = json_string_value(field)) == NULL || len == 0)
		return -1;
	if ((n = b64_pton(s, (unsigned char *)buf, len - 1)) < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int
etcd_int(json_t *obj, const char *name, long long *out)
{
	json_t *v = obj != NULL ? json_object_get(obj, name) : NULL;
	const char *s;
	char *end;

	*out = 0;
	if (v == NULL)
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if ((s = json_string_value(v)) == NULL || *s == '\0')
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	/* Lease ids are int64 beyond 2^53: never through a double. */
	return errno != 0 || *end != '\0' ? -1 : 0;
}

