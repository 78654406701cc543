/* check.c — the checker's driver: state, phases in order, summary (reporting: check_report.c). */
#include "check/check_priv.h"
#include "backref/backref.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void chk_init(struct chk *c, struct btk_fs *fs, const struct btk_check_opts *opts,
		     struct btk_check_summary *sum)
{
	uint64_t incompat = btk_le64(fs->sb.incompat_flags);
	uint64_t compat_ro = btk_le64(fs->sb.compat_ro_flags);

	memset(c, 0, sizeof(*c));
	c->fs = fs;
	c->opts = opts;
	c->sum = sum;
	c->max_gen = fs->generation + (btk_le64(fs->sb.log_root) ? 1 : 0);
	c->no_holes = incompat & BTRFS_FEATURE_INCOMPAT_NO_HOLES;
	c->skinny = incompat & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA;
	c->has_fst = (compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE) &&
		     (compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID);
	c->cur_extent_idx = -1;
}

static void chk_free(struct chk *c)
{
	btk_vec_free(&c->found);
	btk_vec_free(&c->declared);
	btk_vec_free(&c->extents);
	btk_vec_free(&c->bgs);
	btk_vec_free(&c->dexts);
	btk_vec_free(&c->devitems);
	btk_vec_free(&c->devsbs);
	btk_vec_free(&c->csums);
	btk_vec_free(&c->csum_need);
	btk_vec_free(&c->csum_forbid);
	btk_vec_free(&c->csum_nodsum);
	btk_vec_free(&c->fst_free);
	btk_vec_free(&c->fst_info);
	btk_vec_free(&c->roots);
	btk_vec_free(&c->rootrefs);
	btk_vec_free(&c->root_orphans);
	btk_vec_free(&c->log_roots);
	btk_vec_free(&c->log_need);
	btk_vec_free(&c->log_csums);
	btk_u64set_free(&c->log_users);
	btk_vec_free(&c->uuids);
	btk_vec_free(&c->qrefs);
	btk_vec_free(&c->qinfos);
	btk_vec_free(&c->qrels);
	btk_vec_free(&c->skips);
	btk_vec_free(&c->owners);
	btk_vec_free(&c->fullwants);
	btk_vec_free(&c->v1hdr);
	btk_vec_free(&c->v1ino);
	btk_vec_free(&c->v1ext);
	chk_set_free(&c->visited);
	chk_dv_finish(c, false);
	chk_copies_finish(c, false);
	free(c->copy_buf);
	btk_backref_free(c->br);
}

/* The passes over what the walk gathered, in order; a named one starts a progress phase (the
 * v1 space cache and the superblock totals belong to the free space phase). */
static const struct {
	const char *phase;
	void (*run)(struct chk *c);
} final_passes[] = {
    {"chunks", chk_chunks_final}, {"extents", chk_extents_final}, {"roots", chk_roots_final},
    {"quotas", chk_qgroup_final}, {"csums", chk_csum_final},	  {"free space", chk_fst_final},
    {NULL, chk_v1_final},	  {NULL, chk_super_totals},
};

int btk_check_run(struct btk_fs *fs, const struct btk_check_opts *opts,
		  struct btk_check_summary *sum)
{
	static const struct btk_check_opts none;
	struct chk c;
	int ret;

	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	memset(sum, 0, sizeof(*sum));
	chk_init(&c, fs, opts ? opts : &none, sum);
	/* see leaves that are safe but not in the kernel's layout, and report that ourselves */
	enum btk_read_mode mode = btk_tree_read_mode(fs, BTK_READ_SAFETY_ONLY);
	chk_rec_begin(&c);
	chk_progress(&c, "superblocks", 0, 0);
	chk_supers(&c);
	chk_progress_start_trees(&c);
	if (!chk_root_tree(&c)) {
		chk_rec_finish(&c, false);
		chk_free(&c);
		btk_tree_read_mode(fs, mode);
		return 0;
	}
	ret = chk_walk_all(&c);
	chk_dv_finish(&c, ret == 0 && !c.oom);
	if (ret == 0 && !c.oom) {
		for (size_t i = 0; i < sizeof(final_passes) / sizeof(final_passes[0]); i++) {
			if (final_passes[i].phase)
				chk_progress(&c, final_passes[i].phase, 0, 0);
			final_passes[i].run(&c);
		}
		chk_progress(&c, "done", 0, 0);
	}
	if (c.oom && !ret)
		ret = btk_err(ENOMEM, "check: out of memory");
	chk_rec_finish(&c, ret == 0);
	chk_free(&c);
	btk_tree_read_mode(fs, mode);
	return ret;
}
