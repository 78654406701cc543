/* image_int.h (layer 9) — shared inside libcore/image only. */
#ifndef BTK_IMAGE_INT_H
#define BTK_IMAGE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "base/u64set.h"
#include "image/image.h"

#define BTK_NAME_MAX_SAN 255

/* The per-dump secret of the name sanitiser and the inverse of crc32c's map on four bytes. */
struct btk_sanitizer {
	uint8_t key[32];
	uint32_t sfx[4][256];	 /* suffix whose linear crc is byte value v at byte b of it */
	uint32_t tail[2][256];	 /* linear crc of byte v followed by 4 (5) zero bytes */
	struct btk_u64set taken; /* new names given (keyed hashes) */
	struct btk_u64set pairs; /* (name, new name) pairs given */
	uint64_t kept;		 /* names longer than 4 bytes kept: no free new name found */
	bool oom;		 /* a new name could not be remembered */
};
/* 0, or -1 when no random key could be had. */
int btk_sanitizer_init(struct btk_sanitizer *s);
void btk_sanitizer_free(struct btk_sanitizer *s);
/* Replaces name[0..len) in place by a name of the same length and crc32c (any seed), made of
 * printable bytes other than '/' (image_sanitize.c says how), one to one over the sanitizer's
 * life: the same name always gets the same new name, two names never one. Names of <= 4
 * bytes are kept. */
void btk_sanitize_name(struct btk_sanitizer *s, uint8_t *name, uint32_t len);

/* Zeroes what a dump does not carry in one leaf (nodesize bytes, validated by the tree
 * layer): inline file data unless keep_inline; with a sanitizer also names, symlink
 * targets, xattr values and data checksums. The caller redoes the checksum. */
void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline,
			  struct btk_sanitizer *san, struct btk_dump_stats *st);

/* image_remap.c: turns chunks[0..n) into the one-device layout on devid (SINGLE, or DUP on
 * one device), choosing physical offsets; the device's size and bytes in use come back. */
int btk_image_remap_plan(struct btk_chunk **chunks, size_t n, uint64_t devid,
			 const uint8_t uuid[16], uint64_t *dev_size, uint64_t *dev_used);
/* Rewrites one tree block of the dump (nodesize bytes at logical) for fs's remapped chunk map:
 * chunk-tree leaves take the new chunk items, block-group items lose their profile bits, and
 * the checksum is redone. Other blocks are left as they are. */
int btk_image_remap_block(const struct btk_fs *fs, uint8_t *b, uint64_t logical);
/* btrfs-image 6.2 redoes the checksum of each block it dumps as crc32c (its first 4 bytes)
 * whatever the filesystem's checksum type. A block of fs (at logical) whose checksum is wrong
 * for its type but whose first 4 bytes are exactly that crc32c gets its type's checksum back
 * (1); any other block is left as it is (0), damage included. */
int btk_image_csum_fixup(const struct btk_fs *fs, uint8_t *b, uint64_t logical);
/* image_fixup.c: on the restored target dev (taken, closed on return), opened from its
 * superblock copy super_mirror (-1: the best), drops the device items of the devids in gone,
 * sets devid's size and use, and rebuilds the device extents from the chunk map (one
 * transaction, whose commit writes every superblock copy). */
struct btk_image_log {
	uint64_t root; /* the log root tree's block, 0: no log */
	int level;
	uint64_t *blocks; /* every block of the log (btk_image_log_blocks) */
	size_t n;
};
int btk_image_fixup_devices(struct btk_dev *dev, int super_mirror, uint64_t devid,
			    const uint64_t *gone, size_t ngone, uint64_t size, uint64_t used,
			    const struct btk_image_log *log);
/* image_log.c: lists every block of the log whose root tree is at root (level) in *out
 * (malloc'd, the caller frees), read through fs; -EUCLEAN for a block that is not what its
 * parent says. */
int btk_image_log_blocks(struct btk_fs *fs, uint64_t root, int level, uint64_t **out, size_t *n);
/* Rewrites the log's blocks with generation gen in their headers, pointers and root items
 * (checksums redone). */
int btk_image_log_stamp(struct btk_fs *fs, const uint64_t *blocks, size_t n, uint64_t gen);

#endif
