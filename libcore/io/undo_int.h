/* undo_int.h — the undo file's layout (layer 2), shared by its writer (undo.c) and its
 * reader (undo_file.c); undo.h describes it. */
#ifndef BTK_IO_UNDO_INT_H
#define BTK_IO_UNDO_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/csum.h"
#include "format/format.h"
#include "io/io.h"
#include "io/undo.h"

#define UNDO_MAGIC	  "BTKUNDO" /* with its NUL: 8 bytes */
#define UNDO_VERSION	  1
#define UNDO_HASH_XXH64	  1
#define UNDO_HEADER_SIZE  64
#define UNDO_REC_MAGIC	  0x43455255U /* "UREC" */
#define UNDO_HEAD_SIZE	  24
#define UNDO_PIECE_BLOCKS 256 /* blocks per SAVE record: 1 MiB of old bytes at most */
/* the largest payload a reader accepts (a SAVE of UNDO_PIECE_BLOCKS, a long path) */
#define UNDO_PAYLOAD_MAX (UNDO_PIECE_BLOCKS * (BTK_UNDO_BLOCK + 16ULL) + 4096)

enum undo_rec_type { UNDO_DEV = 1, UNDO_SAVE, UNDO_STATE, UNDO_SIZE, UNDO_END };

/* header fields: offsets */
#define UH_VERSION 8
#define UH_BSIZE   12
#define UH_HASH	   16
#define UH_HSIZE   20
#define UH_CREATED 24
#define UH_ID	   32
#define UH_TOOL	   40 /* 16 bytes */
#define UH_CRC	   60

/* record head fields */
#define UR_TYPE 4
#define UR_DEV	6
#define UR_LEN	8
#define UR_CRC	12
#define UR_SEQ	16

/* DEV payload: fixed part, then the path */
#define UD_SIZE	      0
#define UD_FLAGS      8
#define UD_PATHLEN    12
#define UD_FSID	      16
#define UD_DEVUUID    32
#define UD_DEVID      48
#define UD_GEN	      56
#define UD_SUPER_HASH 64
#define UD_SUPER_LEN  72
#define UD_FIXED      80
#define UD_F_BLOCKDEV 1
#define UD_F_BTRFS    2

/* SAVE and STATE: first block, count, reserved; then entries (SAVE 16 bytes: hash, length,
 * flags; STATE 8: hash) */
#define US_FIXED  16
#define US_ENTRY  16
#define US_F_ZERO 1
#define UST_ENTRY 8

static inline uint64_t undo_hash(const void *p, size_t len)
{
	uint8_t out[BTK_CSUM_MAX];

	btk_csum(BTRFS_CSUM_TYPE_XXHASH, p, len, out);
	return btk_le64(out);
}

/* The crc of a record: head (its crc field taken as zero) and payload. */
static inline uint32_t undo_rec_crc(uint64_t id, const uint8_t *head, const void *payload,
				    size_t len)
{
	static const uint8_t zero[4];
	uint32_t c = btk_crc32c((uint32_t)id, head, UR_CRC);

	c = btk_crc32c(c, zero, 4);
	c = btk_crc32c(c, head + UR_CRC + 4, UNDO_HEAD_SIZE - UR_CRC - 4);
	return btk_crc32c(c, payload, len);
}

/* Bytes of block b of a device of size bytes (0 past its end). */
static inline uint32_t undo_block_len(uint64_t size, uint64_t b)
{
	uint64_t off = b * BTK_UNDO_BLOCK;

	return off >= size		     ? 0
	       : size - off < BTK_UNDO_BLOCK ? (uint32_t)(size - off)
					     : BTK_UNDO_BLOCK;
}

/* [off, off+len) of d as it is now, bytes past its end as zeroes. */
static inline int undo_read_now(struct btk_dev *d, uint8_t *buf, uint64_t off, uint64_t len)
{
	uint64_t have = d->size > off ? d->size - off : 0;

	if (have > len)
		have = len;
	memset(buf + have, 0, len - have);
	return have ? btk_dev_read(d, buf, have, off) : 0;
}

#endif
