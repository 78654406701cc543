/* mkfs.h (layer 7) — creating a new filesystem on one or more devices (bootstrap of the write
 * path).
 *
 * btk_mkfs() validates everything (sizes, profiles against the device count, features,
 * existing signatures through libblkid unless forced, mounted or busy devices) before it
 * writes a byte. It then builds the filesystem in memory through the write path — chunks,
 * empty trees, device items, root directories — and commits it: blocks first, a flush, then
 * the superblocks. Defaults follow mkfs.btrfs 6.2.
 */
#ifndef BTK_MKFS_H
#define BTK_MKFS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "format/format.h"
#include "io/io.h"
#include "format/raid.h" /* profiles: btk_raid_attr(), btk_raid_by_name() */

struct btk_trans;
struct btk_fs;

/* Features selectable with -O / -R. */
struct btk_mkfs_feature {
	const char *name;
	uint64_t incompat, compat_ro;
	bool dflt;    /* on by default in mkfs.btrfs 6.2 */
	bool runtime; /* listed under -R by mkfs.btrfs 6.2 */
	const char *desc;
	unsigned extra; /* what no feature bit says: BTK_MKFS_QUOTA */
};
/* btk_mkfs_feature.extra, btk_mkfs_opts.extra_on, btk_mkfs_result.extra */
#define BTK_MKFS_QUOTA (1u << 0) /* quotas on: a quota tree, every qgroup counted */
/* The table, terminated by a NULL name. */
const struct btk_mkfs_feature *btk_mkfs_features(void);
const struct btk_mkfs_feature *btk_mkfs_feature_find(const char *name);

#define BTK_PROFILE_DEFAULT UINT64_MAX

struct btk_mkfs_opts {
	const char *const *paths;
	int ndevs;
	uint64_t byte_count;	       /* per device; 0 = whole device (required for a new file) */
	uint32_t nodesize, sectorsize; /* 0 = 16384 / 4096 */
	uint64_t data_profile, meta_profile; /* profile bits or BTK_PROFILE_DEFAULT */
	bool mixed;
	int csum_type;	      /* BTRFS_CSUM_TYPE_* */
	uint64_t features_on; /* incompat | compat_ro bits asked for; see btk_mkfs_opts_init */
	uint64_t ro_on;
	uint64_t features_off; /* incompat bits turned off */
	uint64_t ro_off;
	unsigned extra_on; /* BTK_MKFS_QUOTA... asked for */
	/* With BTK_MKFS_QUOTA: the commit's settled hook that counts every qgroup of the new
	 * filesystem (backref's btk_qgroups_rescan; create cannot call that layer itself) */
	int (*count_qgroups)(void *ctx, struct btk_trans *t);
	const char *label;   /* NULL = none */
	const uint8_t *fsid; /* NULL = random */
	/* the device uuid of a one-device filesystem (mkfs.btrfs --device-uuid); NULL = made as
	 * the other uuids are (random, or derived from a given fsid) */
	const uint8_t *dev_uuid;
	bool force; /* overwrite existing signatures */
	/* the open path's options for the devices (io.h): --wait, fault injection, undo; write,
	 * create and no_clobber are mkfs's own (from force and inplace) */
	struct btk_dev_opts dev;
	bool discard;	   /* discard block devices first */
	time_t now;	   /* times written into inodes and root items */
	uint32_t cache_mb; /* tree-block cache budget in MiB (0 = 256) */
	/* End each device (image files only) where its last chunk's data ends: chunks are kept
	 * small and the last one loses its unused tail; image files are truncated there. */
	bool shrink;
	uint64_t
	    meta_estimate; /* with shrink or inplace: metadata the fill will need (0: unknown) */
	uint64_t slack;	   /* with shrink: unallocated bytes kept past each last chunk */
	/* Called inside the creating transaction once the empty filesystem exists (the top
	 * directory is inode 256 of FS_TREE), e.g. to copy a directory tree in. The devices are
	 * wiped just before it runs (it writes file data, and tree blocks through
	 * btk_trans_writeback); nonzero fails mkfs with no superblock written, and image files
	 * that mkfs created are removed. */
	int (*fill)(void *ctx, struct btk_trans *t);
	void *fill_ctx;
	/* File data the fill writes at the least (logical bytes, before the profile's copies;
	 * 0 = unknown). When it cannot fit in the devices' raw space, btk_mkfs fails with
	 * -ENOSPC before the first write, so an old filesystem there stays intact. A fill that
	 * passes this count can still run out of space later (metadata, compression that does
	 * not pay): then the devices are already wiped. */
	uint64_t fill_min_data;
	/* Building over another filesystem that must survive until the superblocks are written
	 * (convert): no signature probe, no discard, no wipe, no minimum size. `place` runs in the
	 * creating transaction before mkfs allocates its first chunks, to lay chunks at fixed
	 * places and keep device ranges from the allocator (trans/inplace.h); when it made a data
	 * chunk, mkfs makes none. It gets fill_ctx; nonzero fails mkfs. erase_len bytes at
	 * erase_off of the first device (the old filesystem's signature, below the primary
	 * superblock) are zeroed in the write of the primary superblock itself
	 * (btk_trans_erase_with_super): every power cut leaves one filesystem for blkid. */
	bool inplace;
	int (*place)(void *ctx, struct btk_trans *t);
	uint64_t erase_off, erase_len;
};
void btk_mkfs_opts_init(struct btk_mkfs_opts *o);

struct btk_mkfs_result {
	uint8_t fsid[BTK_FSID_SIZE];
	uint32_t nodesize, sectorsize;
	uint64_t total_bytes;
	uint64_t incompat, compat_ro;
	unsigned extra; /* BTK_MKFS_QUOTA... */
	int csum_type;
	uint64_t data_flags, meta_flags, sys_flags; /* full block group flags */
	uint64_t data_bytes, meta_bytes, sys_bytes; /* all chunks of each kind, as on disk */
	uint64_t unallocated; /* device bytes outside every chunk, all devices */
	int ndevs;
	struct {
		uint64_t devid, size;
	} devs[64];
};

/* Creates the filesystem. Errors (nothing written unless the fill or the commit fails):
 * -EINVAL bad option, -EEXIST a signature found without force, -EBUSY mounted/held device,
 * -ENOSPC device too small, -EIO. btk_errmsg() names the device and the problem. */
int btk_mkfs(const struct btk_mkfs_opts *o, struct btk_mkfs_result *res);

/* The node size o makes (its own, or the default: 16 KiB; the sector size when mixed). */
uint32_t btk_mkfs_nodesize(const struct btk_mkfs_opts *o);
/* The tree bytes content m needs in a filesystem o makes (btk_meta_estimate with o's node
 * and checksum sizes): what a tool puts in o->meta_estimate. */
struct btk_meta_counts;
uint64_t btk_mkfs_meta_estimate(const struct btk_mkfs_opts *o, const struct btk_meta_counts *m);

/* Safety probes used by btk_mkfs (exported for tests): 0 when the device holds no known
 * signature (or force); -EEXIST naming what libblkid found. */
int btk_mkfs_probe(const char *path, bool force);

#endif
