/* file_extent.h — the EXTENT_DATA item (struct btrfs_file_extent_item) in host order (layer 0).
 *
 * A 21-byte header (generation, ram_bytes, compression, encryption, other_encoding, type) is
 * followed, in an inline extent, by the file's bytes up to the end of the item; in a regular or
 * prealloc extent by disk_bytenr, disk_num_bytes, offset and num_bytes (53 bytes in all).
 * Pure function: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_FILE_EXTENT_H
#define BTK_FORMAT_FILE_EXTENT_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

/* Bytes of the header; an inline extent's data starts here. */
#define BTK_FILE_EXTENT_HDR_SIZE ((uint32_t)offsetof(struct btrfs_file_extent_item, disk_bytenr))

/* A decoded EXTENT_DATA item. */
struct btk_file_extent {
	uint64_t file_offset; /* key offset: where this extent starts in the file */
	uint64_t num_bytes;   /* bytes of file it covers (inline: ram_bytes) */
	uint64_t ram_bytes;   /* decoded size of the whole extent */
	uint64_t generation;
	uint8_t type;	     /* BTRFS_FILE_EXTENT_INLINE / REG / PREALLOC */
	uint8_t compression; /* 0 none, 1 zlib, 2 lzo, 3 zstd */
	uint8_t encryption;
	uint16_t other_encoding;
	/* REG / PREALLOC only (0 for inline): disk_bytenr 0 is a hole */
	uint64_t disk_bytenr, disk_num_bytes, extent_offset;
	/* inline only: bytes stored in the item, and where they are in it */
	uint32_t inline_len;
	const uint8_t *inline_data; /* inside the bytes passed to the parser */
	/* where the item lives (filled by btk_file_for_each_extent, fs/fs_read.h) */
	uint64_t leaf;
	int slot;
};

/* What stopped an EXTENT_DATA item from being decoded whole. */
enum btk_fe_fault {
	BTK_FE_WHOLE,	   /* every field of its type is filled */
	BTK_FE_SHORT_HEAD, /* shorter than the header: only file_offset is filled */
	BTK_FE_BAD_TYPE,   /* not inline, regular or prealloc: the header is filled */
	BTK_FE_SHORT_BODY, /* regular or prealloc, shorter than 53 bytes: the header is filled */
};

/* Decodes the size bytes at d of an EXTENT_DATA item with key offset file_offset into *fe
 * (zeroed first); fe->inline_data points into d. */
enum btk_fe_fault btk_file_extent_item_parse(const uint8_t *d, uint32_t size, uint64_t file_offset,
					     struct btk_file_extent *fe);

#endif
