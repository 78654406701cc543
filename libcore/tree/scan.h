/* scan.h (layer 4) — tree blocks and tree roots of older generations found by reading the
 * metadata chunks sequentially.
 *
 * btrfs never overwrites a tree block in place: the roots of older transactions, and the blocks
 * below them, stay on disk until their space is reused. btk_scan_blocks reads every metadata
 * and system chunk front to back in large batches and keeps every block that validates as a
 * tree block of this filesystem at its own address (checksum, fsid, header bytenr, layout);
 * btk_scan_roots picks the roots among them: for each (owner, generation) the blocks of the
 * highest level; btk_scan_root_reach says how much of a root's tree is still on disk.
 */
#ifndef BTK_TREE_SCAN_H
#define BTK_TREE_SCAN_H

#include "base/vec.h"
#include "tree/tree.h"

/* One valid tree block (a header's fields). */
struct btk_found_block {
	uint64_t bytenr, generation, owner;
	uint32_t nritems;
	uint8_t level;
};
BTK_VEC(btk_found_blocks, struct btk_found_block);

/* Every valid tree block of fs's metadata (and system, and mixed) chunks, sorted by bytenr.
 * A batch that does not read is read again block by block; a block whose first copy does not
 * validate (and is not zeros) is read from its other copies. progress (may be NULL) is told
 * the bytes done and the total after each batch. 0, -ENOMEM; unreadable ranges are skipped. */
int btk_scan_blocks(struct btk_fs *fs, struct btk_found_blocks *out,
		    void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx);
/* The same keeping only blocks whose header's owner owner_fn accepts (NULL: all): the others
 * are not validated, which is most of the work. */
int btk_scan_blocks_of(struct btk_fs *fs, bool (*owner_fn)(uint64_t owner),
		       struct btk_found_blocks *out,
		       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx);
/* The same with a filter that has a context: owner(ctx, owner) says whether blocks of that
 * owner are kept (a scan keeps no state of its own between calls: several may run at once). */
struct btk_scan_filter {
	bool (*owner)(void *ctx, uint64_t owner);
	void *ctx;
};
int btk_scan_blocks_filter(struct btk_fs *fs, const struct btk_scan_filter *flt,
			   struct btk_found_blocks *out,
			   void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx);
/* The found block at bytenr, or NULL. */
const struct btk_found_block *btk_scan_find(const struct btk_found_blocks *b, uint64_t bytenr);

/* A tree root candidate. */
struct btk_found_root {
	uint64_t bytenr, generation, owner;
	int level;
	/* btk_scan_root_reach: blocks of the tree that are on disk as its pointers expect, and
	 * pointers whose block is gone (overwritten, or not found) */
	uint64_t blocks, missing;
	/* btk_scan_roots_commits: another root of this tree and generation is the one the
	 * transaction committed (this one was copied again before the commit) */
	bool superseded;
};
BTK_VEC(btk_found_roots, struct btk_found_root);

/* The root candidates among blocks: for each (owner, generation) every block of the highest
 * level found for it. owner_fn (NULL: all) chooses the owners. Sorted newest generation first,
 * then by owner and bytenr. 0 or -ENOMEM. */
int btk_scan_roots(const struct btk_found_blocks *blocks, bool (*owner_fn)(uint64_t owner),
		   struct btk_found_roots *out);

/* A transaction may write a tree's root block and copy it again before it commits: several
 * roots of one tree and generation. The root tree block the commit kept is the one its own
 * extent tree records; another tree's is the one that root tree names. Among the roots of one
 * tree and generation that one comes first and the others are marked superseded (when nothing
 * tells, the order stays). roots as btk_scan_roots sorts them. 0 or -ENOMEM. */
int btk_scan_roots_commits(struct btk_fs *fs, struct btk_found_roots *roots);

/* Fills r->blocks and r->missing by following the pointers of r's tree through its nodes
 * (leaves are not read: a pointer counts when blocks holds a block at its address with the
 * pointer's generation). Nodes are read through fs's cache; memo (zeroed at first, freed with
 * btk_scan_memo_free) keeps each node's counts for later roots that share it. */
struct btk_scan_memo;
int btk_scan_root_reach(struct btk_fs *fs, const struct btk_found_blocks *blocks,
			struct btk_found_root *r, struct btk_scan_memo **memo);
void btk_scan_memo_free(struct btk_scan_memo *memo);

#endif
