/* Name items: entries packed in DIR_ITEM / XATTR_ITEM and INODE_REF / INODE_EXTREF bodies,
 * written and walked back; every cut of an item short of its end is refused, never read past. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/dir_item.h"

#define DI struct btrfs_dir_item

/* Two xattr-style entries (the second with data) in one item: returns its size. */
static uint32_t two_entries(uint8_t *d)
{
	struct btk_key loc = {257, BTRFS_INODE_ITEM_KEY, 0};
	uint32_t n = 0;

	btk_dir_ent_write(d, &loc, 7, BTRFS_FT_REG_FILE, "abc", 3, NULL, 0);
	n = BTK_DIR_ENTRY_HEAD + 3;
	btk_dir_ent_write(d + n, NULL, 8, BTRFS_FT_XATTR, "user.x", 6, "value", 5);
	return n + BTK_DIR_ENTRY_HEAD + 6 + 5;
}

static void test_dir_walk(void **state)
{
	uint8_t d[128];
	uint32_t size = two_entries(d);
	struct btk_dir_iter it;
	struct btk_dir_ent e = {0};
	struct btk_key loc;
	(void)state;

	assert_int_equal(BTK_DIR_ENTRY_HEAD, 30);
	assert_int_equal(BTK_GET(DI, d, name_len), 3);
	btk_dir_iter_init(&it, d, size);
	assert_int_equal(btk_dir_next(&it, &e), 1);
	assert_int_equal(it.at, 0);
	assert_int_equal(e.name_len, 3);
	assert_memory_equal(e.name, "abc", 3);
	assert_int_equal(e.data_len, 0);
	assert_int_equal(e.type, BTRFS_FT_REG_FILE);
	assert_int_equal(btk_dir_ent_transid(&e), 7);
	btk_dir_ent_location(&e, &loc);
	assert_int_equal(loc.objectid, 257);
	assert_int_equal(loc.type, BTRFS_INODE_ITEM_KEY);
	assert_int_equal(btk_dir_ent_size(&e), 33);
	assert_int_equal(btk_dir_next(&it, &e), 1);
	assert_int_equal(it.at, 33);
	assert_memory_equal(e.name, "user.x", 6);
	assert_int_equal(e.data_len, 5);
	assert_memory_equal(e.data, "value", 5);
	btk_dir_ent_location(&e, &loc);
	assert_int_equal(loc.objectid, 0);
	assert_int_equal(btk_dir_next(&it, &e), 0);
	assert_int_equal(btk_dir_next(&it, &e), 0);
	assert_true(btk_dir_item_has_name(d, size, "user.x", 6));
	assert_false(btk_dir_item_has_name(d, size, "user.", 5));
	assert_false(btk_dir_item_has_name(d, size, "abcd", 4));
}

/* Every length from 1 byte short of the end down to 1: the entries wholly inside are
 * returned, then -EUCLEAN on the cut one (none at the cut between the two), never a read past
 * size (the bytes are copied to an exact-size heap buffer, so ASan sees an overrun). */
static void test_dir_cuts(void **state)
{
	uint8_t d[128];
	uint32_t size = two_entries(d);
	(void)state;

	for (uint32_t cut = 1; cut < size; cut++) {
		uint8_t *b = malloc(cut);
		struct btk_dir_iter it;
		struct btk_dir_ent e = {0};
		int n = 0, ret;
		memcpy(b, d, cut);
		btk_dir_iter_init(&it, b, cut);
		while ((ret = btk_dir_next(&it, &e)) > 0)
			n++;
		assert_int_equal(n, cut >= 33 ? 1 : 0);
		if (cut == 33) { /* exactly the first entry: a whole item */
			assert_int_equal(ret, 0);
			free(b);
			continue;
		}
		assert_int_equal(ret, -EUCLEAN);
		assert_int_equal(it.at, cut > 33 ? 33 : 0);
		assert_int_equal(btk_dir_next(&it, &e), -EUCLEAN); /* stays on the bad one */
		assert_false(btk_dir_item_has_name(b, cut, "user.x", 6));
		free(b);
	}
	/* a name length that points past the item */
	uint8_t *b = malloc(size);
	struct btk_dir_iter it;
	struct btk_dir_ent e = {0};
	memcpy(b, d, size);
	BTK_PUT(DI, b, name_len, 0xffff);
	btk_dir_iter_init(&it, b, size);
	assert_int_equal(btk_dir_next(&it, &e), -EUCLEAN);
	free(b);
}

static void test_ref_walk(void **state)
{
	struct btk_key iref = {300, BTRFS_INODE_REF_KEY, 256};
	struct btk_key xref = {300, BTRFS_INODE_EXTREF_KEY, 0x1234};
	uint8_t d[128];
	uint32_t n;
	struct btk_ref_iter it;
	struct btk_ref_ent r = {0};
	(void)state;

	n = btk_ref_ent_write(d, false, 256, 2, "one", 3);
	assert_int_equal(n, 10 + 3);
	n += btk_ref_ent_write(d + n, false, 256, 5, "three", 5);
	btk_ref_iter_init(&it, &iref, d, n);
	assert_int_equal(btk_ref_next(&it, &r), 1);
	assert_int_equal(r.parent, 256);
	assert_int_equal(r.index, 2);
	assert_memory_equal(r.name, "one", 3);
	assert_int_equal(btk_ref_next(&it, &r), 1);
	assert_int_equal(r.index, 5);
	assert_int_equal(r.name_len, 5);
	assert_int_equal(btk_ref_next(&it, &r), 0);
	btk_ref_iter_init(&it, &iref, d, n - 1);
	assert_int_equal(btk_ref_next(&it, &r), 1);
	assert_int_equal(btk_ref_next(&it, &r), -EUCLEAN);
	assert_int_equal(it.pos.at, 13);

	n = btk_ref_ent_write(d, true, 999, 4, "x", 1);
	assert_int_equal(n, 18 + 1);
	assert_int_equal(BTK_GET(struct btrfs_inode_extref, d, parent_objectid), 999);
	btk_ref_iter_init(&it, &xref, d, n);
	assert_int_equal(btk_ref_next(&it, &r), 1);
	assert_int_equal(r.parent, 999);
	assert_int_equal(r.index, 4);
	assert_memory_equal(r.name, "x", 1);
	assert_int_equal(btk_ref_next(&it, &r), 0);
	for (uint32_t cut = 1; cut < n; cut++) {
		btk_ref_iter_init(&it, &xref, d, cut);
		assert_int_equal(btk_ref_next(&it, &r), -EUCLEAN);
	}
}

static void test_root_ref(void **state)
{
	uint8_t d[64];
	struct btk_root_ref_ent r = {0};
	uint32_t n = btk_root_ref_write(d, 256, 9, "snap", 4);
	(void)state;

	assert_int_equal(n, 18 + 4);
	assert_int_equal(btk_root_ref_parse(d, n, &r), 0);
	assert_int_equal(r.dirid, 256);
	assert_int_equal(r.sequence, 9);
	assert_int_equal(r.name_len, 4);
	assert_memory_equal(r.name, "snap", 4);
	assert_int_equal(btk_root_ref_parse(d, n + 3, &r), 0); /* longer is fine */
	for (uint32_t cut = 0; cut < n; cut++)
		assert_int_equal(btk_root_ref_parse(d, cut, &r), -EUCLEAN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dir_walk),
	    cmocka_unit_test(test_dir_cuts),
	    cmocka_unit_test(test_ref_walk),
	    cmocka_unit_test(test_root_ref),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
