/* csum.h — checksums used by btrfs (layer 1): crc32c, xxhash64, sha256, blake2b-256. */
#ifndef BTK_CSUM_H
#define BTK_CSUM_H

#include <stddef.h>
#include <stdint.h>

#define BTK_CSUM_MAX 32

/* Size in bytes of the checksum type (4, 8, 32, 32); 0 for an unknown type. */
int btk_csum_size(int type);
/* "crc32c", "xxhash64", "sha256", "blake2b"; NULL for an unknown type. */
const char *btk_csum_name(int type);
/* Parses a name as mkfs.btrfs accepts it (crc32c, xxhash, xxhash64, sha256, blake2); -EINVAL. */
int btk_csum_parse(const char *name, int *type);
/* Writes the checksum of data into out (BTK_CSUM_MAX bytes, zero-padded past the size).
 * Returns 0, or -EINVAL for an unknown type. */
int btk_csum(int type, const void *data, size_t len, uint8_t out[BTK_CSUM_MAX]);
/* Raw crc32c with a seed, as btrfs uses it for name hashes (seed ~1 and no final inversion
 * is the caller's business). */
uint32_t btk_crc32c(uint32_t seed, const void *data, size_t len);

/* The hashes btrfs puts in key offsets, as format.h defines them (seeds and composition);
 * computed here, beside crc32c (format, rank 0, calls nothing).
 * Name hash of DIR_ITEM and XATTR_ITEM keys. */
uint32_t btk_name_hash(const void *name, size_t len);
/* INODE_EXTREF key offset of a name under parent. */
uint32_t btk_extref_hash(uint64_t parent, const void *name, size_t len);
/* EXTENT_DATA_REF key offset of (root, inode, file offset - extent offset). */
uint64_t btk_data_ref_hash(uint64_t root, uint64_t ino, uint64_t offset);

#endif
