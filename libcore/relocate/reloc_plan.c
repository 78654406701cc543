/* reloc_plan.c — whether emptying the chunks past a size works, and the smallest size it
 * reaches.
 *
 * Shrinking to T by relocation empties every chunk with a stripe on the device past T into the
 * chunks that stay. The check is the apply's own allocation, replayed: data extents go in
 * address order into the first free range that holds them (first fit over the kept data block
 * groups, as the write path allocates), so fragmented free space is judged as it is. Tree
 * blocks need no contiguity; a pass copies every block it changes at most once, so the kept
 * metadata block groups must hold the emptied tree blocks plus a copy of every tree block of
 * the filesystem and a margin, and afterwards leave the kernel the free metadata it needs to
 * write after mounting (or what it had, when that was less). New chunks are never counted on, so
 * the result is exact: what the plan accepts, the apply carries out. Mixed block groups are not
 * emptied this way.
 */
#include "base/error.h"
#include "base/vec.h"
#include "format/extent_refs.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define META_MARGIN (4ULL << 20)

int rl_tree_search(struct btk_fs *fs, uint64_t tree, const struct btk_key *key, bool ge,
		   struct btk_path *p)
{
	struct btk_root rt;
	int ret = btk_root_find(fs, tree, &rt);

	btk_path_init(p);
	if (ret)
		return ret;
	return ge ? btk_search_ge(fs, &rt, key, p) : btk_search(fs, &rt, key, p);
}

int rl_extents_each(struct btk_fs *fs, uint64_t start, uint64_t end,
		    int (*fn)(void *ctx, uint64_t bytenr, uint64_t len), void *ctx)
{
	struct btk_key k = {start, 0, 0}, f;
	struct btk_path p;
	int ret = rl_tree_search(fs, BTRFS_EXTENT_TREE_OBJECTID, &k, true, &p);

	for (; ret == 0; ret = btk_next(fs, &p)) {
		uint64_t len;
		btk_path_key(&p, &f);
		if (f.objectid >= end)
			break;
		if ((len = btk_extent_key_len(&f, fs->nodesize)) &&
		    (ret = fn(ctx, f.objectid, len)))
			break;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* rl_range_add as an rl_extents_each callback */
static int add_range(void *ctx, uint64_t start, uint64_t len)
{
	return rl_range_add(ctx, start, len);
}

/* Extents of the committed extent tree in [start, end) as (start, len) ranges. */
static int used_ranges(struct btk_fs *fs, uint64_t start, uint64_t end, struct rl_ranges *out)
{
	return rl_extents_each(fs, start, end, add_range, out);
}

/* True when a stripe of c on devid ends past size: where the layout (the device after the
 * planned stripe moves) puts it, or where the chunk map has it. */
static bool on_past(const struct btk_chunk *c, const struct rl_layout *l, uint64_t devid,
		    uint64_t size)
{
	uint64_t sl = btk_chunk_stripe_len(c);

	if (l) {
		for (int i = 0; i < l->n; i++)
			if (l->s[i].logical == c->logical && l->s[i].off + l->s[i].len > size)
				return true;
		return false;
	}
	for (int i = 0; i < c->num_stripes; i++)
		if (c->stripes[i].devid == devid && c->stripes[i].offset + sl > size)
			return true;
	return false;
}

uint64_t rl_class_of(uint64_t type)
{
	return type &
	       (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM);
}

static uint64_t sum(const struct rl_ranges *r)
{
	uint64_t s = 0;

	for (int i = 0; i < r->n; i++)
		s += r->v[i].len;
	return s;
}

/* Removes [start, start+len) from the sorted ranges. */
static int cut_out(struct rl_ranges *r, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;

	for (int i = 0; i < r->n; i++) {
		uint64_t s = r->v[i].start, e = s + r->v[i].len;
		if (e <= start || s >= end)
			continue;
		if (s < start && e > end) {
			if (btk_array_room_int(r->v, r->n, r->cap))
				return btk_err(ENOMEM, "out of memory");
			memmove(&r->v[i + 2], &r->v[i + 1], (size_t)(r->n - i - 1) * sizeof(*r->v));
			r->v[i + 1] = (struct rl_range){end, e - end};
			r->v[i].len = start - s;
			r->n++;
			return 0;
		}
		if (s < start)
			r->v[i].len = start - s;
		else if (e > end)
			r->v[i] = (struct rl_range){end, e - end};
		else
			r->v[i].len = 0;
	}
	return 0;
}

/* Free ranges of chunk c: its length minus extents and the 64 KiB stripes holding superblock
 * mirrors (exactly what the write path excludes). */
static int free_ranges(struct btk_fs *fs, const struct btk_chunk *c, const struct rl_ranges *u,
		       struct rl_ranges *out)
{
	uint64_t pos = c->logical, end = c->logical + c->length;
	int ret = 0;

	for (int i = 0; i <= u->n && !ret; i++) {
		uint64_t s = i < u->n ? u->v[i].start : end;
		if (s > pos && (ret = rl_range_add(out, pos, s - pos)))
			break;
		if (i < u->n && u->v[i].start + u->v[i].len > pos)
			pos = u->v[i].start + u->v[i].len;
	}
	/* superblock stripes: the write path never allocates there */
	for (int i = 0; i < c->num_stripes && !ret; i++)
		for (int m = 0; m < BTK_SUPER_MIRRORS && !ret; m++) {
			const struct btk_chunk *hc = NULL;
			uint64_t lg = 0;
			bool parity = false;
			if (btk_map_physical(fs, c->stripes[i].devid, btk_super_offset(m), &lg, &hc,
					     &parity) ||
			    hc != c || parity) {
				btk_err_clear();
				continue;
			}
			/* the 64 KiB stripe holding it, as the write path excludes it: a wider
			 * margin would not be safe either, first fit would then place the
			 * extents elsewhere than the apply does */
			lg = c->logical + (lg - c->logical) / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
			ret = cut_out(out, lg, BTK_STRIPE_LEN);
		}
	return ret;
}

/* Free bytes of metadata chunk c holding u bytes, less a MiB the allocator may not reach. */
static uint64_t chunk_room(const struct btk_chunk *c, uint64_t u)
{
	return c->length > u + (1ULL << 20) ? c->length - u - (1ULL << 20) : 0;
}

/* First fit over free ranges in O(log n) per extent: a tree over the ranges, in address
 * order, whose nodes hold the largest free length below them (the plain scan from the lowest
 * range was quadratic in the extents of a fragmented filesystem). */
struct fit {
	struct rl_ranges *r;
	uint64_t *mx;
	int size; /* leaves: a power of two >= r->n */
};

static void fit_set(struct fit *f, int i)
{
	int node = f->size + i;

	f->mx[node] = i < f->r->n ? f->r->v[i].len : 0;
	for (node /= 2; node; node /= 2)
		f->mx[node] =
		    f->mx[2 * node] > f->mx[2 * node + 1] ? f->mx[2 * node] : f->mx[2 * node + 1];
}

/* Aligns every range to ss (the write path allocates sectors) and builds the tree. */
static int fit_init(struct fit *f, struct rl_ranges *r, uint32_t ss)
{
	f->r = r;
	f->size = 1;
	while (f->size < r->n)
		f->size *= 2;
	f->mx = calloc(2 * (size_t)f->size, sizeof(*f->mx));
	if (!f->mx)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < r->n; i++) {
		uint64_t s = (r->v[i].start + ss - 1) / ss * ss, e = r->v[i].start + r->v[i].len;
		r->v[i] = (struct rl_range){s, e > s ? e - s : 0};
	}
	for (int i = 0; i < f->size; i++)
		fit_set(f, i);
	return 0;
}

/* The lowest range holding len (a multiple of the sector size) gives it up (*at: where);
 * false if none. */
static bool first_fit(struct fit *f, uint64_t len, uint64_t *at)
{
	int node = 1;

	if (!f->size || f->mx[1] < len)
		return false;
	while (node < f->size)
		node = f->mx[2 * node] >= len ? 2 * node : 2 * node + 1;
	node -= f->size;
	*at = f->r->v[node].start;
	f->r->v[node].start += len;
	f->r->v[node].len -= len;
	fit_set(f, node);
	return true;
}

/* A tree block of ns bytes at the lowest place first fit gives one (aligned to ns, so within a
 * 64 KiB stripe): the range's start up to it is given up with it, and a range too short
 * for an aligned block is given up whole (as fragments it counts as nothing); false if
 * none. */
static bool first_fit_block(struct fit *f, uint32_t ns, uint64_t *at)
{
	while (f->size && f->mx[1] >= ns) {
		int node = 1;
		while (node < f->size)
			node = f->mx[2 * node] >= ns ? 2 * node : 2 * node + 1;
		node -= f->size;
		struct rl_range *r = &f->r->v[node];
		uint64_t a = (r->start + ns - 1) / ns * ns, e = r->start + r->len;
		if (a + ns <= e) {
			*at = a;
			*r = (struct rl_range){a + ns, e - a - ns};
		} else {
			r->len = 0;
		}
		fit_set(f, node);
		if (a + ns <= e)
			return true;
	}
	return false;
}

void rl_usage_free(struct rl_usage *u)
{
	for (int i = 0; i < u->n; i++) {
		free(u->used[i].v);
		free(u->tree[i].v);
	}
	free(u->used);
	free(u->tree);
	u->used = u->tree = NULL, u->n = 0;
}

static bool is_mixed(uint64_t type)
{
	return rl_class_of(type) == (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA);
}

/* The tree blocks of [start, end) (a mixed chunk, where they lie among data extents). */
static int tree_ranges(struct btk_fs *fs, uint64_t start, uint64_t end, struct rl_ranges *out)
{
	struct btk_key k = {start, 0, 0}, f;
	struct btk_path p;
	int ret = rl_tree_search(fs, BTRFS_EXTENT_TREE_OBJECTID, &k, true, &p);

	for (; ret == 0; ret = btk_next(fs, &p)) {
		struct btk_extent_head h;
		uint32_t size = 0;
		const uint8_t *d;
		uint64_t len;
		btk_path_key(&p, &f);
		if (f.objectid >= end)
			break;
		if (!(len = btk_extent_key_len(&f, fs->nodesize)))
			continue;
		d = btk_path_data(&p, &size);
		if (f.type == BTRFS_METADATA_ITEM_KEY ||
		    (d && btk_extent_head_parse(&f, d, size, &h) != -EUCLEAN &&
		     (h.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK)))
			ret = rl_range_add(out, f.objectid, len);
		if (ret)
			break;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

int rl_usage_load(struct btk_fs *fs, struct rl_usage *u)
{
	size_t n = fs->nchunks ? (size_t)fs->nchunks : 1;
	int ret = 0;

	u->n = 0;
	u->used = calloc(n, sizeof(*u->used));
	u->tree = calloc(n, sizeof(*u->tree));
	if (!u->used || !u->tree) {
		free(u->used);
		free(u->tree);
		u->used = u->tree = NULL;
		return btk_err(ENOMEM, "out of memory");
	}
	for (; u->n < fs->nchunks && !ret; u->n++) {
		const struct btk_chunk *c = fs->chunks[u->n];
		ret = used_ranges(fs, c->logical, c->logical + c->length, &u->used[u->n]);
		if (!ret && is_mixed(c->type))
			ret = tree_ranges(fs, c->logical, c->logical + c->length, &u->tree[u->n]);
	}
	if (ret)
		rl_usage_free(u);
	return ret;
}

/* Whether r is one of the (sorted) tree-block ranges t. */
static bool is_tree(const struct rl_ranges *t, const struct rl_range *r)
{
	int lo = 0, hi = t->n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (t->v[mid].start == r->start)
			return true;
		if (t->v[mid].start < r->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Free ranges of new chunk n (at its planned logical address): the 64 KiB stripe holding a
 * superblock mirror that starts inside one of its stripes cut out, as free_ranges does. */
static int new_free(const struct rl_new *n, struct rl_ranges *out)
{
	int ret = rl_range_add(out, n->logical, n->length);

	for (int i = 0; i < n->nstripes && !ret; i++)
		for (int m = 0; m < BTK_SUPER_MIRRORS && !ret; m++) {
			uint64_t o = btk_super_offset(m);
			if (o < n->phys[i] || o >= n->phys[i] + n->length)
				continue;
			ret = cut_out(
			    out, n->logical + (o - n->phys[i]) / BTK_STRIPE_LEN * BTK_STRIPE_LEN,
			    BTK_STRIPE_LEN);
		}
	return ret;
}

/* Index of the chunk (or new chunk, after the chunks) holding logical, for placements. */
static int owner_of(struct btk_fs *fs, const struct rl_spec *sp, uint64_t lg)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (lg >= fs->chunks[i]->logical &&
		    lg < fs->chunks[i]->logical + fs->chunks[i]->length)
			return i;
	for (int i = 0; i < sp->nnew; i++)
		if (lg >= sp->news[i].logical && lg < sp->news[i].logical + sp->news[i].length)
			return fs->nchunks + i;
	return -1;
}

/* Mixed block groups: the metadata a move needs (eused, the tree blocks that move; all, every
 * tree block; keep, the kernel's room afterwards) placed in nodesize blocks from the lowest free
 * space of fit; *efree: what the placed blocks hold, the metadata the move may use. */
static int mixed_meta(struct btk_fs *fs, struct fit *fit, const struct rl_spec *sp,
		      const struct rl_check *out, uint64_t eused, uint64_t all, uint64_t keep,
		      uint64_t *efree)
{
	uint64_t need = eused + all + META_MARGIN, at;

	(void)sp;
	if (eused + keep > need)
		need = eused + keep;
	*efree = 0;
	if (!out->n && !eused)
		return 0;
	while (*efree < need && first_fit_block(fit, fs->nodesize, &at))
		*efree += fs->nodesize;
	/* a block never ends where the free space does not reach a whole one: what first fit
	 * could not give (fragments) counts as nothing */
	return 0;
}

int rl_check_spec(struct btk_fs *fs, const struct rl_spec *sp, struct rl_check *out)
{
	struct rl_ranges dfree = {0}, edata = {0};
	uint64_t efree_meta[2] = {0, 0}, eused_meta[2] = {0, 0}, all_meta[2] = {0, 0};
	uint64_t free_before = 0, room = btk_kernel_meta_room(fs->nodesize), keep;
	const struct rl_usage *use = sp->use;
	bool any_mixed = false;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	size_t capchunks = 0; /* room in out->chunks */
	out->fits = true;
	/* every kind of chunk keeps one: without a data chunk the kernel could write no data
	 * until it has room for a new one, which a shrink to the minimum leaves it none of */
	{
		/* by class bits (data 1, system 2, metadata 4): chunks seen, chunks kept */
		bool seen[8] = {0}, kept[8] = {0};
		for (int i = 0; i < fs->nchunks + sp->nnew; i++) {
			uint64_t cl = rl_class_of(i < fs->nchunks ? fs->chunks[i]->type
								  : sp->news[i - fs->nchunks].type);
			int k = (cl & BTRFS_BLOCK_GROUP_DATA ? 1 : 0) |
				(cl & BTRFS_BLOCK_GROUP_SYSTEM ? 2 : 0) |
				(cl & BTRFS_BLOCK_GROUP_METADATA ? 4 : 0);
			seen[k] = true;
			kept[k] |= i >= fs->nchunks || sp->keep[i] > 0;
		}
		for (int k = 0; k < 8; k++)
			if (seen[k] && !kept[k])
				out->fits = false;
	}
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t cl = rl_class_of(c->type), u = 0, line = c->logical + sp->keep[i];
		bool frozen = sp->frozen && sp->frozen[i];
		bool whole = sp->keep[i] >= c->length, gone = !sp->keep[i];
		bool mixed = is_mixed(c->type);
		int mi = (cl & BTRFS_BLOCK_GROUP_SYSTEM) ? 1 : 0;
		if (!whole && !frozen) {
			if (btk_array_room_int(out->chunks, out->n, capchunks)) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			out->chunks[out->n++] = c->logical;
		}
		/* extents reaching past the line move; the others stay (a mixed chunk holds
		 * both kinds: its data extents go with the data, its tree blocks with the
		 * metadata) */
		for (int j = 0; j < use->used[i].n && !ret; j++) {
			const struct rl_range *r = &use->used[i].v[j];
			bool moves = !frozen && r->start + r->len > line;
			bool data =
			    cl == BTRFS_BLOCK_GROUP_DATA || (mixed && !is_tree(&use->tree[i], r));
			if (data)
				ret = moves ? rl_range_add(&edata, r->start, r->len) : 0;
			else
				(moves ? &eused_meta[mi] : &u)[0] += r->len;
			all_meta[mi] += data ? 0 : r->len;
		}
		if (!ret && (cl & BTRFS_BLOCK_GROUP_DATA) && !gone && !frozen) {
			struct btk_chunk cut = *c;
			size_t at = dfree.n;
			cut.length = sp->keep[i] < c->length ? sp->keep[i] : c->length;
			/* the place of an extent that moves (one reaching past the line from
			 * below it) is not free before the commit */
			ret = free_ranges(fs, c, &use->used[i], &dfree);
			/* nothing past the line is allocated (the chunk keeps [0, keep)) */
			for (size_t k = at; k < (size_t)dfree.n && !ret; k++)
				if (dfree.v[k].start + dfree.v[k].len > c->logical + cut.length)
					dfree.v[k].len =
					    dfree.v[k].start >= c->logical + cut.length
						? 0
						: c->logical + cut.length - dfree.v[k].start;
		} else if (cl != BTRFS_BLOCK_GROUP_DATA && !gone && !frozen) {
			struct btk_chunk cut = *c;
			cut.length = sp->keep[i] < c->length ? sp->keep[i] : c->length;
			efree_meta[mi] += chunk_room(&cut, u);
		}
		if (cl != BTRFS_BLOCK_GROUP_DATA && !mi)
			free_before += chunk_room(c, sum(&use->used[i]));
		any_mixed |= mixed;
	}
	for (int i = 0; i < sp->nnew && !ret; i++) {
		const struct rl_new *n = &sp->news[i];
		uint64_t cl = rl_class_of(n->type);
		if (cl & BTRFS_BLOCK_GROUP_DATA)
			ret = new_free(n, &dfree);
		else
			efree_meta[(cl & BTRFS_BLOCK_GROUP_SYSTEM) ? 1 : 0] +=
			    chunk_room(&(struct btk_chunk){.length = n->length}, 0);
	}
	struct fit fit = {0};
	if (!ret)
		ret = fit_init(&fit, &dfree, fs->sectorsize);
	/* mixed block groups: the tree blocks the move makes take their free space too, lowest
	 * first as the write path places them, so they are placed first, all the metadata
	 * the move may need (their copies, a copy of every tree block, a margin, or the
	 * kernel's room if more), and the data extents in what is left: a bound, as the apply
	 * interleaves them (it needs less metadata than that) */
	if (!ret && any_mixed)
		ret = mixed_meta(fs, &fit, sp, out, eused_meta[0], all_meta[0],
				 room < free_before ? room : free_before, &efree_meta[0]);
	for (int i = 0; i < edata.n && !ret && (out->fits || sp->count_left); i++) {
		uint64_t len = (edata.v[i].len + fs->sectorsize - 1) / fs->sectorsize *
			       fs->sectorsize,
			 at;
		out->bytes += edata.v[i].len;
		if (!first_fit(&fit, len, &at))
			out->fits = false, out->data_left += len;
		else if (sp->placed) {
			int o = owner_of(fs, sp, at);
			ret = o < 0 ? btk_err(EUCLEAN, "placement %llu outside every chunk",
					      (unsigned long long)at)
				    : rl_range_add(&sp->placed[o], at, edata.v[i].len);
		}
	}
	free(fit.mx);
	for (int mi = 0; mi < 2 && !ret; mi++) {
		out->bytes += eused_meta[mi];
		/* metadata always: moving data copies the leaves that point at it */
		bool need = mi == 0 ? out->n > 0 : eused_meta[mi] > 0;
		if (need && eused_meta[mi] + all_meta[mi] + (mi ? RL_SYS_MARGIN : META_MARGIN) >
				efree_meta[mi])
			out->fits = false;
	}
	/* what the kernel needs to write after mounting, or at least what it had */
	keep = room < free_before ? room : free_before;
	if (out->n && eused_meta[0] + keep > efree_meta[0])
		out->fits = false;
	out->meta_need = eused_meta[0] + all_meta[0] + META_MARGIN;
	if (eused_meta[0] + keep > out->meta_need)
		out->meta_need = eused_meta[0] + keep;
	out->meta_free = efree_meta[0];
	free(dfree.v);
	free(edata.v);
	if (ret) {
		free(out->chunks);
		out->chunks = NULL;
	}
	return ret;
}

int rl_check_set(struct btk_fs *fs, const bool *gone, const struct rl_usage *use,
		 struct rl_check *out)
{
	uint64_t *keep = calloc(fs->nchunks ? (size_t)fs->nchunks : 1, sizeof(*keep));
	struct rl_spec sp = {.use = use, .keep = keep};
	int ret;

	if (!keep)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->nchunks; i++)
		keep[i] = gone[i] ? 0 : fs->chunks[i]->length;
	ret = rl_check_spec(fs, &sp, out);
	free(keep);
	return ret;
}

/* rl_check_set for the chunks with a stripe past size */
static int check(struct btk_fs *fs, const struct rl_layout *l, uint64_t devid, uint64_t size,
		 const struct rl_usage *use, struct rl_check *out)
{
	bool *gone = calloc(fs->nchunks ? (size_t)fs->nchunks : 1, sizeof(*gone));
	int ret;

	if (!gone)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->nchunks; i++)
		gone[i] = on_past(fs->chunks[i], l, devid, size);
	ret = rl_check_set(fs, gone, use, out);
	free(gone);
	return ret;
}

int rl_logical_check(struct btk_fs *fs, const struct rl_layout *l, uint64_t devid, uint64_t size,
		     struct rl_check *out)
{
	struct rl_usage use;
	int ret = rl_usage_load(fs, &use);

	if (ret)
		return ret;
	ret = check(fs, l, devid, size, &use, out);
	rl_usage_free(&use);
	return ret;
}

int rl_logical_minimum(struct btk_fs *fs, const struct rl_layout *l, uint64_t devid,
		       const struct rl_usage *use, uint64_t *min)
{
	uint64_t at = UINT64_MAX;
	int ret = 0;

	*min = 0;
	while (!ret) {
		uint64_t next = 0;
		struct rl_check chk;
		/* the next lower stripe end on the device: the size that empties one more */
		for (int i = 0; i < l->n; i++) {
			uint64_t e = l->s[i].off + l->s[i].len;
			if (e < at && e > next)
				next = e;
		}
		if (!next)
			break;
		if ((ret = check(fs, l, devid, next, use, &chk)))
			break;
		free(chk.chunks);
		if (!chk.fits)
			break;
		*min = at = next;
	}
	return ret;
}
