/* ROOT_ITEM parsing: the old 239-byte items, whole ones, v2 validity, items cut between. The
 * item is built at the offsets the kernel's struct gives, not by the parser under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "format/root_item.h"

#define RI struct btrfs_root_item

static void fill(uint8_t *d)
{
	memset(d, 0, sizeof(RI));
	BTK_PUT(RI, d, generation, 77);
	BTK_PUT(RI, d, root_dirid, 256);
	BTK_PUT(RI, d, bytenr, 30425088);
	BTK_PUT(RI, d, byte_limit, 1);
	BTK_PUT(RI, d, bytes_used, 16384);
	BTK_PUT(RI, d, last_snapshot, 70);
	BTK_PUT(RI, d, flags, BTRFS_ROOT_SUBVOL_RDONLY);
	BTK_PUT(RI, d, refs, 1);
	struct btk_key drop = {257, BTRFS_EXTENT_DATA_KEY, 4096};
	btk_key_to_disk(&drop, (struct btk_disk_key *)(d + offsetof(RI, drop_progress)));
	BTK_PUT(RI, d, drop_level, 1);
	BTK_PUT(RI, d, level, 2);
	BTK_PUT(RI, d, generation_v2, 77);
	memset(d + offsetof(RI, uuid), 0xaa, BTK_UUID_SIZE);
	memset(d + offsetof(RI, parent_uuid), 0xbb, BTK_UUID_SIZE);
	memset(d + offsetof(RI, received_uuid), 0xcc, BTK_UUID_SIZE);
	BTK_PUT(RI, d, ctransid, 75);
	BTK_PUT(RI, d, otransid, 60);
	BTK_PUT(RI, d, stransid, 3);
	BTK_PUT(RI, d, rtransid, 4);
}

static void test_whole(void **state)
{
	uint8_t d[sizeof(RI)], u[BTK_UUID_SIZE];
	struct btk_root_item ri;
	(void)state;

	fill(d);
	assert_int_equal(btk_root_item_parse(d, sizeof(d), &ri), 0);
	assert_int_equal(ri.generation, 77);
	assert_int_equal(ri.root_dirid, 256);
	assert_int_equal(ri.bytenr, 30425088);
	assert_int_equal(ri.byte_limit, 1);
	assert_int_equal(ri.bytes_used, 16384);
	assert_int_equal(ri.last_snapshot, 70);
	assert_int_equal(ri.flags, BTRFS_ROOT_SUBVOL_RDONLY);
	assert_int_equal(ri.refs, 1);
	assert_int_equal(ri.drop_progress.objectid, 257);
	assert_int_equal(ri.drop_progress.type, BTRFS_EXTENT_DATA_KEY);
	assert_int_equal(ri.drop_progress.offset, 4096);
	assert_int_equal(ri.drop_level, 1);
	assert_int_equal(ri.level, 2);
	assert_int_equal(ri.generation_v2, 77);
	memset(u, 0xaa, sizeof(u));
	assert_memory_equal(ri.uuid, u, sizeof(u));
	memset(u, 0xbb, sizeof(u));
	assert_memory_equal(ri.parent_uuid, u, sizeof(u));
	memset(u, 0xcc, sizeof(u));
	assert_memory_equal(ri.received_uuid, u, sizeof(u));
	assert_int_equal(ri.ctransid, 75);
	assert_int_equal(ri.otransid, 60);
	assert_int_equal(ri.stransid, 3);
	assert_int_equal(ri.rtransid, 4);
	assert_true(ri.v2);

	/* rewritten by a kernel that did not know generation_v2 */
	BTK_PUT(RI, d, generation, 78);
	assert_int_equal(btk_root_item_parse(d, sizeof(d), &ri), 0);
	assert_false(ri.v2);
	assert_int_equal(ri.ctransid, 75); /* still read, not trusted */
}

static void test_old_and_cut(void **state)
{
	uint8_t d[sizeof(RI)], zero[BTK_UUID_SIZE] = {0};
	struct btk_root_item ri;
	(void)state;

	fill(d);
	assert_int_equal(BTK_ROOT_ITEM_V0_SIZE, 239);
	assert_int_equal(btk_root_item_parse(d, 239, &ri), 0);
	assert_int_equal(ri.bytenr, 30425088);
	assert_int_equal(ri.level, 2);
	assert_int_equal(ri.generation_v2, 0);
	assert_memory_equal(ri.uuid, zero, sizeof(zero));
	assert_int_equal(ri.rtransid, 0);
	assert_false(ri.v2);
	assert_int_equal(btk_root_item_parse(d, 238, &ri), -EUCLEAN);
	assert_int_equal(btk_root_item_parse(d, 0, &ri), -EUCLEAN);

	/* cut inside the uuid: a field is taken whole or not at all */
	uint32_t uo = (uint32_t)offsetof(RI, uuid);
	assert_int_equal(btk_root_item_parse(d, uo + 8, &ri), 0);
	assert_int_equal(ri.generation_v2, 77);
	assert_memory_equal(ri.uuid, zero, sizeof(zero));
	assert_int_equal(btk_root_item_parse(d, uo + BTK_UUID_SIZE, &ri), 0);
	assert_int_not_equal(ri.uuid[0], 0);
	assert_memory_equal(ri.parent_uuid, zero, sizeof(zero));
	/* cut inside rtransid: the fields before it, and not v2 */
	assert_int_equal(btk_root_item_parse(d, (uint32_t)offsetof(RI, rtransid) + 7, &ri), 0);
	assert_int_equal(ri.stransid, 3);
	assert_int_equal(ri.rtransid, 0);
	assert_false(ri.v2);
	/* one byte short of whole (inside the reserved tail): every field, but not v2 */
	assert_int_equal(btk_root_item_parse(d, sizeof(RI) - 1, &ri), 0);
	assert_int_equal(ri.rtransid, 4);
	assert_false(ri.v2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole),
	    cmocka_unit_test(test_old_and_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
