#include <string.h>

#include <sys/endian.h>

#include "statusrec.h"

/* runit's TAI64 label: 2^62 + 10 + Unix seconds (no leap-second table). */
#define TAI64_BASE	((1ULL << 62) + 10)

void
runit_status_pack(uint8_t out[RUNIT_STATUS_LEN], const struct runit_status *st)
{
	be64enc(out, TAI64_BASE + (uint64_t)st->since.tv_sec);
	be32enc(out + 8, (uint32_t)st->since.tv_nsec);
	le32enc(out + 12, st->pid);
	out[16] = st->paused;
	out[17] = (uint8_t)st->want;
	out[18] = st->got_term;
	out[19] = st->state;
}

int
runit_status_unpack(const uint8_t *in, size_t len, struct runit_status *st)
{
	if (len != RUNIT_STATUS_LEN)
		return -1;
	memset(st, 0, sizeof(*st));
	st->since.tv_sec = (time_t)(be64dec(in) - TAI64_BASE);
	st->since.tv_nsec = be32dec(in + 8);
	st->pid = le32dec(in + 12);
	st->paused = in[16];
	st->want = (char)in[17];
	st->got_term = in[18];
	st->state = in[19];
	return 0;
}
