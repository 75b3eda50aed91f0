/*
 * What the libFuzzer harnesses share: a private scratch directory and a
 * way to put the input into a file there.  Each harness is one parser of
 * untrusted bytes, driven as the daemon drives it; a crash, a leak, a
 * sanitizer report or a broken invariant (abort) is a finding.
 */
#ifndef ESV_FUZZ_H
#define ESV_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int	LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant the code promises; abort() is what libFuzzer reports. */
#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: broken: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

/* A fresh private directory for this process (made once). */
const char	*fuzz_dir(void);
/* Replace dir/rel with the bytes (directories made as needed). */
void		 fuzz_put(const char *rel, const uint8_t *data, size_t size);
/* The input as a NUL-terminated string (malloc'd; NULs inside kept). */
char		*fuzz_str(const uint8_t *data, size_t size);
/* A stream that discards what is written. */
FILE		*fuzz_null(void);

#endif
