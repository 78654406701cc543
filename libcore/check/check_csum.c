/* check_csum.c — the checksum tree: no overlaps, every checksum for data that exists, every
 * checksummed file extent covered; with data_csum, every data copy read and verified. */
#include "check/check_priv.h"
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "format/root_item.h"
#include "base/csum.h"
#include "base/error.h"

#include <stdlib.h>
#include <string.h>

void chk_range_append(struct chk *c, struct chk_ranges *v, uint64_t start, uint64_t len, bool merge)
{
	struct chk_range *last = v->n ? btk_vec_at(v, v->n - 1) : NULL;

	if (merge && last && last->start + last->len == start) {
		last->len += len;
		return;
	}
	struct chk_range *r = chk_push(c, v);
	if (!r)
		return;
	r->start = start;
	r->len = len;
}

void chk_csum_leaf(struct chk *c, const struct btk_block *b)
{
	uint32_t ss = c->fs->sectorsize, cs = (uint32_t)c->fs->csum_size;
	chk_for_items (c, b, 0, it) {
		if (it.k.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    it.k.type != BTRFS_EXTENT_CSUM_KEY) {
			chk_rep(c, CHK_M_CSUM_ITEM_TYPE, 7, b->bytenr, &it.k);
			continue;
		}
		if (!cs || it.sz % cs || !it.sz || it.k.offset % ss) {
			chk_rep(c, CHK_M_CSUM_MALFORMED, 7, b->bytenr, &it.k, CHK_U(cs),
				CHK_U(it.sz));
			continue;
		}
		uint64_t len = (uint64_t)(it.sz / cs) * ss;
		if (it.k.offset < c->csum_prev_end)
			chk_rep(c, CHK_M_CSUM_OVERLAP, 7, b->bytenr, &it.k, CHK_U(c->csum_prev_end),
				CHK_U(it.k.offset));
		if (it.k.offset + len > c->csum_prev_end)
			c->csum_prev_end = it.k.offset + len;
		c->sum->total_csum_bytes += it.sz;
		chk_range_append(c, &c->csums, it.k.offset, len, true);
		if (c->opts->data_csum)
			chk_dv_add(c, it.k.offset, len, it.p);
	}
}

static void chk_log_final(struct chk *c);

static int range_cmp(const void *pa, const void *pb)
{
	const struct chk_range *a = pa, *b = pb;
	return btk_cmp_u64(a->start, b->start) ?: btk_cmp_u64(a->len, b->len);
}

static uint64_t range_key(const void *p)
{
	return ((const struct chk_range *)p)->start;
}

static uint64_t ext_key(const void *p)
{
	return ((const struct chk_extent *)p)->bytenr;
}

static bool covered(const struct chk_ranges *v, uint64_t s, uint64_t len);
static void merge_ranges(struct chk_ranges *v);

/* Every checksum must describe bytes of some data extent, or data that a log tree's file
 * extents use: until the log is replayed its extents have no extent items, and the log's
 * items are their references. */
static void csums_in_extents(struct chk *c)
{
	struct chk_ranges logged = {0};

	for (size_t i = 0; i < c->log_need.n; i++) {
		struct chk_range *r = chk_push(c, &logged);
		if (!r) {
			btk_vec_free(&logged);
			return;
		}
		*r = *btk_vec_at(&c->log_need, i);
	}
	btk_vec_sort(&logged, range_cmp);
	merge_ranges(&logged);
	for (size_t i = 0; i < c->csums.n; i++) {
		const struct chk_range *r = btk_vec_at(&c->csums, i);
		uint64_t pos = r->start, end = r->start + r->len;
		while (pos < end) {
			long ei = btk_vec_floor(&c->extents, pos, ext_key);
			const struct chk_extent *e =
			    ei >= 0 ? btk_vec_at(&c->extents, (size_t)ei) : NULL;
			if (e && pos < e->bytenr + e->len && (e->flags & BTRFS_EXTENT_FLAG_DATA)) {
				pos = e->bytenr + e->len;
				continue;
			}
			/* find where the next data extent starts, to report the gap once */
			uint64_t next = end;
			for (size_t j = (size_t)(ei + 1); j < c->extents.n; j++) {
				const struct chk_extent *x = btk_vec_at(&c->extents, j);
				if (x->flags & BTRFS_EXTENT_FLAG_DATA) {
					next = x->bytenr < end ? x->bytenr : end;
					break;
				}
			}
			if (next <= pos)
				next = pos + c->fs->sectorsize;
			if (logged.n && covered(&logged, pos, next - pos)) {
				pos = next;
				continue;
			}
			chk_rep(c, CHK_M_CSUM_NO_EXTENT, 7, pos, NULL, CHK_U(pos), CHK_U(next));
			pos = next;
		}
	}
	btk_vec_free(&logged);
}

/* Checksums over prealloc space or NODATASUM data, unless the same bytes are also written
 * checksummed data of another file extent (sorted need ranges; the lenient rule btrfs check
 * applies to prealloc extents written through a reflink). */
static bool covered(const struct chk_ranges *v, uint64_t s, uint64_t len);

/* Merges sorted ranges in place into disjoint ones (their union). */
static void merge_ranges(struct chk_ranges *v)
{
	size_t out = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct chk_range *r = btk_vec_at(v, i);
		struct chk_range *o = out ? btk_vec_at(v, out - 1) : NULL;
		if (o && r->start <= o->start + o->len) {
			if (r->start + r->len > o->start + o->len)
				o->len = r->start + r->len - o->start;
			continue;
		}
		memmove(btk_vec_at(v, out++), r, sizeof(*r));
	}
	v->n = out;
}

static void csums_forbidden(struct chk *c, struct chk_ranges *v, bool lenient)
{
	btk_vec_sort(v, range_cmp);
	for (size_t i = 0; i < v->n; i++) {
		const struct chk_range *f = btk_vec_at(v, i);
		if (i && !range_cmp(f, btk_vec_at(v, i - 1)))
			continue;
		long ci = btk_vec_floor(&c->csums, f->start + f->len - 1, range_key);
		const struct chk_range *cr = ci >= 0 ? btk_vec_at(&c->csums, (size_t)ci) : NULL;
		if (!cr || cr->start + cr->len <= f->start)
			continue; /* no checksum over it */
		if (lenient && covered(&c->csum_need, f->start, f->len))
			continue;
		chk_rep(c, lenient ? CHK_M_CSUM_PREALLOC : CHK_M_CSUM_NODATASUM, 7, f->start, NULL,
			CHK_U(f->start), CHK_U(f->len));
	}
	btk_vec_free(v);
}

void chk_csum_final(struct chk *c)
{
	size_t out = 0;

	btk_vec_sort(&c->csum_need, range_cmp);
	for (size_t i = 0; i < c->csum_need.n; i++) {
		const struct chk_range *r = btk_vec_at(&c->csum_need, i);
		if (out && !range_cmp(r, btk_vec_at(&c->csum_need, out - 1)))
			continue; /* the same range, from a snapshot or a reflink */
		memmove(btk_vec_at(&c->csum_need, out++), r, sizeof(*r));
		long ci = btk_vec_floor(&c->csums, r->start, range_key);
		const struct chk_range *cr = ci >= 0 ? btk_vec_at(&c->csums, (size_t)ci) : NULL;
		if (cr && r->start + r->len <= cr->start + cr->len)
			continue;
		chk_rep(c, CHK_M_CSUM_MISSING, 7, r->start, NULL, CHK_U(r->start), CHK_U(r->len));
	}
	c->csum_need.n = out; /* sorted and deduplicated */
	merge_ranges(&c->csum_need);
	csums_forbidden(c, &c->csum_forbid, true);
	csums_forbidden(c, &c->csum_nodsum, false);
	btk_vec_free(&c->csum_need);
	if (!c->extent_gap)
		csums_in_extents(c);
	chk_log_final(c);
}

/* Log trees: the root items of the log root tree, and in each log tree the file extents of
 * logged inodes, whose checksums must be logged too (or already be in the csum tree). */
void chk_log_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, 0, it) {
		struct chk_range *r;
		struct btk_inode_info ii;
		struct btk_file_extent fe;
		if (it.k.type == BTRFS_ROOT_ITEM_KEY && it.k.objectid == BTRFS_TREE_LOG_OBJECTID &&
		    it.sz >= BTK_ROOT_ITEM_V0_SIZE) {
			struct btk_root *lr = chk_push(c, &c->log_roots);
			if (!lr)
				return;
			btk_root_from_item(BTRFS_TREE_LOG_OBJECTID, it.k.offset, it.p, it.sz, lr);
		} else if (it.k.type == BTRFS_INODE_ITEM_KEY &&
			   !btk_inode_item_parse(it.p, it.sz, &ii)) {
			c->log_ino = it.k.objectid;
			c->log_ino_flags = ii.flags;
		} else if (it.k.type == BTRFS_EXTENT_DATA_KEY && it.k.objectid == c->log_ino &&
			   btk_file_extent_item_parse(it.p, it.sz, it.k.offset, &fe) ==
			       BTK_FE_WHOLE) {
			uint8_t comp = fe.compression;
			uint64_t db = fe.disk_bytenr;
			if (fe.type != BTRFS_FILE_EXTENT_INLINE && db &&
			    btk_u64set_add(&c->log_users, db) < 0) {
				c->oom = true;
				return;
			}
			if (fe.type != BTRFS_FILE_EXTENT_REG || !db ||
			    (!comp && (c->log_ino_flags & BTK_INODE_NODATASUM)))
				continue;
			if (!(r = chk_push(c, &c->log_need)))
				return;
			r->start = comp ? db : db + fe.extent_offset;
			r->len = comp ? fe.disk_num_bytes : fe.num_bytes;
		} else if (it.k.type == BTRFS_EXTENT_CSUM_KEY && c->fs->csum_size) {
			if (!(r = chk_push(c, &c->log_csums)))
				return;
			r->start = it.k.offset;
			r->len = (uint64_t)(it.sz / (uint32_t)c->fs->csum_size) * c->fs->sectorsize;
		}
	}
}

/* True when [s, s+len) is covered by the union of the ranges (sorted by start). */
static bool covered(const struct chk_ranges *v, uint64_t s, uint64_t len)
{
	uint64_t pos = s, end = s + len;
	long i = btk_vec_floor(v, s, range_key);

	for (size_t j = i >= 0 ? (size_t)i : 0; j < v->n && pos < end; j++) {
		const struct chk_range *r = btk_vec_at(v, j);
		if (r->start > pos)
			break;
		if (r->start + r->len > pos)
			pos = r->start + r->len;
	}
	return pos >= end;
}

static void chk_log_final(struct chk *c)
{
	btk_vec_sort(&c->log_csums, range_cmp);
	merge_ranges(&c->log_csums);
	for (size_t i = 0; i < c->log_need.n; i++) {
		const struct chk_range *r = btk_vec_at(&c->log_need, i);
		if (covered(&c->log_csums, r->start, r->len) ||
		    covered(&c->csums, r->start, r->len))
			continue;
		chk_rep(c, CHK_M_CSUM_LOG_MISSING, BTRFS_TREE_LOG_OBJECTID, r->start, NULL,
			CHK_U(r->start), CHK_U(r->len));
	}
}
