/* image.h (layer 9) — metadata dumps in btrfs-image's format: dump an opened filesystem, restore a
 * dump onto devices. metadump.h has the file format itself.
 */
#ifndef BTK_IMAGE_H
#define BTK_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include "volumes/volumes.h"

struct btk_dump_opts {
	int level;	  /* zlib level 0..9 (0: stored) */
	int threads;	  /* compression threads, >= 1 */
	bool keep_inline; /* keep inline file data (zeroed otherwise, as btrfs-image does) */
	bool sanitize;	  /* -s: names, symlink targets, xattr values, csums (sanitize.c) */
	bool data;	  /* --data: file contents too (a v1 dump: restores a complete image) */
	/* Called for every block or range that could not be read and is not in the dump. */
	void (*skipped)(void *ctx, uint64_t logical, const char *why);
	/* Called now and then with bytes stored and the total to store (for a progress bar);
	 * total 0 while the trees are walked to find the blocks (done: their bytes so far). */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

struct btk_dump_stats {
	uint64_t trees, blocks, data_ranges, data_bytes, skipped;
	uint64_t items, clusters, bytes_in, bytes_out;
	uint64_t names;	     /* names replaced (-s) */
	uint64_t names_kept; /* names of more than 4 bytes kept: no other free name of their hash */
};

/* Writes a dump of fs to out_fd: the superblock, every tree block reachable from the root
 * tree, the chunk tree, every tree the root tree names and the log trees (found by walking,
 * not from the extent tree, so a damaged extent tree still dumps), and the v1 space cache.
 * Blocks are stored in logical order with unused space zeroed and their checksum redone.
 * With opts->data (not with sanitize: -EINVAL) the dump is a v1 one and also carries every
 * extent that a file extent item of any tree (log trees too) refers to, inline data kept.
 * Unreadable blocks and ranges are skipped (opts->skipped hears of each); st counts them. */
int btk_image_dump(struct btk_fs *fs, int out_fd, const struct btk_dump_opts *opts,
		   struct btk_dump_stats *st);

struct btk_restore_opts {
	bool multi; /* -m: one target per original device, the chunk tree kept as it is */
	/* the open path's options for the targets (io.h): --wait, faults (one thread then, so
	 * that the count of changes is the same every run), no_clobber (without -f); write and
	 * create are restore's own */
	struct btk_dev_opts dev;
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

struct btk_restore_stats {
	uint64_t items, bytes, devices, chunks;
	int version;   /* of the dump format */
	bool remapped; /* the chunk tree was rewritten onto one device */
};

/* Restores the dump in dump_fd (a regular file; name for messages) onto targets[0..n-1].
 * A dump of a one-device filesystem goes onto one target at the original offsets; with
 * opts->multi, a dump of an N-device filesystem goes onto N targets (in devid order), every
 * profile kept. Regular-file targets grow to the device size the dump records; block devices
 * must be large enough (checked before anything is written).
 * Power cuts: the targets' superblock copies are zeroed (and flushed) before the first item is
 * written; the superblocks are written last, after a flush, the primary first; onto one device
 * with the device fixup, the superblock before the fixup goes to the second copy only and the
 * fixup's commit writes the primary. So a cut leaves either no primary superblock (not a
 * filesystem: restore again) or the complete restored filesystem (devices of at least 64 MiB
 * + 4 KiB; smaller ones take the primary before the fixup). Those of a v0 dump (metadata only) are
 * marked as a restored metadump (BTRFS_SUPER_FLAG_METADUMP_V2), those of a v1 dump (with --data)
 * are not. A log tree goes onto one device too: kept out of the fixup's allocations and stamped
 * one generation past its commit, then named by every superblock copy again (a cut before that
 * leaves the committed filesystem without the log). Errors: -EUCLEAN naming the cluster and item of
 * a corrupt dump, -EINVAL for targets that do not fit the dump, -ENOSPC for a target too small,
 * -EIO. */
int btk_image_restore(int dump_fd, const char *dump_name, const char *const *targets, int n,
		      const struct btk_restore_opts *opts, struct btk_restore_stats *st);

#endif
