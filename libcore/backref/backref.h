/* backref.h — back-reference walkers (layer 7): from a logical address to everything that owns
 * it.
 *
 * Data: the extent item covering the address lists its references inline and as keyed items:
 * EXTENT_DATA_REF (root, inode, offset, count) is resolved by searching that root for the
 * inode's EXTENT_DATA items that point at the extent and whose key offset minus extent offset,
 * modulo 2^64, is the ref's offset (it wraps for clones to a lower file offset and for the
 * files of converted filesystems: those are searched from the inode's first item, as the
 * kernel's logical-ino does); SHARED_DATA_REF (parent leaf) names the
 * leaf directly. Every leaf found this way is then reached by one or more roots: the roots of
 * a tree block come from its own references, TREE_BLOCK_REF (root; the parent is found by
 * searching that root for the block's first key) and SHARED_BLOCK_REF (parent node), followed
 * up level by level, so blocks shared between a subvolume and its snapshots name every root.
 * The file offset of the byte is key.offset + (address - disk_bytenr) - extent offset; for a
 * compressed extent (whose bytes do not map to file bytes one to one) every item referencing
 * it owns it, with offset = key.offset, as the kernel's logical-ino ioctl reports it.
 *
 * The scan mode ignores back references: it walks every tree, reporting the trees that reach
 * a queried tree block and the file extent items whose disk range holds a queried address.
 *
 * Memory: results are owned by the caller and freed with btk_owner_release(). The session
 * (struct btk_backref) caches tree roots and the root sets of tree blocks; it must not outlive
 * the btk_fs it was created on. Not thread-safe.
 */
#ifndef BTK_BACKREF_H
#define BTK_BACKREF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/extent_refs.h"
#include "tree/tree.h"

/* An extent item of the extent tree. */
struct btk_extent {
	uint64_t start, len; /* [start, start+len) logical; len = nodesize for metadata */
	uint64_t refs, generation, flags; /* BTRFS_EXTENT_FLAG_DATA / _TREE_BLOCK, FULL_BACKREF */
	int level;			  /* tree blocks only */
	bool skinny;			  /* METADATA_ITEM (else EXTENT_ITEM) */
	uint8_t key_type;		  /* BTRFS_EXTENT_ITEM_KEY or BTRFS_METADATA_ITEM_KEY */
	uint64_t key_offset;		  /* the item's key offset (length or level) */
};

/* One back reference, inline or keyed: struct btk_extent_ref (format/extent_refs.h). */

/* Finds the extent item covering logical. 0, or -ENOENT (no extent item holds it: free space
 * or no extent tree entry), -EUCLEAN (malformed item), read errors. */
int btk_extent_lookup(struct btk_fs *fs, uint64_t logical, struct btk_extent *ext);

/* Calls fn for every reference of ext: inline ones in item order, then keyed items. Unknown
 * inline types end the item with -EUCLEAN (after the known ones were passed). */
int btk_extent_for_each_ref(struct btk_fs *fs, const struct btk_extent *ext,
			    int (*fn)(void *ctx, const struct btk_extent_ref *ref), void *ctx);

enum btk_owner_kind {
	BTK_KIND_NONE = 0, /* not resolved (an error stopped it) */
	BTK_KIND_FREE,	   /* inside a chunk, no extent item covers it */
	BTK_KIND_DATA,
	BTK_KIND_METADATA,
	BTK_KIND_UNMAPPED, /* no chunk holds the logical address */
};

/* How an owner was found. */
enum btk_found { BTK_FOUND_BACKREF = 1, BTK_FOUND_SCAN = 2 };

struct btk_data_owner {
	uint64_t root, inode;
	uint64_t offset;     /* file offset of the byte; compressed: start of the item's range */
	uint64_t file_start; /* the EXTENT_DATA item: key offset ... */
	uint64_t file_len;   /* ... and num_bytes */
	uint64_t leaf;	     /* the leaf holding the item */
	uint8_t type;	     /* BTRFS_FILE_EXTENT_REG / _PREALLOC */
	uint8_t compression; /* 0 none, 1 zlib, 2 lzo, 3 zstd */
	uint8_t found;	     /* enum btk_found */
};

struct btk_tree_owner {
	uint64_t root;
	int level;
	uint8_t found;
};

struct btk_owner {
	uint64_t logical;
	int kind;	  /* enum btk_owner_kind */
	bool have_extent; /* ext is valid */
	struct btk_extent ext;
	bool have_keys; /* metadata: the block was read: first and last key */
	struct btk_key first_key, last_key;
	size_t ndata, ntree;
	struct btk_data_owner *data; /* sorted by root, inode, offset; no duplicates */
	struct btk_tree_owner *tree; /* sorted by root */
	int nerrors;		     /* references or blocks that could not be followed */
	char *error;		     /* the first such error (NULL if none) */
};

struct btk_backref;

/* A session on fs (caches). *out is owned by the caller: btk_backref_free(). -ENOMEM. */
int btk_backref_new(struct btk_fs *fs, struct btk_backref **out);
void btk_backref_free(struct btk_backref *br);

/* Resolves one logical address through back references into *out (caller releases it, also
 * after an error). Returns 0 when the address was classified, even if some references could
 * not be followed (then out->nerrors > 0 and out->error says the first); negative when nothing
 * could be said (the extent tree is unreadable). */
int btk_owner_lookup(struct btk_backref *br, uint64_t logical, struct btk_owner *out);

/* Scan mode for n addresses at once: one walk of every tree. out[0..n-1] are filled in the
 * order of logicals (caller releases each). Unreadable blocks are skipped and counted in every
 * result's nerrors. Returns 0, or negative if the trees could not be listed at all. */
int btk_owner_scan(struct btk_backref *br, const uint64_t *logicals, size_t n,
		   struct btk_owner *out);

void btk_owner_release(struct btk_owner *o);

/* The roots (tree ids) that reach the tree block at bytenr, following its references upwards;
 * sorted, no duplicates. *roots stays owned by the session and valid until btk_backref_free.
 * Returns 0, or negative (and the roots found before the error, if any, are still given). */
int btk_block_roots(struct btk_backref *br, uint64_t bytenr, const uint64_t **roots, size_t *n);

/* Every tree (root id) that reaches the extent starting at bytenr: for a tree block its
 * roots (btk_block_roots), for a data extent the roots of every leaf holding a file extent
 * item that points into it, whichever of its bytes the item uses (what qgroups count).
 * Sorted, no duplicates; *roots is the caller's to free (NULL when none). No extent starting at
 * bytenr: none, 0. Negative when a reference could not be followed (the roots found are
 * still given). */
int btk_extent_roots(struct btk_backref *br, uint64_t bytenr, uint64_t **roots, size_t *n);

/* The tree root by id, cached by the session. */
int btk_backref_root(struct btk_backref *br, uint64_t root_id, struct btk_root *out);

#endif
