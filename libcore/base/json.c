/* json.c — JSON string escaping (guarantees in json.h). */
#include <stdint.h>
#include <string.h>

#include "base/json.h"

/* Length (2..4) of the valid UTF-8 sequence at p, whose first byte is >= 0x80, or 0 if the
 * bytes are not one: rejects stray continuation bytes, truncated sequences, overlong forms,
 * surrogates and code points past U+10FFFF. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint8_t b = p[0];
	size_t len;
	uint32_t cp, min;

	if (b >= 0xc2 && b <= 0xdf) {
		len = 2, cp = b & 0x1f, min = 0x80;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3, cp = b & 0x0f, min = 0x800;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4, cp = b & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Copies the bytes that need no escape in runs: one stdio call per byte would dominate the
 * run time of a tree dump. */
void btk_json_str(FILE *f, const void *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = s;
	size_t run = 0, i = 0;

	flockfile(f);
	putc_unlocked('"', f);
	while (i < len) {
		uint8_t b = p[i];
		char esc[6] = {'\\'};
		size_t n = 2, l;

		if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
			i++;
			continue;
		}
		if (b >= 0x80 && (l = utf8_len(p + i, len - i))) {
			i += l;
			continue;
		}
		if (i > run)
			fwrite_unlocked(p + run, 1, i - run, f);
		if (b == '"' || b == '\\') {
			esc[1] = (char)b;
		} else if (b == '\n') {
			esc[1] = 'n';
		} else if (b == '\t') {
			esc[1] = 't';
		} else { /* other control characters, DEL: \u00XX; not UTF-8: \udcXX */
			memcpy(esc + 1, b >= 0x80 ? "udc" : "u00", 3);
			esc[4] = hex[b >> 4];
			esc[5] = hex[b & 15];
			n = 6;
		}
		fwrite_unlocked(esc, 1, n, f);
		run = ++i;
	}
	if (i > run)
		fwrite_unlocked(p + run, 1, i - run, f);
	putc_unlocked('"', f);
	funlockfile(f);
}

void btk_json_cstr(FILE *f, const char *s)
{
	btk_json_str(f, s, strlen(s));
}

void btk_json_u64s(FILE *f, const char *names, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n && *names; i++) {
		size_t len = strcspn(names, " ");
		fprintf(f, "%s\"%.*s\": %llu", i ? ", " : "", (int)len, names,
			(unsigned long long)v[i]);
		names += len + (names[len] == ' ');
	}
}
