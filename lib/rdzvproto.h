/*
 * The esv-rdzv wire protocol, version 1: the one reader and writer of its
 * lines, used by the server (esv-rdzv) and the client backend linked into
 * esv-supervise alike.  The protocol is documented in esv-rdzv(8).
 *
 * Every message is one line of at most RDZV_LINE_MAX bytes, '\n' included:
 * a verb and fields separated by single spaces.  Names (run id, node id,
 * role) are 1..RDZV_NAME_MAX characters of [A-Za-z0-9._:@+-].
 */
#ifndef ESV_RDZVPROTO_H
#define ESV_RDZVPROTO_H

#include <stdbool.h>
#include <stddef.h>

#define RDZV_PROTO_VERSION	1
#define RDZV_LINE_MAX		1024
#define RDZV_NAME_MAX		128
#define RDZV_ADDR_MAX		64	/* numeric IPv4/IPv6 or a host name */
#define RDZV_NONCE_LEN		32	/* hex characters */
#define RDZV_MAC_LEN		64	/* hex HMAC-SHA256 */
#define RDZV_TOKEN_MIN		16
#define RDZV_TOKEN_MAX		256
#define RDZV_TEXT_MAX		256	/* of an ERR message */

enum rdzv_verb {
	/* server -> client */
	RV_HELLO,	/* ESV-RDZV <version> <nonce> <heartbeat_ms> */
	RV_JOINED,	/* JOINED <round> <participants> <waiting> */
	RV_ROUND,	/* ROUND <round> <group_rank> <group_world_size>
			 *   <base_rank> <world_size> <base_role_rank>
			 *   <role_world_size> <master_addr> <master_port> */
	RV_RESTART,	/* RESTART <round>: stop the workers, JOIN again */
	RV_WAITING,	/* WAITING <n>: nodes on the wait list */
	RV_RELEASE,	/* RELEASE <round>: the exit barrier is passed */
	RV_CLOSED,	/* CLOSED: the job was closed while you waited */
	RV_ERR,		/* ERR <code> <text...>; the server then hangs up */
	/* client -> server */
	RV_JOIN,	/* see struct rdzv_join */
	RV_BARRIER,	/* BARRIER <round>: my group succeeded */
	RV_LEAVE,	/* LEAVE: my group went down by operator command */
	RV_CLOSE,	/* CLOSE: the job is over, refuse later joins */
	/* both ways */
	RV_PING,	/* PING: keep-alive */
};

/* What a joining node says about itself (JOIN's "state" field). */
enum rdzv_node_state {
	RS_NEW,		/* needs a round */
	RS_RUNNING,	/* reconnecting: runs round <round> as <group_rank> */
	RS_DONE,	/* reconnecting: waits in the exit barrier of <round> */
};

/*
 * JOIN 1 <run_id> <node_id> <mac> <nproc> <min> <max> <last_call_ms>
 *      <role> <addr> <port> new
 * JOIN 1 ... running|done <round> <group_rank> <group_world_size>
 */
struct rdzv_join {
	unsigned		version;
	char			run_id[RDZV_NAME_MAX + 1];
	char			node_id[RDZV_NAME_MAX + 1];
	char			mac[RDZV_MAC_LEN + 1];
	unsigned		nproc;
	unsigned		min_nodes, max_nodes;
	unsigned		last_call_ms;
	char			role[RDZV_NAME_MAX + 1];
	char			addr[RDZV_ADDR_MAX + 1];	/* for MASTER_ADDR */
	unsigned		port;				/* for MASTER_PORT */
	enum rdzv_node_state	state;
	unsigned		round, group_rank, group_world_size;
};

struct rdzv_round_msg {
	unsigned	round;
	unsigned	group_rank, group_world_size;
	unsigned	base_rank, world_size;
	unsigned	base_role_rank, role_world_size;
	char		master_addr[RDZV_ADDR_MAX + 1];
	unsigned	master_port;
};

struct rdzv_msg {
	enum rdzv_verb	verb;
	union {
		struct {
			unsigned version;
			char	 nonce[RDZV_NONCE_LEN + 1];
			unsigned heartbeat_ms;
		} hello;
		struct {
			unsigned round, participants, waiting;
		} joined;
		struct rdzv_round_msg	round;
		unsigned		n;	/* RESTART, WAITING, RELEASE,
						 * BARRIER: round or count */
		struct {
			char	code[16];
			char	text[RDZV_TEXT_MAX + 1];
		} err;
		struct rdzv_join	join;
	} u;
};

/*
 * Parse one line (without or with its '\n'; NUL-terminated).  Returns 0,
 * or -1 with a short reason in err ("unknown verb", "JOIN: field 5
 * (nproc): not a number in 1..4096", ...).  Unsigned fields are decimal,
 * range-checked; names are checked with rdzv_name_ok().
 */
int	rdzv_msg_parse(const char *line, struct rdzv_msg *m, char *err,
	    size_t errlen);

/*
 * Format m as one line ending in '\n' into buf.  Returns its length, or
 * -1 if it would not fit or a field is invalid (a name with a space...).
 */
int	rdzv_msg_format(char *buf, size_t len, const struct rdzv_msg *m);

bool	rdzv_name_ok(const char *s);

/*
 * Read the shared token: the first line of path, which must be a regular
 * file no one but its owner may read or write (mode & 077 == 0), of
 * RDZV_TOKEN_MIN..RDZV_TOKEN_MAX printable characters.  0, or -1 with
 * "path: why" in err.
 */
int	rdzv_token_load(const char *path, char *token, size_t len, char *err,
	    size_t errlen);

/* RDZV_NONCE_LEN random hex characters, NUL-terminated. */
void	rdzv_nonce(char out[RDZV_NONCE_LEN + 1]);

/*
 * The proof of the token: lowercase hex HMAC-SHA256, keyed with the
 * token, of "<nonce> <run_id> <node_id>".
 */
void	rdzv_mac(const char *token, const char *nonce, const char *run_id,
	    const char *node_id, char out[RDZV_MAC_LEN + 1]);
/* Constant-time comparison of two macs. */
bool	rdzv_mac_equal(const char *a, const char *b);

#endif
