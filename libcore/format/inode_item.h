/* inode_item.h — the INODE_ITEM (struct btrfs_inode_item, 160 bytes) in host order (layer 0),
 * and the timespec inside it and the root item. Pure functions: no message is set. */
#ifndef BTK_FORMAT_INODE_ITEM_H
#define BTK_FORMAT_INODE_ITEM_H

#include <stdint.h>

#include "format/format.h"

/* A struct btrfs_timespec. */
struct btk_time {
	uint64_t sec;
	uint32_t nsec; /* as stored: not checked to be below 1e9 */
};

/* Stores / loads a time as a struct btrfs_timespec (12 bytes) at p. */
void btk_put_time(uint8_t *p, const struct btk_time *tm);
struct btk_time btk_get_time(const uint8_t *p);

/* Every field of an inode item but the reserved ones. */
struct btk_inode_info {
	uint64_t size, nbytes, generation, transid, flags, rdev, block_group, sequence;
	uint32_t nlink, uid, gid, mode;
	struct btk_time atime, ctime, mtime, otime;
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

/* The directory entry type (BTRFS_FT_*) of an inode of this mode (S_IF* bits, the same on
 * disk as in Linux): BTRFS_FT_UNKNOWN for no known type. */
static inline uint8_t btk_mode_ftype(uint32_t mode)
{
	switch (mode & 0170000) {
	case 0100000:
		return BTRFS_FT_REG_FILE;
	case 0040000:
		return BTRFS_FT_DIR;
	case 0020000:
		return BTRFS_FT_CHRDEV;
	case 0060000:
		return BTRFS_FT_BLKDEV;
	case 0010000:
		return BTRFS_FT_FIFO;
	case 0140000:
		return BTRFS_FT_SOCK;
	case 0120000:
		return BTRFS_FT_SYMLINK;
	}
	return BTRFS_FT_UNKNOWN;
}

/* The inverse: the S_IF* bits of a directory entry type, 0 for BTRFS_FT_UNKNOWN, XATTR and
 * types past the last. Shifted right by 12 they are the dirent DT_* value. */
static inline uint32_t btk_ftype_mode(uint8_t ftype)
{
	static const uint32_t ifmt[] = {
	    [BTRFS_FT_REG_FILE] = 0100000, [BTRFS_FT_DIR] = 0040000,  [BTRFS_FT_CHRDEV] = 0020000,
	    [BTRFS_FT_BLKDEV] = 0060000,   [BTRFS_FT_FIFO] = 0010000, [BTRFS_FT_SOCK] = 0140000,
	    [BTRFS_FT_SYMLINK] = 0120000,
	};

	return ftype < sizeof(ifmt) / sizeof(ifmt[0]) ? ifmt[ftype] : 0;
}

/* Parses an INODE_ITEM's body: 0, or -EUCLEAN when it is shorter than the item (out not
 * filled). */
int btk_inode_item_parse(const uint8_t *d, uint32_t size, struct btk_inode_info *out);

/* Writes every field of *in into the sizeof(struct btrfs_inode_item) bytes at d; the reserved
 * bytes are left as they are (zero them for a new item). Parsing and writing back an item
 * changes nothing. */
void btk_inode_item_write(uint8_t *d, const struct btk_inode_info *in);

#endif
