/* extent_refs.h — layout of extent records and their back references (layer 0).
 *
 * An EXTENT_ITEM (bytenr, length) or skinny METADATA_ITEM (bytenr, level) holds a
 * struct btrfs_extent_item (refs, generation, flags); a non-skinny tree block adds a
 * struct btrfs_tree_block_info (first key, level). Inline references follow to the end of the
 * item, each a type byte and its body:
 *   TREE_BLOCK_REF    root (8)                        9 bytes
 *   SHARED_BLOCK_REF  parent (8)                      9 bytes
 *   EXTENT_OWNER_REF  root (8), simple quotas only;   9 bytes, not a reference
 *   EXTENT_DATA_REF   root, objectid, offset, count   1 + 28 bytes (no separate offset field)
 *   SHARED_DATA_REF   parent (8), count (4)           13 bytes
 * Keyed references are items of their own: (bytenr, TYPE, root | parent | hash), with a body
 * only for the data ones (struct btrfs_extent_data_ref, struct btrfs_shared_data_ref).
 * Pure functions over caller-owned bytes: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_EXTENT_REFS_H
#define BTK_FORMAT_EXTENT_REFS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

#ifndef BTRFS_EXTENT_OWNER_REF_KEY
#define BTRFS_EXTENT_OWNER_REF_KEY 172
#endif

#define BTK_INLINE_REF_MAX 29 /* largest inline reference (EXTENT_DATA_REF) */

/* The fixed part of an extent record. */
struct btk_extent_head {
	uint64_t refs, generation, flags;
	bool skinny;		 /* METADATA_ITEM: the level is the key offset */
	bool has_info;		 /* a tree_block_info follows the header */
	struct btk_key info_key; /* tree_block_info: the block's first key */
	int level;		 /* skinny: min(key offset, BTK_MAX_LEVEL); non-skinny tree
				    block: the info's level; -1 otherwise */
	uint32_t refs_at;	 /* offset of the first inline reference */
};

/* Parses the header of an EXTENT_ITEM or METADATA_ITEM with key k. 0; -EUCLEAN if the item is
 * shorter than struct btrfs_extent_item (h not filled); -ENODATA if a non-skinny tree block
 * lacks its tree_block_info (h holds the header fields, level -1, refs_at = size). */
int btk_extent_head_parse(const struct btk_key *k, const uint8_t *d, uint32_t size,
			  struct btk_extent_head *h);

/* Writes h's refs, generation and flags and, with h->has_info, the tree_block_info (info_key,
 * level) at d. Returns where the inline references go (the header's size). */
uint32_t btk_extent_head_write(uint8_t *d, const struct btk_extent_head *h);

/* One back reference, inline or keyed. */
struct btk_extent_ref {
	uint8_t type;	   /* BTRFS_TREE_BLOCK_REF_KEY, _SHARED_BLOCK_REF_KEY, _EXTENT_DATA_REF_KEY,
			      _SHARED_DATA_REF_KEY, BTRFS_EXTENT_OWNER_REF_KEY */
	bool inline_ref;   /* inside the extent item (else a keyed item) */
	uint64_t root;	   /* TREE_BLOCK_REF, EXTENT_DATA_REF, EXTENT_OWNER_REF */
	uint64_t parent;   /* SHARED_BLOCK_REF, SHARED_DATA_REF */
	uint64_t objectid; /* EXTENT_DATA_REF: inode */
	uint64_t offset;   /* EXTENT_DATA_REF: file offset - extent offset */
	uint32_t count;	   /* data refs: how many EXTENT_DATA items it stands for; else 0 */
};

/* Size of an inline reference of that type (type byte included); 0 if the type is none. */
uint32_t btk_inline_ref_size(uint8_t type);

/* Walks the inline references of one item: init with the item and h.refs_at. */
struct btk_inline_iter {
	const uint8_t *d;
	uint32_t size;
	uint32_t at;   /* offset of the reference last returned, or of the bad one */
	uint32_t len;  /* its size (for a bad one: the size its type needs, 0 if unknown) */
	uint32_t next; /* where the next one starts */
};

static inline void btk_inline_iter_init(struct btk_inline_iter *it, const uint8_t *d, uint32_t size,
					uint32_t start)
{
	it->d = d;
	it->size = size;
	it->at = it->next = start;
	it->len = 0;
}

/* 1: *r holds the next reference (at it->at, it->len bytes); 0: the end of the item;
 * -ENOENT: unknown type byte at it->at; -EUCLEAN: the reference at it->at overruns the item.
 * After an error the iterator stays on the bad reference. */
int btk_inline_next(struct btk_inline_iter *it, struct btk_extent_ref *r);

/* The length of the extent an extent tree key stands for: an EXTENT_ITEM's offset, the node
 * size for a skinny METADATA_ITEM (whose offset is the level); 0 for any other key. */
static inline uint64_t btk_extent_key_len(const struct btk_key *k, uint32_t nodesize)
{
	if (k->type == BTRFS_EXTENT_ITEM_KEY)
		return k->offset;
	return k->type == BTRFS_METADATA_ITEM_KEY ? nodesize : 0;
}

/* The offset an EXTENT_DATA_REF records for a file extent item: the item's file offset (its
 * key offset) minus where in the extent its bytes start (its offset field), modulo 2^64. A clone
 * that puts an extent's later bytes at a lower file offset (and every file of a converted
 * filesystem, whose extents are pieces of ext2_saved/image's) makes it wrap. */
static inline uint64_t btk_data_ref_offset(uint64_t file_offset, uint64_t extent_offset)
{
	return file_offset - extent_offset;
}

/* The key offset from which the file extent items an EXTENT_DATA_REF stands for are searched:
 * every such item lies at or after the ref's offset unless the offset wrapped (no file offset
 * reaches 2^63 - 1, so a larger value wrapped), and then they may lie anywhere from 0. */
static inline uint64_t btk_data_ref_search_from(uint64_t ref_offset)
{
	return ref_offset >= (uint64_t)INT64_MAX ? 0 : ref_offset;
}

/* Size of a keyed reference item's body of that type (0 for tree block refs, which have none). */
uint32_t btk_keyed_ref_size(uint8_t type);

/* A keyed reference item. 0 parsed; 1 the key type is not a back reference; -EUCLEAN a data
 * reference item too short for its body. */
int btk_keyed_ref_parse(const struct btk_key *k, const uint8_t *d, uint32_t size,
			struct btk_extent_ref *r);

/* Writes r as an inline reference at `at` (btk_inline_ref_size(r->type) bytes); the count
 * of data refs is r->count. Returns the size, 0 for a type that is none (nothing written). */
uint32_t btk_inline_ref_write(uint8_t *at, const struct btk_extent_ref *r);

/* Offset of the count field of a data reference of that type: within the inline reference
 * (type byte included) or, keyed, within the item body; -1 for a type without a count. */
int btk_ref_count_offset(uint8_t type, bool keyed);

#endif
