/*
 * A write to etcd, one at a time (n->busy): a txn with its compares, its
 * answer handed to the step that made it (then_fn), and a race lost on
 * a copy behind etcd read again.  It may call the copy (node_watch.c)
 * and the layers below; what comes after an answer (decide again, the
 * next step out) only through n->evaluate and n->shutdown_step.
 */
#include "msg.h"
#include "node_int.h"

/*
 * A compare failed on a copy behind etcd.  If the watch has not brought
 * the winner's write yet, read the keys now rather than wait: the
 * revision etcd answered with may be of another job's write, which our
 * watch never sees.
 */
void
lost_race(struct node *n, json_t *reply)
{
	long long rev;

	n->need_rev = 0;
	if (header_rev(reply, &rev) && rev > n->rev)
		refresh(n);
}

static void
on_txn(void *ctx, json_t *reply, const char *err)
{
	struct node *n = ctx;
	then_fn *then = n->then;
	long long rev;
	bool ok = false;

	n->busy = false;
	n->then = NULL;
	if (reply == NULL)
		warn_msg("etcd: a write was refused: %s", err);
	else {
		ok = json_is_true(json_object_get(reply, "succeeded"));
		/*
		 * Decide again only from a copy that has seen our write, if
		 * the copy is to see it at all (a follower's join is not).
		 */
		if (ok && n->echo && header_rev(reply, &rev) &&
		    rev > n->need_rev)
			n->need_rev = rev;
	}
	if (reply != NULL && !ok && n->echo)
		lost_race(n, reply);
	else if (reply != NULL && !ok)
		n->need_rev = 0;
	if (then != NULL)
		then(n, ok, reply);
	n->evaluate(n);
	if (n->shutting && !n->busy)
		n->shutdown_step(n);
}

/*
 * echo: the write is of keys in the copy's scope, so that the copy is to
 * see it before anything is decided again; a lost race (echo or not)
 * reads the copy again, unless the caller is content to wait for the
 * watch (n->echo false and no refresh: an election lost).
 */
void
txn(struct node *n, json_t *compare, json_t *success, then_fn *then,
    bool echo)
{
	txn_body(n, json_pack("{s:o, s:o}", "compare", compare, "success",
	    success), then, echo);
}

void
txn_body(struct node *n, json_t *body, then_fn *then, bool echo)
{
	n->busy = true;
	n->echo = echo;
	n->then = then;
	if (body == NULL || etcd_call(n->e, "/v3/kv/txn", body, on_txn, n) ==
	    -1) {
		n->busy = false;
		warn_msg("etcd: out of memory for a write");
	}
}
