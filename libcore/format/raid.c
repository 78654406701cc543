/* raid.c — the block group profile table (see raid.h). */
#include "format/raid.h"

#include <stddef.h>
#include <strings.h>

static const struct btk_raid_attr raid_table[] = {
    /* bit, name, dev_stripes, devs_min, devs_max, sub_stripes, ncopies, nparity, tolerated */
    {0, "single", 1, 1, 1, 1, 1, 0, 0},
    {BTRFS_BLOCK_GROUP_DUP, "dup", 2, 1, 1, 1, 2, 0, 0},
    {BTRFS_BLOCK_GROUP_RAID0, "raid0", 1, 1, 0, 1, 1, 0, 0},
    {BTRFS_BLOCK_GROUP_RAID1, "raid1", 1, 2, 2, 1, 2, 0, 1},
    {BTRFS_BLOCK_GROUP_RAID1C3, "raid1c3", 1, 3, 3, 1, 3, 0, 2},
    {BTRFS_BLOCK_GROUP_RAID1C4, "raid1c4", 1, 4, 4, 1, 4, 0, 3},
    {BTRFS_BLOCK_GROUP_RAID10, "raid10", 1, 2, 0, 2, 2, 0, 1},
    {BTRFS_BLOCK_GROUP_RAID5, "raid5", 1, 2, 0, 1, 1, 1, 1},
    {BTRFS_BLOCK_GROUP_RAID6, "raid6", 1, 3, 0, 1, 1, 2, 2},
};

const struct btk_raid_attr *btk_raid_attr(uint64_t flags)
{
	uint64_t prof = flags & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	for (size_t i = 0; i < sizeof(raid_table) / sizeof(raid_table[0]); i++)
		if (raid_table[i].bit == prof)
			return &raid_table[i];
	return NULL;
}

const struct btk_raid_attr *btk_raid_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(raid_table) / sizeof(raid_table[0]); i++)
		if (!strcasecmp(raid_table[i].name, name))
			return &raid_table[i];
	return NULL;
}
