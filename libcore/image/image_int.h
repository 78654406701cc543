/* image_int.h — shared inside libcore/image only. */
#ifndef BTK_IMAGE_INT_H
#define BTK_IMAGE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "image/image.h"

/* Zeroes what a dump does not carry in one leaf (nodesize bytes, validated by the tree
 * layer): inline file data unless keep_inline; with sanitize also names, symlink targets,
 * xattr values and data checksums (image_sanitize.c). The caller redoes the checksum. */
void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline, bool sanitize,
			  struct btk_dump_stats *st);

#endif
