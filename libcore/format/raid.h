/* raid.h — what each block group profile is (layer 0): the one table of profile facts, as the
 * kernel's btrfs_raid_array has them. Static data: nothing is allocated, no message is set.
 */
#ifndef BTK_FORMAT_RAID_H
#define BTK_FORMAT_RAID_H

#include <stdint.h>

#include "format/format.h"

struct btk_raid_attr {
	uint64_t bit; /* BTRFS_BLOCK_GROUP_* profile bit, 0 for single */
	const char *name;
	int dev_stripes;	/* stripes on each device (DUP: 2) */
	int devs_min;		/* devices a chunk needs at least */
	int devs_max;		/* devices a chunk spans at most; 0: as many as there are */
	int sub_stripes;	/* RAID10: stripes mirroring each other */
	int ncopies;		/* copies of each byte */
	int nparity;		/* parity stripes per row (RAID5: 1, RAID6: 2) */
	int tolerated_failures; /* devices that may be lost without losing data */
};

/* The attributes of the profile in flags (other bits ignored); NULL if the profile bits are
 * not one profile. */
const struct btk_raid_attr *btk_raid_attr(uint64_t flags);
/* By name ("single", "dup", "raid0", ..., case-insensitive); NULL if unknown. */
const struct btk_raid_attr *btk_raid_by_name(const char *name);

#endif
