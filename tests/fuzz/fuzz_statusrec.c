/*
 * runit's binary status record (supervisor/report/statusrec.c), as runit's sv(8) and
 * esv-ctl read supervise/status: every 20 bytes unpack, and pack gives
 * the same bytes back.
 */
#include <string.h>

#include "fuzz.h"
#include "../../supervisor/report/statusrec.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[RUNIT_STATUS_LEN];
	struct runit_status st;

	if (runit_status_unpack(data, size, &st) == -1) {
		CHECK(size != RUNIT_STATUS_LEN);
		return 0;
	}
	CHECK(size == RUNIT_STATUS_LEN);
	runit_status_pack(again, &st);
	CHECK(memcmp(again, data, RUNIT_STATUS_LEN) == 0);
	return 0;
}
