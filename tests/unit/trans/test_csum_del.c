/* btk_csum_delete cuts the checksums of a range out of csum items, keeping what lies outside
 * it (the head in place, the tail re-keyed at the range's end), and btk_item_next/prev read
 * the transaction's own changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "fs/fs_write.h"
#include "create/mkfs.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "../test_image.h"

#define BASE (1ULL << 40) /* csum items need no data extent for this test */

static char path[64];

static int setup(void **state)
{
	const char *paths[1] = {path};
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/btk-test-csumdel-%d.img", (int)getpid());
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = 128ULL << 20;
	o.now = 1700000000;
	return btk_mkfs(&o, &res) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* The csum items at or after BASE as (start sector, count, first sum byte) triples. */
static int items(struct btk_trans *t, uint64_t out[][3], int max)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, BASE};
	uint8_t buf[64];
	uint32_t size;
	int n = 0;

	while (n < max &&
	       btk_item_next(t, BTRFS_CSUM_TREE_OBJECTID, &k, buf, sizeof(buf), &size) == 0 &&
	       k.type == BTRFS_EXTENT_CSUM_KEY) {
		out[n][0] = (k.offset - BASE) / fs->sectorsize;
		out[n][1] = size / fs->csum_size;
		out[n][2] = buf[0];
		n++;
		k.offset++;
	}
	return n;
}

static void test_cut(void **state)
{
	struct btk_fs *fs = test_open_image(path, true, 0);
	struct btk_trans *t;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	uint8_t *sums = malloc(64 * cs);
	uint64_t it[8][3];

	(void)state;
	/* sector i's sum starts with byte i */
	for (int i = 0; i < 64; i++)
		memset(sums + i * cs, i, cs);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_csum_insert_sums(t, BASE, sums, 64), 0);
	assert_int_equal(items(t, it, 8), 1);
	/* a hole in the middle: head kept, tail re-keyed */
	assert_int_equal(btk_csum_delete(t, BASE + 8 * ss, 16 * ss), 0);
	assert_int_equal(items(t, it, 8), 2);
	assert_int_equal(it[0][0], 0);
	assert_int_equal(it[0][1], 8);
	assert_int_equal(it[1][0], 24);
	assert_int_equal(it[1][1], 40);
	assert_int_equal(it[1][2], 24);
	/* across both items: the first loses its tail, the second its head */
	assert_int_equal(btk_csum_delete(t, BASE + 4 * ss, 30 * ss), 0);
	assert_int_equal(items(t, it, 8), 2);
	assert_int_equal(it[0][1], 4);
	assert_int_equal(it[1][0], 34);
	assert_int_equal(it[1][1], 30);
	assert_int_equal(it[1][2], 34);
	/* a range with no sums changes nothing; the whole range empties it */
	assert_int_equal(btk_csum_delete(t, BASE + 100 * ss, 4 * ss), 0);
	assert_int_equal(items(t, it, 8), 2);
	assert_int_equal(btk_csum_delete(t, BASE, 64 * ss), 0);
	assert_int_equal(items(t, it, 8), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	free(sums);
	test_close_image(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_cut)};
	return cmocka_run_group_tests(tests, setup, teardown);
}
