/*
 * The esv-stored state machine: torch's TCPStore protocol, both dialects
 * (esv-stored(8)), over a table of keys, with no sockets in it.  The
 * transport (esv-stored.c, a unit test, a fuzzer) hands it each
 * connection's bytes and losses, and it answers through store_ops.
 */
#ifndef ESV_STORE_H
#define ESV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_conn;

struct store_conf {
	size_t		max_key;	/* bytes of one key */
	size_t		max_value;	/* bytes of one value */
	size_t		max_request;	/* bytes of one request, all in */
	size_t		max_nkeys;	/* keys named in one request */
	size_t		max_keys;	/* keys held */
	size_t		max_waiters;	/* keys waited on, all connections */
	size_t		max_conn_waiters; /* keys one connection waits on */
	size_t		max_queue;	/* items in one queue */
	size_t		max_bytes;	/* the budget: keys, values, queue
					 * items, input and output buffered */
};

struct store_ops {
	/*
	 * Queue bytes to the transport's connection; -1 when the peer is
	 * not keeping up: the store then drops it.
	 */
	int	(*send)(void *ctx, void *conn, const void *buf, size_t len);
	/*
	 * The store is done with conn (bad input, a limit): flush what is
	 * queued and hang up, then call store_lost for it.  The store sends
	 * it nothing more and ignores its input.
	 */
	void	(*close)(void *ctx, void *conn);
	void	*ctx;
	/*
	 * Optional: true while conn's replies are not being read; the
	 * store then leaves its next requests buffered until store_input
	 * is called again (with no bytes, once the replies have gone).
	 */
	bool	(*full)(void *ctx, void *conn);
};

/* The defaults of esv-stored(8). */
void		 store_conf_default(struct store_conf *conf);
struct store	*store_new(const struct store_conf *conf,
		    const struct store_ops *ops);
void		 store_free(struct store *st);

/* A new connection from peer ("addr:port", for the log); NULL: no memory. */
struct store_conn *store_accept(struct store *st, void *conn,
		    const char *peer);
/* Bytes read from sc; may end in ops->close for sc. */
void		 store_input(struct store *st, struct store_conn *sc,
		    const void *buf, size_t n);
/* The transport lost sc (EOF, error): sc is freed, ops->close not called. */
void		 store_lost(struct store *st, struct store_conn *sc);

/*
 * For the transport's timeout: requests sc completed, and whether part
 * of one is buffered.
 */
unsigned long	 store_conn_progress(const struct store_conn *sc,
		    bool *partial);
/*
 * The budget (max_bytes), shared with the transport's output buffers:
 * take n bytes of it (false: that would go past it), or give them back.
 */
bool		 store_mem_take(struct store *st, size_t n);
void		 store_mem_give(struct store *st, size_t n);
/* Taken even past the budget: what must never be refused. */
void		 store_mem_force(struct store *st, size_t n);
size_t		 store_mem_used(const struct store *st);

/* For status: keys held, and connections parked in a WAIT. */
size_t		 store_nkeys(const struct store *st);
size_t		 store_nwaiting(const struct store *st);

#endif
