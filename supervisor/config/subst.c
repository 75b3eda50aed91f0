#include <stdlib.h>
#include <string.h>

#include "subst.h"

/* Output cursor: counts what the result needs even past outlen. */
struct sink {
	char	*out;
	size_t	 outlen;
	size_t	 n;
};

static void
put(struct sink *s, const char *p, size_t len)
{
	if (s->n < s->outlen) {
		size_t room = s->outlen - 1 - s->n;

		memcpy(s->out + s->n, p, len < room ? len : room);
	}
	s->n += len;
}

/* Python's idpattern, ASCII only: [_a-zA-Z][_a-zA-Z0-9]*. */
static size_t
ident_len(const char *p)
{
	size_t n = 0;

	if (!(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') ||
	    (p[0] >= 'A' && p[0] <= 'Z')))
		return 0;
	for (n = 1; p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') ||
	    (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9'); n++)
		;
	return n;
}

static const char *
lookup(const struct subst_var *vars, size_t nvars, const char *name,
    size_t len)
{
	size_t i;

	for (i = 0; i < nvars; i++)
		if (strncmp(vars[i].name, name, len) == 0 &&
		    vars[i].name[len] == '\0')
			return vars[i].value;
	return NULL;
}

/*
 * One '$' sequence at p; returns how many template bytes it used.
 * Unknown names and invalid sequences are copied as they stand, which is
 * what safe_substitute does.
 */
static size_t
expand_one(struct sink *s, const char *p, const struct subst_var *vars,
    size_t nvars)
{
	const char *name, *val;
	size_t len, used;

	if (p[1] == '$') {
		put(s, "$", 1);
		return 2;
	}
	if (p[1] == '{') {
		name = p + 2;
		len = ident_len(name);
		if (len == 0 || name[len] != '}') {
			put(s, "$", 1);
			return 1;
		}
		used = len + 3;
	} else {
		name = p + 1;
		len = ident_len(name);
		if (len == 0) {
			put(s, "$", 1);
			return 1;
		}
		used = len + 1;
	}
	if ((val = lookup(vars, nvars, name, len)) != NULL)
		put(s, val, strlen(val));
	else
		put(s, p, used);
	return used;
}

size_t
subst_expand(const char *tmpl, const struct subst_var *vars, size_t nvars,
    char *out, size_t outlen)
{
	struct sink s = { out, outlen, 0 };
	const char *p = tmpl, *d;

	while ((d = strchr(p, '$')) != NULL) {
		put(&s, p, d - p);
		p = d + expand_one(&s, d, vars, nvars);
	}
	put(&s, p, strlen(p));
	if (outlen > 0)
		out[s.n < outlen ? s.n : outlen - 1] = '\0';
	return s.n;
}

char *
subst_dup(const char *tmpl, const struct subst_var *vars, size_t nvars)
{
	size_t need;
	char *buf;

	need = subst_expand(tmpl, vars, nvars, NULL, 0);
	if ((buf = malloc(need + 1)) == NULL)
		return NULL;
	subst_expand(tmpl, vars, nvars, buf, need + 1);
	return buf;
}
