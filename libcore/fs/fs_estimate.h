/* fs_estimate.h (layer 6) — how much metadata a filesystem of a given content needs, before writing
 * it (btk-convert's free-space check and --dry-run). */
#ifndef BTK_FS_ESTIMATE_H
#define BTK_FS_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

struct btk_src_tree;

/* What the content holds; upper bounds are fine (the estimate is then an upper bound too). */
struct btk_meta_counts {
	uint64_t inodes;       /* inode items */
	uint64_t names;	       /* links: a dir item, a dir index and an inode (ext)ref each */
	uint64_t name_bytes;   /* total length of those names */
	uint64_t file_extents; /* regular or prealloc file extent items (each with a back ref) */
	uint64_t data_extents; /* data extents (extent items, and where checksum runs start) */
	uint64_t inline_items, inline_bytes; /* inline file extents (files, symlink targets) */
	uint64_t xattrs, xattr_bytes;	     /* xattr items: name + value bytes */
	uint64_t csum_blocks;		     /* data sectors that get a checksum */
	uint64_t block_groups;
};

/* Bytes of tree blocks (one copy) the content needs with this node size and checksum size:
 * item bytes over leaves assumed only two thirds full, the nodes above them, the trees every
 * filesystem has, and a margin for the kernel's first transactions. Pure arithmetic. */
uint64_t btk_meta_estimate(const struct btk_meta_counts *c, uint32_t nodesize, uint32_t csum_size);

/* What copying source tree s (fs/populate.h) into a filesystem of sectorsize-byte sectors
 * adds: *m its metadata counts, for btk_meta_estimate (an upper bound: one xattr of 64 bytes
 * guessed per inode, one block group), and *data the data bytes it writes (allocated blocks,
 * not apparent sizes, each file in whole sectors; files of BTK_MAX_INLINE bytes or less go
 * inline; with compress, what cannot fit even compressed). */
void btk_src_need(const struct btk_src_tree *s, uint32_t sectorsize, bool compress,
		  struct btk_meta_counts *m, uint64_t *data);

/* The largest item a leaf of this node size holds; of it, the most name + value bytes of one
 * xattr, and the most data bytes of one inline file extent (a symlink target too). */
uint32_t btk_leaf_max_item(uint32_t nodesize);
uint32_t btk_xattr_max(uint32_t nodesize);
uint32_t btk_inline_max_for(uint32_t nodesize);

#endif
