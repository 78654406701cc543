/* The profile table and the compression names: one row per profile, looked up by bit and by
 * name; names of known and unknown values. The stripe boundary rule of tree blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "format/format.h"
#include "format/raid.h"

static void test_every_profile(void **state)
{
	static const struct {
		uint64_t bit;
		const char *name;
		int devs_min, ncopies, nparity, tolerated;
	} want[] = {
	    {0, "single", 1, 1, 0, 0},
	    {BTRFS_BLOCK_GROUP_DUP, "dup", 1, 2, 0, 0},
	    {BTRFS_BLOCK_GROUP_RAID0, "raid0", 1, 1, 0, 0},
	    {BTRFS_BLOCK_GROUP_RAID1, "raid1", 2, 2, 0, 1},
	    {BTRFS_BLOCK_GROUP_RAID1C3, "raid1c3", 3, 3, 0, 2},
	    {BTRFS_BLOCK_GROUP_RAID1C4, "raid1c4", 4, 4, 0, 3},
	    {BTRFS_BLOCK_GROUP_RAID10, "raid10", 2, 2, 0, 1},
	    {BTRFS_BLOCK_GROUP_RAID5, "raid5", 2, 1, 1, 1},
	    {BTRFS_BLOCK_GROUP_RAID6, "raid6", 3, 1, 2, 2},
	};
	(void)state;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		/* the type bits beside the profile do not matter */
		const struct btk_raid_attr *ra =
		    btk_raid_attr(want[i].bit | BTRFS_BLOCK_GROUP_DATA);
		assert_non_null(ra);
		assert_int_equal(ra->bit, want[i].bit);
		assert_string_equal(ra->name, want[i].name);
		assert_int_equal(ra->devs_min, want[i].devs_min);
		assert_int_equal(ra->ncopies, want[i].ncopies);
		assert_int_equal(ra->nparity, want[i].nparity);
		assert_int_equal(ra->tolerated_failures, want[i].tolerated);
		assert_int_equal(ra->sub_stripes, want[i].bit == BTRFS_BLOCK_GROUP_RAID10 ? 2 : 1);
		assert_int_equal(ra->dev_stripes, want[i].bit == BTRFS_BLOCK_GROUP_DUP ? 2 : 1);
		assert_ptr_equal(btk_raid_by_name(want[i].name), ra);
		assert_string_equal(btk_profile_name(want[i].bit | BTRFS_BLOCK_GROUP_METADATA),
				    want[i].name);
	}
	assert_ptr_equal(btk_raid_by_name("RAID1C3"), btk_raid_attr(BTRFS_BLOCK_GROUP_RAID1C3));
	assert_null(btk_raid_by_name("raid2"));
	assert_null(btk_raid_attr(BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID0));
	assert_string_equal(btk_profile_name(BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP),
			    "unknown");
}

/* Stripes are counted from the block group start: in a chunk at 64 KiB + 4 KiB, a 16 KiB block
 * at chunk offset 48 KiB crosses no stripe (though it crosses 128 KiB of logical 0), and one at
 * chunk offset 56 KiB does (though it lies inside one 64 KiB unit of logical 0). */
static void test_stripe_boundary(void **state)
{
	const uint64_t k = 1024, bg = 64 * k + 4 * k;

	(void)state;
	assert_false(btk_crosses_stripe(bg, bg + 48 * k, 16 * k));
	assert_true(btk_crosses_stripe(bg, bg + 56 * k, 16 * k));
	assert_false(btk_crosses_stripe(bg, bg + 64 * k, 16 * k));
	assert_true(btk_crosses_stripe(bg, bg + 60 * k, 16 * k));
	assert_false(btk_crosses_stripe(bg, bg + 60 * k, 4 * k));
	assert_false(btk_crosses_stripe(0, 0, 64 * k));
	assert_true(btk_crosses_stripe(0, 4 * k, 64 * k));
	assert_false(btk_crosses_stripe(bg, bg, 0));
}

static void test_compression_names(void **state)
{
	(void)state;
	assert_string_equal(btk_compression_name(BTK_COMPRESS_NONE), "none");
	assert_string_equal(btk_compression_name(BTK_COMPRESS_ZLIB), "zlib");
	assert_string_equal(btk_compression_name(BTK_COMPRESS_LZO), "lzo");
	assert_string_equal(btk_compression_name(BTK_COMPRESS_ZSTD), "zstd");
	assert_string_equal(btk_compression_name(BTK_COMPRESS_TYPES), "unknown");
	assert_string_equal(btk_compression_name(255), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_profile),
	    cmocka_unit_test(test_compression_names),
	    cmocka_unit_test(test_stripe_boundary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
