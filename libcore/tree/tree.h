/* tree.h — validated tree-block reads, the block cache, search and iteration (layer 4).
 *
 * Every block handed out has passed: checksum, fsid (metadata uuid), bytenr, level <
 * BTK_MAX_LEVEL, nritems fits, item offsets/sizes inside the block and not overlapping the
 * item array, key order, and the caller's expectations (level, generation, owner, first key)
 * where given. A copy that fails is reported with btk_warn and the next copy (DUP/RAID1) is
 * tried. Accessors below may therefore trust the block's internal offsets.
 */
#ifndef BTK_TREE_H
#define BTK_TREE_H

#include <stdbool.h>
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "format/format.h"
#include "volumes/volumes.h"

/* Opens the filesystem on paths[0..n-1]: the volumes (superblocks, members, system chunk
 * array), then the block cache and the chunk tree. *out is owned by the caller
 * (btk_fs_close). Errors: -ENOENT (not btrfs), -EUCLEAN (damaged beyond reading), -ENODEV (a
 * member device is missing: btk_errmsg names the devid), -EIO; the message starts with
 * paths[0]. */
int btk_fs_open(const char *const *paths, int n, const struct btk_open_opts *opts,
		struct btk_fs **out);
/* The same on devices already open (btk_dev_open, btk_dev_mem_open, btk_dev_faulty...): takes
 * devs[0..n-1], on failure too (they are closed then). The message starts with devs[0]'s
 * name. -EROFS when opts->write and a handle is read-only. */
int btk_fs_open_devs(struct btk_dev *const *devs, int n, const struct btk_open_opts *opts,
		     struct btk_fs **out);
/* Releases the write path's state, the cache, the chunk map and the devices. NULL is fine. */
void btk_fs_close(struct btk_fs *fs);

struct btk_block {
	uint64_t bytenr; /* logical address */
	uint32_t len;	 /* nodesize */
	int refs;	 /* references held by callers and the cache */
	uint8_t *data;	 /* len bytes */
	int mirror;	 /* 0-based copy the bytes were read from (earlier copies failed) */
	/* cache bookkeeping */
	struct btk_block *hnext, *lru_prev, *lru_next;
	bool dirty;
};

/* What the reader expects of a block; 0 / -1 fields are not checked. */
/* How strictly tree blocks of a filesystem are validated when read. BTK_READ_KERNEL: what
 * reading safely needs (bounds, key order) and the kernel's canonical layout (item data packed
 * back to back from the leaf end, sector-aligned child pointers). BTK_READ_SAFETY_ONLY: only
 * the former, for the checker, which sees and reports such blocks itself. */
enum btk_read_mode { BTK_READ_KERNEL = 0, BTK_READ_SAFETY_ONLY, BTK_READ_WIPED_CSUM };
/* BTK_READ_WIPED_CSUM: as BTK_READ_SAFETY_ONLY, and a block whose checksum field is all zeros
 * (wiped, not a checksum that disagrees) passes without one: a repair that copies such a
 * block, whose header and items it then checks against their pointer, reads it so. */
/* Sets the mode of fs's later reads (the tree layer keeps it with fs's block cache; blocks
 * already cached stay) and returns the mode before. */
enum btk_read_mode btk_tree_read_mode(struct btk_fs *fs, enum btk_read_mode mode);

struct btk_block_check {
	int level;			 /* -1: any */
	uint64_t generation;		 /* 0: any (the parent pointer's generation otherwise) */
	uint64_t owner;			 /* 0: any */
	const struct btk_key *first_key; /* NULL: any (the parent pointer's key otherwise) */
	bool from_pointer; /* set by btk_child_check: a pointer's generation 0 is a mismatch too */
};

/* What child slot of node parent must be, by its pointer: level, generation (0 in a pointer is
 * a mismatch, never "any") and first key, which is written to *key (the check points at it). */
void btk_child_check(const struct btk_block *parent, int slot, struct btk_key *key,
		     struct btk_block_check *out);

/* Reads and validates the block at logical bytenr. *out holds a reference: btk_block_put it.
 * Errors: -EUCLEAN (no copy valid: btk_errmsg says why for the last copy), -ENOENT (no chunk),
 * -EIO. */
int btk_block_read(struct btk_fs *fs, uint64_t bytenr, const struct btk_block_check *chk,
		   struct btk_block **out);
/* Why the calling thread's last failed btk_block_read rejected the block (for its last copy
 * tried): the checker reports each kind under its own code. */
enum btk_block_fault {
	BTK_BF_NONE,
	BTK_BF_IO,	   /* the copy did not read, or no chunk maps it */
	BTK_BF_CONTENT,	   /* checksum, header or layout */
	BTK_BF_LEVEL,	   /* level differs from the parent's expectation */
	BTK_BF_GENERATION, /* generation differs from the parent pointer's (parent transid) */
	BTK_BF_OWNER,	   /* owner differs from the expected tree */
	BTK_BF_FIRST_KEY,  /* first key differs from the parent pointer's key */
};
enum btk_block_fault btk_block_last_fault(void);
void btk_block_get(struct btk_block *b);
void btk_block_put(struct btk_block *b);
/* Validates raw block bytes read from bytenr (no expectations); 0 or -EUCLEAN + why. */
int btk_block_check_raw(const struct btk_fs *fs, uint64_t bytenr, const uint8_t *data, char *why,
			size_t whylen);
/* Validates one copy's raw bytes as btk_block_read validates each copy it tries: the raw checks
 * and what chk (may be NULL) expects of the block. 0 or -EUCLEAN + why. */
int btk_block_copy_check(const struct btk_fs *fs, uint64_t bytenr, const uint8_t *data,
			 const struct btk_block_check *chk, char *why, size_t whylen);

static inline const struct btk_header *btk_hdr(const struct btk_block *b)
{
	return (const struct btk_header *)b->data;
}
static inline int btk_block_level(const struct btk_block *b)
{
	return btk_hdr(b)->level;
}
static inline uint32_t btk_block_nritems(const struct btk_block *b)
{
	return btk_le32(btk_hdr(b)->nritems);
}
static inline uint64_t btk_block_owner(const struct btk_block *b)
{
	return btk_le64(btk_hdr(b)->owner);
}
static inline uint64_t btk_block_generation(const struct btk_block *b)
{
	return btk_le64(btk_hdr(b)->generation);
}
static inline uint64_t btk_block_flags(const struct btk_block *b)
{
	return btk_le64(btk_hdr(b)->flags);
}
/* Leaf item slot: key, data pointer and size (slot < nritems, level 0). */
static inline const struct btk_item *btk_leaf_item(const struct btk_block *b, int slot)
{
	return (const struct btk_item *)(b->data + sizeof(struct btk_header)) + slot;
}
static inline void btk_leaf_key(const struct btk_block *b, int slot, struct btk_key *k)
{
	btk_disk_to_key(&btk_leaf_item(b, slot)->key, k);
}
static inline uint32_t btk_leaf_size(const struct btk_block *b, int slot)
{
	return btk_le32(btk_leaf_item(b, slot)->size);
}
/* Binary search over a block's keys (leaf or node): the first slot whose key is >= key;
 * *exact = 1 when that slot's key equals key, else 0. */
int btk_block_search(const struct btk_block *b, const struct btk_key *key, int *exact);
/* Where the item's data starts, counted from the end of the header. */
static inline uint32_t btk_leaf_offset(const struct btk_block *b, int slot)
{
	return btk_le32(btk_leaf_item(b, slot)->offset);
}
static inline const uint8_t *btk_leaf_data(const struct btk_block *b, int slot)
{
	return b->data + sizeof(struct btk_header) + btk_leaf_offset(b, slot);
}
/* Whether a leaf's slot holds a file extent item (whole) that points at a data extent on disk
 * (not inline, not a hole): then its key in *k and its fields in *fe. */
static inline bool btk_leaf_data_extent(const struct btk_block *b, int slot, struct btk_key *k,
					struct btk_file_extent *fe)
{
	btk_leaf_key(b, slot, k);
	return k->type == BTRFS_EXTENT_DATA_KEY &&
	       btk_file_extent_item_parse(btk_leaf_data(b, slot), btk_leaf_size(b, slot), k->offset,
					  fe) == BTK_FE_WHOLE &&
	       fe->type != BTRFS_FILE_EXTENT_INLINE && fe->disk_bytenr;
}
/* The data back reference a leaf's file extent item (as btk_leaf_data_extent) stands for: the
 * data extent and its length on disk, the inode, the offset the reference records; num_bytes,
 * the bytes of the extent the item uses. Its root is the leaf's owner, or the leaf its parent. */
struct btk_leaf_dref {
	uint64_t bytenr, len, ino, off, num_bytes;
};
static inline bool btk_leaf_data_ref(const struct btk_block *b, int slot, struct btk_leaf_dref *d)
{
	struct btk_key k;
	struct btk_file_extent fe;

	if (!btk_leaf_data_extent(b, slot, &k, &fe))
		return false;
	*d = (struct btk_leaf_dref){.bytenr = fe.disk_bytenr,
				    .len = fe.disk_num_bytes,
				    .ino = k.objectid,
				    .off = btk_data_ref_offset(k.offset, fe.extent_offset),
				    .num_bytes = fe.num_bytes};
	return true;
}
/* Bytes of a block of nodesize bytes past its header. */
static inline uint32_t btk_block_space(uint32_t nodesize)
{
	return nodesize - (uint32_t)sizeof(struct btk_header);
}
/* Bytes in use past the header: a node's pointers; a leaf's item array and item data. */
uint64_t btk_block_used(const struct btk_block *b);
/* Unused bytes of a block of nodesize bytes: for a leaf, between the item array and the
 * lowest item data (negative when they overlap); for a node, pointer slots left (as unsigned
 * when more are used than fit). As dump-tree prints them. */
int btk_block_free_space(const struct btk_block *b, uint32_t nodesize);
/* Node pointer slot (level > 0). */
static inline const struct btk_key_ptr *btk_node_ptr(const struct btk_block *b, int slot)
{
	return (const struct btk_key_ptr *)(b->data + sizeof(struct btk_header)) + slot;
}
static inline void btk_node_key(const struct btk_block *b, int slot, struct btk_key *k)
{
	btk_disk_to_key(&btk_node_ptr(b, slot)->key, k);
}
/* The key of slot (< nritems) of a leaf or a node, whichever b is. */
static inline void btk_block_key(const struct btk_block *b, int slot, struct btk_key *k)
{
	if (btk_block_level(b))
		btk_node_key(b, slot, k);
	else
		btk_leaf_key(b, slot, k);
}
static inline uint64_t btk_node_blockptr(const struct btk_block *b, int slot)
{
	return btk_le64(btk_node_ptr(b, slot)->blockptr);
}
static inline uint64_t btk_node_gen(const struct btk_block *b, int slot)
{
	return btk_le64(btk_node_ptr(b, slot)->generation);
}

/* A tree root: where its top block is. */
struct btk_root {
	uint64_t objectid;
	uint64_t key_offset; /* offset of its ROOT_ITEM key (reloc trees: the subvolume id) */
	uint64_t bytenr;
	uint64_t generation;
	int level;
};

/* A tree's root from the body of its ROOT_ITEM (objectid, ROOT_ITEM, key_offset): 0, or
 * -EUCLEAN (no message set) if the item is too short; *r then has only the ids. The level is
 * not range-checked. */
int btk_root_from_item(uint64_t objectid, uint64_t key_offset, const uint8_t *data, uint32_t size,
		       struct btk_root *r);

/* ROOT_TREE and CHUNK_TREE come from the superblock (and BLOCK_GROUP_TREE's root item from the
 * root tree, like every other); other trees from their ROOT_ITEM in the root tree (the one with
 * the highest offset for that objectid). -ENOENT if the tree does not exist. */
int btk_root_find(struct btk_fs *fs, uint64_t objectid, struct btk_root *out);
/* The same from the ROOT_ITEMs of root tree rt (an older one, say; no cache). */
int btk_root_find_in(struct btk_fs *fs, const struct btk_root *rt, uint64_t objectid,
		     struct btk_root *out);

struct btk_path {
	struct btk_block *nodes[BTK_MAX_LEVEL];
	int slots[BTK_MAX_LEVEL];
};

/* Positions path at key in root. Returns 0 if found; 1 if not, with the leaf slot where key
 * would go (possibly == nritems; btk_next moves to the next real item); negative on error.
 * The path holds references: btk_path_release() it, also after an error. */
int btk_search(struct btk_fs *fs, const struct btk_root *root, const struct btk_key *key,
	       struct btk_path *p);
/* Salvage: with on, btk_next and btk_search_ge step over a subtree whose block does not read
 * (counted by btk_tree_skipped) instead of failing, so that an iteration goes on past a
 * damaged leaf (its items are missing from it). Returns the setting before. */
bool btk_tree_skip_unreadable(struct btk_fs *fs, bool on);
uint64_t btk_tree_skipped(const struct btk_fs *fs);

/* Moves to the next / previous item. 0 ok, 1 no more items, negative on error. */
int btk_next(struct btk_fs *fs, struct btk_path *p);
int btk_prev(struct btk_fs *fs, struct btk_path *p);
/* Like btk_search, then btk_next if the slot is past the leaf end: the first item >= key.
 * Returns 0 positioned, 1 no item >= key, negative on error. */
int btk_search_ge(struct btk_fs *fs, const struct btk_root *root, const struct btk_key *key,
		  struct btk_path *p);
void btk_path_release(struct btk_path *p);
static inline void btk_path_init(struct btk_path *p)
{
	memset(p, 0, sizeof(*p));
}
/* The current leaf item of a positioned path. */
static inline void btk_path_key(const struct btk_path *p, struct btk_key *k)
{
	btk_leaf_key(p->nodes[0], p->slots[0], k);
}
static inline const uint8_t *btk_path_data(const struct btk_path *p, uint32_t *size)
{
	*size = btk_leaf_size(p->nodes[0], p->slots[0]);
	return btk_leaf_data(p->nodes[0], p->slots[0]);
}
/* Both: its key in *k, its data returned (size bytes). */
static inline const uint8_t *btk_path_item(const struct btk_path *p, struct btk_key *k,
					   uint32_t *size)
{
	btk_path_key(p, k);
	return btk_path_data(p, size);
}

/* The items of a tree in key order, from a key on:
 *	struct btk_items it;
 *	for (btk_items_start(&it, fs, root, &from); btk_items_next(&it);)
 *		... it.key, it.data (it.size bytes: valid until the next call) ...
 *	ret = btk_items_end(&it, ret);
 * btk_items_next returns false after the last item and on an error. btk_items_end releases the
 * path (also after a break) and returns ret when it is not 0 (the caller's own stop or error),
 * else 0 or the negative errno of a block that did not read (btk_errmsg says which). Salvage
 * mode (btk_tree_skip_unreadable) steps over such blocks. */
struct btk_items {
	struct btk_fs *fs;
	struct btk_root root;
	struct btk_path path;
	struct btk_key key; /* the current item's (before the first: where to start) */
	const uint8_t *data;
	uint32_t size;
	bool started;
	int ret; /* the last search or step: 0 positioned, 1 at the end, or a negative errno */
};
/* from NULL: the first item of the tree. */
void btk_items_start(struct btk_items *it, struct btk_fs *fs, const struct btk_root *root,
		     const struct btk_key *from);
bool btk_items_next(struct btk_items *it);
int btk_items_end(struct btk_items *it, int ret);

/* Depth-first pre-order walk of every block of a tree. The callback sees each block once
 * (blocks reached twice within one tree are reported as an error, as are bad child levels,
 * which also rules out cycles). Return nonzero from the callback to stop (that value is
 * returned); return BTK_WALK_SKIP from a node's callback to not descend into it. A child
 * that fails to read is passed to on_error (if set: its return value decides: 0 continue, else
 * stop with it) — otherwise the walk stops with the error. */
#define BTK_WALK_SKIP 0x7fff0001
struct btk_walk_ops {
	int (*block)(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth);
	int (*on_error)(void *ctx, uint64_t bytenr, int level, int err, const char *msg);
	/* instead of block when set: the same, with what b was read against (its parent's
	 * pointer, or the root's level and generation), for callers that judge other copies */
	int (*checked)(void *ctx, struct btk_fs *fs, const struct btk_block *b,
		       const struct btk_block_check *chk, int depth);
};
int btk_tree_walk(struct btk_fs *fs, const struct btk_root *root, const struct btk_walk_ops *ops,
		  void *ctx);

/* Calls fn for every tree the filesystem has: ROOT_TREE, CHUNK_TREE, then every ROOT_ITEM of
 * the root tree in key order (extent, dev, fs, csum, quota, uuid, free space, subvolumes,
 * snapshots, data reloc, reloc trees), then the log tree if the superblock has one. */
int btk_for_each_root(struct btk_fs *fs, int (*fn)(void *ctx, const struct btk_root *root),
		      void *ctx);

#endif
