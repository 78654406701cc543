/* json.h (layer 1) — the one JSON string escaper every tool's --json output uses.
 *
 * btk_json_str() writes len bytes as one quoted JSON string (RFC 8259) to the caller's stream.
 * The output is valid JSON, and valid UTF-8, for ANY byte string, and no information is lost:
 *
 *  - valid UTF-8 (shortest form, no surrogates, at most U+10FFFF) is copied as it is, except:
 *  - '"' and '\\' become \" and \\; newline and tab become \n and \t;
 *  - every other control character (0x00..0x1f, NUL included) and DEL (0x7f) becomes \u00XX;
 *  - every byte that is not part of valid UTF-8 (a lone continuation byte, a truncated or
 *    overlong sequence, a UTF-8-encoded surrogate, 0xc0, 0xc1, 0xf5..0xff) becomes the lone
 *    surrogate \udcXX, XX its value (0x80..0xff); only the offending byte is escaped, decoding
 *    resumes at the next one.
 *
 * (XX: two lowercase hex digits.) This is Python's "surrogateescape": a consumer gets the
 * original bytes back with json.loads(text) followed by s.encode("utf-8", "surrogateescape")
 * (os.fsencode() for file names). Strict JSON parsers accept the output; ones that reject lone
 * surrogates would reject only strings that were not valid UTF-8 to begin with.
 *
 * Only writes to f, never elsewhere; write errors are left in f's error flag. */
#ifndef BTK_JSON_H
#define BTK_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

void btk_json_str(FILE *f, const void *s, size_t len);
/* The same for a NUL-terminated string (which therefore holds no NUL). */
void btk_json_cstr(FILE *f, const char *s);

/* '"NAME": V' for each space-separated name in names and the number at the same index of
 * v[0..n-1], joined by ", " (the caller writes what stands around them): the counters of a
 * report. BTK_JSON_U64S(f, "a b", x, y) counts the values itself. */
void btk_json_u64s(FILE *f, const char *names, const uint64_t *v, size_t n);
#define BTK_JSON_U64S(f, names, ...)                                                               \
	btk_json_u64s(f, names, (const uint64_t[]){__VA_ARGS__},                                   \
		      sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

#endif
