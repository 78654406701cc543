/* Compression round trips for every format, the "must save a sector" rule, and decoding of
 * damaged input without reading or writing out of bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compress.h"

#define LEN BTK_MAX_COMPRESSED_IN

static void fill_text(uint8_t *p, size_t n)
{
	static const char words[] = "the quick brown fox jumps over the lazy dog 0123456789 ";
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)words[(i * 7 + i / 13) % (sizeof(words) - 1)];
}

static void fill_random(uint8_t *p, size_t n)
{
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static void test_roundtrip(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	size_t sizes[] = {1, 4095, 4096, 4097, 20000, LEN};
	(void)state;

	fill_text(in, LEN);
	for (int type = 1; type <= 3; type++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			long n = btk_compress(type, 0, 4096, in, sizes[s], z, 2 * LEN);
			if (sizes[s] <= 4096) { /* one sector cannot shrink */
				assert_int_equal(n, -E2BIG);
				continue;
			}
			assert_true(n > 0 && (size_t)n < sizes[s]);
			memset(back, 0xee, LEN);
			assert_int_equal(btk_decompress(type, 4096, z, (size_t)n, back, sizes[s]),
					 0);
			assert_memory_equal(back, in, sizes[s]);
		}
	free(in);
	free(z);
	free(back);
}

static void test_incompressible(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN);
	(void)state;

	fill_random(in, LEN);
	for (int type = 1; type <= 3; type++)
		assert_int_equal(btk_compress(type, 0, 4096, in, LEN, z, 2 * LEN), -E2BIG);
	free(in);
	free(z);
}

/* Garbage and truncated streams: an error or zero-filled output, never a crash (ASan). */
static void test_damaged(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	(void)state;

	fill_text(in, LEN);
	for (int type = 1; type <= 3; type++) {
		long n = btk_compress(type, 0, 4096, in, LEN, z, 2 * LEN);
		assert_true(n > 0);
		btk_decompress(type, 4096, z, (size_t)n / 2, back, LEN);
		for (long i = 0; i < n; i += 97)
			z[i] ^= 0x5a;
		btk_decompress(type, 4096, z, (size_t)n, back, LEN);
	}
	fill_random(z, 64);
	z[0] = 0xff, z[1] = 0xff, z[2] = 0, z[3] = 0; /* lzo total beyond the input */
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, 64, back, LEN), -EUCLEAN);
	free(in);
	free(z);
	free(back);
}

static void test_parse(void **state)
{
	int t, l;
	(void)state;

	assert_int_equal(btk_compress_parse("zstd:5", &t, &l), 0);
	assert_int_equal(t, BTK_COMPRESS_ZSTD);
	assert_int_equal(l, 5);
	assert_int_equal(btk_compress_parse("lzo", &t, &l), 0);
	assert_int_equal(t, BTK_COMPRESS_LZO);
	assert_int_equal(btk_compress_parse("zlib:10", &t, &l), -EINVAL);
	assert_int_equal(btk_compress_parse("lzo:1", &t, &l), -EINVAL);
	assert_int_equal(btk_compress_parse("gzip", &t, &l), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_incompressible),
	    cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
