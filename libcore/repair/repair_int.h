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

/* What a fix works in: the transaction, and the whole check the round plans from (a fix may
 * look at the other problems: which extent a back reference without a user belongs to, a
 * file extent that lost its bytenr). */
struct rp_extents;
struct rp_ctx {
	struct btk_trans *t;
	const struct rp_probs *all;
	struct rp_extents *ext; /* extents.c: the round's users of extents (NULL until needed) */
};

/* A fix: changes x->t so that p is gone; fills before/after (short texts for --json). 0; 1
 * when there is nothing for it to do (another fix of the round does it: it is not counted);
 * or a negative errno (the round is then refused: nothing is committed). */
typedef int (*rp_fix_fn)(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			 size_t cap);
rp_fix_fn rp_fix_of(enum btk_check_problem_id id);
/* Fixes of phase 0 run before any other fix of a round: they change extent records to match
 * the committed trees, which the write path's own reference changes then build on. */
int rp_fix_phase(enum btk_check_problem_id id);

/* extents.c: extent records made to agree with the trees that use them. */
int rp_fix_ext_missing(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		       size_t cap);
int rp_fix_ext_unused(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		      size_t cap);
int rp_fix_ext_refs(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		    size_t cap);
int rp_extents_phase(enum btk_check_problem_id id);

/* names.c: a name's missing side rebuilt from its inode ref. */
int rp_fix_name_index(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		      size_t cap);
int rp_fix_name_item(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		     size_t cap);
void rp_extents_free(struct rp_extents *e);

/* Opens a read-only view of the filesystem as the running commit of t will leave it: the
 * devices of t's filesystem, their superblocks replaced by the ones the commit would write.
 * *out is closed with btk_fs_close (the devices underneath stay open). */
int rp_view_open(struct btk_trans *t, struct btk_fs **out);

#endif
