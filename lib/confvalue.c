/* The syntax of single settings, shared by job.ini, PET_* and options. */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "confvalue.h"
#include "nelem.h"


int
parse_bool(const char *v, bool *out)
{
	static const char *yes[] = { "true", "yes", "1" };
	static const char *no[] = { "false", "no", "0" };
	size_t i;

	for (i = 0; i < NELEM(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

int
parse_uint(const char *v, long long min, long long max, unsigned *out,
    char *why, size_t whylen)
{
	const char *errstr;
	long long n;

	n = strtonum(v, min, max, &errstr);
	if (errstr == NULL) {
		*out = (unsigned)n;
		return 0;
	}
	if (strcmp(errstr, "invalid") == 0)
		snprintf(why, whylen, "not a number: %s", v);
	else
		snprintf(why, whylen, "out of range %lld..%lld: %s", min, max,
		    v);
	return -1;
}

int
push_word(char ***argvp, int *argcp, const char *word)
{
	char **nv;

	if ((nv = reallocarray(*argvp, *argcp + 2, sizeof(**argvp))) == NULL)
		return -1;
	*argvp = nv;
	if ((nv[*argcp] = strdup(word)) == NULL)
		return -1;
	nv[++*argcp] = NULL;
	return 0;
}

/*
 * Split like sh(1) without any expansion: blanks separate words, '...'
 * is literal, "..." honours \" \\ \$ \`, and a backslash outside quotes
 * takes the next character literally.  Words are appended to *argvp.
 */
int
split_args(const char *s, char ***argvp, int *argcp, char *why,
    size_t whylen)
{
	char *buf, *w;
	char quote = 0;
	bool inword = false;

	if ((buf = malloc(strlen(s) + 1)) == NULL)
		goto nomem;
	for (w = buf;; s++) {
		if (quote != 0) {
			if (*s == '\0')
				break;
			if (*s == quote)
				quote = 0;
			else if (quote == '"' && *s == '\\' && s[1] != '\0' &&
			    strchr("\"\\$`", s[1]) != NULL)
				*w++ = *++s;
			else
				*w++ = *s;
			continue;
		}
		if (*s == '\0' || *s == ' ' || *s == '\t') {
			*w = '\0';
			if (inword && push_word(argvp, argcp, buf) == -1)
				goto nomem;
			inword = false;
			w = buf;
			if (*s == '\0')
				break;
			continue;
		}
		inword = true;
		if (*s == '\'' || *s == '"')
			quote = *s;
		else if (*s == '\\' && s[1] == '\0') {
			snprintf(why, whylen, "backslash at the end");
			free(buf);
			return -1;
		} else if (*s == '\\')
			*w++ = *++s;
		else
			*w++ = *s;
	}
	free(buf);
	if (quote != 0) {
		snprintf(why, whylen, "unterminated %c quote", quote);
		return -1;
	}
	return 0;
nomem:
	free(buf);
	snprintf(why, whylen, "%s", strerror(ENOMEM));
	return -1;
}

unsigned
count_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > ESV_MAX_NPROC ? ESV_MAX_NPROC : (unsigned)n;
}

unsigned
count_gpus(void)
{
	glob_t g;
	unsigned n = 0;

	if (glob("/dev/nvidia[0-9]*", 0, NULL, &g) == 0) {
		n = g.gl_pathc > ESV_MAX_NPROC ? ESV_MAX_NPROC :
		    (unsigned)g.gl_pathc;
		globfree(&g);
	}
	return n;
}

/*
 * Walk a "0,2" filter.  Returns -1 when malformed, else whether rank is
 * listed.
 */
int
filter_scan(const char *filter, unsigned rank)
{
	const char *p = filter;
	char *end;
	unsigned long n;
	int found = 0;

	for (;;) {
		p += strspn(p, " \t");
		if (!isdigit((unsigned char)*p))
			return -1;
		errno = 0;
		n = strtoul(p, &end, 10);
		if (errno != 0 || n >= ESV_MAX_NPROC)
			return -1;
		if (n == rank)
			found = 1;
		p = end + strspn(end, " \t");
		if (*p == '\0')
			return found;
		if (*p++ != ',')
			return -1;
	}
}

int
std_for_rank(const char *spec, unsigned local_rank)
{
	const char *p;
	int std = 0;

	if (!std_spec_valid(spec))
		return -1;
	if (spec[1] == '\0')
		return spec[0] - '0';
	/* "r:v" pairs, four characters apart; the last one for a rank wins. */
	for (p = spec; *p != '\0'; p += p[3] == ',' ? 4 : 3)
		if ((unsigned)(p[0] - '0') == local_rank)
			std = p[2] - '0';
	return std;
}

/* torch's ^[0123]$ or ^(\d:[0123],)*(\d:[0123])$ */
bool
std_spec_valid(const char *spec)
{
	const char *p = spec;

	if (p[0] >= '0' && p[0] <= '3' && p[1] == '\0')
		return true;
	for (;;) {
		if (!isdigit((unsigned char)p[0]) || p[1] != ':' ||
		    p[2] < '0' || p[2] > '3')
			return false;
		if (p[3] == '\0')
			return true;
		if (p[3] != ',')
			return false;
		p += 4;
	}
}

bool
rank_in_filter(const char *filter, unsigned local_rank)
{
	return *filter == '\0' || filter_scan(filter, local_rank) == 1;
}

long long
parse_duration_ms(const char *s)
{
	static const struct {
		const char	*suffix;
		double		 ms;
	} units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 },
	};
	const char *p = s;
	char num[64];
	double x;
	size_t i, len;

	/* strtod alone would take signs, blanks, "inf" and hex. */
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	len = (size_t)(p - s);
	if (len == 0 || len >= sizeof(num) || (len == 1 && *s == '.'))
		return -1;
	memcpy(num, s, len);
	num[len] = '\0';
	x = strtod(num, NULL);
	for (i = 0; i < NELEM(units); i++) {
		if (strcmp(p, units[i].suffix) != 0)
			continue;
		x = x * units[i].ms + 0.5;	/* round, no libm */
		return x >= 0x1p62 ? -1 : (long long)x;
	}
	return -1;
}
