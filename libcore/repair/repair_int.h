/* repair_int.h (layer 10) — private to libcore/repair/: problems as the plan keeps them, the
 * fix functions of fixes.def, the read-only view of a commit's new state.
 */
#ifndef BTK_REPAIR_INT_H
#define BTK_REPAIR_INT_H

#include "base/vec.h"
#include "repair/repair.h"
#include "trans/trans.h"

/* One problem of a check, copied out of the callback. */
struct rp_prob {
	enum btk_check_problem_id id;
	uint64_t tree, bytenr;
	bool has_key;
	struct btk_key key;
	unsigned nvals;
	uint64_t vals[BTK_CHECK_VALS];
	bool warn;
	char what[160], expected[96], found[96];
};
BTK_VEC(rp_probs, struct rp_prob);

/* A check's problems (rp_check). */
struct rp_collect {
	struct rp_probs *v;
	uint64_t errors;
	bool unchecked, oom; /* unchecked: the root tree did not read */
};
/* Checks fs into v (emptied first); c says how many errors and whether it could check. */
int rp_check(struct btk_fs *fs, struct rp_probs *v, struct rp_collect *c);
/* rp_check with what earlier checks compared of the copies of tree blocks (check.h), and with
 * a record of the subvolume trees' walks to fill (record) and to take unchanged trees from
 * (replay); each may be NULL. */
int rp_check_copies(struct btk_fs *fs, struct rp_probs *v, struct rp_collect *c,
		    struct btk_check_copies *copies, struct btk_check_record *record,
		    struct btk_check_record *replay);

/* What a fix works in: the transaction, and the whole check the round plans from (a fix may
 * look at the other problems: which extent a back reference without a user belongs to, a
 * file extent that lost its bytenr). */
struct rp_extents;
struct rp_rebuilds;
struct rp_ctx {
	struct btk_trans *t;
	struct btk_wfs *w; /* t's write state (a fix may set the commit's settled hook) */
	const struct rp_probs *all;
	struct rp_extents *ext; /* extents.c: the round's users of extents (NULL until needed) */
	unsigned rebuilt;	/* rebuild.c: the trees this round rebuilt (1 << enum rp_rebuild) */
	struct rp_rebuilds *rebuilds; /* rebuild.c: what a rebuild keeps to the commit */
	uint64_t lost_leaves_of;      /* lostleaf.c: the tree whose lost leaves were rebuilt */
	/* the record of the check `all` came from (the committed state's users of extents), or
	 * NULL */
	const struct btk_check_record *rec;
};

/* A fix: changes x->t so that p is gone; fills before/after (short texts for --json). 0; 1
 * when there is nothing for it to do (another fix of the round does it: it is not counted);
 * or a negative errno (the round is then refused: nothing is committed). */
typedef int rp_fix(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		   size_t cap);
typedef rp_fix *rp_fix_fn;
rp_fix_fn rp_fix_of(enum btk_check_problem_id id);
/* Fixes of phase 0 run before any other fix of a round: they change extent records to match
 * the committed trees, which the write path's own reference changes then build on. Phase 1
 * are the rebuilds of derived trees (rp_rebuild_of), which replace a tree that nothing has
 * changed yet in the round; phase 2 the others. */
int rp_fix_phase(const struct rp_prob *p);

/* rebuild.c: the derived tree whose rebuild (the --rescue step, in the round's transaction)
 * fixes p: RP_RB_NONE when none does. */
enum rp_rebuild {
	RP_RB_NONE,
	RP_RB_CSUM,
	RP_RB_FST,
	RP_RB_UUID,
	RP_RB_QUOTA,
	RP_RB_RELOC,
	RP_RB_DEV
};
enum rp_rebuild rp_rebuild_of(const struct rp_prob *p);
/* The fix of every problem rp_rebuild_of names: that tree rebuilt once in the round (the
 * other problems it fixes return 1); quotas rescanned by the commit's settled hook. */
rp_fix rp_fix_rebuild;
void rp_rebuilds_free(struct rp_rebuilds *r);

/* rebuild.c: one --rescue rebuild as one transaction. rp_run opens the filesystem for
 * writing (with chunk_damage: also when some of its chunk tree does not read), runs look (may
 * be NULL) on it, refuses a log tree (log_why saying what the rebuild would do to it; NULL: it
 * would lose it), runs prepare (may be NULL) on the committed state, opens the write state
 * (BTK_WRITE_QGROUPS_KEPT | write_flags: no rebuild changes a subvolume tree) with settled as
 * the commit's settled hook (may be NULL), and runs fn in one transaction, which is committed
 * through verify (may be NULL) when fn returns 0. look, prepare or fn returning 1 (nothing to
 * do) or an error ends it unwritten; rp_run returns that, or the commit's result. */
struct rp_run {
	int (*look)(struct btk_fs *fs, void *ctx);
	int (*prepare)(struct btk_fs *fs, void *ctx);
	int (*fn)(struct btk_trans *t, void *ctx);
	btk_trans_settled_fn settled;
	btk_trans_verify_fn verify;
	void *ctx;
	unsigned write_flags;
	const char *log_why;
	bool chunk_damage;
};
int rp_run(const char *const *paths, int n, const struct btk_open_opts *oo, const struct rp_run *r);

/* rebuild.c: fn for every back reference of the extent tree (inline, or keyed after its
 * record), with the key and head of its record; a record that does not parse is skipped. fn
 * returns 0 to go on, else the walk stops and returns it (1: 0). 0 or a negative errno. */
struct btk_extent_head;
struct btk_extent_ref;
typedef int (*rp_extent_ref_fn)(void *ctx, const struct btk_key *rec,
				const struct btk_extent_head *h, const struct btk_extent_ref *r);
int rp_extent_refs_walk(struct btk_fs *fs, rp_extent_ref_fn fn, void *ctx);
/* rebuild.c: tree id becomes one empty leaf of t (btk_tree_reset; the chunk tree too); the
 * records of its old blocks, which the extent tree names, are dropped (*blocks counts them). A
 * tree that does not exist is created empty. */
int rp_tree_replace(struct btk_trans *t, uint64_t id, uint64_t *blocks);

/* lostleaf.c: whether p is a lost leaf of a subvolume tree (E0606 at level 0), which
 * rp_fix_lost_leaf drops from its parent and makes again from what names its items (the
 * rest of the tree, the extent tree's data references); what has no name left goes to
 * lost+found. All lost leaves of the tree in one go (the others return 1). */
bool rp_lost_leaf(const struct rp_prob *p);
rp_fix rp_fix_lost_leaf;

/* extents.c: extent records made to agree with the trees that use them. */
rp_fix rp_fix_ext_missing, rp_fix_ext_unused, rp_fix_ext_refs;
/* extents.c: E1308, a regular file extent whose disk_bytenr is unaligned (it lost its
 * address): pointed back at the extent whose keyed back reference names it with its length
 * (the extent fixes of the round do that from either extent's side), else made a hole (its
 * data lost, the inode's nbytes lowered). */
rp_fix rp_fix_fe_bytenr;
/* Whether the round points the file extents that use bytenr at the extents they lost: the
 * range at bytenr is nobody's data (not to be checksummed or recorded). */
bool rp_extents_moved_from(const struct rp_ctx *x, uint64_t bytenr);
int rp_extents_phase(enum btk_check_problem_id id);

/* extent_rebuild.c: whether p is of a kind a rebuilt extent tree answers for (extent records,
 * back references, block groups, free space, chunks without their block group). */
bool rp_extent_kind(const struct rp_prob *p);
/* repair.c: the fix of extent problems no fix of one record answers: nothing in the round (1);
 * once a round has nothing else to commit, the repair rebuilds the extent tree. */
rp_fix rp_fix_by_extent_rebuild;

/* names.c: a name's missing side rebuilt from its inode ref. */
rp_fix rp_fix_name_index, rp_fix_name_item;
void rp_extents_free(struct rp_extents *e);

/* oldroot.c: a repair from an older root tree when the current one is lost. Whether a
 * check's problems say the root tree in use is lost (no fix plans from it). */
bool rp_root_lost(const struct rp_probs *v);
/* Checks the older root trees on disk (newest first, a few) and chooses the newest with the
 * fewest errors when that is fewer than cur_errors and its root tree is not lost: 1 with
 * *chosen (oo with its tree_root), its check's problems in *probs and errors in *errors; 0
 * when none does better; negative errno. */
BTK_VEC(rp_u64s, uint64_t);
/* What the transactions of a repair from an older root keep: the generations go on from the
 * disk's (a block the commit writes never passes for one of the lost root tree's), and the
 * tree blocks of the lost generations stay where they are until the commit (a power cut
 * leaves the disk's state as it was). */
struct rp_rollback {
	uint64_t disk_gen;
	struct rp_u64s keep; /* tree blocks newer than the chosen root (and the lost root block) */
};
int rp_older_root(const char *const *paths, int n, const struct btk_open_opts *oo,
		  uint64_t cur_errors, struct btk_open_opts *chosen, struct rp_probs *probs,
		  uint64_t *errors, struct rp_rollback *rb);
/* Before a transaction of a repair from an older root (rb NULL: none): the transaction id. */
int rp_rollback_prepare(const struct rp_rollback *rb, struct btk_wfs *w);
/* Right after it started: the lost generations' blocks kept out of its allocations. */
int rp_rollback_keep(const struct rp_rollback *rb, struct btk_trans *t);
/* Adds to probs (the chosen root's check) the E0116 its first commit fixes, unless the check
 * reported it: the disk's root tree (disk_root, level, generation) is replaced. 1 when it was
 * added, 0 when the check had it, negative errno. */
int rp_root_problem(const struct btk_open_opts *chosen, const char *const *paths, int n,
		    uint64_t disk_root, int disk_level, uint64_t disk_gen, struct rp_probs *probs);
rp_fix rp_fix_rollback;

/* A read-only handle over lower that answers the ranges p[0..n-1] with their bytes (copied:
 * the caller keeps p) and everything else from lower, which stays the caller's. */
struct btk_dev;
struct btk_super;
struct rp_patch {
	uint64_t off;
	uint32_t len;
	const void *data;
};
int rp_dev_overlay(struct btk_dev *lower, const struct rp_patch *p, int n, struct btk_dev **out);
/* The same for superblock copies 0..ncopies-1 read as sb[0..]. */
int rp_super_overlay(struct btk_dev *lower, const struct btk_super *sb, int ncopies,
		     struct btk_dev **out);

/* Opens a read-only view of the filesystem as the running commit of t will leave it: the
 * devices of t's filesystem, their superblocks replaced by the ones the commit would write.
 * *out is closed with btk_fs_close (the devices underneath stay open). */
int rp_view_open(struct btk_trans *t, struct btk_fs **out);
/* The re-check of a rebuild before its superblocks (the body of its btk_trans_verify_fn): the
 * view of t's commit opened, checked into v (rp_check; *errors, when not NULL, says how many
 * errors once the check ran) and closed. -ECANCELED ("nothing written") when it does not open,
 * or at the first problem that is not a warning and that pass does not let through ("the
 * rebuilt WHAT does not check clean"); pass NULL lets none through, nor a state whose root
 * tree does not read. */
typedef bool (*rp_pass_fn)(void *ctx, const struct rp_prob *p);
int rp_view_verify(struct btk_trans *t, struct rp_probs *v, const char *what, rp_pass_fn pass,
		   void *ctx, uint64_t *errors);

#endif
