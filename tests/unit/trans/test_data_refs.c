/* Counts of data references on an extent that has inline and keyed references at once: one
 * 8 KiB extent used by NFILES files (the first references inline in the extent item, the rest
 * keyed items), then the first file gets a second item with the same file offset minus extent
 * offset (its inline reference's count goes 1 -> 2), then loses it (2 -> 1). Each commit must
 * succeed, the counts must be what the items say, and btrfs check must agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backref/backref.h"
#include "base/error.h"
#include "fs/fs_edit.h"
#include "fs/fs_write.h"
#include "trans/trans.h"
#include "../test_image.h"

#define NFILES 60 /* more than an extent item holds inline */
#define ELEN   8192

static char dir[48], img[64];
static uint64_t ino[NFILES], ext_start;
static const struct btk_time now = {1700000000, 0};

static void item(struct btk_trans *t, uint64_t i, uint64_t off, uint64_t eoff, uint64_t num)
{
	struct btk_file_extent fe = {.file_offset = off,
				     .type = BTRFS_FILE_EXTENT_REG,
				     .disk_bytenr = ext_start,
				     .disk_num_bytes = ELEN,
				     .extent_offset = eoff,
				     .num_bytes = num,
				     .ram_bytes = ELEN};

	assert_int_equal(btk_file_extent_insert(t, 5, i, &fe), 0);
}

static int setup(void **state)
{
	char cmd[256];
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/btk-test-datarefs-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(cmd, sizeof(cmd), "truncate -s 128M %s && mkfs.btrfs -f -q %s >/dev/null", img,
		 img);
	return system(cmd) ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

struct counts {
	uint32_t first; /* count of (5, ino[0], 0) */
	uint64_t total; /* sum of every data reference's count */
	int inline_refs, keyed_refs;
};

static int count_cb(void *ctx, const struct btk_extent_ref *r)
{
	struct counts *c = ctx;

	if (r->type != BTRFS_EXTENT_DATA_REF_KEY)
		return 0;
	c->total += r->count;
	if (r->inline_ref)
		c->inline_refs++;
	else
		c->keyed_refs++;
	if (r->root == 5 && r->objectid == ino[0] && r->offset == 0)
		c->first = r->count;
	return 0;
}

static void expect(uint32_t first, uint64_t total)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct counts c = {0};
	struct btk_extent ext;
	char cmd[256];

	assert_int_equal(btk_extent_lookup(fs, ext_start, &ext), 0);
	assert_int_equal(btk_extent_for_each_ref(fs, &ext, count_cb, &c), 0);
	assert_int_equal(c.first, first);
	assert_int_equal(c.total, total);
	assert_int_equal(ext.refs, total);
	assert_true(c.inline_refs >= 1 && c.keyed_refs >= 1);
	test_close_image(fs);
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
}

static void test_inline_count_with_keyed_refs(void **state)
{
	static uint8_t data[ELEN], sums[ELEN / 4096 * 32];
	struct btk_inode_attr a = {
	    .mode = 0100644, .atime = now, .mtime = now, .ctime = now, .otime = now};
	struct btk_fs *fs = test_open_image(img, true, 0);
	struct btk_trans *t;
	char name[16];
	uint64_t got;
	(void)state;

	memset(data, 0x6b, sizeof(data));
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		assert_int_equal(btk_fs_create(t, 5, 256, name, 3, &a, NULL, 0, &ino[i]), 0);
	}
	assert_int_equal(btk_data_extent_alloc(t, ELEN, ELEN, 5, ino[0], 0, &ext_start, &got), 0);
	assert_int_equal(btk_write_logical(fs, ext_start, data, ELEN), 0);
	assert_int_equal(btk_csum_compute(fs, data, ELEN, sums), 0);
	assert_int_equal(btk_csum_insert_sums(t, ext_start, sums, ELEN / 4096), 0);
	item(t, ino[0], 0, 0, 4096);
	assert_int_equal(btk_inode_set_size(t, 5, ino[0], 4096, 4096), 0);
	for (int i = 1; i < NFILES; i++) {
		item(t, ino[i], 0, 0, ELEN);
		assert_int_equal(btk_data_ref(t, ext_start, ELEN, 5, 0, ino[i], 0, 1), 0);
		assert_int_equal(btk_inode_set_size(t, 5, ino[i], ELEN, ELEN), 0);
	}
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	expect(1, NFILES);

	/* the extent's second 4 KiB at 4K in the first file: file offset - extent offset is 0
	 * again, the same (inline) reference counts 2 */
	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	item(t, ino[0], 4096, 4096, 4096);
	assert_int_equal(btk_data_ref(t, ext_start, ELEN, 5, 0, ino[0], 0, 1), 0);
	assert_int_equal(btk_inode_set_size(t, 5, ino[0], ELEN, ELEN), 0);
	if (btk_trans_commit(t))
		fail_msg("commit adding a count: %s", btk_errmsg());
	test_close_image(fs);
	expect(2, NFILES + 1);

	/* and back: 2 -> 1 */
	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(
	    btk_item_delete(t, 5, &(struct btk_key){ino[0], BTRFS_EXTENT_DATA_KEY, 4096}), 0);
	assert_int_equal(btk_data_ref(t, ext_start, ELEN, 5, 0, ino[0], 0, -1), 0);
	assert_int_equal(btk_inode_set_size(t, 5, ino[0], 4096, 4096), 0);
	if (btk_trans_commit(t))
		fail_msg("commit dropping a count: %s", btk_errmsg());
	test_close_image(fs);
	expect(1, NFILES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inline_count_with_keyed_refs),
	};

	if (system("command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null")) {
		printf("1..0 # SKIP mkfs.btrfs or btrfs not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
