/* fs layer writes judged by btrfs check: items that can never grow must not cost blocks, and
 * names, hard links past the INODE_REF limit (extrefs), xattrs and data written through the
 * fs layer make a clean filesystem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../test_image.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "fs/fs_write.h"
#include "base/csum.h"
#include "create/mkfs.h"
#include "tree/tree.h"
#include "volumes/volumes.h"

static char img[64];

static int make_fs(void **state)
{
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	const char *paths[1];
	int fd;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-test-fsw-XXXXXX");
	fd = mkstemp(img);
	if (fd < 0 || ftruncate(fd, 512 << 20))
		return -1;
	close(fd);
	btk_mkfs_opts_init(&o);
	paths[0] = img;
	o.paths = paths;
	o.ndevs = 1;
	o.force = true;
	return btk_mkfs(&o, &res) ? -1 : 0;
}

static int drop_fs(void **state)
{
	(void)state;
	unlink(img);
	return 0;
}

static struct btk_trans *begin(struct btk_fs **fs)
{
	const char *paths[] = {img};
	struct btk_open_opts o = {.write = true, .super_mirror = -1};
	struct btk_trans *t;

	assert_int_equal(btk_fs_open(paths, 1, &o, fs), 0);
	assert_int_equal(btk_trans_start(test_w(*fs), &t), 0);
	return t;
}

/* The items of the first test are not a valid fs tree (no inodes), so only the extent side
 * is judged there. */
static void check_extents(void)
{
	char cmd[192];

	snprintf(cmd, sizeof(cmd),
		 "btrfs check --readonly %s 2>&1 | grep -aqE 'ref mismatch|incorrect global "
		 "backref|no tree block found'",
		 img);
	assert_int_not_equal(system(cmd), 0);
}

static void check_clean(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
}

/* Asking for room next to an item that fills a leaf fails, and allocates nothing. */
static void test_overflow_costs_nothing(void **state)
{
	static uint8_t buf[65536];
	struct btk_fs *fs;
	struct btk_trans *t = begin(&fs);
	uint32_t big = fs->nodesize - 101 - 25;
	(void)state;

	for (int i = 0; i < 10; i++) {
		struct btk_key k = {1000 + (uint64_t)i, BTRFS_XATTR_ITEM_KEY, 5};
		assert_int_equal(btk_item_insert(t, 5, &k, buf, i % 2 ? big : 100), 0);
	}
	for (int i = 1; i < 10; i += 2) {
		struct btk_key k = {1000 + (uint64_t)i, BTRFS_XATTR_ITEM_KEY, 5};
		struct btk_path p;
		btk_path_init(&p);
		assert_int_equal(btk_tree_search_write(t, 5, &k, 500, &p), -EOVERFLOW);
		btk_wpath_release(&p);
	}
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	if (!system("command -v btrfs >/dev/null"))
		check_extents();
}

/* 600 links of one inode in one directory: the INODE_REF item fills, the rest are extrefs. */
static void test_links_and_data(void **state)
{
	struct btk_fs *fs;
	struct btk_trans *t = begin(&fs);
	struct btk_inode_attr a = {.mode = 0100644, .nlink = 600};
	struct btk_key loc = {300, BTRFS_INODE_ITEM_KEY, 0};
	char name[200];
	uint64_t bytenr, got;
	uint8_t data[8192];
	(void)state;

	assert_int_equal(btk_inode_create(t, 5, 300, &a), 0);
	for (int i = 0; i < 600; i++) {
		int n = snprintf(name, sizeof(name), "a-rather-long-name-so-refs-overflow-%04d", i);
		assert_int_equal(btk_dir_link(t, 5, 256, name, (uint16_t)n, &loc, BTRFS_FT_REG_FILE,
					      2 + (uint64_t)i),
				 0);
	}
	assert_int_equal(
	    btk_dir_link(t, 5, 256, name, (uint16_t)strlen(name), &loc, BTRFS_FT_REG_FILE, 700),
	    -EEXIST);
	assert_int_equal(btk_xattr_set(t, 5, 300, "user.k", 6, "v", 1), 0);
	memset(data, 0x5a, sizeof(data));
	assert_int_equal(btk_data_extent_alloc(t, 8192, 4096, 5, 300, 0, &bytenr, &got), 0);
	assert_true(got == 8192);
	assert_int_equal(btk_write_logical(fs, bytenr, data, got), 0);
	uint8_t sums[2 * BTK_CSUM_MAX];
	assert_int_equal(btk_csum_compute(fs, data, got, sums), 0);
	assert_int_equal(btk_csum_insert_sums(t, bytenr, sums, 2), 0);
	assert_int_equal(btk_file_extent_whole(t, 5, 300, 0, bytenr, got), 0);
	assert_int_equal(btk_inode_set_size(t, 5, 300, got, got), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	if (!system("command -v btrfs >/dev/null"))
		check_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_overflow_costs_nothing, make_fs, drop_fs),
	    cmocka_unit_test_setup_teardown(test_links_and_data, make_fs, drop_fs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
