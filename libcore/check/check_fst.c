/* check_fst.c — the free space tree must be exactly the complement of the extents (and of the
 * superblock stripes) inside each block group. */
#include "check/check_priv.h"
#include "format/free_space.h"

#include <stdlib.h>

void chk_fst_push_free(struct chk *c, uint64_t start, uint64_t len)
{
	/* bitmap runs continue across items, up to a barrier */
	chk_range_append(c, &c->fst_free, start, len, !c->fst_barrier);
	c->fst_barrier = false;
}

static void bitmap_runs(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			uint64_t leaf)
{
	uint64_t ss = c->fs->sectorsize, bits = k->offset / ss;

	if (k->offset % ss || (bits + 7) / 8 > sz) {
		chk_rep(c, CHK_M_FS_BITMAP_SIZE, 10, leaf, k, CHK_U(((bits + 7) / 8)), CHK_U(sz));
		return;
	}
	for (uint64_t i = 0, n; btk_fst_bitmap_run(p, bits, &i, &n); i += n)
		chk_fst_push_free(c, k->objectid + i * ss, n * ss);
}

/* A free space extent or bitmap must lie in the block group of the FREE_SPACE_INFO before it
 * (keys sort so) and be of the kind that info's flags say: bitmaps with USING_BITMAPS,
 * extents without. */
static void fst_entry_vs_info(struct chk *c, const struct btk_key *k, uint64_t leaf)
{
	const struct chk_fst_info *fi =
	    c->fst_info.n ? btk_vec_at(&c->fst_info, c->fst_info.n - 1) : NULL;
	bool bitmap = k->type == BTRFS_FREE_SPACE_BITMAP_KEY;

	if (!fi || k->objectid < fi->start || k->objectid >= fi->start + fi->len ||
	    k->offset > fi->start + fi->len - k->objectid) {
		const char *what =
		    chk_part_text(bitmap ? CHK_PART_FST_BITMAP : CHK_PART_FST_EXTENT);
		if (fi)
			chk_rep(c, CHK_M_FS_OUTSIDE, 10, leaf, k, CHK_S(what), CHK_U(k->objectid),
				CHK_U(k->offset), CHK_U(fi->start), CHK_U(fi->len));
		else
			chk_rep(c, CHK_M_FS_OUTSIDE_NO_INFO, 10, leaf, k, CHK_S(what),
				CHK_U(k->objectid), CHK_U(k->offset));
		return;
	}
	if (bitmap != !!(fi->flags & BTRFS_FREE_SPACE_USING_BITMAPS))
		chk_rep(c, bitmap ? CHK_M_FS_INFO_FLAGS_BITMAP : CHK_M_FS_INFO_FLAGS_EXTENT, 10,
			leaf, k, CHK_U(fi->start));
}

void chk_fst_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, 0, it) {
		if (it.k.type == BTRFS_FREE_SPACE_INFO_KEY) {
			if (it.sz < sizeof(struct btrfs_free_space_info)) {
				chk_rep(c, CHK_M_FS_INFO_SIZE, 10, b->bytenr, &it.k);
				continue;
			}
			struct chk_fst_info *fi = chk_push(c, &c->fst_info);
			if (!fi)
				return;
			fi->start = it.k.objectid;
			fi->len = it.k.offset;
			fi->count = BTK_GET(struct btrfs_free_space_info, it.p, extent_count);
			fi->flags = BTK_GET(struct btrfs_free_space_info, it.p, flags);
			c->fst_barrier = true; /* free space never runs across block groups */
		} else if (it.k.type == BTRFS_FREE_SPACE_EXTENT_KEY) {
			fst_entry_vs_info(c, &it.k, b->bytenr);
			chk_fst_push_free(c, it.k.objectid, it.k.offset);
		} else if (it.k.type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			fst_entry_vs_info(c, &it.k, b->bytenr);
			bitmap_runs(c, &it.k, it.p, it.sz, b->bytenr);
		} else {
			chk_rep(c, CHK_M_FS_ITEM_TYPE, 10, b->bytenr, &it.k);
		}
	}
}

/* Logical ranges that hold superblock copies: never free, never extents. */
static int super_ranges(struct chk *c, struct chk_ranges *out)
{
	for (int d = 0; d < c->fs->ndevs; d++) {
		const struct btk_fs_dev *fd = &c->fs->devs[d];
		for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
			uint64_t off = btk_super_offset(m), logical;
			const struct btk_chunk *ch;
			bool parity = false;
			if (off + BTK_SUPER_SIZE > fd->total_bytes)
				continue;
			if (btk_map_physical(c->fs, fd->devid, off, &logical, &ch, &parity) ||
			    parity || !ch)
				continue;
			struct chk_range *r = btk_vec_push(out);
			if (!r)
				return -1;
			r->start =
			    ch->logical + (logical - ch->logical) / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
			r->len = BTK_STRIPE_LEN;
		}
	}
	return 0;
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct chk_range *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

static uint64_t ext_key(const void *p)
{
	return ((const struct chk_extent *)p)->bytenr;
}

static uint64_t range_key(const void *p)
{
	return ((const struct chk_range *)p)->start;
}

static uint64_t bg_start_key(const void *p)
{
	return ((const struct chk_bg *)p)->start;
}

/* Used space in a block group, as a stream: extents and super stripes merged in order. */
struct used_iter {
	struct chk *c;
	const struct chk_ranges *supers;
	size_t ei, si;
	uint64_t end;
};

/* Next used range starting at or after pos (clipped to the group); false when none. */
static bool next_used(struct used_iter *it, uint64_t pos, uint64_t *s, uint64_t *e)
{
	const struct chk_extent *x = NULL;
	const struct chk_range *y = NULL;

	while (it->ei < it->c->extents.n) {
		x = btk_vec_at(&it->c->extents, it->ei);
		if (x->bytenr + x->len > pos)
			break;
		it->ei++;
		x = NULL;
	}
	while (it->si < it->supers->n) {
		y = btk_vec_at(it->supers, it->si);
		if (y->start + y->len > pos)
			break;
		it->si++;
		y = NULL;
	}
	if (x && x->bytenr >= it->end)
		x = NULL;
	if (y && y->start >= it->end)
		y = NULL;
	if (!x && !y)
		return false;
	if (x && (!y || x->bytenr <= y->start)) {
		*s = x->bytenr;
		*e = x->bytenr + x->len;
	} else {
		*s = y->start;
		*e = y->start + y->len;
	}
	if (*s < pos)
		*s = pos;
	if (*e > it->end)
		*e = it->end;
	return true;
}

/* Free space per the tree, minus the superblock stripes (which the kernel may or may not list
 * as free: it keeps them out of allocation in memory), as a stream of pieces. */
struct free_iter {
	const struct chk_ranges *fr, *supers;
	size_t ai;
	uint64_t cur, end;
};

static bool next_free(struct free_iter *it, uint64_t *s, uint64_t *e)
{
	while (it->ai < it->fr->n) {
		const struct chk_range *a = btk_vec_at(it->fr, it->ai);
		if (a->start >= it->end)
			return false;
		uint64_t ps = a->start > it->cur ? a->start : it->cur, pe = a->start + a->len;
		bool moved = false;
		if (ps >= pe) {
			it->ai++;
			continue;
		}
		for (size_t i = 0; i < it->supers->n; i++) {
			const struct chk_range *y = btk_vec_at(it->supers, i);
			uint64_t ye = y->start + y->len;
			if (y->start >= pe || ye <= ps)
				continue;
			if (y->start <= ps) {
				it->cur = ye;
				moved = true;
				break;
			}
			pe = y->start;
		}
		if (moved)
			continue;
		*s = ps;
		*e = pe;
		it->cur = pe;
		return true;
	}
	return false;
}

static void fst_mismatch(struct chk *c, const struct chk_bg *bg, uint64_t s, uint64_t e, bool have,
			 uint64_t as, uint64_t ae)
{
	char want[CHK_TEXT_MAX], got[CHK_TEXT_MAX];

	if (e > s)
		chk_part(want, sizeof(want), CHK_PART_FST_FREE, CHK_U(s), CHK_U(e));
	else
		chk_part(want, sizeof(want), CHK_PART_FST_NO_MORE);
	if (have)
		chk_part(got, sizeof(got), CHK_PART_FST_FREE, CHK_U(as), CHK_U(ae));
	else
		chk_part(got, sizeof(got), CHK_PART_FST_NOTHING);
	chk_rep(c, c->fs_v1 ? CHK_M_FS_DIFFERS_V1 : CHK_M_FS_DIFFERS, c->fs_v1 ? 1 : 10,
		have ? as : s, NULL, CHK_U(bg->start), CHK_S(want), CHK_S(got));
}

/* Free bytes of a block group according to the extents and superblock stripes. */
static uint64_t expected_free(struct chk *c, const struct chk_bg *bg,
			      const struct chk_ranges *supers)
{
	uint64_t end = bg->start + bg->len, pos = bg->start, total = 0, us, ue;
	long ei = btk_vec_floor(&c->extents, bg->start, ext_key);
	long si = btk_vec_floor(supers, bg->start, range_key);
	struct used_iter it = {c, supers, ei >= 0 ? (size_t)ei : 0, si >= 0 ? (size_t)si : 0, end};

	while (pos < end) {
		if (!next_used(&it, pos, &us, &ue)) {
			total += end - pos;
			break;
		}
		if (us > pos)
			total += us - pos;
		pos = ue > pos ? ue : pos + 1;
	}
	return total;
}

static void bg_free_space(struct chk *c, const struct chk_bg *bg, const struct chk_ranges *supers)
{
	uint64_t end = bg->start + bg->len, pos = bg->start, count = 0, as, ae;
	long fi = btk_vec_floor(&c->fst_free, bg->start, range_key);
	long ei = btk_vec_floor(&c->extents, bg->start, ext_key);
	struct used_iter it = {c, supers, ei >= 0 ? (size_t)ei : 0, 0, end};
	struct free_iter fit = {&c->fst_free, supers, fi >= 0 ? (size_t)fi : 0, bg->start, end};

	while (fit.ai < c->fst_free.n &&
	       ((const struct chk_range *)btk_vec_at(&c->fst_free, fit.ai))->start < bg->start)
		fit.ai++;
	uint64_t listed = 0;
	for (size_t i = fit.ai; i < c->fst_free.n; i++, count++) {
		const struct chk_range *r = btk_vec_at(&c->fst_free, i);
		if (r->start >= end)
			break;
		listed += r->len;
	}
	/* the kernel loads a v1 cache only if its total matches the group's free bytes, and
	 * rebuilds it otherwise: only a cache it would trust can be wrong */
	if (c->fs_v1 && listed != expected_free(c, bg, supers))
		return;
	while (pos < end) {
		uint64_t us, ue, fe = end;
		bool used = next_used(&it, pos, &us, &ue);
		if (used && us <= pos) {
			pos = ue > pos ? ue : pos + 1;
			continue;
		}
		if (used)
			fe = us;
		/* [pos, fe) should be the next piece of free space */
		bool have = next_free(&fit, &as, &ae);
		if (!have || as != pos || ae != fe) {
			fst_mismatch(c, bg, pos, fe, have, as, ae);
			return;
		}
		pos = fe;
	}
	if (next_free(&fit, &as, &ae)) {
		fst_mismatch(c, bg, 0, 0, true, as, ae);
		return;
	}
	if (c->fs_v1)
		return; /* v1 caches were only gathered for their block groups; no counts */
	long ii = btk_vec_floor(&c->fst_info, bg->start, range_key);
	const struct chk_fst_info *info = ii >= 0 ? btk_vec_at(&c->fst_info, (size_t)ii) : NULL;
	if (!info || info->start != bg->start || info->len != bg->len)
		chk_rep(c, CHK_M_FS_NO_INFO, 10, bg->start, NULL, CHK_U(bg->start));
	else if (info->count != count)
		chk_rep(c, CHK_M_FS_INFO_COUNT, 10, bg->start, NULL, CHK_U(bg->start), CHK_U(count),
			CHK_U(info->count));
}

/* Compares c->fst_free with the complement of the extents in every block group (v1: only
 * those whose cache was loaded, listed in c->fst_info). */
void chk_free_space_compare(struct chk *c)
{
	struct chk_ranges supers = {0};

	if (super_ranges(c, &supers)) {
		c->oom = true;
		btk_vec_free(&supers);
		return;
	}
	btk_vec_sort(&supers, range_cmp);
	for (size_t i = 0; i < c->bgs.n; i++) {
		const struct chk_bg *bg = btk_vec_at(&c->bgs, i);
		if (c->fs_v1) {
			long ii = btk_vec_floor(&c->fst_info, bg->start, range_key);
			const struct chk_fst_info *info =
			    ii >= 0 ? btk_vec_at(&c->fst_info, (size_t)ii) : NULL;
			if (!info || info->start != bg->start)
				continue;
		}
		bg_free_space(c, bg, &supers);
	}
	btk_vec_free(&supers);
}

/* True for what mkfs.btrfs (6.2) leaves of the temporary block groups it removes: an info
 * below every chunk, listing its whole range free in one extent or one bitmap run (btrfs
 * check accepts it). */
static bool fst_stale_mkfs(const struct chk *c, const struct chk_fst_info *fi)
{
	if (fi->count != 1 || (c->fs->nchunks && c->fs->chunks[0]->logical < fi->start + fi->len))
		return false;
	long i = btk_vec_floor(&c->fst_free, fi->start, range_key);
	const struct chk_range *r = i >= 0 ? btk_vec_at(&c->fst_free, (size_t)i) : NULL;
	return r && r->start == fi->start && r->len == fi->len;
}

/* Every FREE_SPACE_INFO names a block group (whose entries the comparison then reads). */
static void fst_infos_vs_bgs(struct chk *c)
{
	for (size_t i = 0; i < c->fst_info.n; i++) {
		const struct chk_fst_info *fi = btk_vec_at(&c->fst_info, i);
		long b = btk_vec_floor(&c->bgs, fi->start, bg_start_key);
		const struct chk_bg *bg = b >= 0 ? btk_vec_at(&c->bgs, (size_t)b) : NULL;
		if ((bg && bg->start == fi->start) || fst_stale_mkfs(c, fi))
			continue;
		struct btk_key k = {fi->start, BTRFS_FREE_SPACE_INFO_KEY, fi->len};
		chk_rep(c, CHK_M_FS_NO_BG, 10, fi->start, &k, CHK_U(fi->start), CHK_U(fi->len));
	}
}

void chk_fst_final(struct chk *c)
{
	if (c->has_fst && !c->fs_v1)
		fst_infos_vs_bgs(c);
	/* log tree blocks are allocated outside the extent tree: the comparison would lie */
	if (c->has_fst && !btk_le64(c->fs->sb.log_root) && !c->extent_gap)
		chk_free_space_compare(c);
	btk_vec_free(&c->fst_free);
	btk_vec_free(&c->fst_info);
}
