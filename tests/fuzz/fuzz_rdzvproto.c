/*
 * The esv-rdzv wire as either side reads it (lib/rdzvproto.c): the input
 * is one line.  Unsealed, as a greeting is read; and sealed by the harness
 * under a fixed session key, so that the parser behind the seal is reached
 * too.  What parses formats again and parses to the same message; a
 * line whose seal does not hold is never parsed.
 */
#include <string.h>

#include "fuzz.h"
#include "rdzvproto.h"

static void
roundtrip(const struct rdzv_msg *m)
{
	char buf[RDZV_LINE_MAX + 1], err[256];
	struct rdzv_msg again;
	int n;

	if ((n = rdzv_msg_format(buf, sizeof(buf), m)) == -1)
		return;		/* a field parse takes but format refuses */
	CHECK(n > 0 && buf[n - 1] == '\n' && (size_t)n == strlen(buf));
	CHECK(rdzv_msg_parse(buf, &again, err, sizeof(err)) == 0);
	CHECK(again.verb == m->verb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[RDZV_KEY_LEN] = "0123456789abcdef0123456789abcde";
	char line[RDZV_LINE_MAX + RDZV_SEAL_LEN + 2], msg[RDZV_LINE_MAX + 32];
	char mac[RDZV_MAC_LEN + 1], err[256], *text;
	struct rdzv_msg m;

	if (size > RDZV_LINE_MAX)
		return 0;
	text = fuzz_str(data, size);
	err[0] = '\0';
	if (rdzv_msg_parse(text, &m, err, sizeof(err)) == 0)
		roundtrip(&m);
	else
		CHECK(err[0] != '\0');

	/* The same text, sealed as the 7th line to the server. */
	if (strchr(text, '\n') == NULL) {
		snprintf(msg, sizeof(msg), "%c %u %s", RDZV_TO_SERVER, 7, text);
		rdzv_hmac_hex(key, sizeof(key), msg, mac);
		snprintf(line, sizeof(line), "%s %s", text, mac);
		if (rdzv_msg_parse_sealed(line, &m, key, RDZV_TO_SERVER, 7, err,
		    sizeof(err)) == 0)
			roundtrip(&m);
		/* Wrong direction or number: never accepted. */
		snprintf(line, sizeof(line), "%s %s", text, mac);
		CHECK(rdzv_msg_parse_sealed(line, &m, key, RDZV_TO_CLIENT, 7,
		    err, sizeof(err)) == -1);
		snprintf(line, sizeof(line), "%s %s", text, mac);
		CHECK(rdzv_msg_parse_sealed(line, &m, key, RDZV_TO_SERVER, 8,
		    err, sizeof(err)) == -1);
	}
	/* As received: perhaps sealed, under a key nobody gave it. */
	rdzv_msg_parse_sealed(text, &m, key, RDZV_TO_CLIENT, 0, err,
	    sizeof(err));
	free(text);
	return 0;
}
