/* INODE_ITEM parsing: every field from its offset in the kernel's struct; short items. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "format/inode_item.h"

#define II struct btrfs_inode_item

static void test_inode_item(void **state)
{
	uint8_t d[sizeof(II) + 4];
	struct btk_inode_info ii;
	(void)state;

	memset(d, 0x5a, sizeof(d));
	BTK_PUT(II, d, generation, 7);
	BTK_PUT(II, d, transid, 9);
	BTK_PUT(II, d, size, 12345);
	BTK_PUT(II, d, nbytes, 16384);
	BTK_PUT(II, d, nlink, 2);
	BTK_PUT(II, d, uid, 1000);
	BTK_PUT(II, d, gid, 100);
	BTK_PUT(II, d, mode, 0100644);
	BTK_PUT(II, d, rdev, 0x801);
	BTK_PUT(II, d, flags, BTK_INODE_NODATASUM | BTK_INODE_APPEND);
	assert_int_equal(sizeof(II), 160);
	assert_int_equal(btk_inode_item_parse(d, sizeof(II), &ii), 0);
	assert_int_equal(ii.generation, 7);
	assert_int_equal(ii.transid, 9);
	assert_int_equal(ii.size, 12345);
	assert_int_equal(ii.nbytes, 16384);
	assert_int_equal(ii.nlink, 2);
	assert_int_equal(ii.uid, 1000);
	assert_int_equal(ii.gid, 100);
	assert_int_equal(ii.mode, 0100644);
	assert_int_equal(ii.rdev, 0x801);
	assert_int_equal(ii.flags, BTK_INODE_NODATASUM | BTK_INODE_APPEND);
	assert_int_equal(btk_inode_item_parse(d, sizeof(d), &ii), 0); /* longer is fine */
	assert_int_equal(btk_inode_item_parse(d, sizeof(II) - 1, &ii), -EUCLEAN);
	assert_int_equal(btk_inode_item_parse(d, 0, &ii), -EUCLEAN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inode_item),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
