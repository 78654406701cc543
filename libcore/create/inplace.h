/* inplace.h — building a btrfs over the blocks of another filesystem (convert), layer trans.
 *
 * A conversion keeps the old filesystem's blocks where they are: data chunks are laid over
 * them at chosen places, their data becomes extents recorded at the bytenr that already holds
 * it, and everything the write path allocates on its own (tree blocks, new chunks, copies)
 * must land in what the old filesystem has free (btk_dev_hold in trans.h keeps the chunk
 * allocator off what it uses). These calls run inside the creating
 * transaction (btk_mkfs_opts.place / .fill) and return 0 or a negative errno with btk_err().
 */
#ifndef BTK_INPLACE_H
#define BTK_INPLACE_H

#include <stdint.h>
#include "trans/trans.h"

/* Adds a SINGLE chunk of type `flags` (BTRFS_BLOCK_GROUP_DATA, ...) of len bytes at `logical`
 * on the first device at `physical`, with its block group all free. Everything must be
 * sector aligned, physical at or past 1 MiB and inside the device, and neither range may
 * overlap an existing chunk or dev extent: -EINVAL otherwise (the message says which). */
int btk_chunk_add_fixed(struct btk_trans *t, uint64_t flags, uint64_t logical, uint64_t physical,
			uint64_t len);

/* Allocates a chunk of type `flags` (with its profile bits) whose stripes are `size` bytes
 * (a multiple of 64 KiB), in the lowest device space no chunk or reservation holds; for
 * copies of what must move out of the way. -ENOSPC when no hole is large enough. */
int btk_chunk_alloc_size(struct btk_trans *t, uint64_t flags, uint64_t size, uint64_t *logical);

/* Records a data extent [bytenr, +len) whose data is already on disk, with one
 * EXTENT_DATA_REF from (root, ino, offset) as btk_data_extent_alloc does for new space. The
 * range must be free in one data block group (-EEXIST when any of it is taken or is a
 * superblock stripe, -ENOENT when no data block group holds it whole, -EINVAL unaligned). */
int btk_data_extent_fixed(struct btk_trans *t, uint64_t bytenr, uint64_t len, uint64_t root,
			  uint64_t ino, uint64_t offset);

#endif
