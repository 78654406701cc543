/* super.h — superblock copies (layer 3): read every mirror, validate, choose the newest. */
#ifndef BTK_SUPER_H
#define BTK_SUPER_H

#include <stdbool.h>
#include "format/format.h"
#include "io/io.h"

struct btk_super_copy {
	int mirror;	     /* 0, 1, 2 */
	uint64_t offset;     /* byte offset on the device */
	bool present;	     /* the device is large enough to hold it */
	bool valid;	     /* read, magic, checksum and sanity checks passed */
	char why[160];	     /* when !valid and present: what was wrong */
	struct btk_super sb; /* raw bytes as read */
};

/* Reads and validates every mirror of dev into copies[3]. Returns the index of the valid
 * copy with the highest generation, or -ENOENT (no btrfs superblock at all: btk_errmsg says
 * what was found) / -EUCLEAN (btrfs magic present but no valid copy) / -EIO. */
int btk_super_read_all(struct btk_dev *dev, struct btk_super_copy copies[BTK_SUPER_MIRRORS]);

/* Validates one superblock read at byte offset `offset`; 0, or -EUCLEAN with the reason in
 * why (size whylen). Checks magic, checksum, bytenr, sector/node sizes, levels, array size. */
int btk_super_check(const struct btk_super *sb, uint64_t offset, char *why, size_t whylen);

/* Fields of a superblock in host order. */
static inline bool btk_super_magic_ok(const struct btk_super *sb)
{
	return btk_le64(sb->magic) == BTK_MAGIC;
}
static inline uint64_t btk_super_total_bytes(const struct btk_super *sb)
{
	return btk_le64(sb->total_bytes);
}
static inline uint64_t btk_super_bytes_used(const struct btk_super *sb)
{
	return btk_le64(sb->bytes_used);
}
/* The id of the device this copy was read from (its dev_item). */
static inline uint64_t btk_super_devid(const struct btk_super *sb)
{
	return BTK_GET(struct btrfs_dev_item, sb->dev_item, devid);
}

/* What dev holds, for listings (btk-debug parts): a btrfs (a valid superblock copy: its label
 * and fsid), else what libblkid finds (btk_dev_blkid), else type "". 0 or -EIO. */
struct btk_holds {
	char type[64], label[256], uuid[64];
	uint64_t devid; /* btrfs: this device's id */
};
int btk_dev_holds(struct btk_dev *dev, struct btk_holds *h);

/* Computes and stores the checksum of sb (for writers). */
void btk_super_csum_fill(struct btk_super *sb);

/* Feature flag names, comma-separated, into buf: compat_ro (which=1) or incompat (which=2).
 * Unknown bits print as hex. Returns buf. */
const char *btk_feature_names(int which, uint64_t flags, char *buf, size_t len);

#endif
