/* relocate_int.h (layer 8) — private to libcore/relocate: the device layout the resize planner
 * works on. */
#ifndef BTK_RELOCATE_INT_H
#define BTK_RELOCATE_INT_H

#include "relocate/relocate.h"
#include "backref/backref.h"

/* The free system space a move of chunk-tree blocks keeps beyond a copy of each (the system
 * chunk's tree is small: its blocks are copied once per pass). */
#define RL_SYS_MARGIN (1ULL << 20)

/* One chunk stripe on the device being resized. */
struct rl_slot {
	uint64_t logical, type;
	int stripe; /* -1: a chunk a repacking makes (it does not move; nothing past it does) */
	uint64_t off, len;
};

struct rl_layout {
	struct rl_slot *s;
	int n;
};

struct rl_range {
	uint64_t start, len;
};
struct rl_ranges {
	struct rl_range *v;
	int n;
	size_t cap;
};
/* Appends (start, len); 0 or -ENOMEM (with a message). */
int rl_range_add(struct rl_ranges *r, uint64_t start, uint64_t len);

/* The kind bits of block group flags (data, metadata, system). */
uint64_t rl_class_of(uint64_t type);
/* The stripes of every chunk on devid (caller frees l->s). */
int rl_layout_load(const struct btk_fs *fs, uint64_t devid, struct rl_layout *l);
/* Where the last stripe ends (at least 1 MiB: the reserved start of every device). */
uint64_t rl_layout_end(const struct rl_layout *l);
struct rl_usage;
/* Moves stripes as the planner does (resize_plan.c) until the layout ends at or below
 * target (0: as far as it goes), recording each move in p when p is set; moves start in
 * round `round`. */
int rl_compact(struct rl_layout *l, uint64_t target, int round, struct btk_resize_plan *p);
/* rl_compact that, where the stripe ending last fits no hole, splits its chunk (a SINGLE, DUP
 * or RAID1 data or metadata chunk) where no extent of use crosses, so that the tail fits the
 * largest hole below it (recorded in p->pieces when p is set), and goes on. */
int rl_compact_split(struct btk_fs *fs, const struct rl_usage *use, struct rl_layout *l,
		     uint64_t target, int round, struct btk_resize_plan *p);

/* Chunks whose free tail may be cut (SINGLE/DUP data and metadata), and the length they can be
 * cut to. */
bool rl_cuttable(const struct btk_chunk *c);
int rl_cut_length(struct btk_fs *fs, const struct btk_chunk *c, uint64_t *len);
/* Free metadata a cut leaves the kernel: its global reserve and 64 insertions beyond it. */
int rl_meta_keep(struct btk_fs *fs, uint64_t *keep);
/* What a pass moving only tree blocks may copy besides them: the extent and free-space trees
 * (their back references and free space change) and every node above the leaves (the paths
 * to the moved blocks). */
int rl_meta_cow(struct btk_fs *fs, uint64_t *bytes);

/* Calls fn(ctx, bytenr, len) for each extent record (EXTENT_ITEM, METADATA_ITEM) of the
 * committed extent tree that starts in [start, end), in address order. fn returns 0 or a
 * negative errno, which stops the walk and is returned; 0 at the end. */
/* Positions p in tree's committed root: at key as btk_search (0 found, 1 not), or with ge at
 * the first item >= key as btk_search_ge (1: none); negative on error. p is initialised here
 * and must be released, also after an error. */
int rl_tree_search(struct btk_fs *fs, uint64_t tree, const struct btk_key *key, bool ge,
		   struct btk_path *p);
int rl_extents_each(struct btk_fs *fs, uint64_t start, uint64_t end,
		    int (*fn)(void *ctx, uint64_t bytenr, uint64_t len), void *ctx);

/* ---- logical relocation (reloc_*.c) ---- */
struct btk_trans;
struct btk_backref;
struct btk_extent;

/* Chunks to empty, and the device range new chunks must keep out of meanwhile. */
struct rl_empty {
	const uint64_t *chunks;
	int n;
	uint64_t devid, hold_start, hold_len;
	btk_resize_progress_fn progress;
	void *ctx;
	uint64_t total;	   /* bytes to move, for progress */
	struct btk_wfs *w; /* the write path's state of the filesystem */
	/* repacking: chunk i keeps its first keep[i] bytes (NULL or 0: emptied whole) and is cut
	 * there; the frozen chunks take nothing meanwhile; the new chunks are made in the first
	 * pass's transaction (made[] gets their addresses), after which the whole device is held */
	const uint64_t *keep;
	const uint64_t *frozen;
	int nfrozen;
	const struct btk_resize_new *news;
	int nnew;
	uint64_t *made;
};

struct rl_stats {
	uint64_t bytes, tree_blocks, tree_copies, data_extents, data_users;
	int passes;
};

/* Shrinking devid to size by emptying every chunk with a stripe past it. */
struct rl_check {
	uint64_t *chunks; /* those chunks (caller frees) */
	int n;
	bool fits;	/* the kept chunks hold what they hold, as the apply allocates */
	uint64_t bytes; /* bytes of extents to move */
	/* metadata (not system) the move needs free in the chunks that stay, and what they have */
	uint64_t meta_need, meta_free;
	uint64_t data_left; /* with count_left: bytes of data extents that found no room */
};
/* The extents of every chunk (by its index in fs->chunks), read once: a search for the
 * minimum checks many sets of chunks, and reading the extent tree for each was quadratic in
 * the size of the filesystem. */
struct rl_usage {
	struct rl_ranges *used;
	/* mixed chunks: which of used's ranges are tree blocks (the others are data extents) */
	struct rl_ranges *tree;
	int n;
};
int rl_usage_load(struct btk_fs *fs, struct rl_usage *u);
void rl_usage_free(struct rl_usage *u);
/* Whether emptying the chunks marked in gone (by index in fs->chunks) fits into the others. */
int rl_check_set(struct btk_fs *fs, const bool *gone, const struct rl_usage *use,
		 struct rl_check *out);

/* A chunk the plan makes (repacking): its type, logical address, stripe length and where its
 * stripes go on the device. */
struct rl_new {
	uint64_t type, logical, length;
	uint64_t phys[BTK_RESIZE_NEW_STRIPES], devid[BTK_RESIZE_NEW_STRIPES];
	int nstripes;
	int run; /* the repacking run that makes it */
};
/* The general check: chunk i (of fs->chunks) keeps its first keep[i] bytes (its length: all,
 * 0: emptied and removed, between: the extents reaching past that line move and the chunk is
 * cut there); frozen chunks (may be NULL) take nothing and give nothing; the new chunks take
 * what the others cannot. placed (may be NULL; fs->nchunks + nnew lists) gets where each moved
 * data extent lands. out->chunks lists the chunks cut or emptied. */
struct rl_spec {
	const struct rl_usage *use;
	const uint64_t *keep;
	const bool *frozen;
	const struct rl_new *news;
	int nnew;
	struct rl_ranges *placed;
	bool count_left; /* go on past a data extent that finds no room, counting them */
};
int rl_check_spec(struct btk_fs *fs, const struct rl_spec *sp, struct rl_check *out);
/* l: the stripes of devid where planned moves put them (NULL: where they are). */
int rl_logical_check(struct btk_fs *fs, const struct rl_layout *l, uint64_t devid, uint64_t size,
		     struct rl_check *out);
/* The smallest stripe end of layout l (devid's stripes after the planned moves) that emptying
 * the chunks past it reaches (0: none). */
int rl_logical_minimum(struct btk_fs *fs, const struct rl_layout *l, uint64_t devid,
		       const struct rl_usage *use, uint64_t *min);

/* Compaction (resize_compact.c): chunks are emptied one by one, from the one whose stripe
 * ends last on the device down (the first whose extents the others take), and after each the
 * remaining stripes are moved whole into the room the emptied ones left. With target 0: *end
 * is the smallest end a step reaches (0: none). Else the first step ending at or below target
 * goes into p (empties, then moves in rounds; p->empty_first), or -ENOSPC. use: the extents
 * (rl_usage_load). */
int rl_compact_empty(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
		     struct btk_resize_plan *p, uint64_t *end);

/* Moves every extent out of the chunks, one transaction per pass, until they are empty.
 * -EAGAIN when passes stop finding less (the message says how many are left), -ENOSPC when
 * the rest of the filesystem has no room; either way the committed state is consistent. */
int rl_empty_chunks(struct btk_fs *fs, const struct rl_empty *e, struct rl_stats *st);
/* Moves every tree block of the committed trees (as rl_empty_chunks moves those of its chunks)
 * in transaction t, the highest levels first, without making any chunk read-only: each gets a
 * copy made by t. progress (may be NULL) sees the bytes moved of the total. */
int rl_move_tree_blocks(struct btk_trans *t,
			void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx,
			struct rl_stats *st);
/* Removes the (empty, committed) chunks in transaction t (those with a keep: only those
 * kept 0 bytes). */
int rl_remove_chunks(struct btk_trans *t, const struct rl_empty *e);
/* Cuts each chunk with a keep between 0 and its length there, a transaction each. */
int rl_cut_chunks(struct btk_fs *fs, const struct rl_empty *e);

/* Repacking (resize_repack.c). Whether devid can be shrunk to target by repacking (and the
 * plan, into p when set): *fits. split: data chunks may be split for the stripe moves after
 * it (rl_compact_split). */
int rl_repack(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
	      bool split, struct btk_resize_plan *p, bool *fits);
/* Where the device ends once a repacking to target is done and the stripes are moved whole as
 * far as they go (0: the repacking does not reach target). */
int rl_repack_end(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
		  bool split, uint64_t *end);
/* The smallest size in [lo, hi) repacking reaches (a binary search in MiB; 0: none): *at
 * the size it is planned for, *min where the stripes end after it (rl_repack_end). */
int rl_repack_minimum(struct btk_fs *fs, uint64_t devid, uint64_t lo, uint64_t hi,
		      const struct rl_usage *use, bool split, uint64_t *min, uint64_t *at);

/* Moves the tree block: one copy for the trees that may share it (fs trees), else a copy in
 * every tree reaching it; *copies counts the copies. */
int rl_move_tree_block(struct btk_trans *t, struct btk_backref *br, uint64_t bytenr, int level,
		       int *copies);
/* Moves a data extent: one copy, checksums moved, every user's item re-pointed (each leaf
 * changed once); buf holds at least 4 MiB. *users counts the items. */
int rl_move_data_extent(struct btk_trans *t, struct btk_backref *br, const struct btk_extent *ext,
			uint8_t *buf, int *users);
/* Moves the checksums of [from, from+len) to start at `to`. */
int rl_csum_move(struct btk_trans *t, uint64_t from, uint64_t to, uint64_t len);

#endif
