/* The checker's u64 set (check_priv.h) and btk_check_run on a clean image that
 * mkfs.btrfs --rootdir builds from a directory made here: no problem reported, and the
 * summary counts the inodes that directory has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "check/check_priv.h"
#include "base/error.h"

#define NFILES 120

static void test_set(void **state)
{
	struct chk_set s = {0};

	(void)state;
	assert_false(chk_set_has(&s, 42));
	for (uint64_t i = 1; i <= 20000; i++)
		assert_int_equal(chk_set_add(&s, i * 4096), 1);
	for (uint64_t i = 1; i <= 20000; i++)
		assert_int_equal(chk_set_add(&s, i * 4096), 0);
	assert_true(chk_set_has(&s, 4096 * 777));
	assert_false(chk_set_has(&s, 4096 * 20001));
	assert_false(chk_set_has(&s, 4095));
	assert_int_equal(s.n, 20000);
	chk_set_free(&s);
}

/* chk_for_items: every item of a leaf in slot order with its key, data and size; only those of
 * the type asked for; none once the check is out of memory. */
static void test_leaf_items(void **state)
{
	uint8_t data[4096] = {0};
	struct btk_block b = {.bytenr = 1 << 20, .len = sizeof(data), .data = data};
	struct btk_header *h = (struct btk_header *)data;
	struct btk_item *items = (struct btk_item *)(data + sizeof(*h));
	const uint8_t types[] = {BTRFS_INODE_ITEM_KEY, BTRFS_DIR_ITEM_KEY, BTRFS_INODE_ITEM_KEY};
	struct chk c = {0};
	int n = 0;

	(void)state;
	btk_put32(h->nritems, 3);
	for (int i = 0; i < 3; i++) {
		struct btk_key k = {.objectid = 256 + i, .type = types[i], .offset = 7};
		btk_key_to_disk(&k, &items[i].key);
		btk_put32(items[i].offset, 1000 - 10 * i);
		btk_put32(items[i].size, 10 + i);
	}
	chk_for_items (&c, &b, 0, it) {
		assert_int_equal(it.slot, n);
		assert_int_equal(it.k.objectid, 256 + n);
		assert_int_equal(it.k.type, types[n]);
		assert_ptr_equal(it.p, data + sizeof(*h) + 1000 - 10 * n);
		assert_int_equal(it.sz, 10 + n);
		n++;
	}
	assert_int_equal(n, 3);
	n = 0;
	chk_for_items (&c, &b, BTRFS_INODE_ITEM_KEY, it) {
		assert_int_equal(it.slot, 2 * n);
		n++;
	}
	assert_int_equal(n, 2);
	chk_for_items (&c, &b, BTRFS_DIR_ITEM_KEY, it)
		assert_int_equal(it.slot, 1);
	c.oom = true;
	chk_for_items (&c, &b, 0, it)
		fail();
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(btk_check_kind_name(BTK_CHK_BACKREF), "backref");
	assert_string_equal(btk_check_kind_name(BTK_CHK_INODE), "inode");
	assert_string_equal(btk_check_kind_name(BTK_CHK_KIND_COUNT), "unknown");
	for (int k = 0; k < BTK_CHK_KIND_COUNT; k++)
		assert_non_null(btk_check_kind_name((enum btk_check_kind)k));
}

/* The table of problems: codes unique, in their kind's hundred, every row filled in. */
static void test_problem_table(void **state)
{
	(void)state;
	assert_null(btk_check_problem_info(BTK_P_COUNT));
	for (int i = 0; i < BTK_P_COUNT; i++) {
		const struct btk_check_problem_info *a = btk_check_problem_info(i);
		assert_non_null(a);
		assert_true(a->code > 0 && a->code < 10000);
		assert_int_equal(a->code / 100, (unsigned)a->kind + 1);
		assert_true(a->name && *a->name && a->message && *a->message);
		assert_true(a->severity == BTK_SEV_ERR || a->severity == BTK_SEV_WARN);
		for (int j = 0; j < i; j++) {
			const struct btk_check_problem_info *b = btk_check_problem_info(j);
			assert_int_not_equal(a->code, b->code);
			assert_string_not_equal(a->name, b->name);
		}
	}
	assert_int_equal(btk_check_problem_info(BTK_P_INODE_NLINK)->code, 1111);
	assert_string_equal(btk_check_problem_info(BTK_P_REF_COUNT)->name, "extent-refs");
}

static void count(void *ctx, const struct btk_check_problem *p)
{
	fprintf(stderr, "unexpected problem: %s\n", p->what);
	(*(int *)ctx)++;
}

static void test_clean_image(void **state)
{
	char dir[] = "/tmp/btk-test-check-XXXXXX", cmd[512], img[64];
	struct btk_fs *fs;
	struct btk_check_summary sum;
	int problems = 0;

	(void)state;
	if (system("command -v mkfs.btrfs >/dev/null 2>&1"))
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir %s/src; cd %s/src; for i in $(seq 1 %d); do echo $i > f$i; done;"
		 " mkdir d; ln f1 d/link; head -c 200000 /dev/urandom > d/big;"
		 " truncate -s 128M %s/img; mkfs.btrfs -q -r %s/src %s/img >/dev/null 2>&1",
		 dir, dir, NFILES, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(img, sizeof(img), "%s/img", dir);
	const char *paths[] = {img};
	struct btk_open_opts oo = {.super_mirror = -1};
	assert_int_equal(btk_fs_open(paths, 1, &oo, &fs), 0);
	struct btk_check_opts co = {.data_csum = true, .report = count, .ctx = &problems};
	assert_int_equal(btk_check_run(fs, &co, &sum), 0);
	assert_int_equal(problems, 0);
	assert_int_equal(sum.errors, 0);
	/* top dir, d, NFILES files and big (the link is a second name of f1), and the data
	 * relocation tree's top dir */
	assert_int_equal(sum.nr_inodes, NFILES + 4);
	assert_true(sum.bytes_used > 200000);
	assert_true(sum.data_blocks_checked >= 200000 / 4096);
	btk_fs_close(fs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set),		cmocka_unit_test(test_leaf_items),
	    cmocka_unit_test(test_kind_names),	cmocka_unit_test(test_problem_table),
	    cmocka_unit_test(test_clean_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
