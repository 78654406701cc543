/* ctree_int.h — internal state of the write path (layer 5), shared by the files of trans/.
 * Not a public header: every other folder uses trans.h.
 *
 * Model: every change is copy-on-write into blocks allocated in the running transaction and
 * kept dirty in the block cache. Extent-tree back references, block group items, the
 * free-space tree, root items and chunk/dev items are not touched while a tree is being
 * changed; changes are queued (ref ops, dirty flags) and applied by the commit in rounds until
 * a round changes nothing. Blocks freed in a transaction stay pinned (not reusable) until the
 * superblocks of that transaction are on disk, so an interruption at any write leaves the old
 * filesystem intact.
 */
#ifndef BTK_CTREE_INT_H
#define BTK_CTREE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "base/u64set.h"
#include "tree/cache.h"
#include "format/format.h"
#include "format/geometry.h"
#include "format/root_item.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "volumes/volumes.h"

/* Sorted, non-overlapping, non-adjacent byte ranges. */
struct btk_range {
	uint64_t start, len;
};
struct btk_rangeset {
	struct btk_range *r;
	size_t n, cap;
};
int btk_rs_add(struct btk_rangeset *s, uint64_t start, uint64_t len);
/* Removes [start, start+len) wherever it overlaps. */
int btk_rs_remove(struct btk_rangeset *s, uint64_t start, uint64_t len);
/* True when [start, start+len) lies entirely inside one range. */
bool btk_rs_contains(const struct btk_rangeset *s, uint64_t start, uint64_t len);
/* True when any byte of [start, start+len) is in the set. */
bool btk_rs_overlaps(const struct btk_rangeset *s, uint64_t start, uint64_t len);
void btk_rs_free(struct btk_rangeset *s);
int btk_rs_copy(struct btk_rangeset *dst, const struct btk_rangeset *src);

/* A block group as the allocator sees it. */
struct btk_bg {
	uint64_t start, len, flags, used;
	struct btk_rangeset free;   /* allocatable now */
	struct btk_rangeset pinned; /* freed this transaction, reusable after commit */
	struct btk_rangeset super;  /* superblock stripes: never allocated, free in the FST */
	bool item_new;		    /* no BLOCK_GROUP_ITEM on disk yet */
	bool ro;		    /* being emptied (relocation): nothing is allocated in it */
	uint64_t limit;		    /* nothing allocated at or past it (0: none; relocation) */
	bool dirty;		    /* item and free-space tree need a look at commit */
	/* damage (a repair's write path): its BLOCK_GROUP_ITEM's key says length item_len, or
	 * its flags differ from its chunk's, whose length and type it took; once dirty, the
	 * commit replaces the item */
	bool item_bad;
	uint64_t item_len;
};

/* A tree that the write path has touched. */
struct btk_wroot {
	uint64_t objectid;
	struct btk_key item_key; /* its ROOT_ITEM key (root tree members only) */
	uint64_t bytenr;
	int level;
	bool in_root_tree; /* false for ROOT_TREE and CHUNK_TREE (in the superblock) */
	bool item_new;	   /* ROOT_ITEM still to be inserted */
	bool item_dirty;   /* ROOT_ITEM to be rewritten */
	uint8_t item[sizeof(struct btrfs_root_item)];
	uint32_t item_size; /* size of the on-disk item (older items are shorter) */
};

/* wr's ROOT_ITEM decoded (zeroed when wr has none), and written back (marked dirty; nothing
 * is written when wr has none). Loaded items are at least BTK_ROOT_ITEM_V0_SIZE. */
static inline void wroot_item(const struct btk_wroot *wr, struct btk_root_item *ri)
{
	if (btk_root_item_parse(wr->item, wr->item_size, ri))
		memset(ri, 0, sizeof(*ri));
}
static inline void wroot_item_set(struct btk_wroot *wr, const struct btk_root_item *ri)
{
	if (wr->item_size < BTK_ROOT_ITEM_V0_SIZE)
		return;
	btk_root_item_write(wr->item, wr->item_size, ri);
	wr->item_dirty = true;
}

/* A queued change of one extent's back reference. A tree block reference is keyed by its
 * root (parent 0) or, for blocks shared through a FULL_BACKREF parent, by that parent; a data
 * reference by (root, inode, file offset - extent offset) or by parent. */
struct btk_refop {
	uint64_t bytenr, num_bytes;
	uint64_t root;	 /* keyed reference: the root (0 when parent is set) */
	uint64_t parent; /* shared reference: the parent block */
	int level;	 /* tree blocks */
	bool data;
	uint64_t ino, offset; /* data references */
	int delta;	      /* +n added, -n dropped; 0 with set_flags */
	uint64_t set_flags;   /* extent flags to set (BTRFS_BLOCK_FLAG_FULL_BACKREF) */
	uint64_t gen;	      /* a record it makes: its generation (0: the transaction's); a
				 data reference makes a record only with gen set */
	uint64_t seq;
};

struct btk_wfs {
	struct btk_fs *fs;
	uint64_t transid; /* the running (or next) transaction */
	bool running, broken;
	bool skinny, fst, bgtree, mixed, no_holes;
	bool squota;	     /* simple quotas: a new data extent's record names its owner */
	bool damaged_usage;  /* BTK_WRITE_DAMAGED_USAGE */
	bool qgroups_kept;   /* BTK_WRITE_QGROUPS_KEPT */
	bool extent_rebuild; /* BTK_WRITE_EXTENT_REBUILD */
	struct btk_wroot **roots;
	int nroots;
	size_t caproots;
	struct btk_bg *bgs; /* sorted by start */
	int nbgs;
	size_t capbgs;
	struct btk_refop *refs;
	size_t nrefs, caprefs;
	uint64_t refseq;
	uint64_t *new_chunks; /* logical starts of chunks whose items are still to be written */
	int nnew_chunks;
	size_t capnew_chunks;
	uint64_t mods;	  /* counts tree modifications, so commit rounds know when to stop */
	uint64_t dirtied; /* bytes of tree blocks made dirty since the last writeback */
	/* sizes of new chunks chosen by whoever builds the filesystem (NULL: the kernel's) */
	const struct btk_geometry *geom;
	bool in_chunk_alloc;
	/* blocks of this transaction that a snapshot taken in it now shares: copied again
	 * before any change, and their space is not reused when the source lets go */
	struct btk_rangeset snap_shared;
	/* data addresses without a record that file extents point at, which a repair points
	 * elsewhere in this transaction (btk_trans_data_unrecorded) */
	struct btk_u64set unrecorded;
	/* tree blocks a relocation copied in this transaction (block_move.c), keeping the
	 * generation of the block they replace: later moves change them in place */
	struct btk_rangeset relocated;
	/* committed tree blocks whose header generation is damage (later than this
	 * transaction): copied as any other (btk_tree_recow) */
	struct btk_rangeset recow;
	uint8_t chunk_uuid[BTK_UUID_SIZE]; /* chunk_tree_uuid of every tree block header */
	/* the fsid when new uuids must follow from it (a fixed fsid: reproducible images), else
	 * NULL (random, as for a snapshot of an existing filesystem) */
	const uint8_t *uuid_seed;
	/* bytes of the first device below its primary superblock that the next commit zeroes in
	 * the write of that superblock (btk_trans_erase_with_super) */
	uint64_t erase_off, erase_len;
	/* device ranges new chunks of this transaction must not use (dev_resize.c): stripes
	 * moved away (the committed filesystem still reads them), space being cut off, and
	 * what another filesystem still holds while a btrfs is built over it */
	struct btk_devhold *holds;
	int nholds;
	size_t capholds;
	/* the settled hook (btk_write_on_settled) and what this transaction shows it */
	btk_trans_settled_fn settled_fn;
	void *settled_ctx;
	struct btk_changed_extent *chg;
	size_t nchg, capchg;
	struct btk_snapshot_note *snaps;
	size_t nsnaps, capsnaps;
	struct btk_drop_note *drops;
	size_t ndrops, capdrops;
	/* new chunks start at or past this logical address: a removed chunk's addresses are
	 * not used again (cached blocks and the committed chunk tree still name them) */
	uint64_t logical_floor;
};

struct btk_devhold {
	uint64_t devid, start, len;
};

struct btk_trans {
	struct btk_fs *fs;
	struct btk_wfs *w;
	uint64_t transid;
	uint64_t mods_at_start;	      /* w->mods when it began: unchanged means nothing to commit */
	bool in_hook;		      /* the settled hook runs (btk_trans_view) */
	uint64_t view_root, view_gen; /* the committed root tree, while the hook runs */
	uint8_t view_level;
	uint64_t view_chunk; /* and chunk tree */
	uint8_t view_chunk_level;
};

/* ---- alloc.c ---- */
struct btk_bg *btk_bg_find(struct btk_wfs *w, uint64_t bytenr);
/* Inserts a new block group (sorted); returns it or NULL on ENOMEM. */
struct btk_bg *btk_bg_add(struct btk_wfs *w, uint64_t start, uint64_t len, uint64_t flags);
/* A block group for chunk c, wholly free, counting nothing, its item to be inserted at commit
 * (a new chunk's, or every chunk's for an extent tree rebuilt). */
int btk_bg_add_chunk(struct btk_wfs *w, const struct btk_chunk *c);
/* Computes the superblock stripes inside a chunk into bg->super. */
int btk_bg_exclude_super(struct btk_fs *fs, struct btk_bg *bg, const struct btk_chunk *c);
/* Allocates one tree block for root `owner` at `level`; queues its +1 ref. */
int btk_alloc_tree_block(struct btk_trans *t, uint64_t owner, int level, uint64_t *bytenr);
/* The same without the reference (the caller queues the block's references itself). */
int btk_alloc_tree_space(struct btk_trans *t, uint64_t owner, uint64_t *bytenr);
/* Frees a tree block: pinned if committed before, reusable at once if born in this trans. */
int btk_free_tree_block(struct btk_trans *t, uint64_t owner, uint64_t bytenr, int level,
			uint64_t gen);
int btk_refop_add(struct btk_wfs *w, const struct btk_refop *op);
/* For the settled hook: notes an extent whose references from subvolume trees changed (its
 * set of roots may have), a snapshot, a drop (tree_drop.c, trans_snap.c). */
int btk_note_extent(struct btk_wfs *w, uint64_t bytenr, uint64_t num_bytes);
int btk_note_snapshot(struct btk_wfs *w, const struct btk_snapshot_note *n);
int btk_note_drop(struct btk_wfs *w, uint64_t id, uint64_t bytenr, int level);
/* Loads block groups and free space of an existing filesystem. */
int btk_bg_load(struct btk_wfs *w);
/* Moves pinned ranges back to free (after the superblocks are written). */
void btk_bg_unpin_all(struct btk_wfs *w);
uint64_t btk_bg_type_for_root(struct btk_wfs *w, uint64_t owner);

/* ---- data_alloc.c ---- */
/* Inserts the EXTENT_ITEM of a new data extent with one EXTENT_DATA_REF. */
int btk_data_record_insert(struct btk_trans *t, uint64_t bytenr, uint64_t len, uint64_t root,
			   uint64_t ino, uint64_t offset);

/* ---- chunk_alloc.c ---- */
/* Adds chunk c (taking ownership) to the chunk map with its block group, all free; its items
 * are written at commit. */
int btk_chunk_add(struct btk_wfs *w, struct btk_chunk *c);
/* Allocates a new chunk and block group of `flags` (type | profile) in memory; its items are
 * written at commit. *logical receives the start. -ENOSPC when the devices cannot hold it. */
int btk_chunk_alloc(struct btk_wfs *w, uint64_t flags, uint64_t *logical);
/* The same with a fixed stripe size (0: computed). */
int btk_chunk_alloc_sized(struct btk_wfs *w, uint64_t flags, uint64_t stripe, uint64_t *logical);
/* Writes chunk items, dev extents and dev items of new chunks (commit). */
int btk_chunk_write_items(struct btk_trans *t);
/* Updates the DEV_ITEM of every device in the chunk tree when bytes_used changed. */
int btk_chunk_update_dev_items(struct btk_trans *t);

/* ---- ctree_cow.c ---- */
struct btk_wroot *btk_wroot_get(struct btk_wfs *w, uint64_t objectid);
/* Reads a block, preferring the cache (dirty blocks of this transaction live there). */
int btk_wblock_read(struct btk_fs *fs, uint64_t bytenr, int level, struct btk_block **out);
/* Creates a new empty tree (level 0 leaf) for objectid; a ROOT_ITEM is inserted at commit
 * for trees other than ROOT_TREE and CHUNK_TREE. */
int btk_tree_create(struct btk_trans *t, uint64_t objectid, struct btk_wroot **out);
/* wr's root becomes a new empty leaf of this transaction (what the old root held is the
 * caller's). */
int btk_wroot_new_leaf(struct btk_trans *t, struct btk_wroot *wr);
/* Initializes a fresh tree block header. */
void btk_block_init(const struct btk_wfs *w, struct btk_block *b, uint64_t owner, int level,
		    uint64_t transid);
uint32_t btk_leaf_free(const struct btk_fs *fs, const struct btk_block *b);
uint32_t btk_node_max(const struct btk_fs *fs);
uint32_t btk_leaf_data_size(const struct btk_fs *fs);
/* Like btk_tree_search_write, with need = leaf bytes wanted (item header included). */
int btk_tree_search_need(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int need,
			 struct btk_path *p);
int btk_tree_search_cur(struct btk_wfs *w, uint64_t tree, const struct btk_key *key,
			struct btk_path *p);
int btk_wpath_next(struct btk_fs *fs, struct btk_path *p);
int btk_wpath_prev(struct btk_fs *fs, struct btk_path *p);
int btk_cow_at(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level);
int btk_new_block(struct btk_trans *t, struct btk_wroot *wr, int level, struct btk_block **out);
/* Read-only walk from wr's current root towards key down to `level` (p->nodes[level] is the
 * block reached, p->slots[level + 1] its slot in the parent). */
int btk_tree_descend(struct btk_trans *t, struct btk_wroot *wr, const struct btk_key *key,
		     int level, struct btk_path *p);

/* ---- ctree_push.c ---- */
/* Makes room in the full leaf p->nodes[0] for a change at p->slots[0] by moving items into a
 * sibling leaf under the same parent. v[0, vm) are the leaf's item sizes (header + data) with
 * the change applied: a new item at the slot (!found) or the item there grown (found).
 * Returns 0 with the path at the slot, now with room (possibly in the sibling), 1 when no
 * sibling could help (path unchanged), or a negative errno. */
int btk_leaf_push(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, const uint32_t *v,
		  uint32_t vm, bool found);

/* Puts a leaf's item data back in the kernel's layout (packed from the block's end down, in
 * item order; a copy on write does it), the items and their bytes unchanged. -EUCLEAN when an
 * item lies outside the block, -ENOMEM. */
int btk_leaf_repack(const struct btk_fs *fs, struct btk_block *b);
/* Item shifting helpers on a leaf (ctree_items.c). */
void btk_leaf_set_key(struct btk_block *b, int slot, const struct btk_key *k);
void btk_node_set_ptr(struct btk_block *b, int slot, const struct btk_key *k, uint64_t ptr,
		      uint64_t gen);
void btk_set_nritems(struct btk_block *b, uint32_t n);

/* ---- trans_refs.c ---- */
int btk_run_refs(struct btk_trans *t);
/* Reference count and flags of a tree block's extent record as the extent tree has it now
 * (call btk_run_refs first to include queued changes). */
int btk_tree_block_info(struct btk_trans *t, uint64_t bytenr, int level, uint64_t *refs,
			uint64_t *flags);
/* Queues delta references from block b to everything it points at (child blocks, or data
 * extents of EXTENT_DATA items), keyed by root, or by b itself when full (shared). */
int btk_block_child_refs(struct btk_trans *t, uint64_t root, const struct btk_block *b, int delta,
			 bool full);
int btk_write_bg_items(struct btk_trans *t);

/* ---- fst.c ---- */
int btk_fst_update(struct btk_trans *t);
/* Deletes the FREE_SPACE_INFO (start, len) and every extent/bitmap item of that block group
 * (before its length changes; the commit writes them anew for a dirty block group). */
int btk_fst_drop_bg(struct btk_trans *t, uint64_t start, uint64_t len);

/* ---- trans_refs.c: the tree holding block group items ---- */
uint64_t btk_bg_item_tree(struct btk_wfs *w);

#endif
