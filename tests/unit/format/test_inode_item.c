/* INODE_ITEM parsing: every field from its offset in the kernel's struct; short items. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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

/* The two directions of the entry type: each known type goes to its S_IF* bits and back;
 * unknown, XATTR and past-the-end types have none. */
static void test_ftype_mode(void **state)
{
	(void)state;
	static const struct {
		uint8_t ft;
		uint32_t ifmt;
	} t[] = {
	    {BTRFS_FT_REG_FILE, S_IFREG}, {BTRFS_FT_DIR, S_IFDIR},  {BTRFS_FT_CHRDEV, S_IFCHR},
	    {BTRFS_FT_BLKDEV, S_IFBLK},	  {BTRFS_FT_FIFO, S_IFIFO}, {BTRFS_FT_SOCK, S_IFSOCK},
	    {BTRFS_FT_SYMLINK, S_IFLNK},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(btk_ftype_mode(t[i].ft), t[i].ifmt);
		assert_int_equal(btk_mode_ftype(t[i].ifmt | 0644), t[i].ft);
	}
	assert_int_equal(btk_ftype_mode(BTRFS_FT_UNKNOWN), 0);
	assert_int_equal(btk_ftype_mode(BTRFS_FT_XATTR), 0);
	assert_int_equal(btk_ftype_mode(200), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inode_item),
	    cmocka_unit_test(test_ftype_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
