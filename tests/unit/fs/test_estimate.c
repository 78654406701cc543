/* fs_estimate: the limits match the kernel's (BTRFS_MAX_XATTR_SIZE, the inline limit of a
 * 4 KiB node), and the metadata estimate covers the items at two thirds fill, grows with
 * every count, and has the fixed trees' floor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/fs_estimate.h"

static void test_limits(void **state)
{
	(void)state;
	assert_int_equal(btk_xattr_max(16384), 16228); /* the kernel's for a 16 KiB node */
	assert_int_equal(btk_xattr_max(4096), 3940);
	assert_int_equal(btk_inline_max_for(4096), 3949);
	assert_int_equal(btk_leaf_max_item(65536), 65536 - 101 - 25);
}

static void test_floor_and_growth(void **state)
{
	struct btk_meta_counts c = {0};
	uint64_t base, prev;
	uint64_t *f[] = {&c.inodes,	  &c.names,	   &c.name_bytes,   &c.file_extents,
			 &c.data_extents, &c.inline_items, &c.inline_bytes, &c.xattrs,
			 &c.xattr_bytes,  &c.csum_blocks,  &c.block_groups};

	(void)state;
	base = btk_meta_estimate(&c, 16384, 4);
	assert_true(base >= 72 * 16384ULL);
	prev = base;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		*f[i] = 1000000;
		uint64_t e = btk_meta_estimate(&c, 16384, 4);
		assert_true(e > prev);
		prev = e;
	}
}

static void test_covers_items(void **state)
{
	/* 100k inodes, one 20-byte name each: inode items 185 bytes, names 3 * (55..) */
	struct btk_meta_counts c = {.inodes = 100000, .names = 100000, .name_bytes = 2000000};
	uint64_t items = 100000ULL * 185 + 100000ULL * (2 * 55 + 43) + 3 * 2000000ULL;
	uint64_t e = btk_meta_estimate(&c, 16384, 4);

	(void)state;
	assert_true(e >= items * 3 / 2);
	assert_true(e <= items * 2); /* and not wildly more */
	/* a smaller node needs more blocks' worth of headers, never less room */
	assert_true(btk_meta_estimate(&c, 4096, 4) >= e * 99 / 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_floor_and_growth),
	    cmocka_unit_test(test_covers_items),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
