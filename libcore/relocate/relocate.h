/* relocate.h — resizing one device of an opened filesystem (layer 8).
 *
 * Growing changes the device item and the superblock totals only. Shrinking first moves every
 * chunk stripe of the device that lies past the new end into unallocated space below it
 * (whole stripes, physically: copy, then point the chunk item, dev extent and system chunk
 * array at the copy in one transaction), then sets the size. Moves run in rounds: a place a
 * stripe left is reused only after the commit that left it, so every write leaves the old or
 * the new filesystem. The plan is a pure function of the device layout: the minimum it
 * reports is exactly what a shrink to the minimum reaches.
 *
 * When whole stripes cannot get below the size, the free tails of SINGLE/DUP data and
 * metadata chunks are cut (resize_cut.c; metadata keeps the kernel's reserve), and a stripe
 * that then fits no hole has its chunk split in two where no extent crosses, its tail fitting
 * the largest hole below (btk_chunk_split; nothing is copied but whole stripes), or the chunks
 * past it are emptied instead: each extent in them is copied into the free space of the
 * chunks that stay and every reference is rewritten through the back references
 * (relocate_int.h, reloc_*.c), then they go. When neither reaches it, chunks are emptied so
 * that the stripes past the size can move into the room they leave (resize_compact.c).
 *
 * Planning (btk_resize_plan) only reads; btk_resize_apply writes (fs opened with write).
 */
#ifndef BTK_RELOCATE_H
#define BTK_RELOCATE_H

#include <stdbool.h>
#include <stdint.h>
#include "volumes/volumes.h"

struct btk_trans;

struct btk_resize_move {
	uint64_t logical; /* the chunk */
	uint64_t type;	  /* its block group flags */
	int stripe;	  /* index in the chunk item */
	uint64_t from, to, len;
	int round; /* moves of one round share a transaction */
};

/* The free tail of a chunk cut off (round 0, before any move). */
struct btk_resize_cut {
	uint64_t logical, type, from_len, to_len;
};

/* A chunk cut to to_len (0: emptied and removed) after the extents past that moved; run 0
 * or 1 of a repacking. */
struct btk_resize_split {
	uint64_t logical, type, from_len, to_len;
	int run;
};
/* A chunk a repacking makes (run 1): its type and stripe length, and where its stripes go. */
#define BTK_RESIZE_NEW_STRIPES 4 /* RAID1C4 */
struct btk_resize_new {
	uint64_t type, length;
	uint64_t phys[BTK_RESIZE_NEW_STRIPES],
	    devid[BTK_RESIZE_NEW_STRIPES]; /* each stripe's place */
	int nstripes;
	int run; /* the repacking run that makes it (0: the system chunk's new home) */
};

/* A chunk split in two before the stripes move (btk_chunk_split): its part from `at` on
 * becomes a chunk of its own at logical + at, which moves apart from the rest (into a hole
 * the whole chunk does not fit in). */
struct btk_resize_piece {
	uint64_t logical, type, len, at;
	int round; /* split before the moves of this round */
};

struct btk_resize_plan {
	uint64_t devid;
	uint64_t old_size; /* the device's size in its dev item */
	uint64_t new_size;
	uint64_t minimum;     /* the smallest size this device can be shrunk to */
	uint64_t alloc_end;   /* where its last dev extent ends now */
	uint64_t allocated;   /* bytes of its dev extents: the minimum is at least 1 MiB more */
	uint64_t bytes_moved; /* sum of the moves' lengths */
	struct btk_resize_move *moves;
	int nmoves, rounds;
	struct btk_resize_cut *cuts; /* only when moving whole stripes cannot reach the size */
	int ncuts;
	size_t capmoves, capcuts; /* room in moves and cuts */
	uint64_t bytes_cut;
	/* chunks emptied logically (their extents moved into the chunks that stay, every
	 * reference rewritten) and removed, when moving and cutting cannot reach the size */
	uint64_t *empties;
	int nempty;
	uint64_t bytes_relocated;
	/* compaction: the chunks are emptied and removed first, then the stripes move (into the
	 * room they left) */
	bool empty_first;
	/* repacking (resize_repack.c), when nothing above reaches the size: run 0 compacts the
	 * chunks that stay (their tails' extents moved into their heads and the others' free
	 * space, then cut; other metadata chunks emptied into the first), run 1 cuts the chunks
	 * reaching past the size at it (or empties them) and moves what they hold into the free
	 * space below and into new chunks sized to fit the holes below it. */
	bool repack;
	uint64_t repack_at; /* the size the new chunks' places were planned for */
	struct btk_resize_split *splits;
	int nsplits;
	struct btk_resize_new *news;
	int nnew;
	size_t capsplits, capnew;
	/* chunks split in two (in this order, a transaction before the moves of their round) so
	 * that their parts move into holes apart */
	struct btk_resize_piece *pieces;
	int npieces;
	size_t cappieces;
};

/* The least devid can hold whatever its chunks: the bytes of the extents on it (shared ones
 * once), by kind; the free metadata a shrink leaves the kernel to mount and write (its global
 * reserve and 64 insertions, in every copy on this device); the reserved first MiB. */
struct btk_resize_floor {
	uint64_t data, metadata, system, kernel_room, reserved, total;
};
int btk_resize_floor(struct btk_fs *fs, uint64_t devid, struct btk_resize_floor *f);

/* Why a plan's size is above the floor: the device bytes its chunks take after the plan beyond
 * what the floor counts for them, by kind (system: the system chunks' free space;
 * metadata: free metadata beyond the kernel's reserve; data: free space inside the data chunks
 * that stay), and the holes between the chunks; repack_off names why chunks were not repacked
 * ("" when they could be: one device, SINGLE/DUP only, no mixed block groups). */
struct btk_resize_gap {
	uint64_t system, metadata, data, holes;
	const char *repack_off;
};
void btk_resize_gap(const struct btk_fs *fs, const struct btk_resize_plan *p,
		    const struct btk_resize_floor *f, struct btk_resize_gap *g);

/* What stops a write: returns 0, or -EBUSY (a balance in progress, or what an interrupted
 * relocation left: relocation trees, a data relocation inode),
 * -EOPNOTSUPP (a log tree to replay), -EPERM (a conversion's rollback image, wherever its
 * subvolume is named: a resize would break it; with force a warning, btk_convert_guard) with
 * a message saying what to do. */
int btk_resize_refusals(struct btk_fs *fs, bool force);

/* Plans resizing devid to `size` bytes (rounded down to the sector size); size 0 asks for the
 * minimum. Without BTK_RESIZE_FIND_MIN in flags, a size at or past the allocated end (nothing
 * moves) skips the search for the minimum, which reads every extent: plan->minimum is then 0. Fills
 * *plan (free with btk_resize_plan_free). Errors: -ENOENT unknown devid, -ENOSPC size below the
 * minimum (the message says the minimum), -EINVAL size too small to hold a superblock, -ENOMEM. */
#define BTK_RESIZE_FIND_MIN  1u /* search for the minimum even when the size needs no move */
#define BTK_RESIZE_NO_REPACK 2u /* move, cut and empty only: no repacking (less moved) */
#define BTK_RESIZE_NO_SPLIT  4u /* no chunk split for its parts to move apart */
int btk_resize_plan(struct btk_fs *fs, uint64_t devid, uint64_t size, unsigned flags,
		    struct btk_resize_plan *plan);
void btk_resize_plan_free(struct btk_resize_plan *plan);

/* Called after each stripe copied: bytes done of total. */
typedef void (*btk_resize_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Carries out a plan made on this fs (opened for writing, nothing changed since): the image
 * file is extended first when growing and cut last when shrinking (after the commit). A plan
 * whose size stays still cuts an image file longer than the device's size (only that tail,
 * past the device's end: a shrink stopped before its cut); block devices are never cut.
 * Errors from the write path; an interrupted apply leaves the old or the new filesystem
 * (or one between rounds, at the old size). It opens and closes the write path's state of fs
 * itself (btk_write_open): one call per opened filesystem. */
int btk_resize_apply(struct btk_fs *fs, const struct btk_resize_plan *plan,
		     btk_resize_progress_fn progress, void *ctx);

/* Changes the fsid of a single-device filesystem to fsid in transaction t (opened for
 * writing, nothing else changed in it), as btrfstune -u does, copy-on-write: every tree block
 * of the committed trees is copied with the new fsid in its header (reloc_fsid.c), the device
 * items and the superblock get it, and every block the new trees reach is checked to carry it
 * (*blocks counts them) before the caller commits. The committed filesystem stays as it was
 * until the commit's superblocks. An fsid the filesystem already has (and its blocks hold)
 * changes nothing. Errors: -ENOSPC no room for a second copy of the metadata,
 * the refusals of btk_trans_fsid_rewrite_begin; after an error t must be dropped. */
int btk_fsid_rewrite(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE],
		     btk_resize_progress_fn progress, void *ctx, uint64_t *blocks);

#endif
