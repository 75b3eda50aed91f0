/*
 * Who may connect to esv-stored: see peers.h.
 */
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "msg.h"
#include "peers.h"
#include "sockdiag.h"

void
peer_addr(const struct sockaddr_storage *ss, struct in6_addr *a)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;

	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET6)
		*a = s6->sin6_addr;
	else if (ss->ss_family == AF_INET) {
		a->s6_addr[10] = a->s6_addr[11] = 0xff;
		memcpy(&a->s6_addr[12], &s4->sin_addr, 4);
	}
}

bool
peers_allowed(const struct peers *pe, const struct in6_addr *a)
{
	size_t i;

	if (pe->allow_file == NULL)
		return true;
	for (i = 0; i < pe->nallow; i++)
		if (memcmp(&pe->allow[i], a, sizeof(*a)) == 0)
			return true;
	return false;
}

/*
 * The trust model of esv-stored(8): a peer on this host (its socket is
 * one of this network namespace's, loopback or not) must be of our uid
 * or root; any other must be a node of the round (--allow-file).  NULL,
 * or why not.
 */
const char *
peers_trusted(const struct peers *pe, int fd, const struct in6_addr *ip,
    bool *local, char *why, size_t wl)
{
	uid_t uid;
	int rc;

	if ((rc = sockdiag_peer_uid(fd, &uid)) == -1) {
		snprintf(why, wl, "its uid unknown (sock_diag: %s)",
		    strerror(errno));
		return why;
	}
	*local = rc == 1;
	if (*local) {
		if (uid == pe->uid || uid == 0)
			return NULL;
		snprintf(why, wl, "a local process of uid %u, not the job's "
		    "(%u) nor root", (unsigned)uid, (unsigned)pe->uid);
		return why;
	}
	/* Gone already, or a loopback socket sock_diag does not show. */
	if (IN6_IS_ADDR_LOOPBACK(ip) || (IN6_IS_ADDR_V4MAPPED(ip) &&
	    ip->s6_addr[12] == 127)) {
		snprintf(why, wl, "a loopback peer whose socket is not found");
		return why;
	}
	if (!peers_allowed(pe, ip)) {
		snprintf(why, wl, "not a node of the round (%s)",
		    pe->allow_file);
		return why;
	}
	return NULL;
}

/*
 * --allow-file: one numeric address a line, '#' comments.  A bad line is
 * said and skipped; an unreadable file leaves the set as it was.
 */
bool
peers_load(struct peers *pe)
{
	struct in6_addr set[ALLOW_MAX], a;
	char line[256], *p, *e;
	size_t n = 0;
	int lineno = 0;
	bool done = false;
	FILE *f;

	if (pe->allow_file == NULL)
		return false;
	if ((f = fopen(pe->allow_file, "re")) == NULL) {
		warn_sys("%s: unable to read (the allowed set is unchanged)",
		    pe->allow_file);
		return false;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		for (p = line; isspace((unsigned char)*p); p++)
			;
		for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]);
		    e--)
			;
		*e = '\0';
		if (*p == '\0')
			continue;
		memset(&a, 0, sizeof(a));
		if (inet_pton(AF_INET, p, &a.s6_addr[12]) == 1)
			a.s6_addr[10] = a.s6_addr[11] = 0xff;
		else if (inet_pton(AF_INET6, p, &a) != 1) {
			warn_msg("%s:%d: not a numeric address: %s (skipped)",
			    pe->allow_file, lineno, p);
			continue;
		}
		if (n == ALLOW_MAX) {
			warn_msg("%s:%d: more than %d addresses (the rest "
			    "skipped)", pe->allow_file, lineno, ALLOW_MAX);
			break;
		}
		set[n++] = a;
	}
	if (ferror(f))
		warn_sys("%s: read error (the allowed set is unchanged)",
		    pe->allow_file);
	else {
		memcpy(pe->allow, set, n * sizeof(set[0]));
		pe->nallow = n;
		info_msg("%s: %zu remote addresses allowed", pe->allow_file, n);
		done = true;
	}
	fclose(f);
	return done;
}
