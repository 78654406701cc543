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

#include <lzo/lzo1x.h>

#include "base/compress.h"
#include "base/error.h"

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

/* btk_decompress_whole: a whole stream of the right type gives its decoded length (a tail not
 * sector aligned too), with the sector's zero padding after it; another type, a cut stream,
 * bytes after its end that are not zero, plain data: -EUCLEAN. */
static void test_whole(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	size_t sizes[] = {9000, 20000, LEN};
	(void)state;

	fill_text(in, LEN);
	for (int type = 1; type <= 3; type++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			long n = btk_compress(type, 0, 4096, in, sizes[s], z, 2 * LEN);
			assert_true(n > 0);
			size_t disk = ((size_t)n + 4095) / 4096 * 4096;
			memset(z + n, 0, disk - (size_t)n);
			assert_int_equal(btk_decompress_whole(type, 4096, z, disk, back, LEN),
					 (long)sizes[s]);
			assert_memory_equal(back, in, sizes[s]);
			for (int other = 1; other <= 3; other++)
				if (other != type)
					assert_int_equal(
					    btk_decompress_whole(other, 4096, z, disk, back, LEN),
					    -EUCLEAN);
			assert_int_equal(
			    btk_decompress_whole(type, 4096, z, (size_t)n / 2, back, LEN),
			    -EUCLEAN);
			if ((size_t)n < disk) {
				z[disk - 1] = 1;
				assert_int_equal(
				    btk_decompress_whole(type, 4096, z, disk, back, LEN), -EUCLEAN);
			}
		}
	fill_random(z, LEN);
	for (int type = 1; type <= 3; type++)
		assert_int_equal(btk_decompress_whole(type, 4096, z, LEN, back, LEN), -EUCLEAN);
	btk_err_clear();
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

/* lzo framing written here as the kernel writes it, with seg bytes of input per segment (the
 * kernel: one sector), so that segments of any size can be made. Returns the total. */
static size_t lzo_frame(uint32_t sectorsize, size_t seg, const uint8_t *in, size_t len,
			uint8_t *out)
{
	static uint8_t wrk[LZO1X_1_MEM_COMPRESS];
	size_t pos = 4;

	assert_int_equal(lzo_init(), LZO_E_OK);
	for (size_t done = 0; done < len; done += seg) {
		size_t n = len - done < seg ? len - done : seg;
		if (sectorsize - pos % sectorsize < 4) {
			memset(out + pos, 0, sectorsize - pos % sectorsize);
			pos += sectorsize - pos % sectorsize;
		}
		lzo_uint slen = 0;
		assert_int_equal(lzo1x_1_compress(in + done, n, out + pos + 4, &slen, wrk),
				 LZO_E_OK);
		out[pos] = (uint8_t)slen, out[pos + 1] = (uint8_t)(slen >> 8);
		out[pos + 2] = (uint8_t)(slen >> 16), out[pos + 3] = 0;
		pos += 4 + slen;
	}
	out[0] = (uint8_t)pos, out[1] = (uint8_t)(pos >> 8), out[2] = (uint8_t)(pos >> 16);
	out[3] = 0;
	return pos;
}

/* Segments larger than 4 KiB (16K and 64K sectors: one sector per segment) decode whole. */
static void test_lzo_big_segments(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	static const uint32_t sizes[] = {4096, 16384, 65536};
	(void)state;

	fill_text(in, LEN);
	for (int k = 0; k < 3; k++) {
		uint32_t ss = sizes[k];
		size_t n = lzo_frame(ss, ss, in, LEN, z);
		memset(back, 0xee, LEN);
		assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, ss, z, n, back, LEN), 0);
		assert_memory_equal(back, in, LEN);
		/* a shorter ram_bytes takes the start; a longer one is zero-filled */
		memset(back, 0xee, LEN);
		assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, ss, z, n, back, 70000), 0);
		assert_memory_equal(back, in, 70000);
		n = lzo_frame(ss, ss, in, 100000, z);
		memset(back, 0xee, LEN);
		assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, ss, z, n, back, LEN), 0);
		assert_memory_equal(back, in, 100000);
		for (size_t i = 100000; i < LEN; i++)
			assert_int_equal(back[i], 0);
	}
	free(in);
	free(z);
	free(back);
}

/* btk's lzo frames, parsed here and decoded with liblzo itself: one segment per sector, as the
 * kernel writes them (64 KiB segments on 64 KiB sectors), headers never across a sector. */
static void test_lzo_pack_segments(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	static const uint32_t sizes[] = {4096, 16384, 65536};
	(void)state;

	fill_text(in, LEN);
	for (int k = 0; k < 3; k++) {
		uint32_t ss = sizes[k];
		long n = btk_compress(BTK_COMPRESS_LZO, 0, ss, in, LEN, z, 2 * LEN);
		size_t pos = 4, done = 0, segs = 0;
		assert_true(n > 0);
		assert_int_equal(z[0] | z[1] << 8 | z[2] << 16 | (uint32_t)z[3] << 24, n);
		while (pos < (size_t)n) {
			if (ss - pos % ss < 4)
				pos += ss - pos % ss; /* padding before a sector boundary */
			uint32_t sl = z[pos] | z[pos + 1] << 8 | z[pos + 2] << 16;
			lzo_uint out = ss;
			assert_int_equal(
			    lzo1x_decompress_safe(z + pos + 4, sl, back + done, &out, NULL),
			    LZO_E_OK);
			assert_int_equal(out, LEN - done < ss ? LEN - done : ss);
			done += out, pos += 4 + sl, segs++;
		}
		assert_int_equal(pos, (size_t)n);
		assert_int_equal(segs, LEN / ss);
		assert_memory_equal(back, in, LEN);
	}
	free(in);
	free(z);
	free(back);
}

/* Corrupt framing is an error, not output cut and zero-filled. */
static void test_lzo_corrupt(void **state)
{
	uint8_t *in = malloc(LEN), *z = malloc(2 * LEN), *back = malloc(LEN);
	size_t n;
	(void)state;

	fill_text(in, LEN);
	/* a segment holding two sectors of data */
	n = lzo_frame(4096, 8192, in, LEN, z);
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, n, back, LEN), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "within one sector"));
	/* a segment length beyond lzo's bound for one sector (the data itself is fine) */
	n = lzo_frame(4096, 4096, in, 4096, z);
	memset(z + n, 0, 5000);
	z[4] = (uint8_t)(4096 + 256 + 68), z[5] = (uint8_t)((4096 + 256 + 68) >> 8);
	n += 5000;
	z[0] = (uint8_t)n, z[1] = (uint8_t)(n >> 8);
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, n, back, 4096), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "has length"));
	/* a segment cut short: its first part decodes, then the input ends */
	n = lzo_frame(65536, 65536, in, 65536, z);
	size_t half = (n - 8) / 2;
	z[4] = (uint8_t)half, z[5] = (uint8_t)(half >> 8), z[6] = 0;
	z[0] = (uint8_t)(8 + half), z[1] = (uint8_t)((8 + half) >> 8), z[2] = 0;
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 65536, z, 8 + half, back, 65536),
			 -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "does not decode"));
	/* a segment length running past the total */
	n = lzo_frame(4096, 4096, in, 20000, z);
	z[4] = 0xff, z[5] = 0xff;
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, n, back, 20000), -EUCLEAN);
	/* a zero-length segment, a header cut by the total */
	n = lzo_frame(4096, 4096, in, 20000, z);
	z[4] = z[5] = z[6] = z[7] = 0;
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, n, back, 20000), -EUCLEAN);
	n = lzo_frame(4096, 4096, in, 20000, z);
	z[n] = 1, z[n + 1] = 0;
	z[0] = (uint8_t)(n + 2), z[1] = (uint8_t)((n + 2) >> 8);
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 4096, z, n + 2, back, 24576), -EUCLEAN);
	/* sector sizes lzo framing cannot have */
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 131072, z, n, back, 20000), -EINVAL);
	assert_int_equal(btk_decompress(BTK_COMPRESS_LZO, 6144, z, n, back, 20000), -EINVAL);
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
	    cmocka_unit_test(test_roundtrip),	      cmocka_unit_test(test_incompressible),
	    cmocka_unit_test(test_damaged),	      cmocka_unit_test(test_lzo_big_segments),
	    cmocka_unit_test(test_lzo_corrupt),	      cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_lzo_pack_segments), cmocka_unit_test(test_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
