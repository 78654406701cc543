/* image_int.h — shared inside libcore/image only. */
#ifndef BTK_IMAGE_INT_H
#define BTK_IMAGE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "image/image.h"

#define BTK_NAME_MAX_SAN 255

/* The per-dump secret of the name sanitiser and the inverse of crc32c's map on four bytes. */
struct btk_sanitizer {
	uint8_t key[32];
	uint32_t sfx[4][256];  /* suffix whose linear crc is byte value v at byte b of it */
	uint32_t tail[2][256]; /* linear crc of byte v followed by 4 (5) zero bytes */
};
/* 0, or -1 when no random key could be had. */
int btk_sanitizer_init(struct btk_sanitizer *s);
/* Replaces name[0..len) in place by a name of the same length and crc32c (any seed), made of
 * printable bytes other than '/' (image_sanitize.c says how). Names of <= 4 bytes are kept. */
void btk_sanitize_name(const struct btk_sanitizer *s, uint8_t *name, uint32_t len);

/* Zeroes what a dump does not carry in one leaf (nodesize bytes, validated by the tree
 * layer): inline file data unless keep_inline; with a sanitizer also names, symlink
 * targets, xattr values and data checksums. The caller redoes the checksum. */
void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline,
			  const struct btk_sanitizer *san, struct btk_dump_stats *st);

#endif
