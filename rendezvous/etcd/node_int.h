/*
 * Inside esv-rdzv-etcd's decisions (node.h), top down; a file calls only
 * the files below it:
 *
 *	node.c		the interface (node.h), and evaluate: each step taken
 *			from the copy of the keys, by the node's phase
 *	node_round.c	the leader's decisions: completing a round, its last
 *			call, restarting it, passing its exit barrier
 *	node_join.c	every node's own steps: joining, waiting for room,
 *			wanting a new round, coming back, closing the job
 *	node_barrier.c	the exit barrier: a node's exit key and its wait
 *			for the others; the leader holding it for a lost node
 *	node_lease.c	the lease: grant, keep-alives, fencing, the timer,
 *			and the way out (left, revoke)
 *	node_txn.c	a write: one at a time, and a lost race read again
 *	node_watch.c	the copy kept: one range, then a watch from its
 *			revision, in the scope of a leader or of a follower
 *	node_say.c	what the supervisor is told
 *	node_timer.c	when the node's one timer is to fire next
 *	node_ops.c	what a request is made of, and what a reply says
 *	node_keys.c	the copy of the job's keys, and what is parsed from it
 *
 * etcd answers in the file that asked (a write in node_txn.c, the watch
 * in node_watch.c, the lease in node_lease.c), and what comes next is
 * decided above it: it calls up only through n->evaluate (decide again)
 * and n->shutdown_step (the next step out), which node_new sets, never
 * by name, so that no call runs back up.
 *
 * The keys of job J, under P = <prefix>/J/ (esv-rdzv-etcd(8)):
 *
 *	h/state			{"round","status":"open|running|closed",
 *				 "min","max","last_call_ms","expect":[ids]}
 *	h/lead			lease: the node that decides, by its id
 *	h/waiting		how many nodes wait for room, as the leader
 *				 last counted them
 *	h/r/R/done		the exit barrier of round R has passed
 *	h/r/R/lost		the barrier of round R waits for this node,
 *				 lost before it said it had finished
 *	a/R/<node>		the node's place in round R, if it is in it:
 *				 {"group_rank","group_world_size","base_rank",
 *				  "world_size","base_role_rank",
 *				  "role_world_size","master_addr","master_port"}
 *	r/R/join/<node>		lease: the node is in round R
 *	r/R/seq			touched by every join: one revision to compare
 *	r/R/lastcall		its own lease, kept alive by nobody: the
 *				 last call of round R is open while it exists
 *	r/R/exit/<node>		the node's group finished round R: no
 *				 lease, the fact outlives the node
 *	r/R/left/<node>		the node's supervisor hung up in round R
 *				 with workers not finished
 *	waiting/<node>		lease: the node waits for room
 *	want/<node>		lease: the node's workers failed; it wants the
 *				 round given as the value
 *
 * One node leads: it holds h/lead, watches every key and writes every
 * decision (completion, last call, restarts, the barrier).  The others
 * watch h/ alone, the few keys that change a few times a round, write
 * only their own keys, and read their own a/R/ key when round R runs: a
 * round of K nodes costs etcd O(K) watch events and O(K) bytes of
 * result, not the O(K^2) of every node watching every join and reading
 * every member.  If the
 * leader dies, h/lead goes with its lease and the first node to create
 * it again leads.
 *
 * Liveness is the lease alone: a node that dies loses its keys when etcd
 * expires its lease, one that leaves revokes it.  No clock of one host is
 * ever compared with another's.  What a node did is not liveness: its
 * exit and left keys have no lease, are written only with a compare on
 * h/state (a round superseded cannot be marked finished), and go with
 * the round's places when round R + 2 opens.
 */
#ifndef ESV_ETCD_NODE_INT_H
#define ESV_ETCD_NODE_INT_H

/*
 * libbsd's tree.h marks its static functions __unused, which glibc
 * leaves undefined (it has struct members of that name): include this
 * header after the system ones.
 */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif
#include <sys/tree.h>

#include "node.h"

#define WATCH_RETRY_MS	200
#define MAX_MEMBERS	8192

struct kv {
	RB_ENTRY(kv)	 entry;
	char		*key;		/* relative to the prefix */
	char		*val;
	long long	 create, mod, lease;
};

RB_HEAD(kvtree, kv);
RB_PROTOTYPE(kvtree, kv, entry, kv_cmp)

enum status { ST_OPEN, ST_RUNNING, ST_CLOSED };

struct state {
	bool		 present;
	long long	 mod;
	unsigned	 round;
	enum status	 status;
	unsigned	 min, max, last_call_ms;
	json_t		*expect;	/* array of ids, or NULL */
	json_t		*doc;
};

enum phase {
	PH_IDLE,	/* waiting for a JOIN */
	PH_JOINING,	/* wants a round >= target */
	PH_REATTACH,	/* a supervisor back with a round it runs */
	PH_RUNNING,	/* runs round cur */
	PH_BARRIER,	/* finished round cur, waits for the others */
};

typedef void	then_fn(struct node *, bool succeeded, json_t *reply);

struct node {
	struct etcd		*e;
	struct loop		*lp;
	struct node_ops		 ops;
	char			 prefix[512];
	unsigned		 ttl_ms;	/* etcd's, once granted */

	long long		 lease;		/* 0: none yet */
	bool			 lease_asked;
	bool			 keepalive_asked;
	/*
	 * The last proof the lease lives: the time the keep-alive that etcd
	 * answered was SENT.  etcd renewed it on receipt, later, so its
	 * expiry is after lease_ok_at + ttl_ms, never before.
	 */
	long long		 lease_ok_at;
	long long		 lease_sent_at;
	bool			 fenced;
	bool			 late_fence;	/* node_late_fence */

	struct kvtree		 kvs;
	bool			 full;		/* leading: the copy is of all */
	bool			 range_full;	/* scope of the read in flight */
	bool			 refresh_full;
	long long		 elect_rev;	/* tried to lead at this copy */
	long long		 rev;		/* of the copy */
	long long		 read_rev;	/* of its last read */
	long long		 need_rev;	/* decide once rev gets here */
	bool			 ready;
	bool			 ranging;
	bool			 resync;	/* the watch was cancelled */
	bool			 in_watch;	/* in its callback: it stays */
	bool			 rescope;	/* end it, read the new scope */
	struct etcd_stream	*watch;
	long long		 watch_at;	/* reopen it then; 0: open */
	long long		 lastcall_gone;	/* round whose lastcall expired */

	struct watch		 timer;
	bool			 busy;		/* a write in flight */
	bool			 echo;		/* wait for it in the copy */
	unsigned		 lc_round;	/* of the last call being made */
	unsigned		 held_logged;	/* round + 1 */
	bool			 stale;		/* lost a race: reading */
	bool			 close_wanted;	/* CLOSE to write */
	bool			 doubt_logged;
	then_fn			*then;

	enum phase		 phase;
	struct rdzv_join	 me;
	unsigned		 target, cur, group_rank;
	unsigned		 told_joined;	/* round + 1 */
	/* Our keys etcd has (round + 1): a follower never sees them. */
	unsigned		 joined, waited, exited, wanted;
	unsigned		 asked;		/* round of the write in flight */
	unsigned		 fetched;	/* our a/R/ read (round + 1) */
	bool			 assigned;	/* and it was there: */
	bool			 place_linear;	/* the last read was refused */
	struct rdzv_round_msg	 place;
	/* Group rank 0's place: the round's addresses, '\n' after each. */
	char			 members[4096];
	json_t			*steps;		/* of a completion: stages */
	unsigned		 chunks_out;	/* a stage's writes in flight */
	bool			 chunks_failed, chunks_stale;
	long long		 told_waiting;	/* -1: nothing told */
	bool			 shutting;
	unsigned		 left;		/* round + 1 to mark left */
	unsigned		 told_lost;	/* round + 1 */
	long long		 shutdown_by;
	bool			 gone;
	/*
	 * The layers above, for those below to call back (node_new sets
	 * them): decide again (node.c), and the next step out
	 * (node_lease.c) once a write is answered (node_txn.c).
	 */
	void			(*evaluate)(struct node *);
	void			(*shutdown_step)(struct node *);
};

/* The keys that begin with pfx, in order: the tree keeps them together. */
#define KV_PREFIX_FOREACH(kv, n, pfx)					\
	for ((kv) = kv_first((n), (pfx)); (kv) != NULL;			\
	    (kv) = kv_from(RB_NEXT(kvtree, &(n)->kvs, (kv)), (pfx)))

/* node_round.c: the leader's decisions, once its copy is of every key. */
void	lead_step(struct node *n, const struct state *st);

/* node_join.c: every node's own steps, by its phase. */
void	join_step(struct node *n, struct state *st);
void	running_step(struct node *n, struct state *st);
void	reattach_step(struct node *n, struct state *st);
void	close_step(struct node *n, struct state *st);

/* node_barrier.c: the exit barrier. */
bool	round_stands(const struct node *n, const struct state *st);
json_t	*exit_put(struct node *n);
void	barrier_step(struct node *n, struct state *st);
void	hold_barrier(struct node *n, const struct state *st, const char *lost);

/* node_lease.c: the lease, the timer and the way out. */
void	lease_grant(struct node *n);
void	shutdown_step(struct node *n);
bool	node_fence_check(struct node *n);
void	on_timer(struct watch *w, uint32_t events);

/* node_txn.c: one write at a time (n->busy). */
void	lost_race(struct node *n, json_t *reply);
void	txn(struct node *n, json_t *compare, json_t *success, then_fn *then,
    bool echo);
void	txn_body(struct node *n, json_t *body, then_fn *then, bool echo);

/* node_watch.c: the copy kept in step with etcd. */
void	set_scope(struct node *n, bool full);
void	watch_open(struct node *n);
void	refresh(struct node *n);
void	sync_start(struct node *n);

/* node_say.c: what the supervisor is told. */
void	say_n(struct node *n, enum rdzv_verb v, unsigned x);
unsigned	waiting_count(struct node *n);
void	say_joined(struct node *n, unsigned round, unsigned participants);
void	say_err(struct node *n, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void	say_place(struct node *n, const struct rdzv_round_msg *r);

/* node_timer.c: the deadlines of the one timer. */
bool	workers_run(const struct node *n);
long long	fence_at(const struct node *n);
long long	keepalive_due(const struct node *n);
void	rearm(struct node *n);

/* node_ops.c: the pieces of a request; what a reply says. */
json_t	*prefix_of(struct node *n, const char *pfx);
json_t	*b64key(struct node *n, const char *rel);
json_t	*op_put(struct node *n, const char *rel, const char *val, bool leased);
json_t	*op_del(struct node *n, const char *rel);
json_t	*cmp_mod(struct node *n, const char *rel, long long mod);
char	*state_json(const struct state *st, unsigned round, const char *status,
    json_t *expect);
char	*join_json(struct node *n);
json_t	*cmp_absent(struct node *n, const char *rel);
json_t	*op_count(struct node *n, const char *pfx);
unsigned	reply_version(json_t *reply, size_t i);
json_t	*reply_txn(json_t *reply, size_t i);
unsigned	reply_count(json_t *reply, size_t i);

/* node_keys.c: the copy of the keys; documents parsed from it. */
struct kv	*kv_get(struct node *n, const char *key);
struct kv	*kv_getf(struct node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void	kv_clear(struct node *n);
struct kv	*kv_from(struct kv *kv, const char *pfx);
struct kv	*kv_first(struct node *n, const char *pfx);
unsigned	kv_count(struct node *n, const char *pfx);
bool	lastcall_key(const char *key, unsigned *round);
void	apply(struct node *n, json_t *jkv, bool del, bool initial);
bool	header_rev(json_t *reply, long long *rev);
void	state_read(struct node *n, struct state *st);
void	state_done(struct state *st);
bool	place_parse(struct node *n, const char *val, unsigned round,
    struct rdzv_round_msg *r);

#endif
