/* geometry.h — where chunks may lie and how large they are made (layer 0): the device ranges
 * btrfs keeps for itself, the sizes the kernel gives each kind of chunk, the small first
 * SINGLE chunks of a new filesystem, and the table a creator hands the chunk allocator to
 * choose its own. Pure functions: nothing is allocated, no message.
 */
#ifndef BTK_FORMAT_GEOMETRY_H
#define BTK_FORMAT_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

/* A byte range of a device. */
struct btk_byte_range {
	uint64_t start, len;
};

/* The ranges of a device of `size` bytes that no chunk may hold: the first MiB
 * (BTK_DEV_RESERVED: boot loaders, the primary superblock) and a 64 KiB stripe at each
 * superblock mirror that starts inside the device (64 MiB, 256 GiB), cut at the device end.
 * Ascending; returns how many (at most BTK_SUPER_MIRRORS). */
int btk_dev_reserved(uint64_t size, struct btk_byte_range out[]);

/* Sizes of one new chunk (bytes, 64 KiB multiples). */
struct btk_chunk_size {
	uint64_t stripe;     /* wanted per device stripe */
	uint64_t max_chunk;  /* the chunk's logical length at most */
	uint64_t min_stripe; /* smaller stripes than this fail the allocation */
	bool exact;	     /* false: max_chunk is also cut to a tenth of the filesystem */
};

/* The sizes of every kind of new chunk, chosen by whoever builds a filesystem. */
struct btk_geometry {
	struct btk_chunk_size sys, meta, data;
};

/* The kernel's sizes for a chunk of block group flags `flags` on a filesystem of `total`
 * bytes: SYSTEM 8 MiB per stripe and 16 MiB at most, METADATA 256 MiB (1 GiB past 50 GiB),
 * DATA 1 GiB per stripe and 10 GiB at most; stripes at least 1 / 32 / 64 MiB. */
void btk_chunk_size_kernel(uint64_t flags, uint64_t total, struct btk_chunk_size *s);
/* The first SINGLE chunks of a new filesystem, as mkfs.btrfs makes them: 8 MiB stripes,
 * 32 MiB at most, 1 MiB at least. */
void btk_chunk_size_first(struct btk_chunk_size *s);
/* The entry of g for a chunk of flags: SYSTEM sys, anything holding DATA data (mixed
 * chunks too), else meta. */
const struct btk_chunk_size *btk_geometry_pick(const struct btk_geometry *g, uint64_t flags);

#endif
