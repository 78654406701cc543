/* history.h (layer 7) — older generations: names that only older roots still hold (deleted
 * files), and what changed between two roots (created, deleted, modified, renamed).
 *
 * Both compare subvolume trees block by block: a leaf that two trees share holds the same items,
 * so only the leaves one tree has and the other has not are read, and every item of them is
 * looked up in the other tree. Older trees come from the root scan (tree/scan.h); their blocks
 * may have been overwritten since: those subtrees are skipped and counted.
 */
#ifndef BTK_HISTORY_H
#define BTK_HISTORY_H

#include "format/inode_item.h"
#include "tree/scan.h"

/* What became of a deleted file's data blocks. */
enum btk_data_state {
	BTK_DATA_NONE,	 /* no data: empty file, directory, ... */
	BTK_DATA_INLINE, /* inside the old tree leaf itself */
	BTK_DATA_FREE,	 /* every extent unallocated now: still there unless written over */
	BTK_DATA_REUSED, /* some extent is allocated again (to another file, or metadata) */
	BTK_DATA_KEPT,	 /* some extent still allocated as that very extent (a snapshot, a reflink
			    or another name keeps it), the others free: the data is there */
};
/* "none", "inline", "free", "reused", "kept" */
const char *btk_data_state_name(enum btk_data_state s);

/* One name of a subvolume tree. */
struct btk_hist_name {
	uint64_t subvol, dir, index, ino;
	const char *path; /* from the top-level subvolume; valid during the call */
	uint8_t type;	  /* BTRFS_FT_* of the directory entry */
	bool have_inode;  /* info read (from the tree that has the name) */
	struct btk_inode_info info;
	/* the newest generation whose root still holds the name, its root tree block (to read
	 * it: btk_open_opts.tree_root) and the subvolume tree's root there */
	uint64_t generation, root_tree;
	struct btk_root tree;
	enum btk_data_state data; /* deleted names only */
	const char *new_path;	  /* renamed: the name in the newer root */
};

/* Calls fn for every name that a root tree older than fs's (found in blocks, newest first)
 * holds in a subvolume tree and fs's trees do not, once, with the newest generation that has
 * it. An inode that lives on under another name (a rename) is not passed. *missing counts the
 * old tree blocks that no longer read. fn's nonzero return stops and is returned. */
int btk_hist_deleted(struct btk_fs *fs, const struct btk_found_blocks *blocks,
		     int (*fn)(void *ctx, const struct btk_hist_name *n), void *ctx,
		     uint64_t *missing);

enum btk_change { BTK_CH_CREATED, BTK_CH_DELETED, BTK_CH_MODIFIED, BTK_CH_RENAMED };
const char *btk_change_name(enum btk_change c); /* "created", "deleted", ... */

/* What changed from root tree `from` to root tree `to` (their root blocks, as btk-image roots
 * lists them) in every subvolume tree: names created and deleted, files renamed (an inode
 * whose name changed; new_path is the newer), files modified (size or mtime differ), and
 * subvolumes created or deleted (their top directory's name). fn's nonzero return stops. */
int btk_hist_diff(struct btk_fs *fs, uint64_t from, uint64_t to,
		  int (*fn)(void *ctx, enum btk_change c, const struct btk_hist_name *n), void *ctx,
		  uint64_t *missing);

/* A free address of a metadata chunk that lies in a valid tree block of an older generation
 * (btk-owner: "stale metadata"): the block, and what it holds. */
#define BTK_STALE_NAMES 16
struct btk_stale {
	uint64_t bytenr, owner, generation;
	int level;
	uint32_t nritems;
	struct btk_key first, last;
	/* leaves of subvolume trees: the names of their DIR_INDEX items (up to BTK_STALE_NAMES;
	 * nnames counts them all) with the inode each names, and the INODE_ITEMs' numbers */
	uint32_t nnames, ninodes;
	struct {
		uint64_t dir, ino;
		char name[256];
	} names[BTK_STALE_NAMES];
	uint64_t inodes[BTK_STALE_NAMES];
};
/* 0 with *out when the nodesize block holding logical (in a metadata or system chunk) is a
 * valid tree block at its address; -ENOENT when it is none (or not in such a chunk); other
 * errors of the read. */
int btk_hist_stale_block(struct btk_fs *fs, uint64_t logical, struct btk_stale *out);

/* Free space for carving tools: fn for each logical range inside a block group that no extent
 * item of the extent tree covers (type: the block group's BTRFS_BLOCK_GROUP_* flags), in
 * logical order. A nonzero return of fn stops and is returned. */
int btk_hist_free_ranges(struct btk_fs *fs,
			 int (*fn)(void *ctx, uint64_t logical, uint64_t len, uint64_t type),
			 void *ctx);
/* fn for each range of each device that no device extent uses (from 1 MiB, below which
 * nothing is allocated, to the device's size), by devid and offset. */
int btk_hist_unallocated(struct btk_fs *fs,
			 int (*fn)(void *ctx, uint64_t devid, uint64_t physical, uint64_t len),
			 void *ctx);

/* Unused bytes of the devices for carving tools, as TSK's blkls streams a filesystem's
 * unallocated blocks: device ranges no chunk uses and the free ranges inside block groups
 * (btk_hist_free_ranges) where each copy of them lies, without the ranges btrfs keeps for
 * itself (the first MiB, the superblock mirrors' stripes) and cut at the end of a device that
 * is shorter than it should be. Passed in physical order, device by device (devid 0: every
 * device present; a missing one is skipped), adjacent pieces joined. */
#define BTK_UNALLOCATED UINT64_MAX
struct btk_unused {
	uint64_t devid, physical, len;
	uint64_t logical; /* inside a block group; BTK_UNALLOCATED where no chunk is */
	uint64_t type;	  /* the block group's BTRFS_BLOCK_GROUP_* flags; 0 where no chunk is */
};
int btk_hist_unused(struct btk_fs *fs, uint64_t devid,
		    int (*fn)(void *ctx, const struct btk_unused *u), void *ctx);
/* Reads len bytes of device devid at physical (for the ranges above). */
int btk_hist_unused_read(struct btk_fs *fs, uint64_t devid, uint64_t physical, void *buf,
			 size_t len);

/* Salvage (btk-image get --salvage) when directories do not lead to their files (a smashed
 * leaf held their entries): every inode of subvolume tree `tree` as its own items tell, read
 * stepping over blocks that do not read. Its path comes from the chain of its INODE_REFs
 * (the first of each), a reference the tree lost taken from the same tree at the older root
 * trees `older` (root tree blocks, newest first). fn for each inode that has an inode item or
 * file extents, by inode number; its nonzero return stops and is returned. */
#define BTK_SALVAGE_DEPTH 512 /* directories above a file, at most */
struct btk_salvaged {
	uint64_t ino;
	bool have_inode; /* else info is zero: the inode item did not read */
	struct btk_inode_info info;
	uint64_t data_end; /* where its last file extent ends (0: none) */
	/* below the subvolume's top ("a/b/name"); or, with lost, below the nearest directory
	 * whose name no root holds (lost is its number; the inode's own, path "", when the
	 * inode itself has no name) */
	const char *path;
	uint64_t lost;
};
int btk_hist_salvage(struct btk_fs *fs, const struct btk_root *tree, const uint64_t *older,
		     size_t nolder, int (*fn)(void *ctx, const struct btk_salvaged *f), void *ctx);

#endif
