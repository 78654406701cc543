/* rescue.h (layer 10) — rescue steps that come before (and besides) the repair rounds:
 * healing bad copies from good ones (heal.c).
 *
 * Healing writes no tree and no superblock: a bad copy of a tree block (DUP, RAID1*, RAID10,
 * or the data stripe of RAID5/6 when parity rebuilds it) is overwritten, in place, with the
 * bytes of the copy the validated reader accepted; with data, every checksummed data sector
 * whose copy fails its checksum while another copy passes is overwritten the same way (an
 * offline scrub). The good copy is never written, so a write cut short leaves a bad copy
 * that a second run heals: every state a power cut leaves is the old filesystem or a
 * healed one.
 */
#ifndef BTK_RESCUE_H
#define BTK_RESCUE_H

#include <stdbool.h>
#include <stdint.h>
#include "volumes/volumes.h"

/* One bad copy: healed (rewritten from copy `from`), or for healed == false one that had no
 * good copy to heal from (a tree block no copy of which validates; data sectors no copy of
 * which matches its checksum). */
struct btk_heal_event {
	bool data;		  /* data sectors; else a tree block */
	bool healed;		  /* false: no good copy */
	bool bitflip;		  /* healed by setting one flipped bit back (why says which) */
	uint64_t tree;		  /* a tree block: the tree it was reached from */
	int level;		  /* a tree block: its level (-1 unknown) */
	uint64_t logical;	  /* first byte */
	uint64_t len;		  /* bytes (nodesize for a tree block) */
	int copy, ncopies;	  /* 1-based copy that was bad, of how many */
	int from;		  /* 1-based copy it was rewritten from */
	uint64_t devid, physical; /* where the bad copy lies (its first byte) */
	char why[160];		  /* what was wrong with it */
};

typedef void (*btk_heal_fn)(void *ctx, const struct btk_heal_event *e);

struct btk_heal_opts {
	bool data;	      /* data sectors too (with their checksums) */
	btk_heal_fn on_event; /* every bad copy, healed or not (may be NULL) */
	void *ctx;
};

struct btk_heal_result {
	uint64_t blocks, sectors;		/* tree blocks and data sectors looked at */
	uint64_t blocks_healed, sectors_healed; /* copies rewritten */
	uint64_t blocks_lost, sectors_lost;	/* with no good copy */
	uint64_t blocks_bitflip;		/* no good copy, one bit set back (every copy) */
};

/* Heals the filesystem on paths[0..n-1], opened for writing with oo (oo->dev carries the
 * fault switch and undo). 0 when the walk ran (res says what it did), or a negative errno
 * (btk_errmsg says why; what was healed before stays healed). */
int btk_heal_run(const char *const *paths, int n, const struct btk_open_opts *oo,
		 const struct btk_heal_opts *ho, struct btk_heal_result *res);

/* One superblock copy rewritten (from copy from_mirror of its device, or of the device the
 * filesystem was opened from, with its own device item). */
struct btk_super_event {
	uint64_t devid;
	const char *path;
	int mirror;
	uint64_t offset;
	int from_mirror;
	uint64_t generation; /* the source's */
	char why[240];
};

typedef void (*btk_super_fn)(void *ctx, const struct btk_super_event *e);

struct btk_super_opts {
	btk_super_fn on_event; /* may be NULL */
	void *ctx;
};

struct btk_super_result {
	int copies, rewritten; /* present copies, rewritten ones */
	int source_mirror;     /* the copy the filesystem opened from */
	uint64_t generation;
	/* no copy opened: copy source_mirror with one part taken from copy merged_donor did
	 * (merged_part names it: "system chunk array", "generation", ...; NULL: no merge) */
	const char *merged_part;
	int merged_donor;
};

/* Rewrites every superblock copy (every device, every mirror present) that differs from the
 * newest one that opens the filesystem. When none opens (one device), copies damaged in
 * different places are merged: a copy with one part (a field, the system chunk array, a
 * backup root) of another copy of the same filesystem, the first that opens, is written. -EUCLEAN
 * when none does (btk_errmsg names each copy's fault); other negative errnos for io errors. */
int btk_super_heal(const char *const *paths, int n, const struct btk_open_opts *oo,
		   const struct btk_super_opts *so, struct btk_super_result *res);

/* Each inode a log holds (name NULL: its inode item; else one of its logged names). */
typedef void (*btk_log_inode_fn)(void *ctx, uint64_t root, uint64_t ino, uint64_t parent,
				 const char *name, uint16_t len);
struct btk_log_opts {
	btk_log_inode_fn on_inode; /* may be NULL */
	/* refuse a log whose new data extents lack logged checksums (-EUCLEAN, nothing
	 * written): a repair does not leave data unchecked behind the user's back */
	bool refuse_unsummed;
	void *ctx;
};

struct btk_log_result {
	bool had_log, cleared;
	uint64_t log_generation; /* the transaction the log belongs to */
	uint64_t log_items, log_blocks, subvolumes;
	uint64_t unsummed_bytes; /* logged new data no logged checksum covers */
	uint64_t inodes, names_added, names_removed, inodes_deleted, extents, data_bytes;
};

/* Replays the log tree of the filesystem on paths[0..n-1] as a kernel mount would (inodes,
 * directory entries and indexes, names, xattrs, file extents, data checksums logged by
 * fsync) and commits the result without the log; with zero, drops the log unreplayed (what
 * it held is lost: lo->on_inode names it first). 0 with res->had_log false when there is no
 * log. Power-cut safe: until the commit's superblocks the log stays readable and named. A log
 * the replay does not understand is refused (-EOPNOTSUPP, nothing written). */
int btk_log_replay(const char *const *paths, int n, const struct btk_open_opts *oo, bool zero,
		   const struct btk_log_opts *lo, struct btk_log_result *res);

/* One run of sectors the checksum rebuild could not give a right checksum: kept its old
 * checksum (kept, no copy matches it or none reads) or left without one (no copy reads, or
 * copies differ with no old checksum to choose). */
struct btk_csum_rebuild_event {
	uint64_t logical, len;
	bool kept;
	char why[120];
};
typedef void (*btk_csum_rebuild_fn)(void *ctx, const struct btk_csum_rebuild_event *e);
struct btk_csum_rebuild_opts {
	btk_csum_rebuild_fn on_event; /* may be NULL */
	void *ctx;
};
struct btk_csum_rebuild_result {
	bool rebuilt;
	/* nothing rebuilt: the old tree reads whole and covers exactly the data that needs
	 * checksums (whether the data matches them is --check-data-csum's to say) */
	bool whole;
	uint64_t extents;      /* file extents whose data needs checksums */
	uint64_t old_blocks;   /* blocks of the old tree dropped */
	uint64_t sectors;      /* data sectors read */
	uint64_t sectors_new;  /* given a checksum of the bytes all their copies agree on */
	uint64_t sectors_kept; /* kept an old checksum that a copy matches */
	uint64_t sectors_left; /* listed (events): no right checksum known */
};

/* Rebuilds the checksum tree of the filesystem on paths[0..n-1] from the data the file extents
 * of every subvolume name (rebuild.c says how each sector is judged), in one transaction: the
 * old tree is replaced whole, even one that no longer reads. -EBUSY with a log tree (replay it
 * first; so for every rebuild); a subvolume that does not read whole is refused (which data needs
 * checksums is not known). */
int btk_csum_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		     const struct btk_csum_rebuild_opts *ro, struct btk_csum_rebuild_result *res);

struct btk_tree_rebuild_result {
	bool rebuilt; /* false: the tree was right already (uuid, data relocation), nothing written
		       */
	bool v1_invalidated; /* free space: a v1 cache, invalidated (the kernel rebuilds it) */
	uint64_t old_blocks; /* blocks of the old tree dropped */
	uint64_t items;	     /* uuid tree: items written */
};

/* Rebuilds the free-space tree from the extent records (every block group's free ranges), in
 * one transaction that replaces the old tree whole, also one that no longer reads; a tree that
 * reads whole and says exactly those ranges is left as it is (res->rebuilt false, nothing
 * written). A filesystem with a v1 space cache has it invalidated instead (the kernel rebuilds
 * it). */
int btk_fst_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		    struct btk_tree_rebuild_result *res);

/* Rebuilds the uuid tree from the root items (the uuid and received uuid of every live
 * subvolume), in one transaction that replaces the old tree whole (or makes one), and marks it
 * current so that the kernel does not rescan it. A tree that is current and reads whole with
 * exactly those items is left as it is (res->rebuilt false, nothing written). */
int btk_uuid_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		     struct btk_tree_rebuild_result *res);

/* Rebuilds the data relocation tree (which holds nothing between relocations) as mkfs makes
 * it: its old blocks dropped (also when they no longer read), a new leaf with its top
 * directory, in one transaction; a tree that reads whole and holds just that is left as it is
 * (res->rebuilt false, nothing written). -EBUSY when a relocation is under way (a balance item, a
 * relocation tree, or data references naming the tree): the kernel needs its inodes. */
int btk_data_reloc_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			   struct btk_tree_rebuild_result *res);

struct btk_quota_rescan_result {
	/* false: quotas were marked consistent and the rescan found every number right and
	 * every subvolume with its qgroup (nothing written) */
	bool rescanned;
	uint64_t qgroups;      /* qgroups after the rescan */
	uint64_t changed;      /* of them, with other numbers than they had */
	uint64_t created;      /* level-0 qgroups a subvolume lacked */
	bool was_inconsistent; /* the status said a rescan was needed */
	bool was_rescanning;   /* or that one was under way */
	/* the quota tree did not read (why): made again, its old blocks dropped; the limits,
	 * higher-level qgroups and relations it held are lost */
	bool recreated;
	uint64_t old_blocks;
	char why[160];
};

/* The kernel's quota rescan, offline (btk_qgroups_rescan as the commit's settled hook), in one
 * transaction: quotas consistent after it, also when they were marked inconsistent or a rescan
 * was under way. Quotas marked consistent whose numbers the rescan finds right are left as
 * they are (res->rescanned false, nothing written). A quota tree that does not read is made
 * again first (res->recreated).
 * -ENOENT when quotas are off; -EOPNOTSUPP for simple quotas. */
int btk_quota_rescan(const char *const *paths, int n, const struct btk_open_opts *oo,
		     struct btk_quota_rescan_result *res);

/* A file extent item whose data extent the extent-tree rebuild cannot give a record (why says
 * so): the rebuild is then refused. */
struct btk_extent_rebuild_event {
	uint64_t bytenr, len;  /* what the item names */
	uint64_t tree, parent; /* a keyed user's tree, or the leaf of a shared one */
	uint64_t ino, offset;  /* a keyed user's inode and data reference offset */
	char why[120];
};
typedef void (*btk_extent_rebuild_fn)(void *ctx, const struct btk_extent_rebuild_event *e);
struct btk_extent_rebuild_opts {
	btk_extent_rebuild_fn on_event; /* may be NULL */
	void *ctx;
};
struct btk_extent_rebuild_result {
	bool rebuilt;
	/* nothing rebuilt: the checker finds no extent, back reference, block group,
	 * free-space or tree block problem (the tree agrees with the trees that use it) */
	bool agrees;
	uint64_t trees;		     /* trees walked */
	uint64_t tree_blocks;	     /* tree blocks recorded */
	uint64_t shared_blocks;	     /* of them FULL_BACKREF (only other trees than the owner's
					reach them, or a relocation wrote them) */
	uint64_t tree_refs;	     /* their references */
	uint64_t data_extents;	     /* data extents recorded */
	uint64_t data_refs;	     /* their references (keyed or shared, each with a count) */
	uint64_t extents_left;	     /* file extent items whose extent can get no record
					(events; the rebuild is refused) */
	uint64_t old_blocks;	     /* blocks of the old extent, free-space and block group
					trees dropped */
	uint64_t csum_bytes_dropped; /* checksums of data no extent holds */
	uint64_t reloc_dropped;	     /* relocation trees of subvolumes that do not exist,
					dropped */
	uint64_t errors_before, errors_after; /* the checker's errors before and after */
};

/* Rebuilds the extent tree of the filesystem on paths[0..n-1] from the trees (extent_rebuild.c
 * says how), with the block group items and the free-space tree, in one transaction whose new
 * state must check clean of extent problems before its superblocks are written (-ECANCELED
 * otherwise, nothing written); nothing is written when the checker finds no extent problem
 * (res->agrees). -EBUSY with a log tree, a relocation or a subvolume deletion
 * under way; -EUCLEAN when a tree block does not read, tree blocks overlap (btk_errmsg says
 * which) or a file extent item names data that cannot be an extent (events list them). */
int btk_extent_tree_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			    const struct btk_extent_rebuild_opts *ro,
			    struct btk_extent_rebuild_result *res);

struct btk_chunk_rebuild_result {
	bool rebuilt;
	bool whole;		/* the chunk tree reads whole: nothing rebuilt */
	uint64_t bad_blocks;	/* blocks of the chunk tree that did not read */
	uint64_t scanned_bytes; /* device bytes read by the scan */
	uint64_t tree_blocks;	/* valid tree blocks of the filesystem it found */
	uint64_t scan_dev_extents, scan_block_groups; /* the newest items of the found leaves */
	uint64_t dev_extents, block_groups;   /* the items of the dev tree and block group items
						 read through the rebuilt map */
	uint64_t chunks, sys_chunks, devices; /* items written */
	uint64_t old_items_used;    /* chunks whose stripe order came from an older chunk item */
	uint64_t placed, misplaced; /* found blocks of metadata chunks where the map puts them,
				       and elsewhere */
	uint64_t old_blocks;	    /* records of the old chunk tree's blocks dropped */
};

/* Rebuilds the chunk tree of the filesystem on paths[0..n-1] (chunk_rebuild.c says how) when
 * some of it does not read (a lost leaf or node, a bad root pointer): every chunk item from
 * the dev extents and block group items, every device item from the device's superblock, in
 * one transaction whose new state must check clean before its superblocks are written
 * (-ECANCELED otherwise, nothing written). A chunk tree that reads whole is left as it is
 * (res->whole). -EUCLEAN, nothing written, when the evidence is incomplete or disagrees
 * (btk_errmsg says what is missing or which chunk); -EBUSY with a log tree. */
int btk_chunk_tree_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			   struct btk_chunk_rebuild_result *res);
/* Only whether the chunk tree reads whole (res->whole, res->bad_blocks), read-only: a repair
 * first heals a chunk tree that does not (a good copy, a flipped bit), and rebuilds it only
 * when that did not make it read. */
int btk_chunk_tree_probe(const char *const *paths, int n, const struct btk_open_opts *oo,
			 struct btk_chunk_rebuild_result *res);

#endif
