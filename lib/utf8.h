/*
 * Text from outside (a worker's error file, a parser's complaint about it,
 * a host name, a watchdog scope, a state file an operator edited) is bytes,
 * not UTF-8.  JSON needs valid UTF-8 (jansson refuses anything else, and a
 * refused string used to cost a whole document), and a terminal should not
 * get half a character.  Everything esv puts into JSON or prints from
 * outside input passes through here.
 */
#ifndef ESV_UTF8_H
#define ESV_UTF8_H

#include <stdbool.h>
#include <stddef.h>

struct json_t;

/* len bytes of s are valid UTF-8 (RFC 3629: no overlong, no surrogate). */
bool	utf8_valid(const char *s, size_t len);

/*
 * A malloc'd copy of s in which every byte that does not start a valid
 * sequence is replaced by U+FFFD; NULL only when out of memory.
 */
char	*utf8_fix(const char *s);

/*
 * strlcpy that never cuts inside a character: if src does not fit, the copy
 * ends before the first character that does not fit whole.  Returns
 * strlen(src), as strlcpy does, so that >= size still means "cut".
 */
size_t	utf8_strlcpy(char *dst, const char *src, size_t size);

/*
 * Make s, in place, one printable line of valid UTF-8, for a message that
 * quotes its input: a control character (a newline among them) or a byte
 * of no valid sequence becomes '?'.
 */
void	utf8_one_line(char *s);

/* A JSON string of s made valid (utf8_fix); NULL only when out of memory. */
struct json_t	*json_text(const char *s);

#endif
