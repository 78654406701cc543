/* inode_item.h — the INODE_ITEM (struct btrfs_inode_item, 160 bytes) in host order (layer 0).
 * Pure function: no message is set. */
#ifndef BTK_FORMAT_INODE_ITEM_H
#define BTK_FORMAT_INODE_ITEM_H

#include <stdint.h>

#include "format/format.h"

struct btk_timespec {
	uint64_t sec;
	uint32_t nsec; /* as stored: not checked to be below 1e9 */
};

/* Every field of an inode item (the reserved words aside). */
struct btk_inode_info {
	uint64_t size, nbytes, generation, transid, flags, rdev;
	uint32_t nlink, uid, gid, mode;
	uint64_t block_group, sequence;
	struct btk_timespec atime, ctime, mtime, otime;
};

/* A device node's numbers: the kernel stores its own dev_t, major << 20 | minor. */
static inline uint32_t btk_rdev_major(uint64_t rdev)
{
	return (uint32_t)(rdev >> 20) & 0xfff;
}
static inline uint32_t btk_rdev_minor(uint64_t rdev)
{
	return (uint32_t)rdev & 0xfffff;
}

/* Parses an INODE_ITEM's body: 0, or -EUCLEAN when it is shorter than the item (out not
 * filled). */
int btk_inode_item_parse(const uint8_t *d, uint32_t size, struct btk_inode_info *out);

#endif
