/* trans.h — the copy-on-write write path (layer 5), and only that: transactions, items,
 * allocators, references, chunks, snapshots and the commit. What a new filesystem holds and
 * where its chunks go is decided one layer up, in create/; this header offers the primitives
 * it builds with.
 *
 * A transaction changes trees by copy-on-write: every block on a changed path is copied to a
 * newly allocated block (once per transaction), so the blocks the last committed superblock
 * reaches are never overwritten. Back references in the extent tree, block group items, the
 * free-space tree, root items and chunk/dev items follow automatically at commit. The commit
 * writes every new block to every copy, flushes, and only then writes every superblock copy of
 * every device, so an interruption at any write leaves either the old or the new filesystem.
 *
 * Blocks shared with snapshots are copied as the kernel does: children of a block still used
 * by another tree get references from it as a parent (FULL_BACKREF), keyed references move
 * to the copying tree when it was the last user; data extents of shared leaves gain and lose
 * references the same way. Tree blocks in RAID5/6 chunks update P/Q of their row
 * (read-modify-write). Relocation trees (a balance in progress) and unknown features are
 * refused with -EOPNOTSUPP.
 *
 * One transaction at a time per filesystem; not thread-safe. After any error inside a
 * transaction, abort it: the in-memory state is then unusable for writing (fs stays readable
 * from disk after reopening).
 */
#ifndef BTK_TRANS_H
#define BTK_TRANS_H

#include <stdbool.h>
#include <stdint.h>
#include "format/format.h"
#include "format/geometry.h"
#include "base/csum.h" /* btk_data_ref_hash() */
#include "tree/tree.h"
#include "volumes/volumes.h"

struct btk_trans;
struct btk_wfs;

/* The write path's state of a filesystem opened with opts.write: block groups and free space
 * (loaded here), roots, queued reference changes, what earlier transactions left pinned or
 * held. It lives beside fs, not in it: open it once per opened filesystem, keep it across
 * that filesystem's transactions, and close it before the filesystem (btk_fs_close).
 * Errors: -EROFS (not writable), -EOPNOTSUPP (a feature the write path cannot keep
 * consistent: unknown features, old backrefs, a log tree to replay), -ENODEV (a device is
 * missing), -EUCLEAN (block group usage disagrees with the extents), -EIO, -ENOMEM. */
int btk_write_open(struct btk_fs *fs, unsigned flags, struct btk_wfs **out);
/* flags: write although block group usage disagrees with the extents (a damaged extent
 * tree otherwise refused): image restore's fixups copy a filesystem as it is, damage and
 * all, and touch only device items and dev extents. */
#define BTK_WRITE_DAMAGED_USAGE (1u << 0)
/* flags: every transaction keeps each qgroup's numbers (relocation: every extent keeps its
 * size and the subvolumes that reach it): with quotas on, commits leave them consistent and
 * follow them with the status item's generation, as the kernel's commits do, instead of
 * marking them for a rescan. */
#define BTK_WRITE_QGROUPS_KEPT (1u << 1)
/* flags: the extent tree is rebuilt (repair): it is not read; every chunk gets a block group
 * that is wholly free and counts nothing, whose item the commit inserts. The first
 * transaction must empty the trees that held the items (btk_tree_reset of the extent tree,
 * and of the block group tree where there is one), claim the space of everything in use
 * (btk_extent_claim, btk_trans_keep_out) before anything is allocated, and give every tree
 * block and data extent its record (btk_tree_block_ref, btk_data_ref_make). */
#define BTK_WRITE_EXTENT_REBUILD (1u << 2)
/* flags: the chunk tree is rebuilt (repair): its root block is not read (the chunk tree's
 * uuid is taken from the root tree's root block); the first transaction empties it
 * (btk_tree_reset of BTRFS_CHUNK_TREE_OBJECTID) and inserts every device and chunk item of
 * the chunk map the caller has put in fs. */
#define BTK_WRITE_CHUNK_REBUILD (1u << 3)
/* Quota accounting, done one layer up (it needs the back-reference walkers): a hook the commit
 * calls once every tree has settled (back references applied, root items written) and before
 * the superblock is prepared. It sees what the transaction changed (btk_trans_changes), may
 * read both the committed trees and the new ones (btk_trans_view) and may change the quota
 * tree (whose blocks no qgroup counts); the commit then settles again. With a hook set, the
 * commit no longer marks quotas inconsistent by itself: the hook decides, calling
 * btk_qgroups_mark_inconsistent when it cannot count exactly. Errors it returns fail the
 * commit. fn NULL: no hook (the default: quotas are marked for a rescan). */
typedef int (*btk_trans_settled_fn)(void *ctx, struct btk_trans *t);
void btk_write_on_settled(struct btk_wfs *w, btk_trans_settled_fn fn, void *ctx);

/* What a transaction changed, as far as qgroups care; valid inside the settled hook. */
struct btk_changed_extent {
	uint64_t bytenr, num_bytes; /* an extent (data or tree block) one of whose back
				       references from a subvolume tree was added or dropped */
};
struct btk_snapshot_note {
	uint64_t src, dst;  /* btk_tree_snapshot(src, dst) */
	uint64_t dst_block; /* the root block the snapshot got (a copy of src's) */
	bool src_new;	    /* src's root block was already this transaction's when copied */
};
struct btk_drop_note {
	uint64_t id;	 /* the dropped tree (btk_tree_drop) */
	uint64_t bytenr; /* a block it shared with other trees (only its reference went), or 0 */
	int level;
};
struct btk_trans_changes {
	const struct btk_changed_extent *ext; /* in the order of the changes, repeats possible */
	size_t next;
	const struct btk_snapshot_note *snaps;
	size_t nsnaps;
	const struct btk_drop_note *drops; /* per dropped tree one note with bytenr 0, then one
					      per shared block where its walk stopped */
	size_t ndrops;
};
void btk_trans_changes(const struct btk_trans *t, struct btk_trans_changes *out);
/* Inside the settled hook: reads of the filesystem through the tree layer (btk_root_find,
 * btk_search, btk_for_each_root...) see this transaction's trees as they are now (current: its
 * root and chunk trees) or the committed ones (!current, as outside the hook; the hook returns
 * in that view). */
int btk_trans_view(struct btk_trans *t, bool current);
/* With quotas on: marks them inconsistent in this transaction (a rescan is needed), as the
 * commit does by itself without a settled hook. */
int btk_qgroups_mark_inconsistent(struct btk_trans *t);

/* Frees w (NULL is fine); a running transaction must have ended. */
void btk_write_close(struct btk_wfs *w);
/* The write state of a filesystem that exists only in memory: fs has its superblock fields
 * (feature flags, sizes, checksum type), its devices (open, with devid, uuid and
 * total_bytes), a block cache and writable set, and no chunk or tree yet. Its first
 * transaction has id 1; every tree block header carries chunk_uuid; new subvolume uuids
 * follow from seed as with btk_trans_derive_uuids. The caller makes chunks and trees with the
 * calls below, and the commit writes everything. -EROFS, -ENOMEM. */
int btk_write_new(struct btk_fs *fs, const uint8_t chunk_uuid[BTK_UUID_SIZE], const uint8_t *seed,
		  struct btk_wfs **out);
/* Sizes of the chunks allocated from now on (the kind's entry of g, format/geometry.h); NULL
 * returns to the kernel's sizes. g must stay valid while it is in use. */
void btk_trans_set_geometry(struct btk_trans *t, const struct btk_geometry *g);

/* Repair: the next transaction gets id `transid` when that is higher than it would be (the
 * generations only grow), so that blocks and items stamped with a later generation than the
 * superblock's (damage) are older than what it writes. Between transactions only: -EBUSY
 * while one runs. */
int btk_write_raise_transid(struct btk_wfs *w, uint64_t transid);
/* Starts a transaction. *out is freed by commit or abort. -EIO after an earlier transaction
 * failed, -EBUSY while one runs. A v1 space cache is invalidated (cache_generation -1): the
 * kernel rebuilds it. */
int btk_trans_start(struct btk_wfs *w, struct btk_trans **out);
/* Bounds the memory of a long transaction: once more than `limit` bytes of tree blocks were
 * made dirty since the last call that wrote, applies queued reference changes and writes
 * every dirty block, so that the cache may drop them. Safe for the old filesystem: the blocks
 * written are this transaction's, which no committed root reaches. Call it between changes
 * (no path held). Errors: -EIO, -ENOSPC, -ENOMEM; the transaction must then be aborted. */
int btk_trans_writeback(struct btk_trans *t, uint64_t limit);
/* Writes everything and ends the transaction (t is freed, also on error). A transaction that
 * changed nothing writes nothing (the generation stays). */
int btk_trans_commit(struct btk_trans *t);
/* The same, with a look before the superblocks: once every new block is written and flushed
 * (reachable from no superblock yet, so the old filesystem is still whole on disk), verify
 * runs; when it returns non-zero (a negative errno) no superblock is written, the transaction
 * ends as a failed commit (the filesystem object can no longer be written) and that value is
 * returned. verify may read the devices and build the superblocks the commit would write
 * (btk_trans_super_copy); it must not change the transaction. */
typedef int (*btk_trans_verify_fn)(void *ctx, struct btk_trans *t);
int btk_trans_commit_verify(struct btk_trans *t, btk_trans_verify_fn verify, void *ctx);
/* Inside a verify callback: superblock copy `mirror` of device index `dev` (fs->devs order)
 * exactly as the commit will write it (its device item, bytenr and checksum). -EINVAL. */
int btk_trans_super_copy(struct btk_trans *t, int dev, int mirror, struct btk_super *out);
/* Repair: sets the used bytes of the block group at logical (its item at commit; changes of
 * this transaction count on from there). -ENOENT no such block group. */
int btk_bg_set_used(struct btk_trans *t, uint64_t logical, uint64_t used);
/* Repair: the block group at logical, whose BLOCK_GROUP_ITEM disagreed with its chunk in
 * length or flags (the write path took the chunk's, BTK_WRITE_DAMAGED_USAGE), gets its item
 * rewritten as the chunk says at commit. -ENOENT no such block group, -EINVAL its item
 * agrees. */
int btk_bg_rewrite_item(struct btk_trans *t, uint64_t logical);
/* How many commits this process has made (their superblocks written and flushed). The
 * superblocks of a commit go out with SIGINT, SIGTERM and SIGHUP held, so that a signal
 * handler reading this (it is async-signal-safe) sees a commit whole or not at all. */
unsigned long btk_trans_commits(void);
/* Drops the transaction without writing; the filesystem object can no longer be written. */
void btk_trans_abort(struct btk_trans *t);
/* Ends t after its changes: with ret 0 commits it (the commit's result), otherwise aborts it
 * and returns ret. A NULL t (none started): ret. */
int btk_trans_end(struct btk_trans *t, int ret);
uint64_t btk_trans_id(const struct btk_trans *t);
/* New subvolume and snapshot uuids of this transaction follow from seed (16 bytes that must
 * outlive it, the fsid for reproducible images) instead of being random; NULL: random. */
void btk_trans_derive_uuids(struct btk_trans *t, const uint8_t *seed);
/* The commit of this transaction zeroes [off, off + len) of the first device in the very
 * write that puts its primary superblock down (one write from off to the superblock's end;
 * the bytes between are read and written back as they are): an old filesystem's signature
 * (a btrfs built in place of it) goes in the write that makes the new one, so a power cut leaves
 * one of the two for blkid, never both or none. off + len must not pass the primary superblock's
 * offset. */
int btk_trans_erase_with_super(struct btk_trans *t, uint64_t off, uint64_t len);
/* Keeps [logical, logical + len) out of every allocation until the filesystem is closed, while
 * the free-space tree still lists it as free: blocks the extent tree does not know of (a log
 * tree's, which the kernel pins while it replays the log). Call it before anything is
 * allocated. -ENOENT outside one block group, -EEXIST when any of it is in use. */
int btk_trans_keep_out(struct btk_trans *t, uint64_t logical, uint64_t len);
/* The filesystem a transaction writes to. */
struct btk_fs *btk_trans_fs(const struct btk_trans *t);

/* Allocates one contiguous data extent of at most `want` and at least `min` bytes (sector
 * multiples; first fit, so the layout is a function of the allocation sequence) for file data
 * of (root, ino) at file offset `offset`, and records its EXTENT_ITEM with one
 * EXTENT_DATA_REF; the block group's used bytes and free space follow. *got is the length.
 * -ENOSPC when no range of min bytes is free even after allocating a new data chunk. */
int btk_data_extent_alloc(struct btk_trans *t, uint64_t want, uint64_t min, uint64_t root,
			  uint64_t ino, uint64_t offset, uint64_t *bytenr, uint64_t *got);

/* ---- items ----
 * `tree` is a root objectid (BTRFS_ROOT_TREE_OBJECTID, BTRFS_EXTENT_TREE_OBJECTID, 5, ...).
 * A path returned positioned (btk_tree_search_write, btk_item_insert_empty) points at a leaf
 * of this transaction whose item data may be changed in place through btk_item_ptr(); release
 * it with btk_wpath_release() before the next change to the same tree. */

/* Searches key in tree, copying the path for writing. ins_len > 0 guarantees room for an item
 * of that data size (plus its header) in the leaf; ins_len < 0 lets underfull blocks merge.
 * Returns 0 found, 1 not found (slot where key would go), negative errno. */
int btk_tree_search_write(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			  int ins_len, struct btk_path *p);
/* Inserts an item (copying size bytes of data). -EEXIST if the key exists. */
int btk_item_insert(struct btk_trans *t, uint64_t tree, const struct btk_key *key, const void *data,
		    uint32_t size);
/* Inserts a zero-filled item and leaves p at it. -EEXIST if the key exists. */
int btk_item_insert_empty(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			  uint32_t size, struct btk_path *p);
/* Deletes the item with key. -ENOENT if absent. */
int btk_item_delete(struct btk_trans *t, uint64_t tree, const struct btk_key *key);
/* Deletes the item p points at (p found by btk_tree_search_write with ins_len -1); p is
 * released. */
int btk_item_delete_at(struct btk_trans *t, uint64_t tree, struct btk_path *p);
/* Grows the item p points at by `grow` zero bytes at its end (p from a search with
 * ins_len >= grow). */
int btk_item_extend(struct btk_trans *t, struct btk_path *p, uint32_t grow);
/* Shrinks the item p points at to new_size, dropping bytes from its end. */
int btk_item_truncate(struct btk_trans *t, struct btk_path *p, uint32_t new_size);
/* Replaces the data of an existing item of the same size, or resizes it. */
int btk_item_update(struct btk_trans *t, uint64_t tree, const struct btk_key *key, const void *data,
		    uint32_t size);
static inline uint8_t *btk_item_ptr(struct btk_path *p, uint32_t *size)
{
	struct btk_block *b = p->nodes[0];
	const struct btk_item *it = btk_leaf_item(b, p->slots[0]);

	if (size)
		*size = btk_le32(it->size);
	return b->data + sizeof(struct btk_header) + btk_le32(it->offset);
}
void btk_wpath_release(struct btk_path *p);
/* Read-only search of the tree as this transaction has it so far (nothing is copied); walk
 * on with btk_tree_read_next (0, 1 at the end, negative errno); release with
 * btk_wpath_release before the next change. Returns as btk_tree_search_write. */
int btk_tree_search_read(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			 struct btk_path *p);
int btk_tree_read_next(struct btk_trans *t, struct btk_path *p);
/* Copies the block at `bytenr` and every block above it on the path of key (the block's first
 * key) into this transaction, as a change below it would (relocation: the copies land in
 * block groups that are not read-only). Returns 0, or 1 when that path of tree reaches
 * another block at `level` (nothing copied), or a negative errno. */
int btk_tree_cow_block(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		       uint64_t bytenr);

/* Repair: btk_tree_cow_block for a committed block whose header is damaged but whose
 * contents read (a generation later than the filesystem's, item data not packed the kernel's
 * way): the copy gets this transaction's generation, its leaf data packed, and its parent's
 * pointer follows. Returns as btk_tree_cow_block. */
int btk_tree_recow(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		   uint64_t bytenr);

/* Repair: the committed block at bytenr (level, reached by key: its parent's pointer key), lost
 * (it does not read), leaves its tree: the parent's pointer goes (the path above it copied) and
 * its extent record's reference with it. For derived trees only (checksums), whose items
 * another step makes again. Returns 0, 1 when the path of key reaches no pointer to it or the
 * block is the tree's root (nothing changed), or a negative errno. */
int btk_tree_drop_lost(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		       uint64_t bytenr);

/* Free metadata (bytes, logical) a filesystem needs so that the kernel can mount it and write:
 * what a filesystem cut to fit leaves and what a device shrink keeps (alloc.c). */
uint64_t btk_kernel_meta_room(uint32_t nodesize);

/* Relocation keeping what snapshots share (block_move.c). The tree block at bytenr (a tree
 * that snapshots may share) is copied once to a block group that is not read-only; every
 * parent pointing at it is changed once the same way (in place when this transaction made it,
 * else copied, up to the root nodes, which their trees copy), and its back references follow:
 * one copy however many trees reach it. -EUCLEAN when the references and the trees disagree
 * (nothing committed is touched; abort). */
int btk_tree_block_relocate(struct btk_trans *t, uint64_t bytenr, int level);
/* Moving a data extent: btk_data_extent_alloc_move allocates the new extent of len bytes
 * (*to; its record holds a placeholder reference); the caller copies the bytes and moves the
 * checksums (before: the old extent and its sums go once its last user lets go); then
 * btk_data_extent_repoint points every file extent item using `from` at `to`, changing each
 * leaf once as above, the references moving to the new extent and the placeholder going.
 * *items counts the items changed. */
int btk_data_extent_alloc_move(struct btk_trans *t, uint64_t len, uint64_t *to);
int btk_data_extent_repoint(struct btk_trans *t, uint64_t from, uint64_t to, uint64_t len,
			    int *items);

/* Reads, as the transaction sees the tree now (its own changes included, nothing copied for
 * writing), the first item with key >= *key (btk_item_next) or the last with key <= *key
 * (btk_item_prev): 0 with *key set, up to cap bytes of its data copied to buf (may be NULL)
 * and its size in *size (may be NULL); 1 when there is none; negative errno. */
int btk_item_next(struct btk_trans *t, uint64_t tree, struct btk_key *key, void *buf, uint32_t cap,
		  uint32_t *size);
int btk_item_prev(struct btk_trans *t, uint64_t tree, struct btk_key *key, void *buf, uint32_t cap,
		  uint32_t *size);

/* Drops the data checksums of [start, +len) (sector aligned), cutting csum items that reach
 * past either end. Freeing a data extent (its last reference) does this by itself. */
int btk_csum_delete(struct btk_trans *t, uint64_t start, uint64_t len);

/* ---- chunks ---- */
/* Serializes a chunk item; returns its size. buf must hold the largest item. */
uint32_t btk_chunk_to_item(const struct btk_chunk *c, uint8_t *buf);
/* Rebuilds the superblock's system chunk array (fs->sb) from the chunk map. -ENOSPC when the
 * system chunks do not fit in it. */
int btk_chunk_build_sys_array(struct btk_fs *fs);

/* Allocates a chunk of type `flags` (with its profile bits) whose stripes are `size` bytes
 * (a multiple of 64 KiB; 0: the geometry's size), in the lowest device space no chunk or
 * hold takes. -ENOSPC when no hole is large enough. */
int btk_chunk_alloc_size(struct btk_trans *t, uint64_t flags, uint64_t size, uint64_t *logical);
/* Adds a SINGLE chunk of type `flags` (BTRFS_BLOCK_GROUP_DATA, ...) of len bytes at `logical`
 * on the first device at `physical`, with its block group all free. Everything must be
 * sector aligned, physical at or past 1 MiB and inside the device, and neither range may
 * overlap an existing chunk or dev extent: -EINVAL otherwise (the message says which). */
int btk_chunk_add_fixed(struct btk_trans *t, uint64_t flags, uint64_t logical, uint64_t physical,
			uint64_t len);
/* True when the chunk at logical was made in this transaction (its items are not written). */
bool btk_chunk_is_new(const struct btk_trans *t, uint64_t logical);
/* Sets the io_align, io_width and sub_stripes fields of the chunk made in this transaction at
 * logical (they are written with its item at commit); -EINVAL for any other chunk. */
int btk_chunk_set_io(struct btk_trans *t, uint64_t logical, uint32_t io_align, uint32_t io_width,
		     uint16_t sub_stripes);
/* Applies the queued reference changes now (extent records, block group usage), as the commit
 * would; what is freed by them becomes free. Errors as btk_trans_writeback. */
int btk_trans_settle(struct btk_trans *t);
/* Where the last allocated or pinned byte of the block group at logical ends (trailing free
 * space and superblock stripes do not count; the group's start when it holds nothing);
 * references still queued are not seen (btk_trans_settle). -ENOENT no such block group. */
int btk_bg_used_end(struct btk_trans *t, uint64_t logical, uint64_t *end);

/* Records a data extent [bytenr, +len) whose data is already on disk, with one
 * EXTENT_DATA_REF from (root, ino, offset) as btk_data_extent_alloc does for new space. The
 * range must be free in one data block group (-EEXIST when any of it is taken or is a
 * superblock stripe, -ENOENT when no data block group holds it whole, -EINVAL unaligned). */
int btk_data_extent_fixed(struct btk_trans *t, uint64_t bytenr, uint64_t len, uint64_t root,
			  uint64_t ino, uint64_t offset);

/* ---- superblock fields (trans_super.c), written by the commit ---- */
/* The label (at most 255 bytes). */
int btk_trans_set_label(struct btk_trans *t, const char *label);
/* The fsid a single-device filesystem is known by, through the metadata_uuid feature as
 * btrfstune -m does: tree blocks and device items keep the uuid they hold (the superblock's
 * metadata_uuid); the fsid that uuid is clears the feature again. Each superblock copy is
 * valid alone, so a power cut leaves the old fsid or the new. -EOPNOTSUPP for several
 * devices or a seed filesystem. */
int btk_trans_set_fsid(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE]);
/* A full change of the fsid (btrfstune -u), in one copy-on-write transaction: from here every
 * new or copied tree block carries fsid, the device items and the superblock get it (the
 * metadata_uuid feature goes, and the older backup roots, whose trees keep the old fsid), and
 * blocks still carrying the old one read as well. The caller then copies every tree block of
 * the committed trees (relocate: btk_fsid_rewrite) and calls btk_trans_fsid_rewrite_done,
 * after which only the new fsid reads, before committing. Until the commit's superblocks the
 * committed trees are untouched. Refused (nothing changed): several devices (-EOPNOTSUPP), an
 * interrupted btrfstune change or a log tree (-EBUSY), a seed filesystem (-EOPNOTSUPP). */
int btk_trans_fsid_rewrite_begin(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE]);
/* Every committed block has been copied: the old fsid no longer reads, and every block of
 * every tree as the transaction has it (*blocks counts them) is checked to carry the new one
 * (-EUCLEAN names one that does not). -EINVAL if no rewrite runs. */
int btk_trans_fsid_rewrite_done(struct btk_trans *t, uint64_t *blocks);
/* A failed rewrite: blocks are written with the old fsid again (the transaction is to be
 * dropped). */
void btk_trans_fsid_rewrite_cancel(struct btk_trans *t);

/* ---- trees ---- */
/* Creates an empty tree with a default ROOT_ITEM (refs 1); fs trees get their root dir by
 * the caller. -EEXIST if it exists. */
int btk_tree_new(struct btk_trans *t, uint64_t objectid);
/* The ROOT_ITEM bytes the commit will write for tree (mutable until commit: callers set
 * uuid, times, root_dirid). NULL if the tree is not loaded / has no item. */
struct btrfs_root_item *btk_tree_root_item(struct btk_trans *t, uint64_t objectid);

/* Snapshots subvolume src as a new tree dst (a subvolume id): dst's root block is a copy of
 * src's, every block below gains a reference from dst, both root items record this
 * transaction as last_snapshot, and dst gets its own ROOT_ITEM (new uuid, parent_uuid = src's,
 * RDONLY if asked, times = now, ROOT_ITEM_INIT set; a source item without ROOT_ITEM_INIT passes
 * on no flags or byte_limit, as in the kernel) and uuid-tree entry. Changes to src or dst later
 * in the same transaction copy the shared blocks first, as the kernel does. The caller adds
 * ROOT_REF, ROOT_BACKREF and the directory entry that name the snapshot (fs layer). */
int btk_tree_snapshot(struct btk_trans *t, uint64_t src, uint64_t dst, bool readonly, uint64_t now);

/* Deletes subvolume tree id whole, now: blocks only it uses are freed with the data extents
 * of their leaves (the space is free after the commit), blocks shared with snapshots lose its
 * reference (those it owns first take references from themselves, FULL_BACKREF, as in the
 * kernel), and its ROOT_ITEM goes. The caller removes its names first (ROOT_REF/BACKREF,
 * directory entry, uuid tree). Bounded memory: dirty blocks are written back on the way;
 * progress (may be NULL) sees the count of blocks freed. -EBUSY if the tree was changed in
 * this transaction. */
int btk_tree_drop(struct btk_trans *t, uint64_t id, void (*progress)(void *ctx, uint64_t blocks),
		  void *ctx);

/* ---- data extent references ----
 * Queues delta references to the data extent [bytenr, +num_bytes) from (root, inode, offset)
 * where offset is the file offset minus the extent offset of the EXTENT_DATA item (or from a
 * parent block: root 0, parent set). Applied at commit; when the count reaches zero the record
 * goes and the space is free after the commit. The record itself is created by whoever
 * allocates the extent (data_alloc.c). */
int btk_data_ref(struct btk_trans *t, uint64_t bytenr, uint64_t num_bytes, uint64_t root,
		 uint64_t parent, uint64_t ino, uint64_t offset, int delta);
/* The key offset of a keyed EXTENT_DATA_REF item: btk_data_ref_hash() (base/csum.h). */

/* ---- device size and stripe placement (dev_resize.c; resize and relocation) ---- */
/* Sets the size of device devid (its DEV_ITEM total_bytes now; the superblock's total_bytes
 * and each copy's dev_item at commit). The caller makes sure every dev extent ends inside it
 * and, when growing, that the device is that large. -ENOENT for an unknown devid. */
int btk_dev_set_size(struct btk_trans *t, uint64_t devid, uint64_t bytes);
/* Keeps new chunks of this transaction out of [start, start+len) of devid (until the commit
 * or abort). -ENOMEM. */
int btk_dev_hold(struct btk_trans *t, uint64_t devid, uint64_t start, uint64_t len);
/* Points stripe `stripe` of the chunk at logical to physical offset `to` on the same device:
 * the chunk item, the dev extent (re-keyed), the in-memory chunk map (this transaction's
 * blocks are written there) and, at commit, the superblock's system chunk array. The caller
 * has already copied the stripe's bytes to `to` (unallocated space); the old place of a
 * committed chunk is held until the commit, so the committed filesystem stays readable at
 * every write. A chunk of this transaction has no items yet: only its map changes.
 * -ENOENT no such stripe, -EUCLEAN items disagree. */
int btk_chunk_stripe_move(struct btk_trans *t, uint64_t logical, int stripe, uint64_t to);

/* Cuts the free tail off a SINGLE or DUP chunk: its length becomes new_len (a sector
 * multiple, > 0) in the chunk item, its dev extents, its block group item and free-space tree
 * entries (re-keyed) and the chunk map; the device space past it becomes unallocated after the
 * commit (held until then). A chunk of this transaction has no items yet: its map, block
 * group and device usage change at once. -EBUSY when anything in the tail is used, -EINVAL for
 * other profiles or lengths, -ENOENT no such chunk. */
int btk_chunk_shrink(struct btk_trans *t, uint64_t logical, uint64_t new_len);
/* Splits the committed SINGLE, DUP or RAID1 data or metadata chunk at logical in two where
 * no extent crosses: it keeps its first `at` bytes (a multiple of 64 KiB, inside it) and a new
 * chunk at logical + at takes the rest, its stripes where the tail's bytes lie (nothing moves):
 * the chunk item, dev extents, block group item and free-space entries of the first are cut,
 * the second's are written at commit (it is a chunk of this transaction), each block group
 * counting the extents it holds. Splitting lets the parts of a chunk move to different places
 * of the device (btk_chunk_stripe_move). -EBUSY when an extent crosses the line or the chunk
 * changed in this transaction, -EINVAL other profiles, system chunks or places, -ENOENT. */
int btk_chunk_split(struct btk_trans *t, uint64_t logical, uint64_t at);

/* ---- emptying block groups (relocation; chunk_remove.c) ---- */
/* Marks the block group at logical read-only for the write path (until cleared or the fs is
 * closed): no tree block or data extent is allocated in it any more. -ENOENT. */
int btk_bg_set_readonly(struct btk_trans *t, uint64_t logical, bool ro);
/* Allocates nothing in the block group at logical at or past `end` any more (until cleared
 * with 0 or the fs is closed): its tail is being emptied so that it can be cut
 * (btk_chunk_shrink). -ENOENT, -EINVAL when end is outside the group. */
int btk_bg_set_limit(struct btk_trans *t, uint64_t logical, uint64_t end);
/* Bytes the block group at logical holds in extents, and bytes freed in this transaction
 * (pinned until the commit). -ENOENT. */
int btk_bg_usage(struct btk_trans *t, uint64_t logical, uint64_t *used, uint64_t *pinned);
/* Removes the empty committed chunk at logical: its chunk item, dev extents, block group item
 * and free-space tree entries, the chunk map entry and (at commit) the system chunk array
 * entry; device bytes_used drop. The device ranges stay held until the commit, and the logical
 * addresses are never given out again. -EBUSY when anything in it is used or pinned, -EINVAL a
 * chunk of this transaction, -ENOENT no such chunk. */
int btk_chunk_remove(struct btk_trans *t, uint64_t logical);

/* ---- repair: extent records that disagree with the trees (extent_fixup.c) ---- */
/* Queues delta references to the tree block at bytenr (level) from root (a keyed reference)
 * or from parent (shared), as the write path does for its own blocks; full_backref sets the
 * record's FULL_BACKREF flag. A +1 to a block without a record makes one, of generation gen
 * (the block's: a block of this transaction's generation would be taken for one it made; 0:
 * this transaction's): claim its space first, and settle (btk_trans_settle) before the block
 * may be copied, so that the copy drops the record (and pins the space) instead of cancelling
 * the unrecorded reference. Applied at commit. -EINVAL. */
int btk_tree_block_ref(struct btk_trans *t, uint64_t bytenr, int level, uint64_t root,
		       uint64_t parent, int delta, bool full_backref, uint64_t gen);
/* Repair: bytenr is a data address without a record (a damaged file extent's, which the
 * repair points elsewhere or makes a hole in this transaction): copying a leaf that snapshots
 * share queues no reference to it for file extents that still point there. 0 or -ENOMEM. */
int btk_trans_data_unrecorded(struct btk_trans *t, uint64_t bytenr);
/* The same as btk_data_ref for delta > 0, and a data extent without a record gets one (of
 * generation gen, which must be set), its block group counting it: an extent tree rebuilt
 * (claim its space first, btk_extent_claim). Applied at commit or settle. -EINVAL. */
int btk_data_ref_make(struct btk_trans *t, uint64_t bytenr, uint64_t num_bytes, uint64_t root,
		      uint64_t parent, uint64_t ino, uint64_t offset, int delta, uint64_t gen);
/* Takes [bytenr, +len) out of the free space: it is in use although the extent tree has no
 * record of it (a record is being added). Call it before anything is allocated. -ENOENT
 * outside one block group. */
int btk_extent_claim(struct btk_trans *t, uint64_t bytenr, uint64_t len);
/* Deletes the extent record at key (EXTENT_ITEM or METADATA_ITEM) that nothing uses, with its
 * keyed references (*keyed counts them): its block group counts it no longer, and the whole
 * sectors it covers are free after the commit (data: with their checksums). */
int btk_extent_record_drop(struct btk_trans *t, const struct btk_key *key, bool data,
			   unsigned *keyed);
/* Tree id's root becomes the committed block at bytenr (level): its root item named an older
 * block. Copy the tree's root in this transaction afterwards (btk_tree_search_write), so that
 * block and item get the same generation. -EBUSY when the tree was changed already. */
int btk_tree_set_root(struct btk_trans *t, uint64_t id, uint64_t bytenr, int level);
/* Tree id (not a subvolume) becomes one empty leaf of this transaction, for a rebuild of a
 * derived tree: its old blocks are neither read nor freed (their extent records are the
 * caller's to drop, btk_extent_record_drop), so a tree that no longer reads can be replaced.
 * The chunk tree (BTRFS_CHUNK_TREE_OBJECTID, whose root the superblock names) too.
 * -EBUSY when the tree was changed already, -ENOENT no such tree, -EINVAL a subvolume. */
int btk_tree_reset(struct btk_trans *t, uint64_t id);
/* The same for any tree, a subvolume's included: one whose root block is lost, rebuilt from
 * what is left (its root item keeps everything but the root; the lost blocks' records are the
 * caller's to drop). */
int btk_tree_restart(struct btk_trans *t, uint64_t id);
/* Every block group's free-space tree items are rewritten at commit from its free space (the
 * complement of the extent records): after btk_tree_reset of the free-space tree, they fill
 * the empty tree. false when the filesystem has no free-space tree (nothing to write). */
bool btk_fst_mark_all(struct btk_trans *t);
/* Whether the free-space tree reads whole and says exactly what btk_fst_mark_all would make
 * the commit write: every block group's info and its free ranges (as extents, or as a bitmap's
 * runs), nothing else. false without a free-space tree. */
bool btk_fst_matches(struct btk_trans *t);
/* Makes the commit write new superblocks although nothing else changes (the root tree is
 * copied): a v1 space cache is then invalidated, a dropped log forgotten. */
int btk_trans_touch(struct btk_trans *t);
/* The commit marks the uuid tree current (uuid_tree_generation = this transaction): it was
 * rebuilt, the kernel need not rescan it at mount. */
int btk_trans_uuid_tree_current(struct btk_trans *t);

/* ---- statistics for tests ---- */
struct btk_wstats {
	uint64_t bgs, bg_used, pinned_bytes, free_bytes;
};
void btk_write_stats(const struct btk_wfs *w, struct btk_wstats *st);

#endif
