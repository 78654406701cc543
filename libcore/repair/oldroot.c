/* oldroot.c (layer 10) — a repair that starts from an older root tree when the current one is
 * lost: its block does not read, its header is garbage, or the root items it holds name no
 * tree that reads. No fix can plan from such a root tree (every tree it names is missing or
 * wrong), but btrfs never overwrites a tree block in place: the root trees of earlier
 * transactions often still lie in the metadata chunks whole (tree/scan.h finds them, newest
 * first). Each is checked read-only; the newest with the fewest errors, when that is fewer
 * than the current root's, becomes the root the repair rounds plan from, and the first
 * commit makes it the filesystem's (what later transactions changed was reachable only
 * through the lost root tree: the fix says which generations). As every repair, the
 * commit is re-checked before its superblocks, and a power cut before them leaves the
 * filesystem as it was.
 */
#include "repair/repair_int.h"
#include "base/error.h"
#include "tree/scan.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The candidates checked at most (each is a whole check). */
#define RP_ROOT_TRIES 8

static uint64_t val(const struct rp_prob *p, unsigned i)
{
	return i < p->nvals ? p->vals[i] : 0;
}

/* Problems that say the root tree in use is itself lost, which no fix of a round repairs
 * (E0116 is the disk's root tree's: it says that the one in use is another). */
static bool root_lost(const struct rp_prob *p)
{
	if (p->id == BTK_P_ROOT_TREE_UNREADABLE)
		return true;
	if (p->warn || p->tree != BTRFS_ROOT_TREE_OBJECTID)
		return false;
	switch (p->id) {
	case BTK_P_ROOT_LEVEL:	   /* the tree it names cannot be read at that level */
	case BTK_P_ROOT_ITEM_SIZE: /* no root item at all */
	case BTK_P_TB_FLAGS:	   /* the root tree block's header is garbage */
	case BTK_P_TB_CHUNK_UUID:
		return true;
	case BTK_P_ROOT_GENERATION: /* 0: the item was wiped, not stamped late */
		return val(p, 2) == 0;
	default:
		return false;
	}
}

bool rp_root_lost(const struct rp_probs *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (root_lost(&v->data[i]) || v->data[i].id == BTK_P_CURRENT_ROOT_DAMAGED)
			return true;
	return false;
}

/* The same for a candidate's check, whose E0116 is about the disk's root tree. */
static bool cand_lost(const struct rp_probs *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (root_lost(&v->data[i]))
			return true;
	return false;
}

static bool is_root_tree(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

/* The errors of a check that are about the candidate (not E0116, the current root's). */
static uint64_t own_errors(const struct rp_probs *v, uint64_t errors)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->data[i].id == BTK_P_CURRENT_ROOT_DAMAGED && errors)
			errors--;
	return errors;
}

int rp_older_root(const char *const *paths, int n, const struct btk_open_opts *oo,
		  uint64_t cur_errors, struct btk_open_opts *chosen, struct rp_probs *probs,
		  uint64_t *errors, struct rp_rollback *rb)
{
	uint64_t chosen_gen = 0;
	struct btk_found_blocks blocks = {0};
	struct btk_found_roots roots = {0};
	struct rp_probs v = {0};
	struct btk_fs *fs = NULL;
	struct btk_open_opts o = *oo;
	uint64_t best = cur_errors, sb_root, sb_gen;
	bool found = false;
	int ret, tries = 0;

	o.write = false;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	sb_root = btk_le64(fs->sb.root);
	sb_gen = btk_le64(fs->sb.generation);
	/* every tree block: the lost generations' are kept out of the repair's allocations */
	ret = btk_scan_blocks(fs, &blocks, NULL, NULL);
	if (!ret)
		ret = btk_scan_roots(&blocks, is_root_tree, &roots);
	if (!ret)
		ret = btk_scan_roots_commits(fs, &roots);
	btk_fs_close(fs);
	for (size_t i = 0; !ret && i < roots.n && tries < RP_ROOT_TRIES; i++) {
		const struct btk_found_root *r = &roots.data[i];
		struct rp_collect c;
		if (r->generation >= sb_gen && r->bytenr == sb_root)
			continue; /* the current root itself */
		if (r->generation > sb_gen)
			continue; /* stamped later than the filesystem: not a root it had */
		tries++;
		o = *oo;
		o.write = false;
		o.tree_root = r->bytenr;
		if (btk_fs_open(paths, n, &o, &fs)) {
			btk_err_clear();
			continue;
		}
		ret = rp_check(fs, &v, &c);
		btk_fs_close(fs);
		if (ret == -ENOMEM)
			break;
		if (ret || c.unchecked) {
			ret = 0;
			btk_err_clear();
			continue;
		}
		uint64_t e = own_errors(&v, c.errors);
		if (e >= best || cand_lost(&v))
			continue;
		best = e;
		found = true;
		chosen_gen = r->generation;
		*chosen = o;
		*errors = c.errors;
		struct rp_probs tmp = *probs;
		*probs = v;
		v = tmp;
		if (!e)
			break; /* the newest clean one */
	}
	rb->disk_gen = sb_gen;
	rb->keep.n = 0;
	for (size_t i = 0; !ret && found && i <= blocks.n; i++) {
		uint64_t *slot;
		if (i < blocks.n && blocks.data[i].generation <= chosen_gen)
			continue;
		if (!(slot = btk_vec_push(&rb->keep)))
			ret = btk_err(ENOMEM, "out of memory");
		else
			*slot = i < blocks.n ? blocks.data[i].bytenr : sb_root;
	}
	btk_vec_free(&v);
	btk_vec_free(&roots);
	btk_vec_free(&blocks);
	if (ret)
		return ret;
	return found ? 1 : 0;
}

int rp_rollback_prepare(const struct rp_rollback *rb, struct btk_wfs *w)
{
	return rb ? btk_write_raise_transid(w, rb->disk_gen + 1) : 0;
}

int rp_rollback_keep(const struct rp_rollback *rb, struct btk_trans *t)
{
	struct btk_fs *fs = btk_trans_fs(t);

	for (size_t i = 0; rb && i < rb->keep.n; i++) {
		int ret = btk_trans_keep_out(t, rb->keep.data[i], fs->nodesize);
		/* in use by the chosen root's trees, or outside a block group: nothing to keep */
		if (ret == -EEXIST || ret == -ENOENT)
			btk_err_clear();
		else if (ret)
			return ret;
	}
	return 0;
}

/* The problem a chosen older root is fixed under: E0116, the current root tree lost. */
int rp_root_problem(const struct btk_open_opts *chosen, const char *const *paths, int n,
		    uint64_t disk_root, int disk_level, uint64_t disk_gen, struct rp_probs *probs)
{
	struct btk_open_opts o = *chosen;
	struct btk_fs *fs = NULL;
	struct rp_prob *q;
	int ret;

	for (size_t i = 0; i < probs->n; i++)
		if (probs->data[i].id == BTK_P_CURRENT_ROOT_DAMAGED)
			return 0; /* the check said it */
	o.write = false;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	uint64_t gen = btk_le64(fs->sb.generation), root = btk_le64(fs->sb.root);
	btk_fs_close(fs);
	if (!(q = btk_vec_push(probs)))
		return btk_err(ENOMEM, "out of memory");
	memset(q, 0, sizeof(*q));
	q->id = BTK_P_CURRENT_ROOT_DAMAGED;
	q->tree = BTRFS_ROOT_TREE_OBJECTID;
	q->bytenr = disk_root;
	q->nvals = 5;
	q->vals[0] = disk_root;
	q->vals[1] = (uint64_t)disk_level;
	q->vals[2] = disk_gen;
	q->vals[3] = gen;
	q->vals[4] = root;
	snprintf(q->what, sizeof(q->what),
		 "the current root tree block %llu (generation %llu) is damaged: the repair starts "
		 "from the root tree of generation %llu (block %llu)",
		 (unsigned long long)disk_root, (unsigned long long)disk_gen,
		 (unsigned long long)gen, (unsigned long long)root);
	snprintf(q->expected, sizeof(q->expected), "a readable root tree");
	snprintf(q->found, sizeof(q->found), "a damaged root tree");
	return 1;
}

/* E0116: the filesystem was opened from an older root tree (vals[3], vals[4]) than the
 * damaged one on disk (vals[0], vals[2]); a commit makes it the filesystem's: its root block
 * is copied, so that the commit writes a root tree and superblocks that name it. */
int rp_fix_rollback(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		    size_t cap)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	uint64_t root = btk_le64(fs->sb.root), gen = btk_le64(fs->sb.generation);
	struct btk_key k = {0, 0, 0};
	struct btk_path path;
	int ret;

	if (p->nvals < 5 || root != val(p, 4) || (root == val(p, 0) && gen == val(p, 2)))
		return btk_err(EINVAL, "the repair did not open the filesystem from an older root");
	ret = btk_tree_search_write(x->t, BTRFS_ROOT_TREE_OBJECTID, &k, 0, &path);
	btk_wpath_release(&path);
	if (ret < 0)
		return ret;
	snprintf(before, cap, "root tree %llu of generation %llu (damaged)",
		 (unsigned long long)val(p, 0), (unsigned long long)val(p, 2));
	if (val(p, 2) > gen + 1)
		snprintf(after, cap,
			 "root tree of generation %llu (%llu); generations %llu-%llu lost",
			 (unsigned long long)gen, (unsigned long long)root,
			 (unsigned long long)(gen + 1), (unsigned long long)val(p, 2));
	else
		snprintf(after, cap, "root tree of generation %llu (%llu); generation %llu lost",
			 (unsigned long long)gen, (unsigned long long)root,
			 (unsigned long long)val(p, 2));
	return 0;
}
