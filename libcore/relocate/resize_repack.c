/* resize_repack.c — shrinking below what whole-stripe moves, cuts and emptying reach: the
 * chunks are repacked.
 *
 * Run 0 compacts the chunks that end at or below the size: every metadata chunk but the first
 * is emptied into the first, which is cut to what the metadata holds plus what the move needs
 * and the kernel's reserve (rl_meta_keep); data chunks (when that is not enough) are cut to
 * what they hold plus a slack, the extents past each cut moving into the free space below the
 * cuts; the system chunk moves into a new one sized to what it holds (move_system). Run 1 cuts each
 * chunk reaching past the size at it (a chunk past it entirely, or not a SINGLE/DUP data or
 * metadata chunk, is emptied whole) and moves what lies past the cuts into the free space of the
 * chunks below and into new chunks made in the holes below the size, sized to fit (metadata first,
 * then data, lowest hole first, as the write path's allocator places a chunk of a given stripe
 * length). The last attempts (mode 3, for when no device has room for new chunks) also cut the
 * data chunks reaching past the size to what they hold and a slack and keep the other chunks
 * wholly past it, their stripes moving below the size afterwards. Each run is the apply's own
 * allocation replayed (rl_check_spec), the places of the new
 * chunks the allocator's: a plan the check accepts is what the apply carries out, so the minimum (a
 * binary search over the sizes) is what -M reaches. Single-device filesystems with SINGLE and DUP
 * chunks only. Mixed block groups take run 1 only (they hold no chunk of one kind to compact into):
 * their tree blocks and data extents past the size move into their free space below it and into new
 * mixed chunks.
 */
#include "base/error.h"
#include "base/vec.h"
#include "format/raid.h"
#include "relocate/relocate_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SZ_1M (1ULL << 20)

static uint64_t up_1m(uint64_t v)
{
	return (v + SZ_1M - 1) / SZ_1M * SZ_1M;
}

static uint64_t used_of(const struct rl_ranges *r)
{
	uint64_t s = 0;

	for (int i = 0; i < r->n; i++)
		s += r->v[i].len;
	return s;
}

/* Repacking applies: every chunk a whole copy in each of its stripes (SINGLE, DUP, RAID1,
 * RAID1C3, RAID1C4), every device present; the chunks on other devices than devid take what
 * moves too, and new chunks go where the allocator puts them, on any device. */
static bool applies(const struct btk_fs *fs, uint64_t devid)
{
	const uint64_t whole = BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1_MASK;

	if (!btk_fs_dev_find((struct btk_fs *)fs, devid))
		return false;
	for (int i = 0; i < fs->ndevs; i++)
		if (!fs->devs[i].dev)
			return false;
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		if ((c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~whole) ||
		    c->num_stripes > BTK_RESIZE_NEW_STRIPES || btk_chunk_stripe_len(c) != c->length)
			return false;
	}
	return true;
}

/* Where chunk c's stripes on devid end last (its stripes are its length long); 0 if none is
 * there. */
static uint64_t last_off(const struct btk_chunk *c, uint64_t devid)
{
	uint64_t o = 0;

	for (int j = 0; j < c->num_stripes; j++)
		if (c->stripes[j].devid == devid && c->stripes[j].offset > o)
			o = c->stripes[j].offset;
	return o;
}

static bool on_dev(const struct btk_chunk *c, uint64_t devid)
{
	for (int j = 0; j < c->num_stripes; j++)
		if (c->stripes[j].devid == devid)
			return true;
	return false;
}

/* ---- device holes, as the write path's chunk allocator sees them ---- */

/* Busy device ranges, sorted: the first MiB, every stripe as long as keep says, new chunks
 * placed so far, and everything from the size on. */
struct dev_map {
	struct rl_ranges busy;
	uint64_t size;
};

static int cmp_range(const void *a, const void *b)
{
	const struct rl_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int busy_add(struct dev_map *m, uint64_t start, uint64_t len)
{
	int ret = len ? rl_range_add(&m->busy, start, len) : 0;

	if (!ret && m->busy.n > 1) /* qsort wants a buffer even for nothing */
		qsort(m->busy.v, (size_t)m->busy.n, sizeof(*m->busy.v), cmp_range);
	return ret;
}

/* Lowest hole of at least len below the size (the allocator's find_hole); false if none. */
static bool hole_for(const struct dev_map *m, uint64_t len, uint64_t *out)
{
	uint64_t pos = 0;

	for (int i = 0; i <= m->busy.n; i++) {
		uint64_t end = i < m->busy.n ? m->busy.v[i].start : m->size;
		if (end > m->size)
			end = m->size;
		if (end > pos && end - pos >= len) {
			*out = pos;
			return true;
		}
		if (i < m->busy.n && m->busy.v[i].start + m->busy.v[i].len > pos)
			pos = m->busy.v[i].start + m->busy.v[i].len;
	}
	return false;
}

static uint64_t largest_hole(const struct dev_map *m)
{
	uint64_t pos = 0, best = 0;

	for (int i = 0; i <= m->busy.n; i++) {
		uint64_t end = i < m->busy.n ? m->busy.v[i].start : m->size;
		if (end > m->size)
			end = m->size;
		if (end > pos && end - pos > best)
			best = end - pos;
		if (i < m->busy.n && m->busy.v[i].start + m->busy.v[i].len > pos)
			pos = m->busy.v[i].start + m->busy.v[i].len;
	}
	return best;
}

/* The attempts, cheapest first: the chunks past the size only, then metadata compacted,
 * then data chunks too (tighter slack last), then the data chunks past the size cut to what they
 * hold as well, their stripes moving below it afterwards (when no other device has room for new
 * chunks to take what they hold, as for one device of a RAID1 whose others are at their
 * minimum). */
static const int modes[][2] = {{0, 0}, {1, 0}, {2, 16}, {2, 64}, {3, 16}, {3, 64}};

/* ---- one attempt ---- */

struct attempt {
	struct btk_fs *fs;
	uint64_t devid, target;
	const struct rl_usage *use;
	int mode; /* 0: run 1 only; 1: metadata compacted first; 2: data too; 3: and the data
		   * chunks past the size cut to what they hold */
	int data_slack;
	int meta_first; /* the metadata chunk run 0 packs the metadata into (-1: none) */
	uint64_t *keep_a, *keep_b;
	/* run 2: the metadata chunk run 0 packed into, cut again once the moves are done (the
	 * room they needed given back): 0 none */
	uint64_t keep_c;
	bool *frozen;
	struct rl_usage post; /* the extents after run 0 */
	struct rl_new *news;
	int nnew;
	size_t capnew;
	uint64_t next_logical;
	uint64_t bytes_a, bytes_b;
	bool full_map; /* the device maps count every chunk whole (a run-0 placement) */
	/* the extents of the data chunks once run 1 is done, where the apply puts them (a chunk
	 * of another kind counts as full: where its tree blocks land is not modelled), for
	 * the chunks split afterwards so that their parts move apart */
	struct rl_usage fin;
	bool split; /* the stripe moves after the runs may split data chunks */
};

static void attempt_free(struct attempt *a)
{
	free(a->keep_a);
	free(a->keep_b);
	free(a->frozen);
	rl_usage_free(&a->post);
	rl_usage_free(&a->fin);
	free(a->news);
}

static int attempt_init(struct attempt *a)
{
	size_t n = (size_t)a->fs->nchunks + 1;

	a->keep_a = calloc(n, sizeof(*a->keep_a));
	a->keep_b = calloc(n, sizeof(*a->keep_b));
	a->frozen = calloc(n, sizeof(*a->frozen));
	if (!a->keep_a || !a->keep_b || !a->frozen)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < a->fs->nchunks; i++) {
		const struct btk_chunk *c = a->fs->chunks[i];
		a->keep_a[i] = c->length;
		a->frozen[i] = on_dev(c, a->devid) && last_off(c, a->devid) + c->length > a->target;
		if (c->logical + c->length > a->next_logical)
			a->next_logical = c->logical + c->length;
	}
	return 0;
}

/* Run 0's cuts: metadata into the first metadata chunk that stays, data chunks (mode 2) to
 * what they hold plus a slack. */
static int plan_run0(struct attempt *a, uint64_t meta_keep)
{
	struct btk_fs *fs = a->fs;
	uint64_t meta_used = 0;
	int first = -1;

	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		if (rl_class_of(c->type) != BTRFS_BLOCK_GROUP_METADATA)
			continue;
		meta_used += used_of(&a->use->used[i]);
		if (!a->frozen[i] && first < 0)
			first = i;
	}
	a->meta_first = -1;
	if (a->mode >= 1 && first >= 0) {
		uint64_t need =
		    meta_used + (4ULL << 20) > meta_keep ? meta_used + (4ULL << 20) : meta_keep;
		for (int i = 0; i < fs->nchunks; i++)
			if (rl_class_of(fs->chunks[i]->type) == BTRFS_BLOCK_GROUP_METADATA &&
			    !a->frozen[i])
				a->keep_a[i] = 0;
		/* what it holds and the room the kernel needs; the check asks for more when the
		 * move needs it */
		a->keep_a[first] = up_1m(meta_used + need + SZ_1M);
		if (a->keep_a[first] > fs->chunks[first]->length)
			a->keep_a[first] = fs->chunks[first]->length;
		a->meta_first = first;
	}
	for (int i = 0; a->mode >= 2 && i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t u = used_of(&a->use->used[i]), k;
		if (rl_class_of(c->type) != BTRFS_BLOCK_GROUP_DATA || a->frozen[i])
			continue;
		k = up_1m(u + u / (uint64_t)a->data_slack + SZ_1M);
		if (k + SZ_1M < c->length)
			a->keep_a[i] = k;
	}
	return 0;
}

static int cmp_range_start(const void *x, const void *y)
{
	return cmp_range(x, y);
}

/* The extents after run 0: data where they stay or land (placed), metadata all in the first
 * metadata chunk that stays (only their sum counts), the rest as they are. */
static int post_usage(struct attempt *a, struct rl_ranges *placed)
{
	struct btk_fs *fs = a->fs;
	uint64_t meta = 0;
	int first = -1, ret = 0;

	a->post.n = fs->nchunks;
	a->post.used = calloc((size_t)fs->nchunks + 1, sizeof(*a->post.used));
	a->post.tree = calloc((size_t)fs->nchunks + 1, sizeof(*a->post.tree));
	if (!a->post.used || !a->post.tree)
		return btk_err(ENOMEM, "out of memory");
	/* mixed chunks: run 0 moves nothing out of them, their tree blocks stay */
	for (int i = 0; i < fs->nchunks && !ret; i++)
		for (int j = 0; j < a->use->tree[i].n && !ret; j++)
			ret = rl_range_add(&a->post.tree[i], a->use->tree[i].v[j].start,
					   a->use->tree[i].v[j].len);
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		const struct rl_ranges *u = &a->use->used[i];
		bool moved = a->keep_a[i] < c->length;
		if (moved && rl_class_of(c->type) == BTRFS_BLOCK_GROUP_METADATA) {
			meta += used_of(u);
			if (a->keep_a[i] && first < 0)
				first = i;
			continue;
		}
		for (int j = 0; j < u->n && !ret; j++)
			if (!moved || u->v[j].start + u->v[j].len <= c->logical + a->keep_a[i])
				ret = rl_range_add(&a->post.used[i], u->v[j].start, u->v[j].len);
		for (int j = 0; placed && j < placed[i].n && !ret; j++)
			ret = rl_range_add(&a->post.used[i], placed[i].v[j].start,
					   placed[i].v[j].len);
		if (a->post.used[i].n > 1)
			qsort(a->post.used[i].v, (size_t)a->post.used[i].n,
			      sizeof(*a->post.used[i].v), cmp_range_start);
	}
	if (!ret && meta && first >= 0)
		ret = rl_range_add(&a->post.used[first], fs->chunks[first]->logical, meta);
	else if (!ret && meta)
		ret = btk_err(EUCLEAN, "metadata emptied with no metadata chunk kept");
	return ret;
}

static int run_check(struct attempt *a, const uint64_t *keep, const struct rl_usage *use,
		     bool frozen, bool count_left, struct rl_ranges *placed, struct rl_check *chk)
{
	struct rl_spec sp = {.use = use,
			     .keep = keep,
			     .frozen = frozen ? a->frozen : NULL,
			     .news = a->news,
			     .nnew = a->nnew,
			     .placed = placed,
			     .count_left = count_left};
	int ret = rl_check_spec(a->fs, &sp, chk);

	free(chk->chunks);
	chk->chunks = NULL;
	return ret;
}

/* Device dev (devid) after run 0, below the size on the device shrunk, with the new chunks
 * placed so far. */
static int dev_map_build(const struct attempt *a, const struct btk_fs_dev *dev, struct dev_map *m)
{
	int ret = rl_range_add(&m->busy, 0, SZ_1M);

	m->size = dev->devid == a->devid ? a->target : dev->total_bytes;
	for (int i = 0; i < a->fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = a->fs->chunks[i];
		for (int j = 0; j < c->num_stripes && !ret; j++)
			if ((a->keep_a[i] || a->full_map) && c->stripes[j].devid == dev->devid)
				ret = rl_range_add(&m->busy, c->stripes[j].offset,
						   a->full_map ? c->length : a->keep_a[i]);
	}
	for (int i = 0; i < a->nnew && !ret; i++)
		for (int j = 0; j < a->news[i].nstripes && !ret; j++)
			if (a->news[i].devid[j] == dev->devid)
				ret = rl_range_add(&m->busy, a->news[i].phys[j], a->news[i].length);
	if (!ret && m->busy.n > 1) /* qsort wants a buffer even for nothing */
		qsort(m->busy.v, (size_t)m->busy.n, sizeof(*m->busy.v), cmp_range);
	return ret;
}

/* The devices as the allocator sees them for a new chunk. */
struct dev_maps {
	struct dev_map *m;
	const struct btk_fs_dev **d;
	int n;
};

static void dev_maps_free(struct dev_maps *ms)
{
	for (int i = 0; i < ms->n; i++)
		free(ms->m[i].busy.v);
	free(ms->m);
	free(ms->d);
	ms->n = 0;
}

/* Every device's map, in the allocator's order: the largest hole first, then by devid. */
static int dev_maps_build(const struct attempt *a, struct dev_maps *ms)
{
	size_t n = a->fs->ndevs ? (size_t)a->fs->ndevs : 1;
	int ret = 0;

	ms->n = 0;
	ms->m = calloc(n, sizeof(*ms->m));
	ms->d = calloc(n, sizeof(*ms->d));
	if (!ms->m || !ms->d)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < a->fs->ndevs && !ret; i++) {
		ms->d[ms->n] = &a->fs->devs[i];
		ret = dev_map_build(a, &a->fs->devs[i], &ms->m[ms->n++]);
	}
	/* insertion sort: a few devices */
	for (int i = 1; i < ms->n && !ret; i++)
		for (int j = i; j > 0; j--) {
			uint64_t hp = largest_hole(&ms->m[j - 1]), hc = largest_hole(&ms->m[j]);
			if (hp > hc || (hp == hc && ms->d[j - 1]->devid < ms->d[j]->devid))
				break;
			struct dev_map tm = ms->m[j];
			const struct btk_fs_dev *td = ms->d[j];
			ms->m[j] = ms->m[j - 1], ms->d[j] = ms->d[j - 1];
			ms->m[j - 1] = tm, ms->d[j - 1] = td;
		}
	return ret;
}

/* How many stripes the allocator gives a chunk of type on n devices, and how many on each. */
static int stripes_of(uint64_t type, int n, int *per)
{
	const struct btk_raid_attr *ra = btk_raid_attr(type);
	int num = ra ? ra->dev_stripes : 1;

	*per = ra ? ra->dev_stripes : 1;
	if (ra && (type & BTRFS_BLOCK_GROUP_RAID1_MASK))
		num = ra->devs_min < n ? ra->devs_min : n;
	return num;
}

/* Where the allocator puts a chunk of type with stripes len long (its largest-hole-first
 * order of devices, the lowest hole of each): into n; false if it would not place it so (too
 * few devices with room: it would make it smaller). */
static int place_new(const struct attempt *a, uint64_t type, uint64_t len, struct rl_new *n,
		     bool *ok)
{
	struct dev_maps ms = {0};
	int per, num, fit = 0, k = 0, ret = dev_maps_build(a, &ms);

	*ok = false;
	num = stripes_of(type, ms.n, &per);
	*n = (struct rl_new){.type = type, .length = len, .logical = a->next_logical, .run = 1};
	for (int i = 0; i < ms.n && !ret; i++)
		fit += largest_hole(&ms.m[i]) >= len * (uint64_t)per;
	for (int i = 0; i < ms.n && !ret && fit * per >= num && k < num; i++) {
		uint64_t off[2];
		int j;
		for (j = 0; j < per && !ret; j++) {
			if (!hole_for(&ms.m[i], len, &off[j]))
				break;
			ret = busy_add(&ms.m[i], off[j], len);
		}
		for (int q = 0; j == per && q < per; q++) {
			n->phys[k] = off[q];
			n->devid[k++] = ms.d[i]->devid;
		}
	}
	if (!ret && k >= num && k <= BTK_RESIZE_NEW_STRIPES) {
		n->nstripes = k;
		*ok = true;
	}
	dev_maps_free(&ms);
	return ret;
}

/* Places a new chunk of type and stripe length len as the allocator would; false if it does
 * not fit (or the allocator would change its length). */
static int add_new(struct attempt *a, uint64_t type, uint64_t len, bool *ok)
{
	struct rl_new n;
	int ret = place_new(a, type, len, &n, ok);

	if (!ret && *ok) {
		if (btk_array_room_int(a->news, a->nnew, a->capnew))
			return btk_err(ENOMEM, "out of memory");
		a->news[a->nnew++] = n;
		a->next_logical += len;
	}
	return ret;
}

/* The type of a new chunk of kind k: that of the chunks of that kind (with mixed block
 * groups, of the mixed ones, which take both kinds). */
static uint64_t profile_of(const struct btk_fs *fs, uint64_t k)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (rl_class_of(fs->chunks[i]->type) == k ||
		    rl_class_of(fs->chunks[i]->type) ==
			(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA))
			return fs->chunks[i]->type;
	return k;
}

/* New data chunks for `left` bytes (with a slack step k), lowest hole first. */
static int add_data(struct attempt *a, uint64_t left, int k, bool *ok)
{
	uint64_t type = profile_of(a->fs, BTRFS_BLOCK_GROUP_DATA);
	int per = 1, ret = 0;
	/* the slack of step k: none, then 1/64 of what is left doubling up to all of it, and k MiB
	 */
	uint64_t rest = up_1m(left + (k ? left / 128 << k : 0) + (uint64_t)k * SZ_1M);

	*ok = true;
	while (rest && !ret && *ok) {
		struct dev_maps ms = {0};
		uint64_t len = 0, best = 0;
		int num;
		if ((ret = dev_maps_build(a, &ms))) {
			dev_maps_free(&ms);
			break;
		}
		/* the largest stripe enough devices have room for (the devices are in the order
		 * of their largest holes): all of it or what is left, halved until it is placed */
		num = stripes_of(type, ms.n, &per);
		if (num / per >= 1 && num / per <= ms.n)
			best = largest_hole(&ms.m[num / per - 1]) / (uint64_t)per / BTK_STRIPE_LEN *
			       BTK_STRIPE_LEN;
		dev_maps_free(&ms);
		for (uint64_t want = rest; want >= SZ_1M && !len && !ret; want /= 2) {
			uint64_t w = want < best ? want : best;
			struct rl_new n;
			bool fit = false;
			if (w >= SZ_1M && !(ret = place_new(a, type, w, &n, &fit)) && fit)
				len = w;
			if (w < want)
				break;
		}
		if (ret)
			break;
		if (!len) {
			*ok = false;
			break;
		}
		ret = add_new(a, type, len, ok);
		rest = rest > len ? rest - len : 0;
	}
	return ret;
}

/* Run 2: when run 0 packed the metadata into one chunk and run 1 made no metadata chunk, that
 * chunk is cut again to what its tree blocks and the kernel need: the blocks past the line
 * move below it in passes that move tree blocks only, which copy besides them at most the
 * extent and free-space trees and the nodes above the leaves (rl_meta_cow), so the line keeps
 * room for the metadata, that and a margin, or the kernel's free metadata if more. */
static int plan_run2(struct attempt *a, uint64_t meta_keep)
{
	int f = a->meta_first;
	uint64_t used = 0, cow, room, line;
	int ret;

	a->keep_c = 0;
	if (f < 0 || !a->keep_b[f])
		return 0;
	for (int i = 0; i < a->nnew; i++)
		if (a->news[i].type & BTRFS_BLOCK_GROUP_METADATA)
			return 0;
	for (int i = 0; i < a->fs->nchunks; i++)
		if (i != f && a->keep_b[i] &&
		    rl_class_of(a->fs->chunks[i]->type) == BTRFS_BLOCK_GROUP_METADATA)
			return 0;
	for (int i = 0; i < a->fs->nchunks; i++)
		if (rl_class_of(a->fs->chunks[i]->type) == BTRFS_BLOCK_GROUP_METADATA)
			used += used_of(&a->use->used[i]);
	if ((ret = rl_meta_cow(a->fs, &cow)))
		return ret;
	room = cow + (4ULL << 20);
	if (room < meta_keep)
		room = meta_keep;
	line = up_1m(used + room + SZ_1M);
	if (line + SZ_1M <= a->keep_b[f])
		a->keep_c = line;
	return 0;
}

/* Run 0 moves the system chunk into a new one sized to what it holds, placed first (the
 * lowest hole while every chunk is still where it is, as the apply makes it at run 0's
 * start), so that run 1 may place new chunks where the old one was: its chunk-tree blocks
 * move (a copy of each and RL_SYS_MARGIN, as rl_check_spec asks), and the kernel keeps room
 * for the chunk items of a few chunks of its own. The new chunk takes the highest logical
 * address, so a kernel balance relocates it first, while the device still has the
 * unallocated space the kernel's overcommit asks of a system chunk's relocation (the last,
 * as the lowest, it found none after the data and metadata of a DUP image grown by 1 GiB).
 * Only a single system chunk, when that frees at least 1 MiB. */
static int move_system(struct attempt *a)
{
	struct btk_fs *fs = a->fs;
	int sys = -1, ret;
	bool ok;

	for (int i = 0; i < fs->nchunks; i++)
		if (rl_class_of(fs->chunks[i]->type) == BTRFS_BLOCK_GROUP_SYSTEM) {
			if (sys >= 0)
				return 0; /* several: left as they are */
			sys = i;
		}
	if (sys < 0)
		return 0;
	const struct btk_chunk *c = fs->chunks[sys];
	uint64_t used = used_of(&a->use->used[sys]);
	/* room for the kernel's chunk-tree changes of a few new chunks: 32 tree blocks */
	uint64_t len = up_1m(2 * used + RL_SYS_MARGIN + SZ_1M + 32ULL * fs->nodesize);
	if (len + SZ_1M > c->length && !a->frozen[sys])
		return 0;
	a->full_map = true; /* placed while every chunk is where it is */
	ret = add_new(a, c->type, len, &ok);
	a->full_map = false;
	if (!ret && ok) {
		a->news[a->nnew - 1].run = 0;
		a->keep_a[sys] = 0;
		a->frozen[sys] = false;
	}
	return ret;
}

/* a->fin: run 1's check replayed once more for where each moved data extent lands; the data
 * extents below each chunk's line stay. */
static int final_usage(struct attempt *a)
{
	struct btk_fs *fs = a->fs;
	size_t n = (size_t)fs->nchunks + (size_t)a->nnew + 1;
	struct rl_ranges *placed = calloc(n, sizeof(*placed));
	struct rl_check chk;
	int ret = placed ? 0 : btk_err(ENOMEM, "out of memory");

	a->fin.n = fs->nchunks;
	a->fin.used = calloc((size_t)fs->nchunks + 1, sizeof(*a->fin.used));
	a->fin.tree = calloc((size_t)fs->nchunks + 1, sizeof(*a->fin.tree));
	if (!ret && (!a->fin.used || !a->fin.tree))
		ret = btk_err(ENOMEM, "out of memory");
	if (!ret)
		ret = run_check(a, a->keep_b, &a->post, false, true, placed, &chk);
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		const struct rl_ranges *u = &a->post.used[i];
		struct rl_ranges *f = &a->fin.used[i];
		if (rl_class_of(c->type) != BTRFS_BLOCK_GROUP_DATA) {
			ret = rl_range_add(f, c->logical, c->length);
			continue;
		}
		for (int j = 0; j < u->n && !ret; j++)
			if (u->v[j].start + u->v[j].len <= c->logical + a->keep_b[i])
				ret = rl_range_add(f, u->v[j].start, u->v[j].len);
		for (int j = 0; j < placed[i].n && !ret; j++)
			ret = rl_range_add(f, placed[i].v[j].start, placed[i].v[j].len);
		if (!ret && f->n > 1)
			qsort(f->v, (size_t)f->n, sizeof(*f->v), cmp_range_start);
	}
	for (size_t i = 0; placed && i < n; i++)
		free(placed[i].v);
	free(placed);
	return ret;
}

static int attempt_run(struct attempt *a, uint64_t meta_keep, bool *fits)
{
	struct btk_fs *fs = a->fs;
	struct rl_ranges *placed = calloc((size_t)fs->nchunks + 1, sizeof(*placed));
	struct rl_check chk;
	int ret = placed ? attempt_init(a) : btk_err(ENOMEM, "out of memory");
	bool ok;

	*fits = false;
	if (!ret)
		ret = plan_run0(a, meta_keep);
	if (!ret && a->mode)
		ret = move_system(a);
	/* run 0 */
	for (int r = 0; !ret && a->mode && r < 4; r++) {
		uint64_t *k = a->meta_first >= 0 ? &a->keep_a[a->meta_first] : NULL;
		for (int i = 0; i < fs->nchunks; i++)
			placed[i].n = 0;
		ret = run_check(a, a->keep_a, a->use, true, false, placed, &chk);
		if (ret || chk.meta_need <= chk.meta_free || !k ||
		    *k >= fs->chunks[a->meta_first]->length)
			break;
		*k = up_1m(*k + chk.meta_need - chk.meta_free);
		if (*k > fs->chunks[a->meta_first]->length)
			*k = fs->chunks[a->meta_first]->length;
	}
	if (!ret && a->mode) {
		if (!chk.fits)
			goto out;
		a->bytes_a = chk.bytes;
	}
	if (!ret)
		ret = post_usage(a, a->mode ? placed : NULL);
	/* run 1: the chunks past the size cut at it or emptied */
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t k = a->keep_a[i];
		if (a->frozen[i]) {
			uint64_t o = last_off(c, a->devid);
			k = o < a->target ? (a->target - o) / SZ_1M * SZ_1M : 0;
			if (rl_class_of(c->type) == BTRFS_BLOCK_GROUP_SYSTEM || k < SZ_1M)
				k = 0;
			if (k > c->length)
				k = c->length;
			/* mode 3: a data chunk is cut to what it holds and a slack when that is
			 * less, and a chunk wholly past the size stays (a data chunk so cut), its
			 * stripes moving below the size afterwards (compact_after) */
			if (a->mode >= 3 && rl_class_of(c->type) != BTRFS_BLOCK_GROUP_SYSTEM) {
				uint64_t u = used_of(&a->post.used[i]);
				uint64_t t = up_1m(u + u / (uint64_t)a->data_slack + SZ_1M);
				if (rl_class_of(c->type) != BTRFS_BLOCK_GROUP_DATA ||
				    t + SZ_1M > c->length)
					t = c->length;
				if (!k || t < k)
					k = t;
			}
		}
		a->keep_b[i] = k;
	}
	if (ret)
		goto out;
	ret = run_check(a, a->keep_b, &a->post, false, true, NULL, &chk);
	if (!ret && chk.meta_need > chk.meta_free) {
		ret = add_new(a, profile_of(fs, BTRFS_BLOCK_GROUP_METADATA),
			      up_1m(chk.meta_need - chk.meta_free + SZ_1M), &ok);
		if (!ret && !ok)
			goto out;
		if (!ret)
			ret = run_check(a, a->keep_b, &a->post, false, true, NULL, &chk);
	}
	if (!ret && chk.data_left) {
		int base = a->nnew;
		uint64_t left = chk.data_left;
		for (int k = 0; k < 8 && !ret && !chk.fits; k++) {
			a->nnew = base;
			ret = add_data(a, left, k, &ok);
			if (!ret && ok)
				ret = run_check(a, a->keep_b, &a->post, false, true, NULL, &chk);
		}
	}
	if (!ret && chk.fits && (chk.meta_need <= chk.meta_free || !chk.n)) {
		*fits = true;
		a->bytes_b = chk.bytes;
		ret = plan_run2(a, meta_keep);
		if (!ret && a->split)
			ret = final_usage(a);
	}
out:
	for (int i = 0; placed && i < fs->nchunks; i++)
		free(placed[i].v);
	free(placed);
	return ret;
}

static int add_split(struct btk_resize_plan *p, const struct btk_chunk *c, uint64_t from,
		     uint64_t to, int run)
{
	if (btk_array_room_int(p->splits, p->nsplits, p->capsplits))
		return btk_err(ENOMEM, "out of memory");
	p->splits[p->nsplits++] = (struct btk_resize_split){c->logical, c->type, from, to, run};
	return 0;
}

static int record(const struct attempt *a, struct btk_resize_plan *p)
{
	int ret = 0;

	p->repack = true;
	p->repack_at = a->target;
	p->bytes_relocated = a->bytes_a + a->bytes_b;
	p->rounds = 1;
	for (int i = 0; i < a->fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = a->fs->chunks[i];
		if (a->keep_a[i] < c->length)
			ret = add_split(p, c, c->length, a->keep_a[i], 0);
	}
	for (int i = 0; i < a->fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = a->fs->chunks[i];
		if (a->keep_b[i] < a->keep_a[i])
			ret = add_split(p, c, a->keep_a[i], a->keep_b[i], 1);
	}
	if (!ret && a->keep_c)
		ret = add_split(p, a->fs->chunks[a->meta_first], a->keep_b[a->meta_first],
				a->keep_c, 2);
	for (int i = 0; i < a->nnew && !ret; i++) {
		if (btk_array_room_int(p->news, p->nnew, p->capnew)) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		struct btk_resize_new *n = &p->news[p->nnew++];
		*n = (struct btk_resize_new){.type = a->news[i].type,
					     .length = a->news[i].length,
					     .nstripes = a->news[i].nstripes,
					     .run = a->news[i].run};
		memcpy(n->phys, a->news[i].phys, sizeof(n->phys));
		memcpy(n->devid, a->news[i].devid, sizeof(n->devid));
	}
	return ret;
}

/* The stripes after the repacking (new chunks fixed), moved whole as far as they go, or down
 * to p->new_size when p is set (the moves recorded, in rounds after the repacking's runs). */
static int compact_after(const struct attempt *a, struct btk_resize_plan *p, uint64_t *end)
{
	struct rl_layout l = {0};
	size_t cap = 0;
	int ret = 0;

	for (int i = 0; i < a->fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = a->fs->chunks[i];
		uint64_t k = a->keep_c && i == a->meta_first ? a->keep_c : a->keep_b[i];
		for (int j = 0; j < c->num_stripes && k && !ret; j++)
			if (c->stripes[j].devid != a->devid)
				continue;
			else if (btk_array_room_int(l.s, l.n, cap))
				ret = btk_err(ENOMEM, "out of memory");
			else
				l.s[l.n++] = (struct rl_slot){c->logical, c->type, j,
							      c->stripes[j].offset, k};
	}
	for (int i = 0; i < a->nnew && !ret; i++)
		for (int j = 0; j < a->news[i].nstripes && !ret; j++)
			if (a->news[i].devid[j] != a->devid)
				continue;
			else if (btk_array_room_int(l.s, l.n, cap))
				ret = btk_err(ENOMEM, "out of memory");
			else
				l.s[l.n++] = (struct rl_slot){
				    0, a->news[i].type, -1, a->news[i].phys[j], a->news[i].length};
	if (!ret)
		ret = rl_compact_split(a->fin.used ? a->fs : NULL, &a->fin, &l, p ? p->new_size : 0,
				       0, p);
	if (!ret)
		*end = rl_layout_end(&l);
	free(l.s);
	return ret;
}

static bool mixed_fs(const struct btk_fs *fs)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (rl_class_of(fs->chunks[i]->type) ==
		    (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA))
			return true;
	return false;
}

/* The first attempt (cheapest mode first) that reaches target: *fits; its plan into p when
 * set, else *end (when set) where the stripes end after it, moved whole as far as they go. */
static int repack(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
		  bool split, struct btk_resize_plan *p, bool *fits, uint64_t *end)
{
	uint64_t meta_keep, e = 0;
	int ret;

	*fits = false;
	if (!applies(fs, devid) || target < 2 * SZ_1M)
		return 0;
	if ((ret = rl_meta_keep(fs, &meta_keep)))
		return ret;
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]) && !ret && !*fits; m++) {
		if (modes[m][0] && mixed_fs(fs))
			break; /* no chunk of one kind to compact: run 1 is all */
		struct attempt a = {.fs = fs,
				    .devid = devid,
				    .target = target,
				    .use = use,
				    .mode = modes[m][0],
				    .data_slack = modes[m][1],
				    .split = split};
		ret = attempt_run(&a, meta_keep, fits);
		/* a stripe cut past the size (mode 3) must then find room below it */
		if (!ret && *fits && a.mode >= 3 && !(ret = compact_after(&a, NULL, &e)))
			*fits = e <= target;
		if (!ret && *fits && p)
			ret = record(&a, p);
		if (!ret && *fits && (p || end))
			ret = compact_after(&a, p, &e);
		if (!ret && *fits && p && e > p->new_size)
			ret = btk_err(EUCLEAN, "devid %llu: the plan ends at %llu, past %llu",
				      (unsigned long long)devid, (unsigned long long)e,
				      (unsigned long long)p->new_size);
		attempt_free(&a);
	}
	if (end)
		*end = *fits ? e : 0;
	return ret;
}

int rl_repack_end(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
		  bool split, uint64_t *end)
{
	bool fits;

	return repack(fs, devid, target, use, split, NULL, &fits, end);
}

int rl_repack(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
	      bool split, struct btk_resize_plan *p, bool *fits)
{
	return repack(fs, devid, target, use, split, p, fits, NULL);
}

int rl_repack_minimum(struct btk_fs *fs, uint64_t devid, uint64_t lo, uint64_t hi,
		      const struct rl_usage *use, bool split, uint64_t *min, uint64_t *at)
{
	uint64_t a = up_1m(lo), b = hi / SZ_1M * SZ_1M;
	bool fits;
	int ret = 0;

	*min = *at = 0;
	if (!applies(fs, devid))
		return 0;
	/* the lowest size that works, searched in MiB: a failing size moves the low end up;
	 * the minimum is where the stripes end after it, moved whole as far as they go */
	while (a < b && !ret) {
		uint64_t mid = a + (b - a) / 2 / SZ_1M * SZ_1M;
		if ((ret = rl_repack(fs, devid, mid, use, split, NULL, &fits)))
			break;
		if (fits)
			*at = b = mid;
		else
			a = mid + SZ_1M;
	}
	if (!ret && *at)
		ret = rl_repack_end(fs, devid, *at, use, split, min);
	return ret;
}
