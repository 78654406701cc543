/* volumes.h — an opened filesystem: its devices and the chunk map (layer 3).
 *
 * btk_fs_open() reads the superblocks of the given devices, finds the other members of a
 * multi-device filesystem (libblkid scan by fsid) unless told not to, loads the system chunk
 * array and then the chunk tree, and sets up the tree-block cache. Logical addresses map to
 * physical copies for SINGLE, DUP, RAID0/1/10, RAID1C3/C4 and the data stripes of RAID5/6.
 */
#ifndef BTK_VOLUMES_H
#define BTK_VOLUMES_H

#include <stdbool.h>
#include "format/format.h"
#include "io/io.h"
#include "volumes/super.h"

struct btk_stripe {
	uint64_t devid;
	uint64_t offset; /* physical byte offset on that device */
	uint8_t dev_uuid[BTK_UUID_SIZE];
};

struct btk_chunk {
	uint64_t logical, length, owner, stripe_len, type;
	uint32_t io_align, io_width, sector_size;
	uint16_t num_stripes, sub_stripes;
	struct btk_stripe stripes[]; /* num_stripes */
};

struct btk_fs_dev {
	uint64_t devid;
	uint8_t uuid[BTK_UUID_SIZE];
	uint64_t total_bytes, bytes_used; /* from the dev item (chunk tree, else superblock) */
	/* the filesystem the dev item names: another's for a device of a seed filesystem */
	uint8_t fsid[BTK_FSID_SIZE];
	struct btk_dev *dev; /* NULL when the device is missing */
	int super_mirror;    /* which superblock copy was chosen on it */
	/* a given device of a seed filesystem (its superblock's fsid is in fsid until the chunk
	 * tree's dev item replaces it: btk_volumes_check_seeds compares them) */
	bool seed;
	bool has_item; /* the chunk tree holds a dev item for devid */
};

struct btk_block_cache;

struct btk_fs {
	struct btk_super sb; /* the chosen superblock (newest valid copy of the first device) */
	uint32_t nodesize, sectorsize, stripesize;
	int csum_type, csum_size;
	uint64_t generation;
	uint8_t fsid[BTK_FSID_SIZE];
	uint8_t meta_uuid[BTK_FSID_SIZE]; /* the fsid written into tree blocks */
	/* while a transaction rewrites every tree block with a new fsid (meta_uuid), the blocks
	 * it has not copied yet still carry this one, and read as well (btk_fs_fsid_known) */
	uint8_t prev_meta_uuid[BTK_FSID_SIZE];
	bool prev_meta_ok;
	int ndevs;
	struct btk_fs_dev *devs; /* sorted by devid */
	int nchunks;
	struct btk_chunk **chunks; /* sorted by logical */
	/* Room allocated in devs and chunks, so that adding one by one is not quadratic (0: as
	 * many as there are, for arrays made elsewhere). */
	size_t devs_cap, chunks_cap;
	/* the system chunk array did not parse (sys_array_why says why) and the open found the
	 * chunk tree's root block on a device instead (opts->sys_array_scan): the chunk tree
	 * maps every chunk, and a commit writes the array again from its system chunks */
	bool sys_array_scanned;
	char sys_array_why[160];
	struct btk_block_cache *cache;
	bool writable;
};

struct btk_open_opts {
	/* open devices read-write: exclusively, as io.h's open path does (the in-use check, the
	 * writer's lock, O_EXCL); else read-only, no lock */
	bool write;
	/* the rest of the open path's options for every device opened by name: --wait, fault
	 * injection, undo (dev.write and dev.create are ignored: write above says) */
	struct btk_dev_opts dev;
	bool no_scan;	     /* do not look for other member devices */
	int super_mirror;    /* -1: newest valid; 0..2: use that copy */
	uint64_t cache_mb;   /* tree-block cache budget; 0 = default */
	bool degraded;	     /* open even when member devices are missing */
	bool forget_missing; /* with degraded: no warning (the caller drops those devices) */
	/* Expert overrides of the superblock's roots, applied in memory only (tree/open.c):
	 * backup 0 keeps the superblock's, 1..4 uses backup root slot backup-1 (its tree and
	 * chunk roots, generation, bytes used, total bytes, devices; no log), BTK_BACKUP_NEWEST
	 * the newest slot whose root tree reads. tree_root / chunk_root (0: keep) then replace
	 * the root tree's / chunk tree's root block (level and generation from its header). */
	int backup;
	uint64_t tree_root, chunk_root;
	/* older generations (tree/open.c, tree/scan.h): generation (0: keep) opens the newest
	 * root tree of a generation at or before it whose root block and FS_TREE root still read,
	 * found by scanning the metadata chunks; fs_root (0: keep) replaces the root of the tree
	 * that owns that block (its header's owner: FS_TREE or a subvolume) */
	uint64_t generation, fs_root;
	/* keep chunks that overlap the next one (the checker reports them and checks the rest)
	 * instead of refusing to open */
	bool chunk_overlaps;
	/* a damaged chunk tree: skip chunk items that do not parse and blocks that do not read
	 * (a chunk root whose generation differs from the superblock's is read all the same),
	 * so that what maps through the other chunks can be read (the checker reports them) */
	bool chunk_damage;
	/* with write: open even when a device is shorter than its superblock says (a truncated
	 * image; --force), which is otherwise refused (btk_volumes_check_sizes) */
	bool short_ok;
	/* a system chunk array that does not parse: find the chunk tree's root block on the
	 * devices (its address, level, owner, fsid and checksum) and map the chunk tree through
	 * it (fs->sys_array_scanned; the checker reports it, a repair's commit rewrites it) */
	bool sys_array_scan;
};
#define BTK_BACKUP_NEWEST (BTK_NUM_BACKUP_ROOTS + 1)

/* The volumes part of opening (btk_fs_open in tree.h is the whole): reads the superblocks of
 * paths[0..n-1], finds other members by libblkid scan unless opts->no_scan, chooses the
 * superblock and loads the system chunk array. No cache, no chunk tree yet. *out is owned by
 * the caller (btk_volumes_close, or btk_fs_close once the tree layer completed it).
 * Errors: -ENOENT (not btrfs), -EUCLEAN, -EINVAL (a device of another filesystem or given
 * twice), -EIO. */
int btk_volumes_open(const char *const *paths, int n, const struct btk_open_opts *opts,
		     struct btk_fs **out);
/* The same on devices already open (any backend: memory images, fault injection). Takes
 * devs[0..n-1], on failure too: the opened fs closes them, or they are closed before the
 * error returns. opts->write needs writable handles (-EROFS). A handle given twice: -EINVAL. */
int btk_volumes_open_devs(struct btk_dev *const *devs, int n, const struct btk_open_opts *opts,
			  struct btk_fs **out);
/* Frees the chunk map and devices and fs itself (not the cache: btk_fs_close does that). */
void btk_volumes_close(struct btk_fs *fs);
/* The settings fs takes from its superblock fs->sb: node, sector and stripe sizes, checksum
 * type and size, and the uuid tree blocks carry (metadata_uuid or fsid). */
void btk_fs_settings_from_super(struct btk_fs *fs);
/* Member devices that were not found (after the chunk tree is loaded). A writer (opts->write
 * without opts->degraded) gets -ENODEV naming them. A reader (or opts->degraded) opens
 * degraded, as the kernel's `-o degraded`: one warning names the missing devices (none with
 * forget_missing) and how much data has no copy left; -ENODEV when a system or metadata chunk
 * has none (the trees cannot be read). */
int btk_volumes_check_missing(struct btk_fs *fs, const struct btk_open_opts *opts);
/* After the chunk tree is read: devices of seed filesystems it names that were not given are
 * looked for by libblkid scan (block devices), unless opts->no_scan. */
void btk_volumes_scan_seeds(struct btk_fs *fs, const struct btk_open_opts *opts);
/* Before the chunk tree is read: -ENODEV naming the missing devices when a chunk of the
 * superblock's system chunk array has no copy left on the devices present. */
int btk_volumes_check_sys(const struct btk_fs *fs);
/* Whether chunk c can still be read whole with the devices present: a copy, or for RAID5/6
 * enough stripes to rebuild every row. */
bool btk_chunk_readable(const struct btk_fs *fs, const struct btk_chunk *c);
/* The given devices of seed filesystems, checked against the chunk tree (after it is
 * loaded): each must be a device the chunk tree names, with the seed's fsid in its dev item
 * (-EINVAL otherwise: a device of another filesystem). A writer is refused a seeded
 * filesystem (-EROFS): the seed's chunks are read-only. */
int btk_volumes_check_seeds(struct btk_fs *fs, const struct btk_open_opts *opts);
/* Whether fsid is the one written into fs's tree blocks, or a seed filesystem's (blocks the
 * sprout still shares with its seed). */
bool btk_fs_fsid_known(const struct btk_fs *fs, const uint8_t *fsid);
/* Devices shorter than the size their superblock's device item records (a truncated image
 * file, a partition cut short): one warning each (btk_warn), or for a writer (opts->write)
 * -EUCLEAN naming the first unless opts->short_ok. Called by the opening itself. */
int btk_volumes_check_sizes(struct btk_fs *fs, const struct btk_open_opts *opts);
/* The check for one device: 0 when dev holds total_bytes; else the warning, or with refuse
 * -EUCLEAN (for tools that read a superblock without opening the filesystem). */
int btk_dev_size_check(const struct btk_dev *dev, uint64_t devid, uint64_t total_bytes,
		       bool refuse);

/* The entry for devid, added (sorted by devid) when missing; NULL on ENOMEM (no message).
 * Cheap when devids arrive in increasing order; btk_fs_dev_fill_all for many. */
struct btk_fs_dev *btk_fs_dev_add(struct btk_fs *fs, uint64_t devid);
/* Adds or completes the entries for n dev items at once (devid, total_bytes, bytes_used and
 * uuid of each, as btk_fs_dev_fill gives them): one sort, so any order costs n log n. Of
 * items with the same devid the last wins. items stays the caller's. 0 or -ENOMEM. */
int btk_fs_dev_fill_all(struct btk_fs *fs, const struct btk_fs_dev *items, int n);
/* Fills total/used bytes and uuid from a DEV_ITEM (at least sizeof(struct btrfs_dev_item)). */
void btk_fs_dev_fill(struct btk_fs_dev *d, const uint8_t *item);
/* Adds c to the chunk map (sorted by logical), replacing a chunk at the same address (the chunk
 * tree wins over the superblock's copy). Takes c, freeing it on failure (-ENOMEM). Cheap when
 * chunks arrive in address order; btk_chunk_map_add_all for many. */
int btk_chunk_map_add(struct btk_fs *fs, struct btk_chunk *c);
/* Adds the n chunks of v at once (one sort and one merge), with the same rule: a chunk of v
 * replaces the map's at its address, and of chunks of v at one address the last wins. Takes
 * every chunk of v (freed on failure, -ENOMEM); the array v stays the caller's. Overlaps are
 * left for btk_chunk_map_check. */
int btk_chunk_map_add_all(struct btk_fs *fs, struct btk_chunk **v, int n);
/* -EUCLEAN when two chunks of the map overlap. */
int btk_chunk_map_check(const struct btk_fs *fs);

/* Forgets a member device that has no handle (a missing one) and that no chunk of the map
 * uses, so that the rest can be written (a filesystem moved onto fewer devices).
 * -EBUSY when a chunk still has a stripe on it or it is open, -ENOENT when unknown. */
int btk_fs_dev_forget(struct btk_fs *fs, uint64_t devid);

/* The device with that devid, or NULL. */
struct btk_fs_dev *btk_fs_dev_find(struct btk_fs *fs, uint64_t devid);

/* The chunk containing logical, or NULL. */
const struct btk_chunk *btk_chunk_find(const struct btk_fs *fs, uint64_t logical);
/* The same for the write path, which changes chunks it makes before their items are written. */
struct btk_chunk *btk_chunk_find_mut(struct btk_fs *fs, uint64_t logical);

/* The most copies a profile keeps of a byte (RAID1C4); RAID5/6 data counts as 1 here. */
#define BTK_MAX_COPIES 4

struct btk_phys {
	uint64_t devid;
	uint64_t physical;
	struct btk_dev *dev; /* NULL if missing */
};

/* Maps logical to its physical copies (1 for SINGLE/RAID0/RAID5/6 data, 2 for DUP/RAID1...).
 * Writes at most max entries to out and their count to *n. *contig (may be NULL) is how many
 * bytes from logical stay contiguous on every copy. -ENOENT if no chunk holds logical. */
int btk_map_logical(const struct btk_fs *fs, uint64_t logical, struct btk_phys *out, int max,
		    int *n, uint64_t *contig);

/* Maps a physical byte on devid back to its logical address. Returns 0 and fills *logical and
 * *chunk, or -ENOENT when no chunk uses that byte (unallocated), or for RAID5/6 parity
 * (*logical is then (uint64_t)-1 and *chunk is set, return 0 with *parity = true). */
int btk_map_physical(const struct btk_fs *fs, uint64_t devid, uint64_t physical, uint64_t *logical,
		     const struct btk_chunk **chunk, bool *parity);
/* The same lookup in O(log n) for many addresses: an index of every chunk stripe of fs's map
 * as it is when built, sorted by device and offset. It points into the map: build it again
 * after the map changes, free it before the map is. 0 or -ENOMEM; *out is the caller's
 * (btk_phys_index_free). btk_map_physical itself scans the map (no state, one lookup). */
struct btk_phys_index;
int btk_phys_index_build(const struct btk_fs *fs, struct btk_phys_index **out);
int btk_phys_index_map(const struct btk_phys_index *x, uint64_t devid, uint64_t physical,
		       uint64_t *logical, const struct btk_chunk **chunk, bool *parity);
void btk_phys_index_free(struct btk_phys_index *x);

/* Reads len bytes at a logical address, from the first copy that reads. */
int btk_read_logical(struct btk_fs *fs, uint64_t logical, void *buf, size_t len);
/* Reads copy `mirror` (0 first) of len bytes at logical, piece by piece across stripes. For
 * RAID5/6 copy 0 is the data stripe, copy 1 rebuilt from P and the other data stripes (from
 * P and Q when a second data stripe is missing too), copy 2 (RAID6) rebuilt from Q. -ERANGE
 * when no such copy exists, -ENODEV when it is on a missing device (or cannot be rebuilt
 * without one), -ENOENT outside every chunk. */
int btk_read_copy(struct btk_fs *fs, uint64_t logical, void *buf, size_t len, int mirror);
/* How many copies btk_read_copy can give of logical (RAID5/6: the data stripe and one
 * rebuild per parity stripe); 0 outside every chunk. */
int btk_copies_of(const struct btk_fs *fs, uint64_t logical);
/* Writes buf over copy `mirror` of len bytes at logical only, piece by piece across stripes
 * (RAID5/6: copy 0, the data stripe, whose parity is left as it is: for bytes the parity
 * already rebuilds). *at (may be NULL) gets where the first piece lies. -ERANGE, -ENODEV,
 * -ENOENT as btk_read_copy; -EINVAL for a rebuilt RAID5/6 copy. */
int btk_write_copy(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len, int mirror,
		   struct btk_phys *at);
/* Rebuilds len bytes (inside one 64 KiB stripe) of data stripe `di` of row `row` at offset
 * soff of a RAID5/6 chunk from the other stripes: with P (use_q false; P and Q when another
 * data stripe is missing too, or is data stripe `lost`, -1 none) or with Q alone. raid56.c. */
int btk_raid56_rebuild(struct btk_fs *fs, const struct btk_chunk *c, uint64_t row, int di,
		       uint64_t soff, uint8_t *buf, uint32_t len, bool use_q, int lost);
/* RAID6: [logical, +len) (inside one stripe) rebuilt from P and Q as if the k-th other data
 * stripe of its row (0 .. data stripes - 2) were lost too: two bad data stripes of a row.
 * -EINVAL outside one stripe of a RAID6 chunk, -ERANGE when there is no k-th. */
int btk_raid6_rebuild_pair(struct btk_fs *fs, uint64_t logical, uint8_t *buf, uint32_t len, int k);

/* Compares parity stripe k (0 P, 1 Q) of the row holding [logical, +len) (inside one 64 KiB
 * stripe of a RAID5/6 chunk) with the parity computed from the row's data stripes as they
 * are on disk. Returns a mask, bit k set when parity k differs or does not read (a parity
 * stripe on a missing device is left out); with fix those are rewritten. at (may be NULL,
 * 2 entries) gets where each parity stripe of the range lies (dev NULL: missing). -EINVAL outside
 * one such stripe, -ENODEV when a data stripe is missing. raid56.c. */
int btk_raid56_parity(struct btk_fs *fs, uint64_t logical, uint32_t len, bool fix,
		      struct btk_phys at[2]);

/* Writes len bytes to every copy of a logical range (data of a newly allocated extent:
 * nothing committed may live there). In RAID5/6 chunks through btk_raid56_write. */
int btk_write_logical(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len);
/* Writes len bytes at a logical address inside one RAID5/6 chunk, updating P/Q of every row
 * touched (read-modify-write of the other data stripes; raid56.c says what an interruption
 * leaves). -EINVAL outside one RAID5/6 chunk, -ENODEV when a stripe's device is missing. */
int btk_raid56_write(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len);

/* How many stripes hold distinct data in one row of a chunk of this profile: the divisor from
 * chunk length to the bytes each stripe takes on its device (1 for SINGLE, DUP and RAID1*;
 * 0 when the counts cannot form the profile). */
uint64_t btk_chunk_data_stripes(uint64_t type, int num_stripes, int sub_stripes);
/* Bytes each stripe of c takes on its device (its dev extent's length); 0 if c is malformed. */
uint64_t btk_chunk_stripe_len(const struct btk_chunk *c);
/* Parses a chunk item (from the sys array or chunk tree) into a new btk_chunk (caller frees).
 * -EUCLEAN if sizes or counts are impossible. */
int btk_chunk_parse(const uint8_t *item, uint32_t size, uint64_t logical, uint32_t sectorsize,
		    struct btk_chunk **out);

#endif
