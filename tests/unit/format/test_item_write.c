/* The item writers of format/: parsing an item and writing it back changes no byte (for
 * inode items, whole root items and the shorter old root items, on random contents), writing
 * into a buffer stores each field at its offset in the kernel's struct, the reserved bytes
 * are left alone, and an old root item's bytes past its end are not touched. Also
 * EXTENT_DATA decoding: each fault (short header, unknown type, short regular item). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "format/file_extent.h"
#include "format/inode_item.h"
#include "format/root_item.h"

#define II struct btrfs_inode_item
#define RI struct btrfs_root_item
#define FE struct btrfs_file_extent_item

static void fill_random(uint8_t *d, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)rand();
}

static void test_inode_roundtrip(void **state)
{
	uint8_t d[sizeof(II)], w[sizeof(II)];
	struct btk_inode_info in;

	(void)state;
	for (unsigned seed = 1; seed <= 50; seed++) {
		fill_random(d, sizeof(d), seed);
		assert_int_equal(btk_inode_item_parse(d, sizeof(d), &in), 0);
		fill_random(w, sizeof(w), seed + 1000);
		memcpy(w + offsetof(II, reserved), d + offsetof(II, reserved),
		       sizeof(((II *)0)->reserved));
		btk_inode_item_write(w, &in);
		assert_memory_equal(w, d, sizeof(d));
	}
}

static void test_inode_fields(void **state)
{
	uint8_t d[sizeof(II)];
	struct btk_inode_info in = {.size = 1,
				    .nbytes = 2,
				    .generation = 3,
				    .transid = 4,
				    .flags = 5,
				    .rdev = 6,
				    .block_group = 7,
				    .sequence = 8,
				    .nlink = 9,
				    .uid = 10,
				    .gid = 11,
				    .mode = 0100644,
				    .atime = {12, 13},
				    .ctime = {14, 15},
				    .mtime = {16, 17},
				    .otime = {18, 19}};

	(void)state;
	memset(d, 0xee, sizeof(d));
	btk_inode_item_write(d, &in);
	assert_true(BTK_GET(II, d, size) == 1);
	assert_true(BTK_GET(II, d, nbytes) == 2);
	assert_true(BTK_GET(II, d, generation) == 3);
	assert_true(BTK_GET(II, d, transid) == 4);
	assert_true(BTK_GET(II, d, flags) == 5);
	assert_true(BTK_GET(II, d, rdev) == 6);
	assert_true(BTK_GET(II, d, block_group) == 7);
	assert_true(BTK_GET(II, d, sequence) == 8);
	assert_int_equal(BTK_GET(II, d, nlink), 9);
	assert_int_equal(BTK_GET(II, d, uid), 10);
	assert_int_equal(BTK_GET(II, d, gid), 11);
	assert_int_equal(BTK_GET(II, d, mode), 0100644);
	assert_true(BTK_GET(struct btrfs_timespec, d + offsetof(II, atime), sec) == 12);
	assert_int_equal(BTK_GET(struct btrfs_timespec, d + offsetof(II, atime), nsec), 13);
	assert_true(BTK_GET(struct btrfs_timespec, d + offsetof(II, otime), sec) == 18);
	assert_int_equal(BTK_GET(struct btrfs_timespec, d + offsetof(II, otime), nsec), 19);
	for (size_t i = 0; i < sizeof(((II *)0)->reserved); i++)
		assert_int_equal(d[offsetof(II, reserved) + i], 0xee);
}

static void test_root_roundtrip(void **state)
{
	uint8_t d[sizeof(RI) + 8], w[sizeof(RI) + 8];
	struct btk_root_item ri;
	uint32_t sizes[] = {BTK_ROOT_ITEM_V0_SIZE, offsetof(RI, uuid), sizeof(RI)};

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (unsigned seed = 1; seed <= 30; seed++) {
			uint32_t size = sizes[k];
			fill_random(d, sizeof(d), seed);
			assert_int_equal(btk_root_item_parse(d, size, &ri), 0);
			/* what the writer must not touch: reserved bytes, bytes past the item */
			memcpy(w, d, sizeof(w));
			fill_random(w, size, seed + 1000);
			memcpy(w + offsetof(RI, inode) + offsetof(II, reserved),
			       d + offsetof(RI, inode) + offsetof(II, reserved),
			       sizeof(((II *)0)->reserved));
			if (size == sizeof(RI))
				memcpy(w + offsetof(RI, reserved), d + offsetof(RI, reserved),
				       sizeof(((RI *)0)->reserved));
			btk_root_item_write(w, size, &ri);
			assert_memory_equal(w, d, sizeof(d));
		}
}

static void test_root_fields(void **state)
{
	uint8_t d[sizeof(RI)] = {0};
	struct btk_root_item ri = {.generation = 11,
				   .bytenr = 16384,
				   .level = 2,
				   .refs = 1,
				   .root_dirid = 256,
				   .bytes_used = 4096,
				   .last_snapshot = 9,
				   .generation_v2 = 11,
				   .ctransid = 5,
				   .otransid = 6,
				   .otime = {77, 88},
				   .inode = {.mode = 040755, .nlink = 1}};
	struct btk_root_item back;

	(void)state;
	ri.uuid[0] = 0xab;
	ri.parent_uuid[15] = 0xcd;
	ri.drop_progress = (struct btk_key){257, 1, 3};
	btk_root_item_write(d, sizeof(d), &ri);
	assert_true(BTK_GET(RI, d, generation) == 11);
	assert_true(BTK_GET(RI, d, bytenr) == 16384);
	assert_int_equal(BTK_GET(RI, d, level), 2);
	assert_int_equal(BTK_GET(RI, d, refs), 1);
	assert_true(BTK_GET(RI, d, generation_v2) == 11);
	assert_int_equal(d[offsetof(RI, uuid)], 0xab);
	assert_int_equal(d[offsetof(RI, parent_uuid) + 15], 0xcd);
	assert_int_equal(BTK_GET(II, d + offsetof(RI, inode), mode), 040755);
	assert_true(BTK_GET(struct btrfs_timespec, d + offsetof(RI, otime), sec) == 77);
	assert_int_equal(btk_root_item_parse(d, sizeof(d), &back), 0);
	assert_true(back.v2);
	assert_true(back.drop_progress.objectid == 257 && back.drop_progress.offset == 3);
	assert_int_equal(back.otime.nsec, 88);
	assert_true(back.inode.nlink == 1);
}

static void test_file_extent(void **state)
{
	uint8_t d[sizeof(FE) + 10] = {0};
	struct btk_file_extent fe;

	(void)state;
	assert_int_equal(btk_file_extent_item_parse(d, BTK_FILE_EXTENT_HDR_SIZE - 1, 4096, &fe),
			 BTK_FE_SHORT_HEAD);
	assert_true(fe.file_offset == 4096);
	BTK_PUT(FE, d, type, BTRFS_FILE_EXTENT_INLINE);
	BTK_PUT(FE, d, ram_bytes, 10);
	assert_int_equal(btk_file_extent_item_parse(d, BTK_FILE_EXTENT_HDR_SIZE + 10, 0, &fe),
			 BTK_FE_WHOLE);
	assert_int_equal(fe.inline_len, 10);
	assert_ptr_equal(fe.inline_data, d + BTK_FILE_EXTENT_HDR_SIZE);
	assert_true(fe.num_bytes == 10);
	BTK_PUT(FE, d, type, 7);
	assert_int_equal(btk_file_extent_item_parse(d, sizeof(FE), 0, &fe), BTK_FE_BAD_TYPE);
	assert_int_equal(fe.type, 7);
	BTK_PUT(FE, d, type, BTRFS_FILE_EXTENT_PREALLOC);
	BTK_PUT(FE, d, compression, 3);
	BTK_PUT(FE, d, disk_bytenr, 1 << 20);
	BTK_PUT(FE, d, disk_num_bytes, 8192);
	BTK_PUT(FE, d, offset, 4096);
	BTK_PUT(FE, d, num_bytes, 4096);
	assert_int_equal(btk_file_extent_item_parse(d, sizeof(FE) - 1, 0, &fe), BTK_FE_SHORT_BODY);
	assert_int_equal(fe.compression, 3); /* the header is filled */
	assert_true(fe.disk_bytenr == 0);
	assert_int_equal(btk_file_extent_item_parse(d, sizeof(FE), 0, &fe), BTK_FE_WHOLE);
	assert_true(fe.disk_bytenr == 1 << 20 && fe.disk_num_bytes == 8192);
	assert_true(fe.extent_offset == 4096 && fe.num_bytes == 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inode_roundtrip), cmocka_unit_test(test_inode_fields),
	    cmocka_unit_test(test_root_roundtrip),  cmocka_unit_test(test_root_fields),
	    cmocka_unit_test(test_file_extent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
