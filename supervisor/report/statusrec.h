/*
 * runit's supervise/status record, as runsv writes it and sv(8) reads it
 * (tests/integration/test_runit_record.sh checks it against runsv), 20 bytes:
 *   0-11  TAI64N of the last start or stop (big-endian label, then nsec)
 *   12-15 pid, little-endian (runit inherits daemontools' byte order)
 *   16    paused flag   17 want 'u' or 'd'   18 got-TERM flag
 *   19    state: 0 down, 1 run, 2 finish
 */
#ifndef ESV_STATUSREC_H
#define ESV_STATUSREC_H

#include <stdint.h>
#include <stddef.h>
#include <time.h>

#define RUNIT_STATUS_LEN	20

enum { RUNIT_DOWN = 0, RUNIT_RUN = 1, RUNIT_FINISH = 2 };

struct runit_status {
	struct timespec	since;		/* wall clock */
	uint32_t	pid;
	uint8_t		paused;
	char		want;		/* 'u' or 'd' */
	uint8_t		got_term;
	uint8_t		state;
};

void	runit_status_pack(uint8_t out[RUNIT_STATUS_LEN],
	    const struct runit_status *st);
/* 0, or -1 if len is not RUNIT_STATUS_LEN. */
int	runit_status_unpack(const uint8_t *in, size_t len,
	    struct runit_status *st);

#endif
