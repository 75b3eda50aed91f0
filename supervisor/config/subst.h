/*
 * string.Template.safe_substitute for the few macros torch knows:
 * ${name} (and $name) are replaced when name is known, every other
 * '$' sequence is copied unchanged.
 */
#ifndef ESV_SUBST_H
#define ESV_SUBST_H

#include <stddef.h>

struct subst_var {
	const char	*name;
	const char	*value;
};

/*
 * Expand tmpl into out (size outlen).  Returns the length the result needs
 * (excluding the NUL); a return >= outlen means out was truncated.
 */
size_t	subst_expand(const char *tmpl, const struct subst_var *vars,
	    size_t nvars, char *out, size_t outlen);

/* Same, into a new malloc'd string; NULL on allocation failure. */
char	*subst_dup(const char *tmpl, const struct subst_var *vars, size_t nvars);

#endif
