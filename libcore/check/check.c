/* check.c — the checker's driver: phases, reporting, summary. */
#include "check/check_priv.h"
#include "backref/backref.h"
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[BTK_CHK_KIND_COUNT] = {
    [BTK_CHK_SUPER] = "super",
    [BTK_CHK_CHUNK] = "chunk",
    [BTK_CHK_DEV_EXTENT] = "dev-extent",
    [BTK_CHK_DEVICE] = "device",
    [BTK_CHK_BLOCK_GROUP] = "block-group",
    [BTK_CHK_TREE_BLOCK] = "tree-block",
    [BTK_CHK_EXTENT] = "extent",
    [BTK_CHK_BACKREF] = "backref",
    [BTK_CHK_FREE_SPACE] = "free-space",
    [BTK_CHK_ROOT] = "root",
    [BTK_CHK_INODE] = "inode",
    [BTK_CHK_NAME] = "name",
    [BTK_CHK_FILE_EXTENT] = "file-extent",
    [BTK_CHK_CSUM] = "csum",
    [BTK_CHK_DATA_CSUM] = "data-csum",
};

const char *btk_check_kind_name(enum btk_check_kind kind)
{
	if ((unsigned)kind >= BTK_CHK_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

static const struct btk_check_problem_info problems[BTK_P_COUNT] = {
#define BTK_PROBLEM(id, code_, name_, kind_, sev, repair, msg)                                     \
	[BTK_P_##id] = {.code = code_,                                                             \
			.name = name_,                                                             \
			.kind = BTK_CHK_##kind_,                                                   \
			.severity = BTK_SEV_##sev,                                                 \
			.repairable = repair,                                                      \
			.message = msg},
#include "check/problems.def"
#undef BTK_PROBLEM
};

const struct btk_check_problem_info *btk_check_problem_info(enum btk_check_problem_id id)
{
	if ((unsigned)id >= BTK_P_COUNT)
		return NULL;
	return &problems[id];
}

const char *chk_fmt(const char *fmt, ...)
{
	/* A few rotating buffers: a report takes at most two (expected, found). */
	static __thread char bufs[4][256];
	static __thread int next;
	char *b = bufs[next++ & 3];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	return b;
}

void chk_report(struct chk *c, enum btk_check_problem_id id, uint64_t tree, uint64_t bytenr,
		const struct btk_key *key, const char *expected, const char *found, const char *fmt,
		...)
{
	const struct btk_check_problem_info *info = btk_check_problem_info(id);
	char what[512];
	va_list ap;

	if (info->severity == BTK_SEV_WARN) {
		c->sum->warnings++;
	} else {
		c->sum->errors++;
		c->sum->errors_by_kind[info->kind]++;
	}
	if (!c->opts->report)
		return;
	if (c->opts->max_reports && c->reported >= c->opts->max_reports)
		return;
	c->reported++;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	struct btk_check_problem p = {
	    .id = id,
	    .info = info,
	    .kind = info->kind,
	    .tree = tree,
	    .bytenr = bytenr,
	    .has_key = key != NULL,
	    .what = what,
	    .expected = expected ? expected : "",
	    .found = found ? found : "",
	};
	if (key)
		p.key = *key;
	c->opts->report(c->opts->ctx, &p);
}

void chk_progress(struct chk *c, const char *phase, double done)
{
	if (c->opts->progress)
		c->opts->progress(c->opts->ctx, phase, done);
}

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
	btk_vec_free(&c->v1hdr);
	btk_vec_free(&c->v1ino);
	btk_vec_free(&c->v1ext);
	chk_set_free(&c->visited);
	chk_dv_finish(c, false);
	chk_copies_finish(c, false);
	free(c->copy_buf);
	btk_backref_free(c->br);
}

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
	chk_progress(&c, "superblocks", 0);
	chk_supers(&c);
	chk_progress(&c, "trees", 0);
	if (!chk_root_tree(&c)) {
		chk_free(&c);
		btk_tree_read_mode(fs, mode);
		return 0;
	}
	ret = chk_walk_all(&c);
	chk_dv_finish(&c, ret == 0 && !c.oom);
	if (ret == 0 && !c.oom) {
		chk_progress(&c, "chunks", 0);
		chk_chunks_final(&c);
		chk_progress(&c, "extents", 0);
		chk_extents_final(&c);
		chk_progress(&c, "roots", 0);
		chk_roots_final(&c);
		chk_progress(&c, "quotas", 0);
		chk_qgroup_final(&c);
		chk_progress(&c, "csums", 0);
		chk_csum_final(&c);
		chk_progress(&c, "free space", 0);
		chk_fst_final(&c);
		chk_v1_final(&c);
		chk_super_totals(&c);
		chk_progress(&c, "done", 1);
	}
	if (c.oom && !ret)
		ret = btk_err(ENOMEM, "check: out of memory");
	chk_free(&c);
	btk_tree_read_mode(fs, mode);
	return ret;
}
