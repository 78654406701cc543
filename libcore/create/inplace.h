/* inplace.h — where the chunks of a btrfs built over another filesystem's blocks go (layer 7).
 *
 * The source's used blocks stay where they are. Data chunks are laid over them, logical ==
 * physical, cut around the ranges btrfs keeps for itself (btk_dev_reserved: the first MiB and
 * a 64 KiB stripe at each superblock mirror) and at multiples of 1 GiB; used runs less than
 * 1 MiB apart share a chunk. Every reserved range is held from the chunk allocator, so the
 * system and metadata chunks and everything the write path allocates land in the source's
 * free blocks. What the source has inside the reserved ranges is copied into one more data
 * chunk, allocated in free space with room for new data too.
 */
#ifndef BTK_CREATE_INPLACE_H
#define BTK_CREATE_INPLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/format.h"
#include "format/geometry.h"
#include "trans/trans.h"

/* A source: its size and the byte ranges it uses (sorted, not overlapping; borrowed). */
struct btk_inplace {
	uint64_t size;
	const struct btk_byte_range *used;
	size_t nused;
	struct btk_byte_range res[BTK_SUPER_MIRRORS]; /* btk_dev_reserved(size) */
	int nres;
	uint64_t used_bytes;	/* bytes of used */
	uint64_t reserved_used; /* bytes of used inside res: what is copied aside */
};

/* Fills ip for a source of size bytes using used[0, nused). */
void btk_inplace_init(struct btk_inplace *ip, uint64_t size, const struct btk_byte_range *used,
		      size_t nused);

/* Calls fn(ctx, start, len) for every data chunk of the layout (logical == physical), in
 * ascending order: the used ranges outside res, rounded out to 64 KiB inside the device's
 * sectors, merged across gaps under 1 MiB, cut at 1 GiB multiples. Stops at fn's first
 * nonzero return and returns it. Pure: nothing is allocated. */
int btk_inplace_chunks(const struct btk_inplace *ip, uint32_t sectorsize,
		       int (*fn)(void *ctx, uint64_t start, uint64_t len), void *ctx);

/* Lays the layout in the creating transaction (btk_mkfs_opts.place): holds the reserved
 * ranges, adds the data chunks, and allocates one more data chunk for reserved_used +
 * new_data bytes (rounded up to 1 MiB; none when that is 0). 0 or a negative errno. */
int btk_inplace_lay(struct btk_trans *t, const struct btk_inplace *ip, uint64_t new_data);

/* Calls fn(ctx, s, l, in) for the pieces of [start, +len): cut at the reserved ranges (in:
 * inside one, to be copied aside) and, outside them, at multiples of the largest data extent
 * (BTK_MAX_EXTENT_SIZE), so that each piece can be one data extent in place. Stops at fn's
 * first nonzero return and returns it. */
int btk_inplace_pieces(const struct btk_inplace *ip, uint64_t start, uint64_t len,
		       int (*fn)(void *ctx, uint64_t s, uint64_t l, bool in), void *ctx);
/* How many pieces btk_inplace_pieces makes of [start, +len) at most. */
uint64_t btk_inplace_count_pieces(const struct btk_inplace *ip, uint64_t start, uint64_t len);

/* Upper bounds for a metadata estimate: the data extents the used blocks become (runs cut at
 * largest-extent multiples and at the reserved ranges' edges, the copies in one piece per
 * 4 KiB at most), and the block groups of the build (a data chunk per used run at most, cut
 * at every GiB; system, metadata, the copies' chunk, one spare). */
uint64_t btk_inplace_max_extents(const struct btk_inplace *ip);
uint64_t btk_inplace_max_block_groups(const struct btk_inplace *ip);

/* The metadata chunk an in-place build makes (both copies, DUP): the fill's estimate, the
 * kernel's global block reserve on top of it (without room for it the kernel refuses every
 * write with ENOSPC: nodesize * 352 bytes at the least, as large as the extent, checksum and
 * free space trees, 512 MiB at most; the estimate stands for those trees), and 4 MiB for the
 * kernel's first transactions; in whole MiB, 1 GiB at most. */
uint64_t btk_inplace_meta_chunk(uint64_t meta_estimate, uint32_t nodesize);

/* Device space an in-place build of a filesystem of size bytes leaves unallocated at the
 * least, for the kernel's own chunks: one chunk of the size the kernel makes on a small
 * filesystem (a tenth of it), 4 MiB at least, 16 MiB at most; in whole MiB. */
uint64_t btk_inplace_kernel_room(uint64_t size);

/* Free source bytes the build takes at the least, with the room it leaves the kernel: the
 * metadata chunk (btk_inplace_meta_chunk) and the 8 MiB system chunk, both twice (DUP), a data
 * chunk of data bytes (the copies and new extents), and btk_inplace_kernel_room(size). */
uint64_t btk_inplace_space_needed(uint64_t meta_estimate, uint32_t nodesize, uint64_t data,
				  uint64_t size);

#endif
