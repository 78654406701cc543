/* The dump writer (image/metadump.h): items spanning several clusters, written at levels 0, 1
 * and 9 with 1, 2 and 4 compression threads, read back by the dump reader byte for byte; at one
 * level the file is the same whatever the thread count (the compressors work through one
 * cluster while the next is filled, and level 9 splits the items between its two
 * compressors in dump order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/metadump.h"

#define BLK   4096u
#define NBLK  1100u	     /* enough items for several clusters */
#define BASE  (1ULL << 24)   /* logical address of block 0 */
#define SUPER (64ULL * 1024) /* the superblock item */

/* Block i: a leaf-like mix of repeats and a counter, compressible but not trivially. */
static void fill_block(uint8_t *p, uint32_t i)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL * (i + 1);

	for (uint32_t j = 0; j < BLK; j++) {
		if (j % 64 == 0)
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[j] = j % 64 < 8 ? (uint8_t)(x >> (8 * (j % 8))) : (uint8_t)(j / 64 + i % 3);
	}
}

/* Logical address of block i: runs of 3 adjacent blocks, then a gap, so that items
 * differ in length; every 97th block repeats the run up to 70 blocks (one item reaches
 * BTK_MD_ITEM_MAX_V0 and the next starts right after it). */
static uint64_t block_at(uint32_t i)
{
	uint64_t at = BASE;

	for (uint32_t k = 0; k < i; k++)
		at += BLK + ((k % 97) < 70 && k / 97 % 2 ? 0 : (k % 3 == 2 ? BLK : 0));
	return at;
}

static uint8_t *write_dump(int level, int threads, size_t *size)
{
	struct btk_md_writer *w;
	struct btk_md_wstats st;
	uint8_t buf[BLK];
	FILE *f = tmpfile();

	assert_non_null(f);
	assert_int_equal(btk_md_writer_open(fileno(f), 0, level, threads, &w), 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(btk_md_add(w, SUPER, buf, BLK, false), 0);
	for (uint32_t i = 0; i < NBLK; i++) {
		fill_block(buf, i);
		assert_int_equal(btk_md_add(w, block_at(i), buf, BLK, true), 0);
	}
	assert_int_equal(btk_md_finish(w, &st), 0);
	assert_int_equal(st.bytes_in, (uint64_t)(NBLK + 1) * BLK);
	assert_true(st.clusters >= 3);
	*size = (size_t)st.bytes_out;
	assert_int_equal(lseek(fileno(f), 0, SEEK_END), (off_t)*size);
	uint8_t *all = malloc(*size);
	assert_non_null(all);
	assert_int_equal(pread(fileno(f), all, *size, 0), (ssize_t)*size);

	/* read back: every block exactly once, at its address, with its bytes */
	struct btk_md_reader *r;
	uint32_t next = 0;
	assert_int_equal(btk_md_reader_open(fileno(f), "test", &r), 0);
	assert_true(r->nitems >= 2);
	for (size_t i = 0; i < r->nitems; i++) {
		uint8_t *p;
		size_t len;
		assert_int_equal(btk_md_item_read(r, i, &p, &len), 0);
		assert_int_equal(len % BLK, 0);
		assert_true(len <= BTK_MD_ITEM_MAX_V0);
		if (i == 0) {
			assert_int_equal(r->items[0].logical, SUPER);
			assert_int_equal(len, BLK);
		} else {
			for (size_t off = 0; off < len; off += BLK, next++) {
				assert_true(next < NBLK);
				assert_int_equal(r->items[i].logical + off, block_at(next));
				fill_block(buf, next);
				assert_memory_equal(p + off, buf, BLK);
			}
		}
		free(p);
	}
	assert_int_equal(next, NBLK);
	/* one reused scratch (as each restore thread has), items in reverse order: the same
	 * bytes as the allocating read */
	struct btk_md_scratch sc = {0};
	for (size_t i = r->nitems; i-- > 0;) {
		uint8_t *p;
		const uint8_t *q;
		size_t len, qlen;
		assert_int_equal(btk_md_item_read(r, i, &p, &len), 0);
		assert_int_equal(btk_md_item_read_into(r, i, &sc, &q, &qlen), 0);
		assert_int_equal(qlen, len);
		assert_memory_equal(q, p, len);
		free(p);
	}
	btk_md_scratch_free(&sc);
	btk_md_reader_close(r);
	fclose(f);
	return all;
}

static void test_levels_threads(void **state)
{
	static const int levels[] = {0, 1, 9};

	(void)state;
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		size_t size1, size;
		uint8_t *one = write_dump(levels[l], 1, &size1), *other;
		for (int t = 2; t <= 4; t += 2) {
			other = write_dump(levels[l], t, &size);
			assert_int_equal(size, size1);
			assert_memory_equal(other, one, size);
			free(other);
		}
		if (levels[l])
			assert_true(size1 < (size_t)NBLK * BLK / 2);
		free(one);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_levels_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
