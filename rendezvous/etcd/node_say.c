/*
 * What the supervisor is told (lib/rdzvproto.h), through ops->say: a
 * verb and a number, JOINED with the count of nodes waiting for room, an
 * error, a place (MEMBER lines, then ROUND).  It may call the copy's
 * tree (node_keys.c) alone.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "node_int.h"

void
say_n(struct node *n, enum rdzv_verb v, unsigned x)
{
	struct rdzv_msg m = { .verb = v };

	m.u.n = x;
	n->ops.say(n->ops.ctx, &m);
}

/* The nodes waiting for room, as the leader last wrote it. */
unsigned
waiting_count(struct node *n)
{
	struct kv *kv = kv_get(n, "h/waiting");
	unsigned long v;
	char *end;

	if (kv == NULL)
		return 0;
	v = strtoul(kv->val, &end, 10);
	return *end == '\0' && v <= MAX_MEMBERS ? (unsigned)v : 0;
}

void
say_joined(struct node *n, unsigned round, unsigned participants)
{
	struct rdzv_msg m = { .verb = RV_JOINED };

	m.u.joined.round = round;
	m.u.joined.participants = participants;
	m.u.joined.waiting = waiting_count(n);
	n->ops.say(n->ops.ctx, &m);
	n->told_joined = round + 1;
}

void
say_err(struct node *n, const char *code, const char *fmt, ...)
{
	struct rdzv_msg m = { .verb = RV_ERR };
	va_list ap;

	strlcpy(m.u.err.code, code, sizeof(m.u.err.code));
	va_start(ap, fmt);
	vsnprintf(m.u.err.text, sizeof(m.u.err.text), fmt, ap);
	va_end(ap);
	n->ops.say(n->ops.ctx, &m);
}

void
say_place(struct node *n, const struct rdzv_round_msg *r)
{
	struct rdzv_msg m = { .verb = RV_MEMBER };
	const char *p, *nl;

	m.u.member.round = r->round;
	for (p = n->members; r->group_rank == 0 &&
	    (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		if ((size_t)(nl - p) >= sizeof(m.u.member.addr))
			continue;
		memcpy(m.u.member.addr, p, nl - p);
		m.u.member.addr[nl - p] = '\0';
		n->ops.say(n->ops.ctx, &m);
	}
	m = (struct rdzv_msg){ .verb = RV_ROUND };
	m.u.round = *r;
	info_msg("etcd: job %s: round %u: group rank %u of %u, world %u",
	    n->me.run_id, r->round, r->group_rank, r->group_world_size,
	    r->world_size);
	n->ops.say(n->ops.ctx, &m);
}
