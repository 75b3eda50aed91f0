/*
 * The esv-rdzv wire protocol, version 3: the one reader and writer of its
 * lines, used by the server (esv-rdzv), the client backend linked into
 * esv-supervise and bench/rdzv_bench.c alike.  The protocol is documented
 * in esv-rdzv(8).
 *
 * Every message is one line of at most RDZV_LINE_MAX bytes, '\n' included:
 * a verb and fields separated by single spaces.  Names (run id, node id,
 * role) are 1..RDZV_NAME_MAX characters of [A-Za-z0-9._:@+-].
 *
 * Every line after the server's greeting is sealed: it ends in the MAC of
 * its direction, its sequence number and its text, under a session key
 * that only the token and both nonces give (rdzv_session_key).  The
 * server's first sealed line is thus its proof that it knows the token,
 * and nobody in the path can forge, alter, replay or reflect a line.
 */
#ifndef ESV_RDZVPROTO_H
#define ESV_RDZVPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDZV_PROTO_VERSION	3
#define RDZV_LINE_MAX		1024
#define RDZV_NAME_MAX		128
#define RDZV_ADDR_MAX		64	/* numeric IPv4/IPv6 or a host name */
#define RDZV_NONCE_LEN		32	/* hex characters */
#define RDZV_MAC_LEN		64	/* hex HMAC-SHA256 */
#define RDZV_KEY_LEN		32	/* raw session key */
#define RDZV_SEAL_LEN		(1 + RDZV_MAC_LEN)	/* " <mac>" */
#define RDZV_TOKEN_MIN		16
#define RDZV_TOKEN_MAX		256
#define RDZV_TEXT_MAX		256	/* of an ERR message */

enum rdzv_verb {
	/* server -> client */
	RV_HELLO,	/* ESV-RDZV <version> <nonce> <heartbeat_ms>
			 *   <lease_ms>: a node unheard for lease_ms is
			 *   dropped (0: no lease, esv-rdzv-etcd) */
	RV_JOINED,	/* JOINED <round> <participants> <waiting>: the
			 * answer to every JOIN new; ROUND <round> follows */
	RV_MEMBER,	/* MEMBER <round> <addr>: an address of a node of
			 * the round, to its group rank 0 before its ROUND
			 * (the agent store lets them in) */
	RV_ROUND,	/* ROUND <round> <group_rank> <group_world_size>
			 *   <base_rank> <world_size> <base_role_rank>
			 *   <role_world_size> <master_addr> <master_port> */
	RV_RESTART,	/* RESTART <round>: round opened; if you are in an
			 * older one, stop the workers and JOIN again */
	RV_WAITING,	/* WAITING <n>: nodes on the wait list */
	RV_RELEASE,	/* RELEASE <round>: the exit barrier is passed */
	RV_CLOSED,	/* CLOSED: the job was closed while you waited */
	RV_LOST,	/* LOST <round>: to the nodes in the exit barrier of
			 * <round>: a node of it was lost before it said it
			 * had finished; the barrier waits for it */
	RV_ERR,		/* ERR <code> <text...>; the server then hangs up */
	/* client -> server */
	RV_JOIN,	/* see struct rdzv_join */
	RV_BARRIER,	/* BARRIER <round>: my group succeeded */
	RV_LEAVE,	/* LEAVE: my group went down by operator command */
	RV_CLOSE,	/* CLOSE: the job is over, refuse later joins */
	/* both ways */
	RV_PING,	/* PING [<acked> [<lease_end>]]: keep-alive; the
			 * server's says how many of the node's lines it
			 * has received on this connection, which renews the
			 * node's lease.  lease_end, a CLOCK_MONOTONIC time
			 * in ms, only from esv-rdzv-etcd, on the node's own
			 * host, to a supervisor whose PINGs carry <acked>:
			 * when it gives up the etcd lease unless renewed */
};

/* What a joining node says about itself (JOIN's "state" field). */
enum rdzv_node_state {
	RS_NEW,		/* needs a round */
	RS_RUNNING,	/* reconnecting: runs round <round> as <group_rank> */
	RS_DONE,	/* reconnecting: waits in the exit barrier of <round> */
};

/*
 * JOIN 3 <run_id> <node_id> <cnonce> <nproc> <min> <max> <last_call_ms>
 *      <role> <addr> <port> new <round>
 * JOIN 3 ... running|done <round> <group_rank> <group_world_size>
 *
 * new: <round> is the first round the node may join (one past the last it
 * ran; 0 if none), so that a JOIN sent twice for one round is one JOIN.
 * <cnonce> is the client's nonce, the same in every JOIN of a connection.
 * Its first RDZV_INSTANCE_LEN characters are the same in every connection
 * of one supervisor (its instance tag, random for its life), the rest are
 * new for each: the server tells a node's reconnection from another node
 * that presents the same node id.
 */
#define RDZV_INSTANCE_LEN	16
struct rdzv_join {
	unsigned		version;
	char			run_id[RDZV_NAME_MAX + 1];
	char			node_id[RDZV_NAME_MAX + 1];
	char			cnonce[RDZV_NONCE_LEN + 1];
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
			unsigned lease_ms;
		} hello;
		struct {
			unsigned  acked;
			bool	  has_ack;
			long long lease_end;
			bool	  has_end;	/* has_ack too */
		} ping;
		struct {
			unsigned round, participants, waiting;
		} joined;
		struct rdzv_round_msg	round;
		struct {
			unsigned round;
			char	 addr[RDZV_ADDR_MAX + 1];
		} member;
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
/* A MASTER_ADDR the protocol carries: a numeric address or a host name. */
bool	rdzv_addr_ok(const char *s);

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

/* Lowercase hex HMAC-SHA256 of msg under key (RFC 2104). */
void	rdzv_hmac_hex(const void *key, size_t keylen, const char *msg,
	    char out[RDZV_MAC_LEN + 1]);
/* Constant-time comparison of two hex macs. */
bool	rdzv_mac_equal(const char *a, const char *b);

/*
 * The session key of a connection: HMAC-SHA256, keyed with the token, of
 * "esv-rdzv 2 session <server nonce> <client nonce>".
 */
void	rdzv_session_key(const char *token, const char *snonce,
	    const char *cnonce, uint8_t key[RDZV_KEY_LEN]);

/* Directions of a sealed line: part of what its MAC covers. */
#define RDZV_TO_SERVER	'c'
#define RDZV_TO_CLIENT	's'

/*
 * Format m and seal it: "<line> <mac>\n", the mac being the hex
 * HMAC-SHA256 under key of "<dir> <seq> <line>".  Its length, or -1.
 */
int	rdzv_msg_format_sealed(char *buf, size_t len, const struct rdzv_msg *m,
	    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq);
/*
 * Seal a line of any text the same way: "<text> <mac>\n" into buf.  Its
 * length, or -1 if it does not fit.  For test peers that say what a
 * parser would refuse.
 */
int	rdzv_seal(char *buf, size_t len, const char *text,
	    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq);
/*
 * Split a received sealed line (without '\n') into its text, left in
 * line, and its mac.  -1 if it does not end in " <64 hex digits>".
 */
int	rdzv_unseal_split(char *line, char mac[RDZV_MAC_LEN + 1]);
/* Is mac the seal of the text line, under key, as dir's seq-th line? */
bool	rdzv_seal_ok(const char *line, const char *mac,
	    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq);
/*
 * rdzv_unseal_split, rdzv_seal_ok, then rdzv_msg_parse: 0, or -1 with
 * err set ("bad MAC" when the seal does not hold).  Modifies line.
 */
int	rdzv_msg_parse_sealed(char *line, struct rdzv_msg *m,
	    const uint8_t key[RDZV_KEY_LEN], char dir, uint64_t seq,
	    char *err, size_t errlen);

#endif
