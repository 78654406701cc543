/* btk_json_str: every byte string becomes one valid JSON string that gives the bytes back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

/* What btk_json_str writes for len bytes at s, NUL-terminated (caller frees). */
static char *esc(const void *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	btk_json_str(f, s, len);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* s (a string literal, sizeof - 1 bytes, so embedded NULs count) must come out as want. */
#define EXPECT(s, want)                                                                            \
	do {                                                                                       \
		char *got_ = esc(s, sizeof(s) - 1);                                                \
		assert_string_equal(got_, want);                                                   \
		free(got_);                                                                        \
	} while (0)

static void test_ascii(void **state)
{
	(void)state;
	EXPECT("", "\"\"");
	EXPECT("plain name.txt", "\"plain name.txt\"");
	EXPECT(" ~/{}[]:,'", "\" ~/{}[]:,'\"");
}

static void test_json_escapes(void **state)
{
	(void)state;
	EXPECT("a\"b", "\"a\\\"b\"");
	EXPECT("a\\b", "\"a\\\\b\"");
	EXPECT("\\\"", "\"\\\\\\\"\"");
	EXPECT("l1\nl2\tx", "\"l1\\nl2\\tx\"");
	EXPECT("\x01\x08\x0c\r\x1b\x1f", "\"\\u0001\\u0008\\u000c\\u000d\\u001b\\u001f\"");
	EXPECT("del\x7f", "\"del\\u007f\"");
}

static void test_nul(void **state)
{
	char *got;
	(void)state;

	EXPECT("a\0b", "\"a\\u0000b\"");
	EXPECT("\0", "\"\\u0000\"");
	got = esc("", 1); /* the terminator itself, when the length says so */
	assert_string_equal(got, "\"\\u0000\"");
	free(got);
}

static void test_valid_utf8(void **state)
{
	(void)state;
	EXPECT("caf\xc3\xa9", "\"caf\xc3\xa9\"");			    /* U+00E9, 2 bytes */
	EXPECT("\xc2\x80\xdf\xbf", "\"\xc2\x80\xdf\xbf\"");		    /* U+0080, U+07FF */
	EXPECT("\xe2\x82\xac", "\"\xe2\x82\xac\"");			    /* U+20AC, 3 bytes */
	EXPECT("\xe0\xa0\x80\xef\xbf\xbf", "\"\xe0\xa0\x80\xef\xbf\xbf\""); /* U+0800, U+FFFF */
	EXPECT("\xed\x9f\xbf\xee\x80\x80", "\"\xed\x9f\xbf\xee\x80\x80\""); /* U+D7FF, U+E000 */
	EXPECT("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");		    /* U+1F600, 4 bytes */
	EXPECT("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"");
	EXPECT("\xc3\xa9\"\xe2\x82\xac\n", "\"\xc3\xa9\\\"\xe2\x82\xac\\n\"");
}

static void test_invalid_utf8(void **state)
{
	(void)state;
	/* lone continuation bytes */
	EXPECT("a\x80z", "\"a\\udc80z\"");
	EXPECT("\xbf\xbf", "\"\\udcbf\\udcbf\"");
	/* truncated sequences: at the end, and cut short by an ASCII byte */
	EXPECT("x\xc3", "\"x\\udcc3\"");
	EXPECT("\xe2\x82", "\"\\udce2\\udc82\"");
	EXPECT("\xf0\x9f\x98", "\"\\udcf0\\udc9f\\udc98\"");
	EXPECT("\xe2\x82z", "\"\\udce2\\udc82z\"");
	/* overlong encodings of '/', NUL and U+07FF / U+FFFF */
	EXPECT("\xc0\xaf", "\"\\udcc0\\udcaf\"");
	EXPECT("\xc1\xbf", "\"\\udcc1\\udcbf\"");
	EXPECT("\xc0\x80", "\"\\udcc0\\udc80\"");
	EXPECT("\xe0\x9f\xbf", "\"\\udce0\\udc9f\\udcbf\"");
	EXPECT("\xf0\x8f\xbf\xbf", "\"\\udcf0\\udc8f\\udcbf\\udcbf\"");
	/* surrogates encoded in UTF-8 (CESU-8 style) */
	EXPECT("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"");
	EXPECT("\xed\xbf\xbf", "\"\\udced\\udcbf\\udcbf\"");
	/* past U+10FFFF, and bytes that never occur in UTF-8 */
	EXPECT("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"");
	EXPECT("\xf5\xf8\xfe\xff", "\"\\udcf5\\udcf8\\udcfe\\udcff\"");
	/* Latin-1 text: each byte on its own; a valid sequence right after a bad byte survives */
	EXPECT("latin1-\xe9\xff", "\"latin1-\\udce9\\udcff\"");
	EXPECT("\xe9\xc3\xa9", "\"\\udce9\xc3\xa9\"");
}

static void test_cstr(void **state)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	(void)state;

	assert_non_null(f);
	btk_json_cstr(f, "q\"\xff");
	btk_json_cstr(f, "");
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "\"q\\\"\\udcff\"\"\"");
	free(buf);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes one output of btk_json_str back to bytes, as json.loads + surrogateescape would,
 * accepting only the forms json.h promises; returns the length, or -1 if out is malformed. */
static int unescape(const char *out, uint8_t *buf)
{
	size_t n = strlen(out), o = 0;

	if (n < 2 || out[0] != '"' || out[n - 1] != '"')
		return -1;
	for (size_t i = 1; i < n - 1; i++) {
		uint8_t c = (uint8_t)out[i];
		if (c < 0x20 || c == 0x7f || c == '"')
			return -1;
		if (c != '\\') {
			buf[o++] = c;
			continue;
		}
		c = (uint8_t)out[++i];
		if (c == '"' || c == '\\')
			buf[o++] = c;
		else if (c == 'n')
			buf[o++] = '\n';
		else if (c == 't')
			buf[o++] = '\t';
		else if (c == 'u' && i + 4 < n - 1 && hexval(out[i + 3]) >= 0 &&
			 hexval(out[i + 4]) >= 0) {
			int v = hexval(out[i + 3]) << 4 | hexval(out[i + 4]);
			if (!strncmp(out + i + 1, "00", 2)
				? v >= 0x80 || (v >= 0x20 && v != 0x7f)
				: strncmp(out + i + 1, "dc", 2) || v < 0x80)
				return -1;
			buf[o++] = (uint8_t)v;
			i += 4;
		} else {
			return -1;
		}
	}
	return (int)o;
}

/* Every byte value, alone and before every other: the output decodes to the input again. */
static void test_round_trip(void **state)
{
	uint8_t back[16];
	(void)state;

	for (int a = 0; a < 256; a++) {
		for (int b = -1; b < 256; b++) {
			uint8_t in[2] = {(uint8_t)a, (uint8_t)b};
			int len = b < 0 ? 1 : 2;
			char *got = esc(in, (size_t)len);

			assert_int_equal(unescape(got, back), len);
			assert_memory_equal(back, in, (size_t)len);
			free(got);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ascii),	 cmocka_unit_test(test_json_escapes),
	    cmocka_unit_test(test_nul),		 cmocka_unit_test(test_valid_utf8),
	    cmocka_unit_test(test_invalid_utf8), cmocka_unit_test(test_cstr),
	    cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
