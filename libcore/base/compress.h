/* compress.h (layer 1) — btrfs data compression formats: zlib, lzo (btrfs's segmented framing),
 * zstd.
 *
 * An extent holds at most BTK_MAX_COMPRESSED_IN bytes of file data. Compression works on one
 * extent's worth at a time and fails with -E2BIG when the result would not save at least one
 * sector (the kernel then stores the data uncompressed, and so do we).
 */
#ifndef BTK_COMPRESS_H
#define BTK_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h" /* BTK_COMPRESS_*, BTK_MAX_COMPRESSED_IN, the lzo framing */

/* The largest sector size lzo framing is decoded for (btrfs's largest sector). */
#define BTK_LZO_MAX_SECTOR BTK_MAX_SECTORSIZE

/* Parses "zlib", "lzo", "zstd", optionally ":LEVEL"; -EINVAL. level 0 = the kernel default. */
int btk_compress_parse(const char *s, int *type, int *level);

/* Compresses in[0..len) (len <= BTK_MAX_COMPRESSED_IN) into out (cap bytes) in the on-disk
 * format of `type`. sectorsize is the filesystem's (lzo frames segments by it). Returns the
 * compressed size, -E2BIG when it does not save a sector (or does not fit cap), -EINVAL. */
long btk_compress(int type, int level, uint32_t sectorsize, const uint8_t *in, size_t len,
		  uint8_t *out, size_t cap);

/* For an inline extent (len <= sectorsize): the compressed size when smaller than len, else
 * -E2BIG. */
long btk_compress_inline(int type, int level, uint32_t sectorsize, const uint8_t *in, size_t len,
			 uint8_t *out, size_t cap);

/* Decompresses an extent into out (exactly outlen bytes are expected: the extent's ram_bytes;
 * a stream that ends early is zero-filled as the kernel does, output past outlen is dropped).
 * Returns 0, -EUCLEAN for corrupt input (lzo: bad framing, or a segment that does not decode
 * whole into one sector), -EINVAL for an unknown type or an lzo sector size other than a
 * power of two from 4 KiB to BTK_LZO_MAX_SECTOR, -ENOMEM; with a message. Never reads past
 * in+len or writes past out+outlen. */
int btk_decompress(int type, uint32_t sectorsize, const uint8_t *in, size_t len, uint8_t *out,
		   size_t outlen);

/* Whether in[0..len) is one whole stream of `type` (an extent whose compression is not
 * known): it decodes without error into at most cap bytes, ends within in (zlib's end, zstd's
 * frame end, lzo's total with a whole sector in every segment but the last) and only zero
 * bytes follow it (the sector's padding). Returns the decoded length, -EUCLEAN when not,
 * -EINVAL, -ENOMEM; with a message. */
long btk_decompress_whole(int type, uint32_t sectorsize, const uint8_t *in, size_t len,
			  uint8_t *out, size_t cap);

#endif
