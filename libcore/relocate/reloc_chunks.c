/* reloc_chunks.c — emptying chunks logically: every extent in them is moved elsewhere.
 *
 * Each pass reads the committed extent tree for the extents still in the chunks, moves them in
 * one transaction (tree blocks from the highest level down, then data) and commits; the chunks
 * are read-only for the write path all along, so nothing new lands in them, and new chunks keep
 * out of the held device range (the space a shrink gives up). A pass that leaves something
 * behind (a block reached again through a tree copied meanwhile) is followed by another; the
 * chunks are empty when a pass finds nothing. Every pass is one copy-on-write transaction:
 * an interruption leaves the last committed state.
 */
#include "base/error.h"
#include "base/vec.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>
#include <stdlib.h>

#define MAX_PASSES  8
#define BUF_BYTES   (4ULL << 20)
#define DIRTY_LIMIT (64ULL << 20)

struct item {
	uint64_t bytenr;
	int level; /* -1: data */
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->level != y->level)
		return x->level > y->level ? -1 : 1;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

BTK_VEC(items, struct item);

/* What a pass collects: the extents reaching past a line (of the chunk being walked). */
struct collect {
	struct items *it;
	uint64_t line;
};

/* rl_extents_each callback: appends the extent at bytenr to the items when it reaches past
 * the line */
static int add_item(void *ctx, uint64_t bytenr, uint64_t len)
{
	struct collect *c = ctx;
	struct item *e;

	if (bytenr + len <= c->line)
		return 0;
	if (!(e = btk_vec_push(c->it)))
		return btk_err(ENOMEM, "out of memory");
	e->bytenr = bytenr;
	return 0;
}

static uint64_t keep_of(const struct rl_empty *e, int i)
{
	return e->keep ? e->keep[i] : 0;
}

static int move_one(struct btk_trans *t, struct btk_backref *br, uint64_t bytenr, uint8_t *buf,
		    struct rl_stats *st)
{
	struct btk_extent ext;
	int ret = btk_extent_lookup(btk_trans_fs(t), bytenr, &ext), users = 0;

	if (ret)
		return ret;
	if (ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		ret = rl_move_tree_block(t, br, bytenr, ext.level, &users);
		st->tree_blocks++;
		st->tree_copies += (uint64_t)users;
	} else {
		ret = rl_move_data_extent(t, br, &ext, buf, &users);
		st->data_extents++;
		st->data_users += (uint64_t)users;
	}
	st->bytes += ext.len;
	return ret;
}

/* Levels first: upper tree blocks move before the blocks below them. */
static int set_levels(struct btk_fs *fs, struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		struct btk_extent ext;
		int ret = btk_extent_lookup(fs, it->data[i].bytenr, &ext);
		if (ret)
			return ret;
		it->data[i].level = ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK ? ext.level : -1;
	}
	btk_vec_sort(it, cmp_item);
	return 0;
}

/* The new chunks of a repacking, once (the first pass that moves something): placed below
 * the hold, then the whole device is held, so that nothing else is made. */
static int make_news(struct btk_trans *t, const struct rl_empty *e, bool create)
{
	struct btk_fs_dev *d = btk_fs_dev_find(btk_trans_fs(t), e->devid);
	int ret = 0;

	if (!e->nnew)
		return 0;
	for (int i = 0; i < e->nnew && !ret; i++)
		if (create && !e->made[i]) {
			const struct btk_chunk *c;
			ret = btk_chunk_alloc_size(t, e->news[i].type, e->news[i].length,
						   &e->made[i]);
			c = ret ? NULL : btk_chunk_find(btk_trans_fs(t), e->made[i]);
			for (int j = 0; c && j < c->num_stripes && !ret; j++)
				if (j >= e->news[i].nstripes ||
				    c->stripes[j].devid != e->news[i].devid[j] ||
				    c->stripes[j].offset != e->news[i].phys[j])
					ret = btk_err(EUCLEAN,
						      "new chunk %llu: stripe %d at %llu, planned "
						      "%llu",
						      (unsigned long long)e->made[i], j,
						      (unsigned long long)c->stripes[j].offset,
						      (unsigned long long)(j < e->news[i].nstripes
									       ? e->news[i].phys[j]
									       : 0));
		}
	return ret ? ret : btk_dev_hold(t, e->devid, 0, d ? d->total_bytes : UINT64_MAX / 2);
}

static int prepare(struct btk_trans *t, const struct rl_empty *e, bool create)
{
	int ret = 0;

	if (e->hold_len)
		ret = btk_dev_hold(t, e->devid, e->hold_start, e->hold_len);
	for (int i = 0; i < e->n && !ret; i++) {
		const struct btk_chunk *c = btk_chunk_find(btk_trans_fs(t), e->chunks[i]);
		uint64_t k = keep_of(e, i);
		if (k && c && c->logical == e->chunks[i] && k < c->length) {
			ret = btk_bg_set_readonly(t, e->chunks[i], false);
			if (!ret)
				ret = btk_bg_set_limit(t, e->chunks[i], c->logical + k);
		} else if (!k) {
			ret = btk_bg_set_readonly(t, e->chunks[i], true);
		}
	}
	for (int i = 0; i < e->nfrozen && !ret; i++)
		ret = btk_bg_set_readonly(t, e->frozen[i], true);
	if (!ret)
		ret = make_news(t, e, create);
	return ret;
}

/* One pass: moves what the committed extent tree still has in the chunks; *found says how
 * many extents that was. */
static int pass(struct btk_fs *fs, const struct rl_empty *e, uint8_t *buf, struct rl_stats *st,
		int *found)
{
	struct items it = {0};
	int ret = 0;
	struct btk_backref *br = NULL;
	struct btk_trans *t = NULL;

	/* the extents of the committed extent tree inside the chunks */
	for (int i = 0; i < e->n && !ret; i++) {
		const struct btk_chunk *c = btk_chunk_find(fs, e->chunks[i]);
		struct collect col = {&it, c ? c->logical + keep_of(e, i) : 0};
		ret = c ? rl_extents_each(fs, c->logical, c->logical + c->length, add_item, &col)
			: btk_err(ENOENT, "no chunk at %llu", (unsigned long long)e->chunks[i]);
	}
	if (!ret)
		ret = set_levels(fs, &it);
	*found = (int)it.n;
	if (ret || !it.n) {
		btk_vec_free(&it);
		return ret;
	}
	if (!(ret = btk_backref_new(fs, &br)) && !(ret = btk_trans_start(e->w, &t)))
		ret = prepare(t, e, true);
	for (size_t i = 0; i < it.n && !ret; i++) {
		ret = move_one(t, br, it.data[i].bytenr, buf, st);
		if (!ret)
			ret = btk_trans_writeback(t, DIRTY_LIMIT);
		if (!ret && e->progress)
			e->progress(e->ctx, st->bytes, e->total);
	}
	ret = btk_trans_end(t, ret);
	btk_backref_free(br);
	btk_vec_free(&it);
	return ret;
}

int rl_empty_chunks(struct btk_fs *fs, const struct rl_empty *e, struct rl_stats *st)
{
	uint8_t *buf = malloc(BUF_BYTES);
	int ret = 0, found = 1;

	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	for (int p = 0; p < MAX_PASSES && found && !ret; p++) {
		ret = pass(fs, e, buf, st, &found);
		st->passes++;
	}
	free(buf);
	if (!ret && found)
		ret = btk_err(EAGAIN, "chunks still hold %d extents after %d passes", found,
			      MAX_PASSES);
	return ret;
}

int rl_remove_chunks(struct btk_trans *t, const struct rl_empty *e)
{
	int ret = prepare(t, e, false);

	for (int i = 0; i < e->n && !ret; i++)
		if (!keep_of(e, i))
			ret = btk_chunk_remove(t, e->chunks[i]);
	return ret;
}

int rl_cut_chunks(struct btk_fs *fs, const struct rl_empty *e)
{
	int ret = 0;

	for (int i = 0; i < e->n && !ret; i++) {
		const struct btk_chunk *c = btk_chunk_find(fs, e->chunks[i]);
		uint64_t k = keep_of(e, i);
		struct btk_trans *t;
		if (!k || !c || c->logical != e->chunks[i] || k >= c->length)
			continue;
		if ((ret = btk_trans_start(e->w, &t)))
			break;
		ret = prepare(t, e, false);
		if (!ret)
			ret = btk_chunk_shrink(t, e->chunks[i], k);
		ret = btk_trans_end(t, ret);
	}
	return ret;
}

int rl_move_tree_blocks(struct btk_trans *t,
			void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx,
			struct rl_stats *st)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct items it = {0};
	struct btk_backref *br = NULL;
	uint64_t total;
	size_t n = 0;
	int ret = 0;

	/* the extents of the committed extent tree in every chunk that can hold tree blocks */
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		struct collect col = {&it, 0};
		if (c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM))
			ret =
			    rl_extents_each(fs, c->logical, c->logical + c->length, add_item, &col);
	}
	if (!ret)
		ret = set_levels(fs, &it);
	/* tree blocks only (data of mixed block groups stays where it is), highest level first */
	for (size_t i = 0; i < it.n && !ret; i++)
		if (it.data[i].level >= 0)
			it.data[n++] = it.data[i];
	total = (uint64_t)n * fs->nodesize;
	if (!ret)
		ret = btk_backref_new(fs, &br);
	for (size_t i = 0; i < n && !ret; i++) {
		int users = 0;
		ret = rl_move_tree_block(t, br, it.data[i].bytenr, it.data[i].level, &users);
		st->tree_blocks++;
		st->tree_copies += (uint64_t)users;
		st->bytes += fs->nodesize;
		if (!ret)
			ret = btk_trans_writeback(t, DIRTY_LIMIT);
		if (!ret && progress)
			progress(ctx, st->bytes, total);
	}
	btk_backref_free(br);
	btk_vec_free(&it);
	return ret;
}
