/* alloc.c — range sets, block groups and the tree-block allocator (layer 5).
 *
 * Each block group keeps three range sets: free (allocatable now), pinned (freed in this
 * transaction: the committed trees may still point there) and super (superblock stripes).
 * Allocation is first fit from the lowest address, so equal inputs give equal images.
 */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/extent_refs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first range ending after `start` (binary search). */
static size_t rs_first_after(const struct btk_rangeset *s, uint64_t start)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->r[mid].start + s->r[mid].len <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int btk_rs_add(struct btk_rangeset *s, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	size_t i, j;

	if (!len)
		return 0;
	/* first range whose end >= start (touching merges too) */
	i = start ? rs_first_after(s, start - 1) : 0;
	j = i;
	while (j < s->n && s->r[j].start <= end) {
		if (s->r[j].start < start)
			start = s->r[j].start;
		if (s->r[j].start + s->r[j].len > end)
			end = s->r[j].start + s->r[j].len;
		j++;
	}
	if (j == i) {
		if (btk_array_room(s->r, s->n, s->cap))
			return btk_err(ENOMEM, "out of memory");
		memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof(*s->r));
		s->n++;
	} else if (j > i + 1) {
		memmove(s->r + i + 1, s->r + j, (s->n - j) * sizeof(*s->r));
		s->n -= j - i - 1;
	}
	s->r[i].start = start;
	s->r[i].len = end - start;
	return 0;
}

int btk_rs_remove(struct btk_rangeset *s, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	size_t i = rs_first_after(s, start);

	while (i < s->n && s->r[i].start < end) {
		struct btk_range *r = &s->r[i];
		uint64_t rend = r->start + r->len;

		if (r->start < start && rend > end) { /* split in two */
			if (btk_array_room(s->r, s->n, s->cap))
				return btk_err(ENOMEM, "out of memory");
			r = &s->r[i];
			memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof(*s->r));
			s->n++;
			r->len = start - r->start;
			s->r[i + 1].start = end;
			s->r[i + 1].len = rend - end;
			return 0;
		}
		if (r->start < start) {
			r->len = start - r->start;
			i++;
		} else if (rend > end) {
			r->len = rend - end;
			r->start = end;
			i++;
		} else {
			memmove(s->r + i, s->r + i + 1, (s->n - i - 1) * sizeof(*s->r));
			s->n--;
		}
	}
	return 0;
}

bool btk_rs_contains(const struct btk_rangeset *s, uint64_t start, uint64_t len)
{
	size_t i = rs_first_after(s, start);

	return i < s->n && s->r[i].start <= start && s->r[i].start + s->r[i].len >= start + len;
}

bool btk_rs_overlaps(const struct btk_rangeset *s, uint64_t start, uint64_t len)
{
	size_t i = rs_first_after(s, start);

	return i < s->n && s->r[i].start < start + len;
}

void btk_rs_free(struct btk_rangeset *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

int btk_rs_copy(struct btk_rangeset *dst, const struct btk_rangeset *src)
{
	dst->n = 0;
	if (btk_array_reserve(dst->r, dst->cap, src->n))
		return btk_err(ENOMEM, "out of memory");
	if (src->n)
		memcpy(dst->r, src->r, src->n * sizeof(*src->r));
	dst->n = src->n;
	return 0;
}

struct btk_bg *btk_bg_find(struct btk_wfs *w, uint64_t bytenr)
{
	int lo = 0, hi = w->nbgs;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct btk_bg *bg = &w->bgs[mid];
		if (bytenr < bg->start)
			hi = mid;
		else if (bytenr >= bg->start + bg->len)
			lo = mid + 1;
		else
			return bg;
	}
	return NULL;
}

struct btk_bg *btk_bg_add(struct btk_wfs *w, uint64_t start, uint64_t len, uint64_t flags)
{
	struct btk_bg *bgs;
	int i;

	if (btk_array_room_int(w->bgs, w->nbgs, w->capbgs))
		return NULL;
	bgs = w->bgs;
	for (i = w->nbgs; i > 0 && bgs[i - 1].start > start; i--)
		bgs[i] = bgs[i - 1];
	memset(&bgs[i], 0, sizeof(bgs[i]));
	bgs[i].start = start;
	bgs[i].len = len;
	bgs[i].flags = flags;
	w->nbgs++;
	return &bgs[i];
}

/* Logical addresses of the 64 KiB stripe holding physical byte `phys` of stripe `idx`. */
static int super_logical(const struct btk_chunk *c, int idx, uint64_t phys, uint64_t *logical,
			 uint64_t *len)
{
	uint64_t slen = btk_chunk_stripe_len(c);
	uint64_t nr, off = phys - c->stripes[idx].offset;

	if (phys < c->stripes[idx].offset || off >= slen)
		return 0;
	nr = off / BTK_STRIPE_LEN;
	*len = BTK_STRIPE_LEN;
	if (c->type & BTRFS_BLOCK_GROUP_RAID0) {
		nr = nr * c->num_stripes + (uint64_t)idx;
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID10) {
		nr = (nr * c->num_stripes + (uint64_t)idx) / c->sub_stripes;
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		*len = BTK_STRIPE_LEN *
		       btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
	}
	*logical = c->logical + nr * *len;
	if (*logical + *len > c->logical + c->length)
		*len = c->logical + c->length - *logical;
	return 1;
}

int btk_bg_exclude_super(struct btk_fs *fs, struct btk_bg *bg, const struct btk_chunk *c)
{
	(void)fs;
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		for (int i = 0; i < c->num_stripes; i++) {
			uint64_t lg, len;
			if (!super_logical(c, i, btk_super_offset(m), &lg, &len))
				continue;
			if (btk_rs_add(&bg->super, lg, len) || btk_rs_remove(&bg->free, lg, len))
				return btk_err(ENOMEM, "out of memory");
		}
	}
	return 0;
}

uint64_t btk_bg_type_for_root(struct btk_wfs *w, uint64_t owner)
{
	if (owner == BTRFS_CHUNK_TREE_OBJECTID)
		return BTRFS_BLOCK_GROUP_SYSTEM;
	if (w->mixed)
		return BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DATA;
	return BTRFS_BLOCK_GROUP_METADATA;
}

int btk_refop_add(struct btk_wfs *w, const struct btk_refop *op)
{
	struct btk_refop *slot = btk_array_push(w->refs, w->nrefs, w->caprefs);

	if (!slot)
		return btk_err(ENOMEM, "out of memory for %zu reference changes", w->nrefs + 1);
	*slot = *op;
	slot->seq = w->refseq++;
	w->mods++;
	/* a subvolume tree's reference (a shared one is always a subvolume's): the extent's set
	 * of roots may change, which the settled hook accounts */
	if (op->delta && (op->parent || btk_is_fs_tree(op->root)))
		return btk_note_extent(w, op->bytenr, op->num_bytes);
	return 0;
}

/* Keeps a copy of the esz bytes at val as one more element of the array *arrp (counted by *n,
 * room for *cap) for the settled hook, and only while a hook listens: 0 or -ENOMEM. */
static int note_(struct btk_wfs *w, void *arrp, size_t *n, size_t *cap, const void *val, size_t esz)
{
	void *slot;

	if (!w->settled_fn)
		return 0;
	if (!(slot = btk_vec_grow_(arrp, n, cap, esz)))
		return btk_err(ENOMEM, "out of memory");
	memcpy(slot, val, esz);
	return 0;
}
/* note_ for an array kept in fields of its own; the last argument a pointer to an element of its
 * type. */
#define NOTE(w, arr, n, cap, ...)                                                                  \
	note_((w), &(arr), &(n), &(cap), 1 ? (__VA_ARGS__) : (arr), sizeof(*(arr)))

int btk_note_extent(struct btk_wfs *w, uint64_t bytenr, uint64_t num_bytes)
{
	return NOTE(w, w->chg, w->nchg, w->capchg, &(struct btk_changed_extent){bytenr, num_bytes});
}

int btk_note_snapshot(struct btk_wfs *w, const struct btk_snapshot_note *n)
{
	return NOTE(w, w->snaps, w->nsnaps, w->capsnaps, n);
}

int btk_note_drop(struct btk_wfs *w, uint64_t id, uint64_t bytenr, int level)
{
	return NOTE(w, w->drops, w->ndrops, w->capdrops,
		    &(struct btk_drop_note){id, bytenr, level});
}

/* First fit in bg for a nodesize block that does not cross a 64 KiB stripe. */
static bool bg_find_block(struct btk_bg *bg, uint32_t ns, uint64_t *out)
{
	for (size_t i = 0; i < bg->free.n; i++) {
		uint64_t s = bg->free.r[i].start, e = s + bg->free.r[i].len;
		uint64_t a = (s + ns - 1) / ns * ns;

		if (bg->limit && e > bg->limit)
			e = bg->limit;

		while (a + ns <= e) {
			if (!btk_crosses_stripe(bg->start, a, ns)) {
				*out = a;
				return true;
			}
			a += ns;
		}
	}
	return false;
}

static int alloc_in_type(struct btk_wfs *w, uint64_t type, uint32_t ns, uint64_t *bytenr)
{
	for (int i = 0; i < w->nbgs; i++) {
		struct btk_bg *bg = &w->bgs[i];
		if ((bg->flags & BTRFS_BLOCK_GROUP_TYPE_MASK) != type || bg->ro)
			continue;
		if (bg_find_block(bg, ns, bytenr))
			return 0;
	}
	return btk_err(ENOSPC, "no room for %u bytes in block groups of type 0x%llx", ns,
		       (unsigned long long)type);
}

/* The profile used for new chunks of a type: that of the existing block groups. */
static uint64_t profile_of(struct btk_wfs *w, uint64_t type)
{
	for (int i = 0; i < w->nbgs; i++)
		if ((w->bgs[i].flags & BTRFS_BLOCK_GROUP_TYPE_MASK) == type)
			return w->bgs[i].flags;
	return type;
}

/* Keeps ROOT_ITEM bytes_used (the tree's block bytes) as the kernel does. */
static void root_used(struct btk_wfs *w, uint64_t owner, int64_t delta)
{
	for (int i = 0; i < w->nroots; i++) {
		struct btk_wroot *wr = w->roots[i];
		if (wr->objectid != owner || !wr->in_root_tree)
			continue;
		struct btk_root_item ri;
		wroot_item(wr, &ri);
		ri.bytes_used = delta < 0 && ri.bytes_used < (uint64_t)-delta
				    ? 0
				    : ri.bytes_used + (uint64_t)delta;
		wroot_item_set(wr, &ri);
		wr->item_dirty = true;
		return;
	}
}

static int alloc_tree_space(struct btk_trans *t, uint64_t owner, uint64_t *bytenr)
{
	struct btk_wfs *w = t->w;
	uint32_t ns = t->fs->nodesize;
	uint64_t type = btk_bg_type_for_root(w, owner), lg;
	struct btk_bg *bg;
	int ret = alloc_in_type(w, type, ns, bytenr);

	if (ret == -ENOSPC && !w->in_chunk_alloc) {
		ret = btk_chunk_alloc(w, profile_of(w, type), &lg);
		if (!ret)
			ret = alloc_in_type(w, type, ns, bytenr);
	}
	if (ret)
		return ret == -ENOSPC
			   ? btk_err(ENOSPC, "no space left for a %s tree block",
				     type == BTRFS_BLOCK_GROUP_SYSTEM ? "system" : "metadata")
			   : ret;
	bg = btk_bg_find(w, *bytenr);
	if (btk_rs_remove(&bg->free, *bytenr, ns))
		return btk_err(ENOMEM, "out of memory");
	bg->dirty = true;
	w->dirtied += ns;
	return 0;
}

int btk_alloc_tree_space(struct btk_trans *t, uint64_t owner, uint64_t *bytenr)
{
	return alloc_tree_space(t, owner, bytenr);
}

int btk_alloc_tree_block(struct btk_trans *t, uint64_t owner, int level, uint64_t *bytenr)
{
	struct btk_wfs *w = t->w;
	struct btk_refop op = {0};
	int ret = alloc_tree_space(t, owner, bytenr);

	if (ret)
		return ret;
	root_used(w, owner, t->fs->nodesize);
	op.bytenr = *bytenr;
	op.num_bytes = t->fs->nodesize;
	op.root = owner;
	op.level = level;
	op.delta = 1;
	return btk_refop_add(w, &op);
}

int btk_free_tree_block(struct btk_trans *t, uint64_t owner, uint64_t bytenr, int level,
			uint64_t gen)
{
	struct btk_wfs *w = t->w;
	uint32_t ns = t->fs->nodesize;
	struct btk_bg *bg = btk_bg_find(w, bytenr);
	struct btk_refop op = {0};

	if (!bg)
		return btk_err(EUCLEAN, "tree block %llu of tree %llu is in no block group",
			       (unsigned long long)bytenr, (unsigned long long)owner);
	if (gen == t->transid && !btk_rs_overlaps(&w->snap_shared, bytenr, ns)) {
		/* born and dead in this transaction: nothing on disk refers to it */
		if (btk_rs_add(&bg->free, bytenr, ns))
			return btk_err(ENOMEM, "out of memory");
		btk_cache_forget(t->fs->cache, bytenr);
		bg->dirty = true;
	}
	/* otherwise the space is pinned when the last reference goes (trans_refs.c): a block
	 * shared with a snapshot stays */
	root_used(w, owner, -(int64_t)ns);
	op.bytenr = bytenr;
	op.num_bytes = ns;
	op.root = owner;
	op.level = level;
	op.delta = -1;
	return btk_refop_add(w, &op);
}

void btk_bg_unpin_all(struct btk_wfs *w)
{
	for (int i = 0; i < w->nbgs; i++) {
		struct btk_bg *bg = &w->bgs[i];
		for (size_t j = 0; j < bg->pinned.n; j++)
			btk_rs_add(&bg->free, bg->pinned.r[j].start, bg->pinned.r[j].len);
		bg->pinned.n = 0;
	}
}

/* ---- loading an existing filesystem ---- */

/* Calls fn for each item of root from key on, in key order; stops at fn's error. */
static int each_item(struct btk_wfs *w, const struct btk_root *root, const struct btk_key *key,
		     int (*fn)(struct btk_wfs *w, const struct btk_key *k, const uint8_t *d,
			       uint32_t size))
{
	struct btk_path p;
	int ret;

	btk_path_init(&p);
	for (ret = btk_search_ge(w->fs, root, key, &p); ret == 0; ret = btk_next(w->fs, &p)) {
		struct btk_key k;
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if ((ret = fn(w, &k, d, size)))
			break;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* A block group from its item, wholly free until load_extent takes its extents out. */
static int load_bg_item(struct btk_wfs *w, const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	struct btk_bg *bg;

	if (k->type != BTRFS_BLOCK_GROUP_ITEM_KEY)
		return 0;
	if (size < sizeof(struct btrfs_block_group_item))
		return btk_err(EUCLEAN, "block group item %llu has size %u",
			       (unsigned long long)k->objectid, size);
	uint64_t len = k->offset, flags = BTK_GET(struct btrfs_block_group_item, d, flags);
	/* a repair's write path: an item whose length or flags disagree with its chunk's
	 * (damage) is taken as the chunk says, and replaced when the repair rewrites it */
	const struct btk_chunk *c = w->damaged_usage ? btk_chunk_find(w->fs, k->objectid) : NULL;
	bool bad = c && c->logical == k->objectid && (c->length != len || c->type != flags);
	if (bad)
		len = c->length, flags = c->type;
	bg = btk_bg_add(w, k->objectid, len, flags);
	if (!bg)
		return btk_err(ENOMEM, "out of memory");
	bg->item_bad = bad;
	bg->item_len = k->offset;
	bg->used = BTK_GET(struct btrfs_block_group_item, d, used);
	if (btk_rs_add(&bg->free, bg->start, bg->len))
		return btk_err(ENOMEM, "out of memory");
	return 0;
}

static int load_bg_items(struct btk_wfs *w, const struct btk_root *root)
{
	struct btk_key key = {0, BTRFS_BLOCK_GROUP_ITEM_KEY, 0};

	return each_item(w, root, &key, load_bg_item);
}

/* Removes an extent record's range from its block group's free set. */
static int load_extent(struct btk_wfs *w, const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	uint64_t len = btk_extent_key_len(k, w->fs->nodesize);
	struct btk_bg *bg;

	(void)d, (void)size;
	if (!len)
		return 0;
	bg = btk_bg_find(w, k->objectid);
	if (!bg || k->objectid + len > bg->start + bg->len)
		return btk_err(EUCLEAN, "extent %llu+%llu lies outside block groups",
			       (unsigned long long)k->objectid, (unsigned long long)len);
	if (btk_rs_remove(&bg->free, k->objectid, len))
		return btk_err(ENOMEM, "out of memory");
	return 0;
}

/* Removes every extent of the extent tree from the free sets. */
static int load_extents(struct btk_wfs *w, const struct btk_root *root)
{
	struct btk_key key = {0, 0, 0};

	return each_item(w, root, &key, load_extent);
}

/* A block group's item counts the bytes its extents hold (what btrfs check compares too).
 * When they differ, an extent record is missing or the count is wrong: a writer that frees,
 * allocates or moves by the extent tree would lose data or make the count worse, so nothing
 * is written until the filesystem is repaired. Called with free = the group less its
 * extents (before the superblock stripes are taken out). */
static int used_agrees(const struct btk_bg *bg)
{
	uint64_t held = bg->len;

	for (size_t i = 0; i < bg->free.n; i++)
		held -= bg->free.r[i].len;
	if (held == bg->used)
		return 0;
	return btk_err(EUCLEAN,
		       "block group %llu: its item counts %llu bytes used, its extents hold %llu: "
		       "repair the filesystem (btrfs check) before writing to it",
		       (unsigned long long)bg->start, (unsigned long long)bg->used,
		       (unsigned long long)held);
}

int btk_bg_add_chunk(struct btk_wfs *w, const struct btk_chunk *c)
{
	struct btk_bg *bg = btk_bg_add(w, c->logical, c->length, c->type);

	if (!bg)
		return btk_err(ENOMEM, "out of memory adding a block group");
	bg->item_new = true;
	bg->dirty = true;
	if (btk_rs_add(&bg->free, c->logical, c->length))
		return btk_err(ENOMEM, "out of memory");
	return btk_bg_exclude_super(w->fs, bg, c);
}

/* An extent tree being rebuilt: a block group for every chunk, wholly free and counting
 * nothing, its item to be inserted (the trees holding them are emptied by the caller); the
 * extent tree is not read. */
static int bg_from_chunks(struct btk_wfs *w)
{
	int ret = 0;

	for (int i = 0; i < w->fs->nchunks && !ret; i++)
		ret = btk_bg_add_chunk(w, w->fs->chunks[i]);
	return ret;
}

int btk_bg_load(struct btk_wfs *w)
{
	struct btk_root ext, bgr;
	int ret;

	if (w->extent_rebuild)
		return bg_from_chunks(w);
	if ((ret = btk_root_find(w->fs, BTRFS_EXTENT_TREE_OBJECTID, &ext)))
		return ret;
	if (w->bgtree) {
		ret = btk_root_find(w->fs, BTRFS_BLOCK_GROUP_TREE_OBJECTID, &bgr);
		if (ret)
			return ret;
	} else {
		bgr = ext;
	}
	ret = load_bg_items(w, &bgr);
	if (!ret)
		ret = load_extents(w, &ext);
	for (int i = 0; !ret && i < w->nbgs; i++) {
		const struct btk_chunk *c = btk_chunk_find(w->fs, w->bgs[i].start);
		if (!c || c->logical != w->bgs[i].start || c->length != w->bgs[i].len)
			return btk_err(EUCLEAN, "block group %llu has no matching chunk",
				       (unsigned long long)w->bgs[i].start);
		if (!w->damaged_usage && (ret = used_agrees(&w->bgs[i])))
			return ret;
		ret = btk_bg_exclude_super(w->fs, &w->bgs[i], c);
	}
	return ret;
}

/* The kernel holds back a global reserve of some 20 tree-block insertions (nodesize * 16
 * each) and refuses ordinary reservations that would eat into it, so a metadata chunk filled
 * to the brim makes every write, and the uuid scan at mount, fail with ENOSPC. 64 insertions'
 * worth covers the reserve with room for the first transactions (uuid tree, orphan cleanup,
 * the first file written). */
uint64_t btk_kernel_meta_room(uint32_t nodesize)
{
	return (uint64_t)nodesize * 16 * 64;
}
