/* btk_trans_writeback: a long transaction whose dirty tree blocks are written early, with a
 * cache too small to hold the tree, must commit the same tree as if everything had stayed in
 * memory; and before its commit the old filesystem must still be what is on disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree/cache.h"
#include "base/error.h"
#include "create/mkfs.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "volumes/volumes.h"
#include "../test_image.h"

#define TTREE 100ULL /* a tree id no kernel or check code gives meaning to */
#define NKEYS 40000

static char img[64];

static struct btk_key key_of(uint32_t i)
{
	/* spread over the key space so that inserts land all over the tree */
	struct btk_key k = {(uint64_t)(i * 2654435761U) % 100003 + 1, 1, i};
	return k;
}

static uint32_t size_of(uint32_t i)
{
	return 8 + (i * 7919U) % 300;
}

static void fill(uint8_t *d, uint32_t i, uint32_t size)
{
	for (uint32_t b = 0; b < size; b++)
		d[b] = (uint8_t)(i * 31 + b);
}

static int count_dirty(void *ctx, struct btk_block *b)
{
	(void)b;
	(*(int *)ctx)++;
	return 0;
}

static int fs_check(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "btrfs check --readonly %s >%s.log 2>&1 || (tail -15 %s.log >&2; false)", img, img,
		 img);
	return system(cmd);
}

/* Every key i with present[i] is in TTREE with its data; nothing else is. */
static void verify(const uint8_t *present)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct btk_root root;
	uint8_t want[512];
	uint32_t found = 0, expect = 0;

	assert_int_equal(btk_root_find(fs, TTREE, &root), 0);
	for (uint32_t i = 0; i < NKEYS; i++) {
		struct btk_key k = key_of(i);
		struct btk_path p;
		uint32_t size;
		int ret;

		btk_path_init(&p);
		ret = btk_search(fs, &root, &k, &p);
		assert_true(ret >= 0);
		expect += present[i];
		if (ret == 0) {
			const uint8_t *d = btk_path_data(&p, &size);
			assert_true(present[i]);
			assert_int_equal(size, size_of(i));
			fill(want, i, size);
			assert_memory_equal(d, want, size);
			found++;
		}
		btk_path_release(&p);
	}
	assert_int_equal(found, expect);
	test_close_image(fs);
}

static void test_writeback(void **state)
{
	uint8_t *present = calloc(NKEYS, 1), buf[512];
	struct btk_fs *fs;
	struct btk_trans *t;
	int dirty = 0;
	(void)state;

	fs = test_open_image(img, true, 1); /* a 1 MiB cache: the tree cannot stay in memory */
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (uint32_t i = 0; i < NKEYS; i++) {
		struct btk_key k = key_of(i);
		fill(buf, i, size_of(i));
		assert_int_equal(btk_item_insert(t, TTREE, &k, buf, size_of(i)), 0);
		present[i] = 1;
		/* delete some older keys: changes blocks that were written and maybe dropped */
		if (i % 5 == 4) {
			uint32_t j = (i * 40503U) % i;
			if (present[j]) {
				struct btk_key kj = key_of(j);
				assert_int_equal(btk_item_delete(t, TTREE, &kj), 0);
				present[j] = 0;
			}
		}
		if (i % 100 == 99)
			assert_int_equal(btk_trans_writeback(t, 64 << 10), 0);
	}
	assert_int_equal(btk_trans_writeback(t, 0), 0);
	assert_int_equal(btk_cache_for_each_dirty(fs->cache, count_dirty, &dirty), 0);
	assert_int_equal(dirty, 0);

	/* written early but not committed: the old filesystem is intact and lacks the tree */
	{
		struct btk_fs *ro = test_open_image(img, false, 0);
		struct btk_root r;
		assert_int_equal(btk_root_find(ro, TTREE, &r), -ENOENT);
		test_close_image(ro);
		assert_int_equal(fs_check(), 0);
	}
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	assert_int_equal(fs_check(), 0);
	verify(present);
	free(present);
}

/* A transaction that changes nothing commits nothing: the image stays clean and keeps its
 * generation (it used to get superblocks of a new generation over an old root tree). */
static void test_empty_commit(void **state)
{
	struct btk_fs *fs = test_open_image(img, true, 0);
	uint64_t gen = fs->generation;
	struct btk_trans *t;
	(void)state;

	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	assert_int_equal(fs_check(), 0);
	fs = test_open_image(img, false, 0);
	assert_int_equal(fs->generation, gen);
	test_close_image(fs);
}

static int setup(void **state)
{
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	const char *paths[1] = {img};
	int fd;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-test-wb-XXXXXX");
	fd = mkstemp(img);
	if (fd < 0)
		return -1;
	close(fd);
	unlink(img);
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = 1ULL << 30;
	return btk_mkfs(&o, &res);
}

static int teardown(void **state)
{
	char log[80];
	(void)state;

	snprintf(log, sizeof(log), "%s.log", img);
	unlink(img);
	unlink(log);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_empty_commit),
					   cmocka_unit_test(test_writeback)};
	return cmocka_run_group_tests(tests, setup, teardown);
}
