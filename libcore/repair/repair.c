/* repair.c (layer 10) — repair rounds: check, plan, apply in one transaction, re-check the
 * new state before its superblocks, commit or write nothing (repair.h).
 */
#include "repair/repair_int.h"
#include "repair/rescue.h"
#include "base/error.h"
#include "io/io.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void collect_one(void *ctx, const struct btk_check_problem *p)
{
	struct rp_collect *c = ctx;
	struct rp_prob *q = btk_vec_push(c->v);

	if (p->id == BTK_P_ROOT_TREE_UNREADABLE)
		c->unchecked = true;
	if (!q) {
		c->oom = true;
		return;
	}
	q->id = p->id;
	q->tree = p->tree;
	q->bytenr = p->bytenr;
	q->has_key = p->has_key;
	q->key = p->key;
	q->nvals = p->nvals;
	memcpy(q->vals, p->vals, sizeof(q->vals));
	q->warn = p->info->severity == BTK_SEV_WARN;
	snprintf(q->what, sizeof(q->what), "%s", p->what);
	snprintf(q->expected, sizeof(q->expected), "%s", p->expected);
	snprintf(q->found, sizeof(q->found), "%s", p->found);
}

int rp_check(struct btk_fs *fs, struct rp_probs *v, struct rp_collect *c)
{
	return rp_check_copies(fs, v, c, NULL, NULL, NULL);
}

int rp_check_copies(struct btk_fs *fs, struct rp_probs *v, struct rp_collect *c,
		    struct btk_check_copies *copies, struct btk_check_record *record,
		    struct btk_check_record *replay)
{
	struct btk_check_summary sum;
	struct btk_check_opts co = {
	    .report = collect_one, .ctx = c, .copies = copies, .record = record, .replay = replay};
	int ret;

	v->n = 0;
	*c = (struct rp_collect){.v = v};
	ret = btk_check_run(fs, &co, &sum);
	if (!ret && c->oom)
		ret = btk_err(ENOMEM, "out of memory");
	c->errors = sum.errors;
	return ret;
}

/* The same problem in two checks: its code and where it is. A problem about an item is
 * where its key is (the leaf holding it moves with copy-on-write); others by address. */
static bool same_prob(const struct rp_prob *a, const struct rp_prob *b)
{
	if (a->id != b->id || a->tree != b->tree || a->has_key != b->has_key)
		return false;
	if (a->has_key)
		return !btk_key_cmp(&a->key, &b->key);
	/* there is one superblock: its totals are the same problem whatever they count */
	if (btk_check_problem_info(a->id)->kind == BTK_CHK_SUPER && !a->bytenr && !b->bytenr)
		return true;
	return a->bytenr == b->bytenr && a->nvals == b->nvals &&
	       (!a->nvals || a->vals[0] == b->vals[0]);
}

static bool has_prob(const struct rp_probs *v, const struct rp_prob *p)
{
	for (size_t i = 0; i < v->n; i++)
		if (same_prob(&v->data[i], p))
			return true;
	return false;
}

static void describe(const struct rp_prob *p, char *buf, size_t cap)
{
	const struct btk_check_problem_info *info = btk_check_problem_info(p->id);
	int n = snprintf(buf, cap, "E%04u %s", info->code, info->name);

	if (n < 0 || (size_t)n >= cap)
		return;
	if (p->has_key)
		snprintf(buf + n, cap - (size_t)n, " at tree %llu key (%llu %u %llu): %s",
			 (unsigned long long)p->tree, (unsigned long long)p->key.objectid,
			 p->key.type, (unsigned long long)p->key.offset, p->what);
	else
		snprintf(buf + n, cap - (size_t)n, " (tree %llu bytenr %llu): %s",
			 (unsigned long long)p->tree, (unsigned long long)p->bytenr, p->what);
}

/* A count the checker derives from an inode's file extents (nbytes) is only as right as
 * those extents: while one of them is reported, the count is left alone. */
static bool extents_in_doubt(const struct rp_probs *all, const struct rp_prob *p)
{
	if (p->id != BTK_P_INODE_NBYTES)
		return false;
	for (size_t i = 0; i < all->n; i++) {
		const struct rp_prob *q = &all->data[i];
		if (btk_check_problem_info(q->id)->kind == BTK_CHK_FILE_EXTENT && q->has_key &&
		    q->tree == p->tree && q->key.objectid == p->key.objectid)
			return true;
	}
	return false;
}

static bool planned(const struct btk_repair_opts *ro, const struct rp_probs *all,
		    const struct rp_prob *p, int only);

/* Whether the plan changes extent records (fixes of phase 0): block group counts derived from
 * the records wait for the round after. */
static bool extent_records_planned(const struct btk_repair_opts *ro, const struct rp_probs *all,
				   int only)
{
	for (size_t i = 0; i < all->n; i++)
		if (rp_fix_phase(&all->data[i]) == 0 && planned(ro, all, &all->data[i], only))
			return true;
	return false;
}

/* Whether the plan adds or replaces names of the directory whose size p reports. */
static bool names_planned(const struct btk_repair_opts *ro, const struct rp_probs *all,
			  const struct rp_prob *p, int only)
{
	for (size_t i = 0; i < all->n; i++) {
		const struct rp_prob *q = &all->data[i];
		if ((q->id == BTK_P_NAME_MISSING_INDEX || q->id == BTK_P_NAME_MISSING_ITEM) &&
		    q->tree == p->tree && q->has_key && q->key.objectid == p->key.objectid &&
		    planned(ro, all, q, only))
			return true;
	}
	return false;
}

/* While a leaf of a subvolume tree is lost, the back references and names that its items
 * were are not there for the trees to count: the extent records and that tree's other fixes
 * wait for it to be rebuilt (else a record whose users lay in it would be removed). */
static bool held_by_lost_leaf(const struct rp_probs *all, const struct rp_prob *p)
{
	if (rp_lost_leaf(p))
		return false;
	for (size_t i = 0; i < all->n; i++)
		if (rp_lost_leaf(&all->data[i]) &&
		    (all->data[i].tree == p->tree || rp_fix_phase(p) == 0))
			return true;
	return false;
}

/* Whether the plan may use p's fix (all: the whole check, for fixes that depend on others). */
static bool planned(const struct btk_repair_opts *ro, const struct rp_probs *all,
		    const struct rp_prob *p, int only)
{
	const struct btk_repair_info *ri = btk_repair_info(p->id);

	if (!ri || !ri->fixable || !rp_fix_of(p->id) || held_by_lost_leaf(all, p))
		return false;
	if (ro->preen && !ri->safe)
		return false;
	/* a repair from an older root tree makes it the filesystem's with any commit: the
	 * fix that says so (and which generations are lost) goes with every attempt */
	if (only >= 0 && (int)p->id != only && p->id != BTK_P_CURRENT_ROOT_DAMAGED)
		return false;
	if ((p->id == BTK_P_BG_USED || p->id == BTK_P_SUPER_BYTES_USED) &&
	    extent_records_planned(ro, all, only))
		return false; /* the next round's check counts with the records set right */
	if (p->id == BTK_P_DIR_ISIZE && names_planned(ro, all, p, only))
		return false; /* the same: with the names set right */
	return !extents_in_doubt(all, p);
}

struct attempt {
	const struct btk_repair_opts *ro;
	const struct rp_probs *before;
	uint64_t errors_before;
	struct rp_probs after; /* the re-check's problems */
	uint64_t errors_after;
	bool after_unchecked;
	char why[512];
	bool unwritable;	      /* the write path refused the filesystem */
	const struct rp_rollback *rb; /* a repair from an older root tree (oldroot.c) */
	const char *fixed_codes;      /* for messages */
	/* the copies of tree blocks the checks so far compared: the re-check compares only
	 * those of the blocks the transaction wrote, and those found bad before */
	struct btk_check_copies *copies;
	/* the subvolume trees' walks of the check `before` came from (rec), which the re-check
	 * takes when the transaction left every subvolume tree as it was, and the re-check's own
	 * (next: rec of the next round when it commits); either may be NULL */
	struct btk_check_record *rec, *next;
	int rechecks, rechecks_recorded;
};

/* The same problem, to the last value and text. */
static bool same_exact(const struct rp_prob *a, const struct rp_prob *b)
{
	return a->id == b->id && a->tree == b->tree && a->bytenr == b->bytenr &&
	       a->has_key == b->has_key && (!a->has_key || !btk_key_cmp(&a->key, &b->key)) &&
	       a->nvals == b->nvals && !memcmp(a->vals, b->vals, sizeof(a->vals)) &&
	       a->warn == b->warn && !strcmp(a->what, b->what) &&
	       !strcmp(a->expected, b->expected) && !strcmp(a->found, b->found);
}

/* recheck_compare: the re-check that took trees from a record against a full one of the same
 * view; 0 when they find the same problems (as many of each), else an error saying which. */
static int recheck_compare(struct btk_fs *view, struct attempt *a, const struct rp_collect *inc)
{
	struct rp_probs full = {0};
	struct rp_collect fc;
	int ret = rp_check_copies(view, &full, &fc, a->copies, NULL, NULL);
	bool *taken = ret ? NULL : calloc(full.n + 1, sizeof(bool));
	char d[400] = "";

	if (!ret && !taken)
		ret = btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < a->after.n && !d[0]; i++) {
		size_t j = 0;
		while (j < full.n && (taken[j] || !same_exact(&a->after.data[i], &full.data[j])))
			j++;
		if (j < full.n)
			taken[j] = true;
		else
			describe(&a->after.data[i], d, sizeof(d));
	}
	if (!ret && d[0])
		ret =
		    btk_err(ENOTRECOVERABLE,
			    "the re-check from the record found what the full one does not: %s", d);
	for (size_t j = 0; !ret && j < full.n; j++)
		if (!taken[j]) {
			describe(&full.data[j], d, sizeof(d));
			ret = btk_err(
			    ENOTRECOVERABLE,
			    "the full re-check found what the one from the record does not: %s", d);
		}
	if (!ret && (fc.errors != inc->errors || fc.unchecked != inc->unchecked))
		ret =
		    btk_err(ENOTRECOVERABLE,
			    "the re-check from the record counts %llu error(s), the full one %llu",
			    (unsigned long long)inc->errors, (unsigned long long)fc.errors);
	free(taken);
	btk_vec_free(&full);
	return ret;
}

/* The re-check of the new state (btk_trans_commit_verify). */
static int verify(void *ctx, struct btk_trans *t)
{
	struct attempt *a = ctx;
	struct btk_fs *view;
	struct rp_collect c;
	int ret = rp_view_open(t, &view);

	if (ret) {
		snprintf(a->why, sizeof(a->why), "the repaired state does not open: %s",
			 btk_errmsg());
		return -ECANCELED;
	}
	if (a->copies)
		a->copies->below = btk_trans_id(t);
	ret = rp_check_copies(view, &a->after, &c, a->copies, a->next, a->rec);
	if (ret == -EAGAIN) { /* the record did not match after all: the whole check */
		btk_err_clear();
		ret = rp_check_copies(view, &a->after, &c, a->copies, a->next, NULL);
	}
	a->rechecks++;
	if (!ret && btk_check_record_used(a->rec)) {
		a->rechecks_recorded++;
		if (a->ro->recheck_compare)
			ret = recheck_compare(view, a, &c);
	}
	btk_fs_close(view);
	if (ret)
		return ret;
	a->errors_after = c.errors;
	a->after_unchecked = c.unchecked;
	for (size_t i = 0; i < a->after.n; i++) {
		if (has_prob(a->before, &a->after.data[i]))
			continue;
		char d[400];
		describe(&a->after.data[i], d, sizeof(d));
		snprintf(a->why, sizeof(a->why), "fixing %s made a new problem: %s", a->fixed_codes,
			 d);
		return -ECANCELED;
	}
	if (c.unchecked || a->errors_after >= a->errors_before) {
		snprintf(a->why, sizeof(a->why), "fixing %s left %llu error(s) of %llu: not fewer",
			 a->fixed_codes, (unsigned long long)a->errors_after,
			 (unsigned long long)a->errors_before);
		return -ECANCELED;
	}
	return 0;
}

BTK_VEC(rp_fixes, struct btk_repair_fix);

/* What the damage makes a commit refuse (a record that does not parse, no room): nothing
 * reached a superblock and the repair goes on without that change; io errors and interrupts
 * stop the repair. */
static bool refusal(int ret)
{
	return ret == -EUCLEAN || ret == -EINVAL || ret == -ENOENT || ret == -EEXIST ||
	       ret == -ENOSPC || ret == -E2BIG || ret == -ERANGE || ret == -EOVERFLOW;
}

/* How far a repair moves the generation on to get past a root stamped later than the
 * superblock (a bit flip makes a far larger number: left as it is). */
#define RP_GEN_JUMP (1ULL << 20)

/* One try: opens the filesystem for writing, applies the planned fixes of `before` (all, or
 * those of problem `only`), re-checks and commits. *committed says whether it did; a refusal
 * is not an error (a->why says it). */
static int attempt(const char *const *paths, int n, const struct btk_open_opts *oo,
		   struct attempt *a, int only, int round, bool *committed, struct rp_fixes *fixes)
{
	struct btk_open_opts o = *oo;
	struct btk_fs *fs = NULL;
	struct btk_wfs *w = NULL;
	struct btk_trans *t = NULL;
	char codes[256] = "";
	size_t nfix0 = fixes->n;
	struct rp_ctx x = {.all = a->before, .rec = a->rec};
	int ret;

	*committed = false;
	a->why[0] = 0;
	o.write = true;
	/* the devices the first open found, no others: a scan would open (and join to the undo
	 * file) every device that a damaged device count sends it looking through */
	o.no_scan = true;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	if ((ret = btk_write_open(fs, BTK_WRITE_DAMAGED_USAGE, &w))) {
		/* the write path cannot keep this filesystem consistent: nothing to try */
		snprintf(a->why, sizeof(a->why), "the filesystem cannot be written: %s",
			 btk_errmsg());
		a->unwritable = true;
		ret = 0;
		goto out;
	}
	/* a root newer than the filesystem (its block too) becomes older than this transaction,
	 * whose copy of it then replaces it; a jump beyond RP_GEN_JUMP is damage, not a fix */
	for (size_t i = 0; i < a->before->n; i++) {
		const struct rp_prob *p = &a->before->data[i];
		uint64_t gen = p->nvals > 2 ? p->vals[2] : 0;
		if (p->id == BTK_P_ROOT_GENERATION && planned(a->ro, a->before, p, only) &&
		    gen < btk_le64(fs->sb.generation) + RP_GEN_JUMP &&
		    (ret = btk_write_raise_transid(w, gen + 1)))
			goto out;
	}
	if ((ret = rp_rollback_prepare(a->rb, w)) || (ret = btk_trans_start(w, &t)))
		goto out;
	x.t = t;
	x.w = w;
	if ((ret = rp_rollback_keep(a->rb, t)))
		goto out;
	for (size_t j = 0; j < 3 * a->before->n; j++) {
		size_t i = j % a->before->n;
		const struct rp_prob *p = &a->before->data[i];
		if (rp_fix_phase(p) != (int)(j / a->before->n) ||
		    !planned(a->ro, a->before, p, only))
			continue;
		struct btk_repair_fix *f = btk_vec_push(fixes);
		if (!f) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		const struct btk_check_problem_info *info = btk_check_problem_info(p->id);
		f->info = info;
		f->tree = p->tree;
		f->bytenr = p->bytenr;
		f->has_key = p->has_key;
		f->key = p->key;
		f->round = round;
		char code[16];
		snprintf(code, sizeof(code), "E%04u", info->code);
		if (!strstr(codes, code) && strlen(codes) + 8 < sizeof(codes))
			snprintf(codes + strlen(codes), sizeof(codes) - strlen(codes), "%s%s",
				 *codes ? ", " : "", code);
		ret = rp_fix_of(p->id)(&x, p, f->before, f->after, sizeof(f->before));
		if (ret == 1) { /* another fix of the round does it */
			fixes->n--;
			ret = 0;
			continue;
		}
		if (ret) {
			char d[400];
			describe(p, d, sizeof(d));
			snprintf(a->why, sizeof(a->why), "the fix of %s failed: %s", d,
				 btk_errmsg());
			ret = 0;
			btk_trans_abort(t);
			t = NULL;
			goto out;
		}
	}
	if (ret) {
		btk_trans_abort(t);
		t = NULL;
		goto out;
	}
	if (fixes->n == nfix0) { /* nothing planned */
		btk_trans_abort(t);
		t = NULL;
		goto out;
	}
	a->fixed_codes = codes;
	ret = btk_trans_commit_verify(t, verify, a);
	t = NULL;
	if (ret == -ECANCELED) {
		ret = 0;
	} else if (!ret) {
		*committed = true;
	} else {
		if (!a->why[0])
			snprintf(a->why, sizeof(a->why), "fixing %s failed: %s", codes,
				 btk_errmsg());
		/* what the damage makes the commit refuse (a record that does not parse, no
		 * room) is a refused round like a re-check's: nothing reached a superblock and
		 * the other fixes are tried alone; io errors and interrupts stop the repair */
		if (refusal(ret))
			ret = 0;
	}
out:
	if (t)
		btk_trans_abort(t);
	rp_extents_free(x.ext);
	btk_write_close(w);
	rp_rebuilds_free(x.rebuilds);
	btk_fs_close(fs);
	if (!*committed)
		fixes->n = nfix0;
	return ret;
}

static void note(const struct btk_repair_opts *ro, const char *text)
{
	if (ro->on_note)
		ro->on_note(ro->ctx, text);
}

/* Whether the extent tree rebuild (extent_rebuild.c) answers for p: a problem of the extent
 * kinds, or a block of a tree it replaces (extent, free-space, block group tree), whose old
 * blocks it never reads. */
static bool rebuild_answers(const struct rp_prob *p)
{
	if (p->warn)
		return false;
	if (rp_extent_kind(p))
		return true;
	return btk_check_problem_info(p->id)->kind == BTK_CHK_TREE_BLOCK &&
	       (p->tree == BTRFS_EXTENT_TREE_OBJECTID ||
		p->tree == BTRFS_FREE_SPACE_TREE_OBJECTID ||
		p->tree == BTRFS_BLOCK_GROUP_TREE_OBJECTID);
}

int rp_fix_by_extent_rebuild(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			     size_t cap)
{
	(void)x, (void)p, (void)before, (void)after, (void)cap;
	return 1; /* rebuild_extent_tree after the round */
}

/* When a round could not fix what the checker says of the extent records (one that does not
 * parse, a lost block of the extent tree, fields fuzzed past what a fix of one record can
 * set right), the extent tree is rebuilt from the trees that use it, in its own verified
 * transaction (btk_extent_tree_rebuild). 1 when it committed (*after, *c: the new state's
 * check; each problem of cur it answered for and that is gone is a fix of this round), 0 when
 * it refused (a note says why, nothing written), or a negative errno. */
static int rebuild_extent_tree(const char *const *paths, int n, const struct btk_open_opts *oo,
			       const struct btk_repair_opts *ro, const struct rp_probs *cur,
			       int round, struct rp_fixes *fixes, struct rp_probs *after,
			       struct rp_collect *c)
{
	struct btk_extent_rebuild_result xr;
	struct btk_open_opts o = *oo;
	struct btk_fs *fs;
	char msg[600];
	size_t i;
	int ret;

	o.no_scan = true; /* the devices of the first open, as every attempt */
	ret = btk_extent_tree_rebuild(paths, n, &o, NULL, &xr);
	if ((ret && ret != -EBUSY && ret != -ECANCELED && !refusal(ret)) || (!ret && !xr.rebuilt)) {
		if (!ret)
			return 0; /* it agrees: nothing of it to rebuild */
		return ret;
	}
	if (ret) {
		snprintf(msg, sizeof(msg), "the extent tree was not rebuilt from the trees: %s",
			 btk_errmsg());
		note(ro, msg);
		btk_err_clear();
		return 0;
	}
	o.write = false;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	ret = rp_check(fs, after, c);
	btk_fs_close(fs);
	if (ret)
		return ret;
	for (i = 0; i < cur->n; i++) {
		const struct rp_prob *p = &cur->data[i];
		if (has_prob(after, p))
			continue;
		struct btk_repair_fix *f = btk_vec_push(fixes);
		if (!f)
			return btk_err(ENOMEM, "out of memory");
		*f = (struct btk_repair_fix){.info = btk_check_problem_info(p->id),
					     .tree = p->tree,
					     .bytenr = p->bytenr,
					     .has_key = p->has_key,
					     .key = p->key,
					     .round = round};
		snprintf(f->before, sizeof(f->before), "%s", p->found);
		snprintf(f->after, sizeof(f->after), "extent tree rebuilt from the trees");
	}
	return 1;
}

/* A problem of v as the public callback wants it. */
static void report_left(const struct btk_repair_opts *ro, const struct rp_prob *p)
{
	struct btk_check_problem q = {
	    .id = p->id,
	    .info = btk_check_problem_info(p->id),
	    .tree = p->tree,
	    .bytenr = p->bytenr,
	    .has_key = p->has_key,
	    .key = p->key,
	    .what = p->what,
	    .expected = p->expected,
	    .found = p->found,
	    .nvals = p->nvals,
	};
	q.kind = q.info->kind;
	memcpy(q.vals, p->vals, sizeof(q.vals));
	ro->on_left(ro->ctx, &q);
}

/* Whether the check reports what a heal (rescue.h) may rewrite: a tree block's problem (a bad
 * copy, a block no copy of which reads, which one flipped bit may explain) or a lost root
 * tree. */
static bool needs_heal(const struct rp_probs *v, const struct rp_collect *c)
{
	if (c->unchecked)
		return true;
	for (size_t i = 0; i < v->n; i++)
		if (btk_check_problem_info(v->data[i].id)->kind == BTK_CHK_TREE_BLOCK)
			return true;
	return false;
}

int btk_repair_run(const char *const *paths, int n, const struct btk_open_opts *oo,
		   const struct btk_repair_opts *ro, struct btk_repair_result *res)
{
	struct rp_probs cur = {0};
	struct rp_fixes fixes = {0};
	struct attempt a = {.ro = ro, .copies = NULL};
	int max = ro->max_rounds > 0 ? ro->max_rounds : 4, ret = 0;
	struct btk_fs *fs = NULL;
	const struct btk_open_opts *disk_oo = oo;
	struct btk_open_opts ro_open = *oo, older;
	struct rp_rollback rb = {0};
	struct rp_collect c;
	struct btk_check_copies copies = {0};
	struct btk_check_record *rec = btk_check_record_new(), *next = btk_check_record_new();
	char **members = NULL;
	size_t nmembers = 0, capmembers = 0;
	bool rebuilt_extents = false; /* the extent tree rebuild was tried */

	memset(res, 0, sizeof(*res));
	if (!rec || !next) {
		ret = -ENOMEM;
		goto out;
	}
	a.rec = rec;
	a.next = next;
	ro_open.write = false;
	/* the first check reads only (the devices are opened for writing by each attempt); when
	 * it reports what a heal rewrites, the heal runs and the check again */
	bool heal = ro->heal != NULL;
	uint64_t disk_root, disk_gen;
	int disk_level;
	for (;;) {
		if ((ret = btk_fs_open(paths, n, &ro_open, &fs))) {
			/* a chunk tree block that does not read: a heal opens around it and may set
			 * a flipped bit right, then the filesystem opens */
			char msg[512];
			snprintf(msg, sizeof(msg), "%s", btk_errmsg());
			if (heal && (heal = false, ro->heal(ro->heal_ctx) > 0)) {
				btk_err_clear();
				continue;
			}
			ret = btk_err(-ret, "%s", msg);
			goto out;
		}
		/* what this check compares the attempts' re-checks need not compare again
		 * (a heal that rewrites copies makes it check again: forgotten then) */
		btk_u64set_free(&copies.good);
		btk_u64set_free(&copies.bad);
		copies.below = 0;
		ret = rp_check_copies(fs, &cur, &c, &copies, a.rec, NULL);
		disk_root = btk_le64(fs->sb.root);
		disk_gen = btk_le64(fs->sb.generation);
		disk_level = fs->sb.root_level;
		if (!ret && heal && needs_heal(&cur, &c)) {
			btk_fs_close(fs);
			fs = NULL;
			heal = false;
			if (ro->heal(ro->heal_ctx) != 0)
				continue; /* rewritten, or not run (an error): checked again */
			if ((ret = btk_fs_open(paths, n, &ro_open, &fs)))
				goto out;
		}
		break;
	}
	/* the members this open found (named or by scan) are the ones every attempt opens */
	for (int i = 0; !ret && i < fs->ndevs; i++) {
		const char *pth = fs->devs[i].dev ? fs->devs[i].dev->path : NULL;
		char **slot = pth ? btk_array_push(members, nmembers, capmembers) : NULL;
		if (pth && (!slot || !(*slot = strdup(pth))))
			ret = btk_err(ENOMEM, "out of memory");
	}
	btk_fs_close(fs);
	if (ret)
		goto out;
	if (nmembers) {
		paths = (const char *const *)members;
		n = (int)nmembers;
	}
	res->errors_before = res->errors_after = c.errors;
	res->unchecked = c.unchecked;
	/* a lost root tree, which no fix plans from: an older one that checks better */
	if (!ro->preen && !oo->backup && !oo->tree_root && !oo->generation && rp_root_lost(&cur)) {
		struct rp_probs cand = {0};
		uint64_t e = 0;
		ret = rp_older_root(paths, n, oo, c.unchecked ? UINT64_MAX : c.errors, &older,
				    &cand, &e, &rb);
		if (ret == 1)
			ret = rp_root_problem(&older, paths, n, disk_root, disk_level, disk_gen,
					      &cand);
		if (ret >= 0 && cand.n) {
			struct rp_probs tmp = cur;
			cur = cand;
			cand = tmp;
			oo = &older;
			a.rb = &rb;
			a.rec = NULL; /* the record is of the current root tree's trees */
			res->errors_after = e + (uint64_t)ret;
			res->unchecked = false;
		}
		btk_vec_free(&cand);
		if (ret < 0)
			goto out;
		ret = 0;
	}
	a.copies = &copies;
	for (int round = 1; round <= max && res->errors_after && !res->unchecked; round++) {
		bool committed = false, any = false, rebuilt_now = false;
		size_t nfix0 = fixes.n;
		res->rounds = round;
		a.before = &cur;
		a.errors_before = res->errors_after;
		ret = attempt(paths, n, oo, &a, -1, round, &committed, &fixes);
		if (ret)
			break;
		if (!committed && a.why[0]) {
			/* one bad fix must not hold back the others: each code alone */
			res->refused = true;
			snprintf(res->failed, sizeof(res->failed), "%s", a.why);
			note(ro, a.why);
			bool tried[BTK_P_COUNT] = {0};
			for (size_t i = 0; i < cur.n && !committed && !a.unwritable; i++) {
				const struct rp_prob *p = &cur.data[i];
				if (tried[p->id] || !planned(ro, &cur, p, -1))
					continue;
				tried[p->id] = true;
				ret = attempt(paths, n, oo, &a, p->id, round, &committed, &fixes);
				if (ret)
					break;
				if (!committed && a.why[0]) {
					snprintf(res->failed, sizeof(res->failed), "%s", a.why);
					note(ro, a.why);
				}
			}
			if (ret)
				break;
		}
		if (!committed && !ro->preen && !a.rb && !rebuilt_extents) {
			rebuilt_extents = true;
			a.rec = NULL; /* a rebuilt extent tree's check records nothing */
			for (size_t i = 0; i < cur.n; i++)
				if (rebuild_answers(&cur.data[i])) {
					ret = rebuild_extent_tree(paths, n, oo, ro, &cur, round,
								  &fixes, &a.after, &c);
					break;
				}
			if (ret < 0)
				break;
			if (ret == 1) {
				ret = 0;
				committed = rebuilt_now = true;
				a.errors_after = c.errors;
				a.after_unchecked = c.unchecked;
			}
		}
		if (!committed)
			break;
		any = true;
		res->commits++;
		for (size_t i = nfix0; i < fixes.n; i++)
			if (ro->on_fix)
				ro->on_fix(ro->ctx, &fixes.data[i]);
		res->fixes += fixes.n - nfix0;
		/* the commit made the older root tree the filesystem's: the next rounds open
		 * what is on disk now (from the older root again, a round would allocate over
		 * the blocks this commit wrote) */
		oo = disk_oo;
		a.rb = NULL;
		/* the re-check of the committed state is the next round's plan (and its record
		 * what the next re-check may take) */
		if (!rebuilt_now) {
			a.rec = a.next;
			a.next = a.rec == rec ? next : rec;
		}
		struct rp_probs tmp = cur;
		cur = a.after;
		a.after = tmp;
		res->errors_after = a.errors_after;
		res->unchecked = a.after_unchecked;
		(void)any;
	}
	if (!ret && ro->on_left)
		for (size_t i = 0; i < cur.n; i++)
			report_left(ro, &cur.data[i]);
out:
	res->rechecks = a.rechecks;
	res->rechecks_recorded = a.rechecks_recorded;
	for (size_t i = 0; i < nmembers; i++)
		free(members[i]);
	free(members);
	btk_vec_free(&cur);
	btk_vec_free(&a.after);
	btk_vec_free(&fixes);
	btk_vec_free(&rb.keep);
	btk_u64set_free(&copies.good);
	btk_u64set_free(&copies.bad);
	btk_check_record_free(rec);
	btk_check_record_free(next);
	return ret;
}
