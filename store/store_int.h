/*
 * Inside the esv-stored state machine, top down:
 *	store.c		connections: their input, the dialect, the timeouts'
 *			counts, the store's life
 *	store_cmd.c	a request read and run, command by command
 *	store_reply.c	what goes back to a connection: replies, the end of
 *			its WAIT, its close (store_ops.close)
 *	store_keys.c	the key table and the memory budget
 * Each calls only those below it.
 */
#ifndef ESV_STORE_INT_H
#define ESV_STORE_INT_H

#include <sys/queue.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define STOP_WAITING	0
#define WAIT_CANCELED	1
#define CHECK_READY	0
#define CHECK_NOT_READY	1
#define WATCH_REGISTERED 3

enum dialect { D_UNKNOWN, D_LEGACY, D_NEW };

struct qitem {
	STAILQ_ENTRY(qitem)	 next;
	size_t			 len;
	uint8_t			 bytes[];
};

struct waiter;
TAILQ_HEAD(waitq, waiter);

/* A name: a value, a queue, connections waiting for it, or all three. */
struct entry {
	struct entry		*next;		/* in its bucket */
	uint64_t		 hash;
	uint8_t			*key;
	size_t			 klen;
	bool			 present;
	uint8_t			*val;
	size_t			 vlen;
	STAILQ_HEAD(, qitem)	 queue;
	size_t			 qlen;
	struct waitq		 waiters;
};

struct waiter {
	TAILQ_ENTRY(waiter)	 by_key;
	LIST_ENTRY(waiter)	 by_conn;
	struct entry		*e;
	struct store_conn	*c;
};

struct store_conn {
	LIST_ENTRY(store_conn)	 all;
	void			*conn;
	char			 peer[64];
	enum dialect		 dialect;
	uint8_t			*in;
	size_t			 inlen, incap;
	LIST_HEAD(, waiter)	 waits;
	size_t			 wait_left;	/* keys still missing */
	unsigned long		 nreq;		/* requests done */
	bool			 dead;		/* closed: input ignored */
	unsigned		 busy;		/* in store_input */
};

struct store {
	struct store_conf	 conf;
	struct store_ops	 ops;
	struct entry		**buckets;
	size_t			 nbuckets, nentries;
	size_t			 nkeys, nwaiters, nwaiting;
	size_t			 used;		/* of conf.max_bytes */
	bool			 over;		/* the last take failed */
	LIST_HEAD(, store_conn)	 conns;
};

/* A string of the input: it points into the connection's buffer. */
struct slice {
	const uint8_t	*p;
	size_t		 len;
};


/* A request being read: it points into the connection's buffer. */
struct rd {
	const uint8_t	*p;
	size_t		 n, off;
};

/* store_keys.c */
/* As store_mem_take; a refusal is remembered for no_room's word. */
bool	mem_take(struct store *st, size_t n);
/* A key for the log: printable, quoted, cut at 32 characters. */
void	key_fmt(const uint8_t *p, size_t n, char *out, size_t ol);
struct entry *key_lookup(struct store *st, const struct slice *k);
/* NULL: past a limit or out of memory. */
struct entry *key_lookup_or_add(struct store *st, const struct slice *k);
/* An entry that holds nothing and is waited for by nobody goes. */
void	key_maybe_drop(struct store *st, struct entry *e);
bool	key_set_value(struct store *st, struct entry *e, const uint8_t *p,
	    size_t n);
bool	key_has(const struct entry *e);
/* op on key k (n bytes) could not be had: past the budget, or malloc. */
int	no_room(struct store *st, const char *op, const struct slice *k,
	    size_t n, char *why, size_t wl);

/* store_reply.c */
bool	reply(struct store *st, struct store_conn *c, const void *p,
	    size_t n);
bool	reply_u8(struct store *st, struct store_conn *c, uint8_t v);
bool	reply_i64(struct store *st, struct store_conn *c, int64_t v);
bool	reply_bytes(struct store *st, struct store_conn *c, const void *p,
	    size_t n);
/* c waits no more: its waiters go. */
void	unpark(struct store *st, struct store_conn *c);
/* e came to be: its waiters (one, for a queue's push) count it in. */
void	wake(struct store *st, struct entry *e, bool one);
/* Log why, drop c's waits, and have the transport hang up. */
void	conn_close(struct store *st, struct store_conn *c, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));

/* store_cmd.c */
/* One request from the start of r: 1 done, 0 not all here, -1 bad. */
int	request(struct store *st, struct store_conn *c, struct rd *r,
	    char *why, size_t wl);

#endif
