/* rebuild.c (layer 10) — derived trees rebuilt from what they derive from (rescue steps).
 *
 * The checksum tree: from the data the file extents of every subvolume name (the ranges the
 * checker asks checksums for: regular extents of inodes without NODATASUM, and compressed ones
 * whole). Each sector is read from every copy. A sector whose old checksum (where the old tree
 * still reads) matches one copy keeps it; a sector whose copies all read and agree, with no old
 * checksum, gets a fresh one. What is left is listed and never given a fresh checksum: a
 * sector no copy of which reads, copies that differ with no old checksum to say which is right
 * (left without a checksum), an old checksum no copy matches (kept as it was: the data may be
 * the damaged side).
 *
 * The old tree is replaced, not edited: its root becomes one new empty leaf (btk_tree_reset)
 * and the extent records of its blocks (found in the extent tree by their back reference to
 * the tree, so that a tree that no longer reads goes too) are dropped. One transaction: until
 * its superblocks are written the old tree is the committed one, so a power cut leaves the old
 * filesystem or the rebuilt one.
 *
 * The free-space tree is replaced the same way and filled at commit from the extent records;
 * the uuid tree from the root items; quotas are rescanned (backref/qgroup.c). No rebuild
 * changes a subvolume tree, so qgroups stay consistent through them.
 */
#include "repair/rescue.h"
#include "repair/repair_int.h"
#include "base/csum.h"
#include "base/error.h"
#include "backref/qgroup.h"
#include "base/vec.h"
#include "format/dev_items.h"
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "format/qgroup_item.h"
#include "format/root_item.h"
#include "fs/fs_write.h"
#include "trans/trans.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rb_range {
	uint64_t start, len;
};
BTK_VEC(rb_ranges, struct rb_range);
BTK_VEC(rb_keys, struct btk_key);

/* ---- the blocks of one tree, by their extent records ---- */

int rp_extent_refs_walk(struct btk_fs *fs, rp_extent_ref_fn fn, void *ctx)
{
	struct btk_root er;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	struct btk_key rec = {0, 0, 0};
	struct btk_extent_head h;
	bool have = false;
	int ret, stop = 0;

	if ((ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &er)))
		return ret;
	for (btk_items_start(&it, fs, &er, NULL); !stop && btk_items_next(&it);) {
		struct btk_extent_ref r;
		if (k->type == BTRFS_EXTENT_ITEM_KEY || k->type == BTRFS_METADATA_ITEM_KEY) {
			struct btk_inline_iter in;
			rec = *k;
			if (!(have = !btk_extent_head_parse(k, it.data, it.size, &h)))
				continue;
			btk_inline_iter_init(&in, it.data, it.size, h.refs_at);
			while (!stop && btk_inline_next(&in, &r) == 1)
				stop = fn(ctx, &rec, &h, &r);
		} else if (have && k->objectid == rec.objectid &&
			   (k->type == BTRFS_TREE_BLOCK_REF_KEY ||
			    k->type == BTRFS_SHARED_BLOCK_REF_KEY ||
			    k->type == BTRFS_EXTENT_DATA_REF_KEY ||
			    k->type == BTRFS_SHARED_DATA_REF_KEY) &&
			   !btk_keyed_ref_parse(k, it.data, it.size, &r)) {
			stop = fn(ctx, &rec, &h, &r);
		}
	}
	ret = btk_items_end(&it, stop);
	return ret == 1 ? 0 : ret;
}

struct records {
	uint64_t id;
	struct rb_keys *out;
	uint64_t *data_refs;
};

static int record_of(void *ctx, const struct btk_key *rec, const struct btk_extent_head *h,
		     const struct btk_extent_ref *r)
{
	struct records *c = ctx;

	if (c->data_refs && r->type == BTRFS_EXTENT_DATA_REF_KEY && r->root == c->id)
		++*c->data_refs;
	if (!(h->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) || r->type != BTRFS_TREE_BLOCK_REF_KEY ||
	    r->root != c->id || (c->out->n && !btk_key_cmp(btk_vec_at(c->out, c->out->n - 1), rec)))
		return 0; /* once per record */
	struct btk_key *o = btk_vec_push(c->out);
	if (!o)
		return btk_err(ENOMEM, "out of memory");
	*o = *rec;
	return 0;
}

/* The extent record keys (EXTENT_ITEM or METADATA_ITEM) of every tree block the extent tree
 * says tree `id` references (inline or keyed TREE_BLOCK_REF); *data_refs (may be NULL) counts
 * the data references (inline or keyed EXTENT_DATA_REF) naming tree `id`. */
static int tree_records(struct btk_fs *fs, uint64_t id, struct rb_keys *out, uint64_t *data_refs)
{
	struct records c = {id, out, data_refs};

	return rp_extent_refs_walk(fs, record_of, &c);
}

int rp_tree_replace(struct btk_trans *t, uint64_t id, uint64_t *blocks)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_root r;
	struct rb_keys keys = {0};
	int ret;

	*blocks = 0;
	ret = btk_root_find(fs, id, &r);
	if (ret == -ENOENT)
		return btk_tree_new(t, id);
	if (ret)
		return ret;
	if ((ret = tree_records(fs, id, &keys, NULL)))
		goto out;
	if ((ret = btk_tree_reset(t, id)))
		goto out;
	for (size_t i = 0; i < keys.n; i++) {
		unsigned keyed;
		if ((ret = btk_extent_record_drop(t, btk_vec_at(&keys, i), false, &keyed)))
			goto out;
	}
	*blocks = keys.n;
out:
	btk_vec_free(&keys);
	return ret;
}

/* ---- the data that needs checksums ---- */

static int range_cmp(const void *pa, const void *pb)
{
	const struct rb_range *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

struct need {
	struct btk_fs *fs;
	struct rb_ranges v;
	uint64_t extents;
};

static bool subvolume(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID || id == BTRFS_DATA_RELOC_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

static int need_root(void *ctx, const struct btk_root *root)
{
	struct need *n = ctx;
	struct btk_fs *fs = n->fs;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	uint64_t ino = 0, flags = 0;
	int ret = 0;

	if (!subvolume(root->objectid) || root->key_offset == (uint64_t)-1 /* a log's */)
		return 0;
	for (btk_items_start(&it, fs, root, NULL); btk_items_next(&it);) {
		if (k->type == BTRFS_INODE_ITEM_KEY) {
			ino = k->objectid;
			flags = it.size >= sizeof(struct btrfs_inode_item)
				    ? BTK_GET(struct btrfs_inode_item, it.data, flags)
				    : 0;
			continue;
		}
		if (k->type != BTRFS_EXTENT_DATA_KEY)
			continue;
		struct btk_file_extent fe;
		if (btk_file_extent_item_parse(it.data, it.size, k->offset, &fe) != BTK_FE_WHOLE ||
		    fe.type != BTRFS_FILE_EXTENT_REG || !fe.disk_bytenr)
			continue;
		bool nodsum = ino == k->objectid && (flags & BTK_INODE_NODATASUM);
		if (nodsum && !fe.compression)
			continue;
		uint64_t s = fe.compression ? fe.disk_bytenr : fe.disk_bytenr + fe.extent_offset;
		uint64_t l = fe.compression ? fe.disk_num_bytes : fe.num_bytes;
		uint64_t ss = fs->sectorsize;
		if (!l || s % ss || l % ss || s + l < s)
			continue; /* the checker's to report */
		struct rb_range *r = btk_vec_push(&n->v);
		if (!r) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		r->start = s;
		r->len = l;
		n->extents++;
	}
	if ((ret = btk_items_end(&it, ret)) < 0)
		return btk_err(-ret,
			       "subvolume %llu does not read whole (%s): which data has "
			       "checksums is not known",
			       (unsigned long long)root->objectid, btk_errmsg());
	return 0;
}

/* Sorts and merges the ranges into disjoint ones. */
static void ranges_merge(struct rb_ranges *v)
{
	size_t out = 0;

	if (v->n)
		qsort(v->data, v->n, sizeof(*v->data), range_cmp);
	for (size_t i = 0; i < v->n; i++) {
		struct rb_range r = v->data[i], *o = out ? &v->data[out - 1] : NULL;
		if (o && r.start <= o->start + o->len) {
			if (r.start + r.len > o->start + o->len)
				o->len = r.start + r.len - o->start;
			continue;
		}
		v->data[out++] = r;
	}
	v->n = out;
}

/* Whether the old tree reads whole, its items well formed and apart, and its checksums cover
 * exactly the (merged) ranges need: then a rebuild would give every sector its old checksum
 * again, and nothing is rewritten. */
static bool old_tree_exact(struct btk_fs *fs, const struct btk_root *old,
			   const struct rb_ranges *need)
{
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	struct rb_range cur = {0, 0};
	uint64_t prev_end = 0;
	size_t at = 0;
	bool ok = true;

	for (btk_items_start(&it, fs, old, NULL); ok && btk_items_next(&it);) {
		ok = k->objectid == BTRFS_EXTENT_CSUM_OBJECTID &&
		     k->type == BTRFS_EXTENT_CSUM_KEY && cs && it.size && !(it.size % cs) &&
		     !(k->offset % ss) && k->offset >= prev_end;
		if (!ok)
			break;
		uint64_t len = (uint64_t)(it.size / cs) * ss;
		prev_end = k->offset + len;
		if (cur.len && cur.start + cur.len == k->offset) {
			cur.len += len;
			continue;
		}
		if (cur.len) { /* a range ends: the next needed one must be it */
			ok = at < need->n && need->data[at].start == cur.start &&
			     need->data[at].len == cur.len;
			at++;
		}
		cur = (struct rb_range){k->offset, len};
	}
	if (btk_items_end(&it, 0) < 0 || !ok)
		return false;
	if (cur.len) {
		if (at >= need->n || need->data[at].start != cur.start ||
		    need->data[at].len != cur.len)
			return false;
		at++;
	}
	return at == need->n;
}

/* ---- the sums ---- */

#define PIECE 256u /* sectors read at a time */

struct rb {
	struct btk_fs *fs;
	struct btk_trans *t;
	struct btk_root old; /* the old tree (has_old) */
	bool has_old;
	const struct btk_csum_rebuild_opts *o;
	struct btk_csum_rebuild_result *res;
	uint8_t *copy[BTK_MAX_COPIES];
	uint8_t *old_sums, *sums; /* PIECE each */
	bool have_old[PIECE];
	/* the run of sums not yet inserted */
	uint8_t *run;
	uint64_t run_start, run_n;
};

#define RUN_MAX 4096u /* sectors of sums inserted at a time */

static int run_flush(struct rb *b)
{
	int ret = 0;

	if (b->run_n)
		ret = btk_csum_insert_sums(b->t, b->run_start, b->run, b->run_n);
	b->run_n = 0;
	if (!ret)
		ret = btk_trans_writeback(b->t, 32ULL << 20);
	return ret;
}

static int run_add(struct rb *b, uint64_t logical, const uint8_t *sum)
{
	uint32_t cs = (uint32_t)b->fs->csum_size;
	int ret;

	if (b->run_n &&
	    (b->run_start + b->run_n * b->fs->sectorsize != logical || b->run_n == RUN_MAX))
		if ((ret = run_flush(b)))
			return ret;
	if (!b->run_n)
		b->run_start = logical;
	memcpy(b->run + b->run_n++ * cs, sum, cs);
	return 0;
}

/* The old checksums of [lo, +cnt sectors) where the old tree has them and reads. */
static void old_sums(struct rb *b, uint64_t lo, uint32_t cnt)
{
	struct btk_fs *fs = b->fs;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	uint64_t hi = lo + (uint64_t)cnt * ss;
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, lo};
	struct btk_path p;
	int ret;

	memset(b->have_old, 0, sizeof(b->have_old));
	if (!b->has_old)
		return;
	btk_path_init(&p);
	ret = btk_search(fs, &b->old, &k, &p);
	if (ret == 1) { /* the item before may cover lo */
		ret = btk_prev(fs, &p);
		if (ret == 1) {
			btk_path_release(&p);
			btk_path_init(&p);
			ret = btk_search_ge(fs, &b->old, &k, &p);
		}
	}
	for (; ret == 0; ret = btk_next(fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if (k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY) {
			if (k.objectid > BTRFS_EXTENT_CSUM_OBJECTID)
				break;
			continue;
		}
		if (k.offset >= hi)
			break;
		if (!cs || size % cs || k.offset % ss)
			continue;
		for (uint32_t i = 0; i < size / cs; i++) {
			uint64_t at = k.offset + (uint64_t)i * ss;
			if (at < lo)
				continue;
			if (at >= hi)
				break;
			uint32_t s = (uint32_t)((at - lo) / ss);
			memcpy(b->old_sums + (size_t)s * cs, d + (size_t)i * cs, cs);
			b->have_old[s] = true;
		}
	}
	btk_path_release(&p);
}

static void left(struct rb *b, uint64_t logical, uint64_t len, bool kept, const char *why)
{
	struct btk_csum_rebuild_event e = {.logical = logical, .len = len, .kept = kept};

	snprintf(e.why, sizeof(e.why), "%s", why);
	b->res->sectors_left += len / b->fs->sectorsize;
	if (b->o && b->o->on_event)
		b->o->on_event(b->o->ctx, &e);
}

static int piece(struct rb *b, uint64_t lo, uint32_t cnt)
{
	struct btk_fs *fs = b->fs;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	int n = btk_copies_of(fs, lo);
	bool unread[BTK_MAX_COPIES][PIECE];
	int ret;

	if (n > BTK_MAX_COPIES)
		n = BTK_MAX_COPIES;
	for (int m = 0; m < n; m++) {
		memset(unread[m], 0, cnt);
		if (!btk_read_copy(fs, lo, b->copy[m], (size_t)cnt * ss, m))
			continue;
		for (uint32_t s = 0; s < cnt; s++)
			unread[m][s] = btk_read_copy(fs, lo + (uint64_t)s * ss,
						     b->copy[m] + (size_t)s * ss, ss, m) != 0;
	}
	old_sums(b, lo, cnt);
	b->res->sectors += cnt;
	for (uint32_t s = 0; s < cnt; s++) {
		uint64_t at = lo + (uint64_t)s * ss;
		uint8_t sum[BTK_CSUM_MAX];
		const uint8_t *old = b->old_sums + (size_t)s * cs;
		int first = -1, reads = 0;
		bool agree = true, match = false;
		for (int m = 0; m < n; m++) {
			const uint8_t *c = b->copy[m] + (size_t)s * ss;
			if (unread[m][s])
				continue;
			reads++;
			if (first < 0)
				first = m;
			else if (memcmp(c, b->copy[first] + (size_t)s * ss, ss))
				agree = false;
			if (b->have_old[s] && !match) {
				btk_csum(fs->csum_type, c, ss, sum);
				match = !memcmp(sum, old, cs);
			}
		}
		if (b->have_old[s]) {
			if (match)
				b->res->sectors_kept++;
			else
				left(b, at, ss, true,
				     reads ? "no copy matches its old checksum: the old one kept"
					   : "no copy reads: its old checksum kept");
			if ((ret = run_add(b, at, old)))
				return ret;
			continue;
		}
		if (!reads || !agree) {
			left(b, at, ss, false,
			     !reads ? "no copy reads: left without a checksum"
				    : "its copies differ and no old checksum says which is right: "
				      "left without a checksum");
			continue;
		}
		btk_csum(fs->csum_type, b->copy[first] + (size_t)s * ss, ss, sum);
		b->res->sectors_new++;
		if ((ret = run_add(b, at, sum)))
			return ret;
	}
	return 0;
}

/* ---- one transaction ---- */

int rp_run(const char *const *paths, int n, const struct btk_open_opts *oo, const struct rp_run *r)
{
	struct btk_open_opts o = *oo;
	struct btk_fs *fs = NULL;
	struct btk_wfs *w = NULL;
	struct btk_trans *t = NULL;
	int ret;

	o.write = true;
	o.chunk_damage |= r->chunk_damage;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	if (r->look && (ret = r->look(fs, r->ctx)))
		goto out;
	if (btk_le64(fs->sb.log_root)) {
		/* its blocks, extents and checksums are not in the trees the rebuilds derive from
		 */
		ret = btk_err(EBUSY,
			      "the filesystem has a log tree, %s: replay it first "
			      "(--rescue replay-log)",
			      r->log_why ? r->log_why : "which the rebuild would lose");
		goto out;
	}
	if (r->prepare && (ret = r->prepare(fs, r->ctx)))
		goto out;
	if ((ret = btk_write_open(fs, BTK_WRITE_QGROUPS_KEPT | r->write_flags, &w)))
		goto out;
	if (r->settled)
		btk_write_on_settled(w, r->settled, r->ctx);
	if ((ret = btk_trans_start(w, &t)))
		goto out;
	ret = r->fn(t, r->ctx);
	if (ret == 0) {
		ret = btk_trans_commit_verify(t, r->verify, r->ctx);
		t = NULL;
	}
out:
	if (t)
		btk_trans_abort(t);
	btk_write_close(w);
	btk_fs_close(fs);
	return ret;
}

static int csum_step(struct btk_trans *t, void *ctx)
{
	struct rb *b = ctx;
	struct btk_fs *fs = btk_trans_fs(t);
	struct need need = {.fs = fs};
	int ret;

	b->fs = fs;
	b->t = t;
	if ((ret = btk_for_each_root(fs, need_root, &need)))
		goto out;
	ranges_merge(&need.v);
	b->res->extents = need.extents;
	b->has_old = !btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &b->old);
	if (b->has_old && old_tree_exact(fs, &b->old, &need.v)) {
		b->res->whole = true; /* nothing to rebuild */
		ret = 1;
		goto out;
	}
	for (int m = 0; m < BTK_MAX_COPIES; m++)
		if (!(b->copy[m] = malloc((size_t)PIECE * fs->sectorsize))) {
			ret = btk_err(ENOMEM, "out of memory");
			goto out;
		}
	b->old_sums = malloc((size_t)PIECE * fs->csum_size);
	b->run = malloc((size_t)RUN_MAX * fs->csum_size);
	if (!b->old_sums || !b->run) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	/* the old tree's blocks stay as they are until the commit: old sums are read from them */
	if ((ret = rp_tree_replace(t, BTRFS_CSUM_TREE_OBJECTID, &b->res->old_blocks)))
		goto out;
	for (size_t i = 0; !ret && i < need.v.n; i++) {
		const struct rb_range *r = &need.v.data[i];
		uint64_t sectors = r->len / fs->sectorsize;
		for (uint64_t s = 0; !ret && s < sectors; s += PIECE)
			ret = piece(b, r->start + s * fs->sectorsize,
				    (uint32_t)(sectors - s < PIECE ? sectors - s : PIECE));
	}
	if (!ret)
		ret = run_flush(b);
out:
	btk_vec_free(&need.v);
	return ret;
}

int btk_csum_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		     const struct btk_csum_rebuild_opts *ro, struct btk_csum_rebuild_result *res)
{
	struct rb b = {.o = ro, .res = res};
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rp_run(paths, n, oo, &(struct rp_run){.fn = csum_step, .ctx = &b});
	for (int m = 0; m < BTK_MAX_COPIES; m++)
		free(b.copy[m]);
	free(b.old_sums);
	free(b.run);
	if (ret == 1)
		return 0;
	res->rebuilt = !ret;
	return ret;
}

/* ---- the free-space tree ---- */

/* rp_run of a step whose context is the result alone */
static int tree_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			int (*fn)(struct btk_trans *t, void *ctx),
			struct btk_tree_rebuild_result *res)
{
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rp_run(paths, n, oo, &(struct rp_run){.fn = fn, .ctx = res});
	res->rebuilt = !ret;
	return ret == 1 ? 0 : ret; /* 1: the tree was right, nothing written */
}

/* Whether tree `tree` reads whole and holds exactly n items, the i-th of which item(i, ...)
 * says is right (it gets the key and the bytes found). */
static bool tree_holds(struct btk_trans *t, uint64_t tree, size_t n,
		       bool (*item)(void *ctx, size_t i, const struct btk_key *k, const uint8_t *d,
				    uint32_t size),
		       void *ctx)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_key k = {0, 0, 0};
	uint8_t *d = malloc(fs->nodesize);
	uint32_t size;
	size_t i = 0;
	int ret = 0;

	while (d && (ret = btk_item_next(t, tree, &k, d, fs->nodesize, &size)) == 0) {
		if (i == n || size > fs->nodesize || !item(ctx, i, &k, d, size))
			break;
		i++;
		btk_key_after(&k);
	}
	free(d);
	btk_err_clear(); /* a tree that does not read is rebuilt, not an error here */
	return d && ret == 1 && i == n;
}

static int fst_step(struct btk_trans *t, void *ctx)
{
	struct btk_tree_rebuild_result *res = ctx;
	struct btk_fs *fs = btk_trans_fs(t);
	int ret;

	if (!(btk_le64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE)) {
		/* a v1 space cache: invalidated by the commit, the kernel rebuilds it */
		res->v1_invalidated = true;
		return btk_trans_touch(t);
	}
	if ((ret = rp_tree_replace(t, BTRFS_FREE_SPACE_TREE_OBJECTID, &res->old_blocks)))
		return ret;
	btk_fst_mark_all(t);
	return 0;
}

/* The rescue step alone: a tree that says what a rebuild would write is left as it is. */
static int fst_rescue_step(struct btk_trans *t, void *ctx)
{
	if (btk_fst_matches(t))
		return 1;
	return fst_step(t, ctx);
}

int btk_fst_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		    struct btk_tree_rebuild_result *res)
{
	return tree_rebuild(paths, n, oo, fst_rescue_step, res);
}

/* ---- the uuid tree ---- */

struct uuid_ent {
	struct btk_key key;
	uint64_t id;
};
BTK_VEC(uuid_ents, struct uuid_ent);

static int uuid_cmp(const void *pa, const void *pb)
{
	const struct uuid_ent *a = pa, *b = pb;
	int c = btk_key_cmp(&a->key, &b->key);
	return c ? c : (a->id > b->id) - (a->id < b->id);
}

static int uuid_add(struct uuid_ents *v, const uint8_t *u, uint8_t type, uint64_t id)
{
	static const uint8_t zero[BTK_UUID_SIZE];
	struct uuid_ent *e;

	if (!memcmp(u, zero, BTK_UUID_SIZE))
		return 0;
	if (!(e = btk_vec_push(v)))
		return btk_err(ENOMEM, "out of memory");
	e->key = (struct btk_key){btk_le64(u), type, btk_le64(u + 8)};
	e->id = id;
	return 0;
}

/* The uuid item of v's entries from i on that share its key: their ids (without repeats) into
 * buf, *m of them; returns the index after them. */
static size_t uuid_group(const struct uuid_ents *v, size_t i, uint8_t *buf, size_t *m)
{
	size_t j = i;

	*m = 0;
	for (; j < v->n && !btk_key_cmp(&v->data[j].key, &v->data[i].key); j++)
		if (j == i || v->data[j].id != v->data[j - 1].id)
			btk_put64(buf + 8 * (*m)++, v->data[j].id);
	return j;
}

struct uuid_same {
	const struct uuid_ents *v;
	uint8_t *buf;
	size_t at; /* v's entry of the next item */
};

static bool uuid_item_same(void *ctx, size_t i, const struct btk_key *k, const uint8_t *d,
			   uint32_t size)
{
	struct uuid_same *u = ctx;
	size_t m, at = u->at;

	(void)i;
	if (at >= u->v->n)
		return false;
	u->at = uuid_group(u->v, at, u->buf, &m);
	return !btk_key_cmp(k, &u->v->data[at].key) && size == 8 * m && !memcmp(d, u->buf, size);
}

static int uuid_step(struct btk_trans *t, void *ctx)
{
	struct btk_tree_rebuild_result *res = ctx;
	struct btk_fs *fs = btk_trans_fs(t);
	struct uuid_ents v = {0};
	struct btk_root rt;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	uint8_t *buf = NULL;
	int ret;

	if ((ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)))
		return ret;
	/* every live subvolume's uuid and received uuid, as the kernel's rescan finds them */
	btk_items_start(&it, fs, &rt, &(struct btk_key){0, BTRFS_ROOT_ITEM_KEY, 0});
	while (btk_items_next(&it)) {
		struct btk_root_item ri;
		if (k->type != BTRFS_ROOT_ITEM_KEY || !subvolume(k->objectid) ||
		    k->objectid == BTRFS_DATA_RELOC_TREE_OBJECTID ||
		    btk_root_item_parse(it.data, it.size, &ri) || !ri.refs)
			continue;
		if ((ret = uuid_add(&v, ri.uuid, BTRFS_UUID_KEY_SUBVOL, k->objectid)) ||
		    (ret = uuid_add(&v, ri.received_uuid, BTRFS_UUID_KEY_RECEIVED_SUBVOL,
				    k->objectid)))
			break;
	}
	if ((ret = btk_items_end(&it, ret)) < 0)
		goto out;
	if (v.n)
		qsort(v.data, v.n, sizeof(*v.data), uuid_cmp);
	if (!(buf = malloc(v.n * 8 + 8))) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	size_t items = 0;
	for (size_t i = 0, m; i < v.n; items++)
		i = uuid_group(&v, i, buf, &m);
	struct uuid_same same = {.v = &v, .buf = buf};
	if (btk_le64(fs->sb.uuid_tree_generation) == fs->generation &&
	    tree_holds(t, BTRFS_UUID_TREE_OBJECTID, items, uuid_item_same, &same)) {
		res->items = items; /* current and right: nothing to rebuild */
		ret = 1;
		goto out;
	}
	if ((ret = rp_tree_replace(t, BTRFS_UUID_TREE_OBJECTID, &res->old_blocks)))
		goto out;
	for (size_t i = 0, m; !ret && i < v.n;) {
		size_t j = uuid_group(&v, i, buf, &m);
		ret = btk_item_insert(t, BTRFS_UUID_TREE_OBJECTID, &v.data[i].key, buf,
				      (uint32_t)(8 * m));
		res->items++;
		i = j;
	}
	if (!ret)
		ret = btk_trans_uuid_tree_current(t);
out:
	free(buf);
	btk_vec_free(&v);
	return ret;
}

int btk_uuid_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
		     struct btk_tree_rebuild_result *res)
{
	return tree_rebuild(paths, n, oo, uuid_step, res);
}

/* ---- the data relocation tree ---- */

/* The data relocation tree as mkfs makes it: its top directory's inode item (a directory, one
 * link, no entries) and its ".." ref to itself, nothing else. */
static bool reloc_item_same(void *ctx, size_t i, const struct btk_key *k, const uint8_t *d,
			    uint32_t size)
{
	struct btk_inode_info in;

	(void)ctx;
	if (k->objectid != BTRFS_FIRST_FREE_OBJECTID)
		return false;
	if (i == 0)
		return k->type == BTRFS_INODE_ITEM_KEY && !k->offset &&
		       !btk_inode_item_parse(d, size, &in) && (in.mode & 0170000) == 040000 &&
		       in.nlink == 1 && !in.size;
	return k->type == BTRFS_INODE_REF_KEY && k->offset == BTRFS_FIRST_FREE_OBJECTID &&
	       size == sizeof(struct btrfs_inode_ref) + 2 &&
	       BTK_GET(struct btrfs_inode_ref, d, name_len) == 2 &&
	       !memcmp(d + sizeof(struct btrfs_inode_ref), "..", 2);
}

/* An item of the dev tree kept across its rebuild (device statistics, a replace item). */
struct dev_kept {
	struct btk_key key;
	uint32_t size;
	uint8_t data[256];
};
BTK_VEC(dev_kepts, struct dev_kept);

/* Whether a stripe of a chunk of the map lies at physical on device devid. */
static bool stripe_at(const struct btk_fs *fs, uint64_t devid, uint64_t physical)
{
	for (int i = 0; i < fs->nchunks; i++)
		for (int s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].devid == devid &&
			    fs->chunks[i]->stripes[s].offset == physical)
				return true;
	return false;
}

/* The dev tree made again from the chunk map: a dev extent for every stripe of every chunk;
 * the other items that read (device statistics, a replace item) are kept. A dev extent that
 * reads, lies where no stripe of the map does and names a chunk the map lacks refuses it: it
 * may be all that is left of a lost chunk item (--rescue chunk-tree reads it). */
static int dev_step(struct btk_trans *t, void *ctx)
{
	struct btk_tree_rebuild_result *res = ctx;
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_block_check want = {.level = fs->sb.chunk_root_level,
				       .generation = btk_le64(fs->sb.chunk_root_generation)};
	struct dev_kepts kept = {0};
	struct btk_key k = {0, 0, 0};
	uint8_t uuid[BTK_UUID_SIZE], buf[256];
	struct btk_block *b;
	uint32_t size = 0;
	int ret;

	if ((ret = btk_block_read(fs, btk_le64(fs->sb.chunk_root), &want, &b)))
		return ret;
	memcpy(uuid, btk_hdr(b)->chunk_tree_uuid, BTK_UUID_SIZE);
	btk_block_put(b);
	for (;;) {
		ret = btk_item_next(t, BTRFS_DEV_TREE_OBJECTID, &k, buf, sizeof(buf), &size);
		if (ret) {
			if (ret < 0)
				btk_err_clear(); /* an unreadable block: what it held is made again
						  */
			ret = 0;
			break;
		}
		if (k.type == BTRFS_DEV_EXTENT_KEY && size >= BTK_DEV_EXTENT_SIZE) {
			uint64_t at = BTK_GET(struct btrfs_dev_extent, buf, chunk_offset);
			const struct btk_chunk *c = btk_chunk_find(fs, at);
			if ((!c || c->logical != at) && !stripe_at(fs, k.objectid, k.offset)) {
				ret =
				    btk_err(EUCLEAN,
					    "dev extent devid %llu physical %llu names chunk %llu, "
					    "which the chunk map lacks (a lost chunk item? "
					    "--rescue chunk-tree)",
					    (unsigned long long)k.objectid,
					    (unsigned long long)k.offset, (unsigned long long)at);
				break;
			}
		} else if (k.type != BTRFS_DEV_EXTENT_KEY && size <= sizeof(buf)) {
			struct dev_kept *d = btk_vec_push(&kept);
			if (!d) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			d->key = k;
			d->size = size;
			memcpy(d->data, buf, size);
		}
		if (++k.offset == 0 && ++k.type == 0 && ++k.objectid == 0)
			break;
	}
	if (!ret)
		ret = rp_tree_replace(t, BTRFS_DEV_TREE_OBJECTID, &res->old_blocks);
	for (size_t i = 0; !ret && i < kept.n; i++) {
		const struct dev_kept *d = btk_vec_at(&kept, i);
		ret = btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &d->key, d->data, d->size);
		res->items++;
	}
	for (int i = 0; !ret && i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t len = btk_chunk_stripe_len(c);
		for (int s = 0; !ret && s < c->num_stripes; s++) {
			struct btk_key dk = {c->stripes[s].devid, BTRFS_DEV_EXTENT_KEY,
					     c->stripes[s].offset};
			btk_dev_extent_write(buf, c->logical, len, uuid);
			ret = btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &dk, buf,
					      BTK_DEV_EXTENT_SIZE);
			if (ret == -EEXIST) { /* a chunk this transaction allocated has it */
				btk_err_clear();
				ret = 0;
				continue;
			}
			res->items++;
		}
	}
	btk_vec_free(&kept);
	return ret;
}

static int reloc_step(struct btk_trans *t, void *ctx)
{
	struct btk_tree_rebuild_result *res = ctx;
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_key k = {BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0};
	struct rb_keys keys = {0};
	uint64_t data_refs = 0;
	struct btrfs_root_item *item;
	struct btk_root_item ri;
	int ret;

	/* a relocation under way needs the tree's inodes: the kernel resumes or ends it */
	ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (!ret && k.objectid == BTRFS_BALANCE_OBJECTID && k.type == BTRFS_TEMPORARY_ITEM_KEY)
		return btk_err(EBUSY, "a balance was interrupted (its item is in the root tree): "
				      "mount the filesystem to let the kernel resume or cancel it");
	k = (struct btk_key){BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (!ret && k.objectid == BTRFS_TREE_RELOC_OBJECTID && k.type == BTRFS_ROOT_ITEM_KEY)
		return btk_err(EBUSY,
			       "a relocation tree exists (a relocation was interrupted): mount "
			       "the filesystem to let the kernel finish it");
	ret = tree_records(fs, BTRFS_DATA_RELOC_TREE_OBJECTID, &keys, &data_refs);
	btk_vec_free(&keys);
	if (ret)
		return ret;
	if (data_refs)
		return btk_err(EBUSY,
			       "the data relocation tree holds relocated data (%llu reference(s) "
			       "in the extent tree): mount the filesystem to let the kernel finish "
			       "the relocation",
			       (unsigned long long)data_refs);
	uint8_t rib[sizeof(*item)];
	uint32_t risz = 0;
	k = (struct btk_key){BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	if (!btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, rib, sizeof(rib), &risz) &&
	    k.objectid == BTRFS_DATA_RELOC_TREE_OBJECTID && k.type == BTRFS_ROOT_ITEM_KEY &&
	    !btk_root_item_parse(rib, risz < sizeof(rib) ? risz : sizeof(rib), &ri) &&
	    ri.root_dirid == BTRFS_FIRST_FREE_OBJECTID &&
	    tree_holds(t, BTRFS_DATA_RELOC_TREE_OBJECTID, 2, reloc_item_same, NULL)) {
		res->items = 2;
		return 1; /* as mkfs makes it: nothing to rebuild */
	}
	if ((ret = rp_tree_replace(t, BTRFS_DATA_RELOC_TREE_OBJECTID, &res->old_blocks)))
		return ret;
	/* its top directory, as mkfs makes it; its times the tree's creation */
	item = btk_tree_root_item(t, BTRFS_DATA_RELOC_TREE_OBJECTID);
	if (!item || btk_root_item_parse((const uint8_t *)item, sizeof(*item), &ri))
		return btk_err(EUCLEAN, "the data relocation tree's root item does not parse");
	if (ri.root_dirid != BTRFS_FIRST_FREE_OBJECTID) {
		ri.root_dirid = BTRFS_FIRST_FREE_OBJECTID;
		btk_root_item_write((uint8_t *)item, sizeof(*item), &ri);
	}
	struct btk_inode_attr a = {.mode = 040755,
				   .nlink = 1,
				   .atime = ri.ctime,
				   .ctime = ri.ctime,
				   .mtime = ri.ctime,
				   .otime = ri.otime};
	res->items = 2;
	return btk_top_dir_create(t, BTRFS_DATA_RELOC_TREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID, &a,
				  false);
}

int btk_data_reloc_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			   struct btk_tree_rebuild_result *res)
{
	return tree_rebuild(paths, n, oo, reloc_step, res);
}

/* ---- quotas ---- */

/* A QGROUP_INFO item's numbers (its generation aside). */
struct qinfo {
	uint64_t id;
	struct btk_qgroup_counts n;
};
BTK_VEC(qinfo_vec, struct qinfo);

/* Every QGROUP_INFO item, as the transaction sees them (one too short: numbers all ones). */
static int qinfos(struct btk_trans *t, struct qinfo_vec *v)
{
	struct btk_key k = {0, BTRFS_QGROUP_INFO_KEY, 0};
	uint8_t buf[BTK_QGROUP_INFO_SIZE];
	uint32_t size;
	int ret;

	v->n = 0;
	while (!(ret = btk_item_next(t, BTRFS_QUOTA_TREE_OBJECTID, &k, buf, sizeof(buf), &size)) &&
	       !k.objectid && k.type == BTRFS_QGROUP_INFO_KEY) {
		struct qinfo *e = btk_vec_push(v);
		if (!e)
			return btk_err(ENOMEM, "out of memory");
		e->id = k.offset;
		if (btk_qgroup_info_parse(buf, size, &e->n))
			e->n = (struct btk_qgroup_counts){UINT64_MAX, UINT64_MAX, UINT64_MAX,
							  UINT64_MAX};
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	return ret < 0 ? ret : 0;
}

struct quota_ctx {
	struct btk_quota_rescan_result *res;
	struct qinfo_vec before, after;
	/* the rescue step alone (not a repair round's fix, whose commit holds other fixes):
	 * quotas marked consistent whose rescan changes nothing end the commit unwritten */
	bool may_end;
	bool right; /* so it did */
};

/* The commit's settled hook: the rescan, with what it changed counted. With may_end, when the
 * quotas were marked consistent and it changes no number and makes no qgroup, the commit is
 * ended (-ECANCELED, c->right) before anything is written. */
static int quota_settled(void *ctx, struct btk_trans *t)
{
	struct quota_ctx *c = ctx;
	struct btk_quota_rescan_result *r = c->res;
	struct btk_qgroup_acct st;
	int ret;

	if ((ret = qinfos(t, &c->before)) || (ret = btk_qgroups_rescan(&st, t)) ||
	    (ret = qinfos(t, &c->after)))
		return ret;
	r->qgroups = c->after.n;
	for (size_t i = 0, j = 0; i < c->after.n; i++) {
		const struct qinfo *a = btk_vec_at(&c->after, i);
		while (j < c->before.n && btk_vec_at(&c->before, j)->id < a->id)
			j++;
		if (j == c->before.n || btk_vec_at(&c->before, j)->id != a->id)
			r->created++;
		else if (memcmp(btk_vec_at(&c->before, j), a, sizeof(*a)))
			r->changed++;
	}
	if (c->may_end && !r->changed && !r->created && !r->was_inconsistent &&
	    !r->was_rescanning && !r->recreated) {
		c->right = true;
		return btk_err(ECANCELED, "every qgroup counted right already");
	}
	return 0;
}

/* A quota tree that does not read: made again as `btrfs quota enable` leaves it (its status
 * item: on, for the rescan of the commit to count every subvolume's level-0 qgroup afresh).
 * What only the lost tree knew (limits, higher-level qgroups and their relations) is lost. */
static int quota_recreate(struct btk_trans *t, struct quota_ctx *c, const char *why)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint8_t st[sizeof(struct btrfs_qgroup_status_item)] = {0};
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	int ret;

	if (btk_le64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA)
		return btk_err(EOPNOTSUPP,
			       "the quota tree does not read (%s) and holds simple quotas, whose "
			       "enable generation was in it: not recreated",
			       why);
	if ((ret = rp_tree_replace(t, BTRFS_QUOTA_TREE_OBJECTID, &c->res->old_blocks)))
		return ret;
	BTK_PUT(struct btrfs_qgroup_status_item, st, version, BTRFS_QGROUP_STATUS_VERSION);
	BTK_PUT(struct btrfs_qgroup_status_item, st, generation, btk_trans_id(t));
	BTK_PUT(struct btrfs_qgroup_status_item, st, flags, BTRFS_QGROUP_STATUS_FLAG_ON);
	c->res->recreated = true;
	snprintf(c->res->why, sizeof(c->res->why), "%s", why);
	return btk_item_insert(t, BTRFS_QUOTA_TREE_OBJECTID, &k, st, sizeof(st));
}

static int quota_step(struct btk_trans *t, void *ctx)
{
	struct quota_ctx *c = ctx;
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	uint8_t st[sizeof(struct btrfs_qgroup_status_item)];
	uint32_t size = 0;
	uint64_t flags;
	struct btk_root qr;
	int ret;

	ret = btk_item_next(t, BTRFS_QUOTA_TREE_OBJECTID, &k, st, sizeof(st), &size);
	/* a quota tree whose blocks do not read (its root item is there: quotas were on) */
	if (ret < 0 && ret != -ENOENT && ret != -ENOMEM &&
	    !btk_root_find(btk_trans_fs(t), BTRFS_QUOTA_TREE_OBJECTID, &qr)) {
		char why[160];
		snprintf(why, sizeof(why), "%s", btk_errmsg());
		return quota_recreate(t, c, why);
	}
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (ret || k.objectid || k.type != BTRFS_QGROUP_STATUS_KEY || size < sizeof(st))
		return btk_err(ENOENT, "quotas are off (no quota tree or no status item in it)");
	flags = BTK_GET(struct btrfs_qgroup_status_item, st, flags);
	if (!(flags & BTRFS_QGROUP_STATUS_FLAG_ON))
		return btk_err(ENOENT, "quotas are off (status flags %#llx)",
			       (unsigned long long)flags);
	c->res->was_inconsistent = flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
	c->res->was_rescanning = flags & BTRFS_QGROUP_STATUS_FLAG_RESCAN;
	return btk_trans_touch(t); /* the commit runs the hook (quota_settled) */
}

int btk_quota_rescan(const char *const *paths, int n, const struct btk_open_opts *oo,
		     struct btk_quota_rescan_result *res)
{
	struct quota_ctx c = {.res = res, .may_end = true};
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rp_run(paths, n, oo,
		     &(struct rp_run){.fn = quota_step, .settled = quota_settled, .ctx = &c});
	btk_vec_free(&c.before);
	btk_vec_free(&c.after);
	if (ret == -ECANCELED && c.right) {
		btk_err_clear();
		return 0; /* counted right already: nothing written */
	}
	res->rescanned = !ret;
	return ret;
}

/* ---- the rebuilds as fixes of a repair round (fixes.def) ---- */

enum rp_rebuild rp_rebuild_of(const struct rp_prob *p)
{
	switch (p->id) {
	case BTK_P_FS_BITMAP_SIZE:
	case BTK_P_FS_INFO_SIZE:
	case BTK_P_FS_ITEM_TYPE:
	case BTK_P_FS_DIFFERS:
	case BTK_P_FS_NO_INFO:
	case BTK_P_FS_INFO_COUNT:
	case BTK_P_FS_INFO_FLAGS:
	case BTK_P_FS_OUTSIDE:
	case BTK_P_FS_NO_BG:
		return RP_RB_FST;
	case BTK_P_UUID_SIZE:
	case BTK_P_UUID_STALE:
	case BTK_P_UUID_MISSING:
		return RP_RB_UUID;
	case BTK_P_QGROUP_COUNTS:
		return RP_RB_QUOTA;
	case BTK_P_CSUM_ITEM_TYPE:
	case BTK_P_CSUM_MALFORMED:
	case BTK_P_CSUM_NO_EXTENT:
	case BTK_P_CSUM_NODATASUM:
	case BTK_P_CSUM_PREALLOC:
		return RP_RB_CSUM;
	case BTK_P_TB_UNREADABLE:
		/* a lost block of a derived tree: the tree made again from what it derives from
		 * (the checksum tree's root only: a lost block below it is dropped, fixes.c) */
		switch (p->tree) {
		case BTRFS_FREE_SPACE_TREE_OBJECTID:
			return RP_RB_FST;
		case BTRFS_UUID_TREE_OBJECTID:
			return RP_RB_UUID;
		case BTRFS_QUOTA_TREE_OBJECTID:
			return RP_RB_QUOTA;
		case BTRFS_DATA_RELOC_TREE_OBJECTID:
			return RP_RB_RELOC;
		case BTRFS_CSUM_TREE_OBJECTID:
			return RP_RB_CSUM;
		case BTRFS_DEV_TREE_OBJECTID:
			return RP_RB_DEV;
		}
		return RP_RB_NONE;
	case BTK_P_DEXT_TOO_SMALL:
	case BTK_P_DEXT_MISSING:
	case BTK_P_DEXT_DIFFERS:
		return RP_RB_DEV;
	default:
		return RP_RB_NONE;
	}
}

/* What a round's quota rescan keeps until its commit's settled hook has run. */
struct rp_rebuilds {
	struct btk_quota_rescan_result qres;
	struct quota_ctx quota;
};

void rp_rebuilds_free(struct rp_rebuilds *r)
{
	if (!r)
		return;
	btk_vec_free(&r->quota.before);
	btk_vec_free(&r->quota.after);
	free(r);
}

static int csum_in_round(struct rp_ctx *x, char *before, char *after, size_t cap)
{
	struct btk_csum_rebuild_result res = {0};
	struct rb b = {.res = &res};
	int ret = csum_step(x->t, &b);

	for (int m = 0; m < BTK_MAX_COPIES; m++)
		free(b.copy[m]);
	free(b.old_sums);
	free(b.run);
	if (ret)
		return ret;
	snprintf(before, cap, "checksum tree (%llu block(s))", (unsigned long long)res.old_blocks);
	snprintf(after, cap,
		 "rebuilt from %llu data sector(s): %llu summed afresh, %llu kept, %llu without a "
		 "right checksum",
		 (unsigned long long)res.sectors, (unsigned long long)res.sectors_new,
		 (unsigned long long)res.sectors_kept, (unsigned long long)res.sectors_left);
	return 0;
}

/* A tree made anew inside a repair round, and what the round's report says of it. */
struct whole_tree_rebuild {
	int (*step)(struct btk_trans *t, void *res);
	const char *tree; /* what was there: "<tree> (N block(s))" */
	const char *made; /* what is there now; %llu, if any, takes its item count */
};

static const struct whole_tree_rebuild uuid_rebuild = {uuid_step, "uuid tree",
						       "rebuilt from the root items: %llu item(s)"};
static const struct whole_tree_rebuild reloc_rebuild = {
    reloc_step, "data relocation tree", "an empty one with its top directory, as mkfs makes it"};
static const struct whole_tree_rebuild dev_rebuild = {dev_step, "dev tree",
						      "rebuilt from the chunk map: %llu item(s)"};

static int whole_tree_in_round(struct rp_ctx *x, const struct whole_tree_rebuild *r, char *before,
			       char *after, size_t cap)
{
	struct btk_tree_rebuild_result res = {0};
	int ret = r->step(x->t, &res);

	if (ret)
		return ret;
	snprintf(before, cap, "%s (%llu block(s))", r->tree, (unsigned long long)res.old_blocks);
	/* a format without a conversion ignores the count (C11 7.21.6.1p2) */
	snprintf(after, cap, r->made, (unsigned long long)res.items);
	return 0;
}

int rp_fix_rebuild(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after, size_t cap)
{
	enum rp_rebuild which = rp_rebuild_of(p);
	struct btk_tree_rebuild_result res = {0};
	int ret;

	if (which == RP_RB_NONE)
		return btk_err(EINVAL, "no rebuild for this problem");
	if (x->rebuilt & (1u << which))
		return 1; /* the round rebuilt that tree already */
	x->rebuilt |= 1u << which;
	switch (which) {
	case RP_RB_CSUM:
		return csum_in_round(x, before, after, cap);
	case RP_RB_FST:
		if ((ret = fst_step(x->t, &res)))
			return ret;
		snprintf(before, cap, "%s",
			 res.v1_invalidated ? "v1 space cache" : "free-space tree");
		snprintf(after, cap, "%s",
			 res.v1_invalidated ? "invalidated (the kernel rebuilds it)"
					    : "rebuilt from the extent records");
		return 0;
	case RP_RB_UUID:
		return whole_tree_in_round(x, &uuid_rebuild, before, after, cap);
	case RP_RB_RELOC:
		return whole_tree_in_round(x, &reloc_rebuild, before, after, cap);
	case RP_RB_QUOTA:
		if (!x->rebuilds && !(x->rebuilds = calloc(1, sizeof(*x->rebuilds))))
			return btk_err(ENOMEM, "out of memory");
		x->rebuilds->quota.res = &x->rebuilds->qres;
		if ((ret = quota_step(x->t, &x->rebuilds->quota)))
			return ret;
		/* the commit's settled hook counts every qgroup anew */
		btk_write_on_settled(x->w, quota_settled, &x->rebuilds->quota);
		if (x->rebuilds->qres.recreated) {
			snprintf(before, cap, "quota tree lost (%llu block(s))",
				 (unsigned long long)x->rebuilds->qres.old_blocks);
			snprintf(after, cap,
				 "recreated and rescanned (limits and higher-level "
				 "qgroups lost)");
			return 0;
		}
		snprintf(before, cap, "qgroup numbers%s",
			 x->rebuilds->qres.was_inconsistent ? " (marked inconsistent)" : "");
		snprintf(after, cap, "rescanned");
		return 0;
	case RP_RB_DEV:
		return whole_tree_in_round(x, &dev_rebuild, before, after, cap);
	case RP_RB_NONE:
		break;
	}
	return btk_err(EINVAL, "no rebuild for this problem");
}
