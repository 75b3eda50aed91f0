#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nelem.h"
#include "sig.h"

/* Spellings glibc's sigabbrev_np does not return, as kill(1) accepts them. */
static const struct {
	const char	*name;
	int		 signo;
} aliases[] = {
	{ "IOT", SIGABRT },
	{ "CLD", SIGCHLD },
	{ "IO", SIGIO },
};

static const struct {
	int	signo;
	char	letter;
} letters[] = {
	{ SIGTERM, 't' }, { SIGKILL, 'k' }, { SIGHUP, 'h' }, { SIGALRM, 'a' },
	{ SIGINT, 'i' }, { SIGQUIT, 'q' }, { SIGUSR1, '1' }, { SIGUSR2, '2' },
	{ SIGSTOP, 'p' }, { SIGCONT, 'c' },
};


int
sig_from_name(const char *name)
{
	const char *abbrev, *errstr;
	size_t i;
	int signo;

	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	/* Numbers, and "SIG40" as sig_name writes the unnamed ones. */
	if (name[0] >= '0' && name[0] <= '9') {
		signo = (int)strtonum(name, 1, NSIG - 1, &errstr);
		return errstr == NULL ? signo : 0;
	}
	for (signo = 1; signo < NSIG; signo++) {
		abbrev = sigabbrev_np(signo);
		if (abbrev != NULL && strcasecmp(name, abbrev) == 0)
			return signo;
	}
	for (i = 0; i < NELEM(aliases); i++)
		if (strcasecmp(name, aliases[i].name) == 0)
			return aliases[i].signo;
	return 0;
}

const char *
sig_name(int signo)
{
	/* One slot per signal, so that two calls can share a printf. */
	static char names[NSIG][16];
	static char other[24];
	const char *abbrev;

	if (signo <= 0 || signo >= NSIG) {
		snprintf(other, sizeof(other), "SIG%d", signo);
		return other;
	}
	if (names[signo][0] == '\0') {
		abbrev = sigabbrev_np(signo);
		if (abbrev != NULL)
			snprintf(names[signo], sizeof(names[signo]), "SIG%s",
			    abbrev);
		else
			snprintf(names[signo], sizeof(names[signo]), "SIG%d",
			    signo);
	}
	return names[signo];
}

char
sig_to_letter(int signo)
{
	size_t i;

	for (i = 0; i < NELEM(letters); i++)
		if (letters[i].signo == signo)
			return letters[i].letter;
	return 0;
}

static void
trim_end(char *s)
{
	size_t len = strlen(s);

	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		s[--len] = '\0';
}

static bool
contains(const int *set, int n, int signo)
{
	int i;

	for (i = 0; i < n; i++)
		if (set[i] == signo)
			return true;
	return false;
}

/*
 * Empty items are skipped and duplicates kept once.  Returns how many
 * signals were stored, or -1 when there are more than max distinct ones.
 */
int
sig_parse_list(const char *list, int *out, int max,
    void (*warn)(const char *name))
{
	char *copy, *p, *item;
	int n = 0, signo;

	if ((copy = strdup(list)) == NULL)
		return -1;
	for (p = copy; (item = strsep(&p, ",")) != NULL; ) {
		item += strspn(item, " \t");
		trim_end(item);
		if (*item == '\0')
			continue;
		if ((signo = sig_from_name(item)) == 0) {
			if (warn != NULL)
				warn(item);
			continue;
		}
		if (contains(out, n, signo))
			continue;
		if (n == max) {
			n = -1;
			break;
		}
		out[n++] = signo;
	}
	free(copy);
	return n;
}
