#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "utf8.h"

#define REPLACEMENT	"\xef\xbf\xbd"	/* U+FFFD */

/* Length of the valid sequence at p (n bytes left), or 0 if there is none. */
static size_t
seq_len(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		if (p[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f;	/* beyond U+10FFFF */
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

bool
utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < len) {
		if ((k = seq_len(p + i, len - i)) == 0)
			return false;
		i += k;
	}
	return true;
}

char *
utf8_fix(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, o = 0, k;
	char *out;

	/* Each bad byte grows to three: room for the worst case. */
	if (len > (SIZE_MAX - 1) / 3 || (out = malloc(len * 3 + 1)) == NULL)
		return NULL;
	while (i < len) {
		if ((k = seq_len(p + i, len - i)) == 0) {
			memcpy(out + o, REPLACEMENT, 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

size_t
utf8_strlcpy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src), cut, back;

	if (size == 0)
		return len;
	cut = len < size ? len : size - 1;
	/* Back off a continuation byte: the character it belongs to is cut. */
	if (cut < len)
		for (back = 0; back < 3 && cut > 0 &&
		    ((unsigned char)src[cut] & 0xc0) == 0x80; back++)
			cut--;
	memcpy(dst, src, cut);
	dst[cut] = '\0';
	return len;
}

void
utf8_one_line(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = strlen(s), i = 0, k;

	while (i < len) {
		if ((k = seq_len(p + i, len - i)) == 0 || p[i] < 0x20 ||
		    p[i] == 0x7f) {
			p[i++] = '?';
			continue;
		}
		i += k;
	}
}

json_t *
json_text(const char *s)
{
	json_t *j;
	char *fixed;

	if (utf8_valid(s, strlen(s)))
		return json_string(s);
	if ((fixed = utf8_fix(s)) == NULL)
		return NULL;
	j = json_string(fixed);
	free(fixed);
	return j;
}
