/* Tree layer on a real image made by mkfs.btrfs: root lookup, search, next/prev, walks,
 * mirror fallback on a damaged copy, and rejection when every copy is damaged. */
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

#include "base/error.h"
#include "tree/tree.h"

static char img[64];
static int warnings;

static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	warnings++;
}

static int setup(void **state)
{
	char cmd[256];
	int fd;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-test-tree-XXXXXX");
	fd = mkstemp(img);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 512M %s && mkfs.btrfs -f -q -m dup %s >/dev/null 2>&1", img, img);
	if (system(cmd))
		return -1;
	btk_set_warn_hook(on_warn, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(img);
	return 0;
}

static struct btk_fs *open_img(void)
{
	const char *paths[] = {img};
	struct btk_fs *fs = NULL;

	assert_int_equal(btk_fs_open(paths, 1, NULL, &fs), 0);
	return fs;
}

static void test_search(void **state)
{
	struct btk_fs *fs = open_img();
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {256, BTRFS_INODE_ITEM_KEY, 0}, got;
	(void)state;

	assert_int_equal(btk_root_find(fs, BTRFS_FS_TREE_OBJECTID, &r), 0);
	btk_path_init(&p);
	assert_int_equal(btk_search(fs, &r, &k, &p), 0);
	btk_path_key(&p, &got);
	assert_int_equal(btk_key_cmp(&k, &got), 0);
	/* A key between items: not found, and the next item is the one after. */
	k.type = BTRFS_INODE_ITEM_KEY + 1;
	assert_int_equal(btk_search_ge(fs, &r, &k, &p), 0);
	btk_path_key(&p, &got);
	assert_true(btk_key_cmp(&got, &k) > 0);
	btk_path_release(&p);
	assert_int_equal(btk_root_find(fs, 4242, &r), -ENOENT);
	btk_fs_close(fs);
}

/* Forward then backward over the extent tree visits the same keys in reverse. */
static void test_next_prev(void **state)
{
	struct btk_fs *fs = open_img();
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {0, 0, 0}, keys[256];
	int n = 0, ret;
	(void)state;

	assert_int_equal(btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &r), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &r, &k, &p); ret == 0 && n < 256; ret = btk_next(fs, &p))
		btk_path_key(&p, &keys[n++]);
	assert_int_equal(ret, 1);
	assert_true(n > 5);
	for (int i = n - 1; i >= 0; i--) {
		btk_path_key(&p, &k);
		assert_int_equal(btk_key_cmp(&k, &keys[i]), 0);
		ret = btk_prev(fs, &p);
		assert_int_equal(ret, i ? 0 : 1);
	}
	btk_path_release(&p);
	btk_fs_close(fs);
}

/* btk_items visits the items btk_search_ge and btk_next visit, from a key on; a caller's stop
 * value comes back from btk_items_end. */
static void test_items(void **state)
{
	struct btk_fs *fs = open_img();
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {0, 0, 0}, keys[256], from;
	struct btk_items it;
	int n = 0, i = 0, ret;
	(void)state;

	assert_int_equal(btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &r), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &r, &k, &p); ret == 0 && n < 256; ret = btk_next(fs, &p))
		btk_path_key(&p, &keys[n++]);
	btk_path_release(&p);
	assert_int_equal(ret, 1);
	assert_true(n > 5);
	from = keys[2];
	from.offset++; /* after the third item: the fourth is the first at or after it */
	for (btk_items_start(&it, fs, &r, &from); btk_items_next(&it); i++) {
		assert_true(3 + i < n);
		assert_int_equal(btk_key_cmp(&it.key, &keys[3 + i]), 0);
		assert_non_null(it.data);
	}
	assert_int_equal(btk_items_end(&it, 0), 0);
	assert_int_equal(3 + i, n);
	btk_items_start(&it, fs, &r, NULL);
	assert_true(btk_items_next(&it));
	assert_int_equal(btk_key_cmp(&it.key, &keys[0]), 0);
	assert_int_equal(btk_items_end(&it, 7), 7);
	btk_fs_close(fs);
}

static int count_roots(void *ctx, const struct btk_root *r)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

static void test_roots(void **state)
{
	struct btk_fs *fs = open_img();
	int n = 0;
	(void)state;

	/* root, chunk, extent, dev, fs, csum, uuid, free space, data reloc */
	assert_int_equal(btk_for_each_root(fs, count_roots, &n), 0);
	assert_int_equal(n, 9);
	btk_fs_close(fs);
}

static void smash(uint64_t physical)
{
	FILE *f = fopen(img, "r+b");
	uint8_t junk[64];

	memset(junk, 0xA5, sizeof(junk));
	assert_non_null(f);
	fseek(f, (long)physical + 200, SEEK_SET);
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
}

static void test_mirror_fallback(void **state)
{
	struct btk_fs *fs = open_img();
	struct btk_root r;
	struct btk_phys ph[4];
	struct btk_block *b;
	int n;
	(void)state;

	assert_int_equal(btk_root_find(fs, BTRFS_FS_TREE_OBJECTID, &r), 0);
	assert_int_equal(btk_map_logical(fs, r.bytenr, ph, 4, &n, NULL), 0);
	assert_int_equal(n, 2); /* DUP */
	btk_fs_close(fs);

	smash(ph[0].physical);
	fs = open_img();
	warnings = 0;
	assert_int_equal(btk_block_read(fs, r.bytenr, NULL, &b), 0);
	assert_int_equal(warnings, 1);
	btk_block_put(b);
	btk_fs_close(fs);

	smash(ph[1].physical);
	fs = open_img();
	assert_int_equal(btk_block_read(fs, r.bytenr, NULL, &b), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "checksum"));
	btk_fs_close(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_search),	    cmocka_unit_test(test_next_prev),
	    cmocka_unit_test(test_items),	    cmocka_unit_test(test_roots),
	    cmocka_unit_test(test_mirror_fallback), /* last: it damages the image */
	};
	if (system("command -v mkfs.btrfs >/dev/null")) {
		printf("# SKIP test_tree: mkfs.btrfs not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
