/* check.c — the checker's driver: phases, reporting, summary. */
#include "check/check_priv.h"
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
	chk_vec_init(&c->found, sizeof(struct chk_ref));
	chk_vec_init(&c->declared, sizeof(struct chk_ref));
	chk_vec_init(&c->extents, sizeof(struct chk_extent));
	chk_vec_init(&c->bgs, sizeof(struct chk_bg));
	chk_vec_init(&c->dexts, sizeof(struct chk_dext));
	chk_vec_init(&c->devitems, sizeof(struct chk_devitem));
	chk_vec_init(&c->csums, sizeof(struct chk_range));
	chk_vec_init(&c->csum_need, sizeof(struct chk_range));
	chk_vec_init(&c->csum_forbid, sizeof(struct chk_range));
	chk_vec_init(&c->csum_nodsum, sizeof(struct chk_range));
	chk_vec_init(&c->v1hdr, 5 * sizeof(uint64_t));
	chk_vec_init(&c->v1ino, 3 * sizeof(uint64_t));
	chk_vec_init(&c->v1ext, 6 * sizeof(uint64_t));
	chk_vec_init(&c->fst_free, sizeof(struct chk_range));
	chk_vec_init(&c->fst_info, sizeof(struct chk_range) + 2 * sizeof(uint64_t));
	chk_vec_init(&c->roots, sizeof(struct chk_rootitem));
	chk_vec_init(&c->rootrefs, sizeof(struct chk_rootref));
	chk_vec_init(&c->root_orphans, sizeof(uint64_t));
	chk_vec_init(&c->log_roots, sizeof(struct btk_root));
	chk_vec_init(&c->uuids, sizeof(struct chk_uuid));
	chk_vec_init(&c->skips, sizeof(struct chk_skip));
	chk_vec_init(&c->qrefs, sizeof(struct chk_range));
	chk_vec_init(&c->qinfos, sizeof(struct chk_qinfo));
	chk_vec_init(&c->qrels, sizeof(struct chk_range));
	chk_vec_init(&c->log_need, sizeof(struct chk_range));
	chk_vec_init(&c->log_csums, sizeof(struct chk_range));
	c->cur_extent_idx = -1;
}

static void chk_free(struct chk *c)
{
	struct chk_vec *vs[] = {&c->found,	  &c->declared,	   &c->extents,	    &c->bgs,
				&c->dexts,	  &c->devitems,	   &c->csums,	    &c->csum_need,
				&c->fst_free,	  &c->fst_info,	   &c->roots,	    &c->rootrefs,
				&c->root_orphans, &c->log_roots,   &c->log_need,    &c->log_csums,
				&c->uuids,	  &c->qrefs,	   &c->qinfos,	    &c->qrels,
				&c->skips,	  &c->csum_forbid, &c->csum_nodsum, &c->v1hdr,
				&c->v1ino,	  &c->v1ext};

	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
		chk_vec_free(vs[i]);
	chk_set_free(&c->visited);
}

int btk_check_run(struct btk_fs *fs, const struct btk_check_opts *opts,
		  struct btk_check_summary *sum)
{
	static const struct btk_check_opts none;
	struct chk c;
	int ret;

	memset(sum, 0, sizeof(*sum));
	chk_init(&c, fs, opts ? opts : &none, sum);
	chk_progress(&c, "superblocks", 0);
	chk_supers(&c);
	chk_progress(&c, "trees", 0);
	ret = chk_walk_all(&c);
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
	return ret;
}
