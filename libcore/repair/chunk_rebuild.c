/* chunk_rebuild.c — the chunk tree rebuilt from the dev extents, the block group items and a
 * scan of the devices for tree blocks (rescue.h, btk_chunk_tree_rebuild).
 *
 * What is lost with the chunk tree is the map from logical addresses to device stripes; every
 * piece of it is also written elsewhere: a DEV_EXTENT item of the dev tree says which chunk a
 * stretch of a device belongs to, a BLOCK_GROUP_ITEM gives each chunk's length and type, and
 * the superblock's system chunk array maps the system chunks. Those trees live in chunks the
 * map no longer knows, so the devices are read whole for tree blocks of this filesystem
 * (fsid, checksum, layout), and the dev extents and block group items of the newest blocks
 * give a first map. Through it the dev tree and the block group items are then read as the
 * root tree names them (older blocks the scan found no longer count), the map made from them
 * again, and it must come out the same. It must agree with the system chunk array, with every
 * chunk item that still reads, and with where the scan found the metadata blocks; the order
 * of the stripes of a striped profile comes from an older copy of its chunk item. The chunk
 * tree is then replaced in one transaction whose new state must check clean before its
 * superblocks are written. */
#include "repair/repair_int.h"
#include "repair/rescue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"
#include "format/dev_items.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "volumes/super.h"

#define SCAN_BATCH (8u << 20)
#define STRIPED                                                                                    \
	(BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID10 | BTRFS_BLOCK_GROUP_RAID5 |            \
	 BTRFS_BLOCK_GROUP_RAID6)

struct ev_block {
	uint64_t devid, physical, bytenr, generation, owner;
};
struct ev_dext {
	uint64_t devid, physical, chunk, length, gen;
};
struct ev_bg {
	uint64_t logical, length, flags, gen;
};
struct ev_old {
	uint64_t gen;
	struct btk_chunk *c;
};
BTK_VEC(ev_blocks, struct ev_block);
BTK_VEC(ev_dexts, struct ev_dext);
BTK_VEC(ev_bgs, struct ev_bg);
BTK_VEC(ev_olds, struct ev_old);
BTK_VEC(cr_chunks, struct btk_chunk *);

struct cr {
	struct btk_fs *fs;
	struct btk_chunk_rebuild_result *res;
	struct ev_blocks blocks;
	struct ev_dexts dexts; /* the scan's, then the walk's */
	struct ev_bgs bgs;
	struct ev_olds olds;	 /* chunk items of chunk-tree blocks the scan found */
	struct cr_chunks known;	 /* the system chunk array's and the chunk items that read */
	struct cr_chunks chunks; /* the rebuilt ones */
	struct rp_probs after;
	uint64_t walk_owner;		     /* the tree walk_items reads */
	uint8_t (*items)[BTK_DEV_ITEM_SIZE]; /* each device's item, to be written */
};

static struct btk_chunk *chunk_dup(const struct btk_chunk *c)
{
	size_t sz = sizeof(*c) + (size_t)c->num_stripes * sizeof(c->stripes[0]);
	struct btk_chunk *d = malloc(sz);

	if (d)
		memcpy(d, c, sz);
	return d;
}

static const char *profile_name(uint64_t type)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} p[] = {{BTRFS_BLOCK_GROUP_DUP, "DUP"},	 {BTRFS_BLOCK_GROUP_RAID0, "RAID0"},
		 {BTRFS_BLOCK_GROUP_RAID1, "RAID1"},	 {BTRFS_BLOCK_GROUP_RAID10, "RAID10"},
		 {BTRFS_BLOCK_GROUP_RAID5, "RAID5"},	 {BTRFS_BLOCK_GROUP_RAID6, "RAID6"},
		 {BTRFS_BLOCK_GROUP_RAID1C3, "RAID1C3"}, {BTRFS_BLOCK_GROUP_RAID1C4, "RAID1C4"}};

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (type & p[i].bit)
			return p[i].name;
	return "single";
}

/* ---- the items of one leaf (the scan's raw bytes, or the walk's blocks) ---- */

static int leaf_items(struct cr *x, const struct btk_block *b, uint64_t owner, uint64_t gen)
{
	for (int i = 0; i < (int)btk_block_nritems(b); i++) {
		struct btk_key k;
		uint32_t size = btk_leaf_size(b, i);
		const uint8_t *d = btk_leaf_data(b, i);

		btk_leaf_key(b, i, &k);
		if (owner == BTRFS_DEV_TREE_OBJECTID && k.type == BTRFS_DEV_EXTENT_KEY) {
			struct btk_dev_extent_ent e;
			struct ev_dext *o;
			if (btk_dev_extent_parse(d, size, &e))
				continue;
			if (!(o = btk_vec_push(&x->dexts)))
				return btk_err(ENOMEM, "out of memory");
			*o = (struct ev_dext){k.objectid, k.offset, e.chunk_offset, e.length, gen};
		} else if ((owner == BTRFS_EXTENT_TREE_OBJECTID ||
			    owner == BTRFS_BLOCK_GROUP_TREE_OBJECTID) &&
			   k.type == BTRFS_BLOCK_GROUP_ITEM_KEY &&
			   size >= sizeof(struct btrfs_block_group_item)) {
			struct ev_bg *o = btk_vec_push(&x->bgs);
			if (!o)
				return btk_err(ENOMEM, "out of memory");
			*o = (struct ev_bg){k.objectid, k.offset,
					    BTK_GET(struct btrfs_block_group_item, d, flags), gen};
		} else if (owner == BTRFS_CHUNK_TREE_OBJECTID && k.type == BTRFS_CHUNK_ITEM_KEY) {
			struct btk_chunk *c;
			struct ev_old *o;
			if (btk_chunk_parse(d, size, k.offset, x->fs->sectorsize, &c))
				continue;
			if (!(o = btk_vec_push(&x->olds))) {
				free(c);
				return btk_err(ENOMEM, "out of memory");
			}
			*o = (struct ev_old){gen, c};
		}
	}
	return 0;
}

/* ---- the scan of the devices ---- */

static int scan_one(struct cr *x, uint64_t devid, uint64_t physical, const uint8_t *p)
{
	struct btk_fs *fs = x->fs;
	const struct btk_header *h = (const struct btk_header *)p;
	uint64_t bytenr = btk_le64(h->bytenr), owner = btk_le64(h->owner);
	char why[160];
	struct ev_block *o;

	if (!bytenr || bytenr % fs->sectorsize || h->level >= BTK_MAX_LEVEL ||
	    !btk_fs_fsid_known(fs, h->fsid) || btk_block_check_raw(fs, bytenr, p, why, sizeof(why)))
		return 0;
	if (!(o = btk_vec_push(&x->blocks)))
		return btk_err(ENOMEM, "out of memory");
	*o = (struct ev_block){devid, physical, bytenr, btk_le64(h->generation), owner};
	x->res->tree_blocks++;
	if (h->level)
		return 0;
	struct btk_block b = {.bytenr = bytenr, .len = fs->nodesize, .data = (uint8_t *)p};
	return leaf_items(x, &b, owner, btk_le64(h->generation));
}

static int scan_devices(struct cr *x)
{
	struct btk_fs *fs = x->fs;
	uint32_t ns = fs->nodesize, step = fs->sectorsize;
	uint8_t *buf = malloc(SCAN_BATCH + ns);
	int ret = 0;

	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_dev *dev = fs->devs[i].dev;
		if (!dev)
			continue;
		for (uint64_t at = 0; at < dev->size && !ret; at += SCAN_BATCH) {
			uint64_t len =
			    dev->size - at < SCAN_BATCH + ns ? dev->size - at : SCAN_BATCH + ns;
			if (btk_dev_read(dev, buf, (size_t)len, at)) {
				btk_err_clear(); /* an unreadable stretch holds nothing found */
				continue;
			}
			x->res->scanned_bytes += len < SCAN_BATCH ? len : SCAN_BATCH;
			for (uint64_t off = 0; off < SCAN_BATCH && off + ns <= len && !ret;
			     off += step)
				ret = scan_one(x, fs->devs[i].devid, at + off, buf + off);
		}
	}
	free(buf);
	return ret;
}

/* ---- the newest of each item ---- */

/* Where an item lies: on which device (0: logical addresses), its range, and the
 * generation of the leaf it was found in. */
struct ev_span {
	uint64_t space, start, length, gen;
};
typedef struct ev_span (*span_fn)(const void *item);

static struct ev_span dext_span(const void *item)
{
	const struct ev_dext *d = item;
	return (struct ev_span){d->devid, d->physical, d->length, d->gen};
}

static struct ev_span bg_span(const void *item)
{
	const struct ev_bg *g = item;
	return (struct ev_span){0, g->logical, g->length, g->gen};
}

/* qsort_r order by place, the newest first at one place (arg: the span_fn). */
static int span_order(const void *pa, const void *pb, void *arg)
{
	span_fn span = *(const span_fn *)arg;
	struct ev_span a = span(pa), b = span(pb);

	if (a.space != b.space)
		return a.space < b.space ? -1 : 1;
	if (a.start != b.start)
		return a.start < b.start ? -1 : 1;
	return a.gen > b.gen ? -1 : a.gen < b.gen;
}

/* Of the n items (esz bytes each) at data, keeps of items at one place the newest leaf's and
 * of two that overlap the newer, in order of place; returns how many are kept. */
static size_t keep_newest(void *data, size_t n, size_t esz, span_fn span)
{
	uint8_t *base = data;
	size_t kept = 0;

	if (n)
		qsort_r(data, n, esz, span_order, &span);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = base + i * esz, *last = kept ? base + (kept - 1) * esz : NULL;
		struct ev_span s = span(e);
		if (last) {
			struct ev_span l = span(last);
			if (l.space == s.space && s.start < l.start + l.length) {
				if (s.gen > l.gen)
					memcpy(last, e, esz);
				continue;
			}
		}
		memmove(base + kept++ * esz, e, esz);
	}
	return kept;
}

/* The dev extents and block group items found: the newest at each place. */
static void evidence_newest(struct cr *x)
{
	x->dexts.n = keep_newest(x->dexts.data, x->dexts.n, sizeof(*x->dexts.data), dext_span);
	x->bgs.n = keep_newest(x->bgs.data, x->bgs.n, sizeof(*x->bgs.data), bg_span);
}

/* ---- chunks from dev extents and block groups ---- */

static int dext_chunk_cmp(const void *pa, const void *pb)
{
	const struct ev_dext *a = pa, *b = pb;
	if (a->chunk != b->chunk)
		return a->chunk < b->chunk ? -1 : 1;
	span_fn span = dext_span;
	return span_order(pa, pb, &span);
}

/* Whether a and b have the same place, size, type and stripes (in any order). */
static bool same_stripes(const struct btk_chunk *a, const struct btk_chunk *b)
{
	if (a->logical != b->logical || a->length != b->length || a->type != b->type ||
	    a->num_stripes != b->num_stripes)
		return false;
	for (int i = 0; i < a->num_stripes; i++) {
		bool found = false;
		for (int j = 0; j < b->num_stripes && !found; j++)
			found = a->stripes[i].devid == b->stripes[j].devid &&
				a->stripes[i].offset == b->stripes[j].offset;
		if (!found)
			return false;
	}
	return true;
}

/* An older copy of c's chunk item (the scan's newest, or one of the map's), to take its stripe
 * order and io fields from; NULL when there is none. */
static const struct btk_chunk *older_item(const struct cr *x, const struct btk_chunk *c)
{
	const struct btk_chunk *best = NULL;
	uint64_t gen = 0;

	for (size_t i = 0; i < x->known.n; i++)
		if (same_stripes(x->known.data[i], c))
			return x->known.data[i];
	for (size_t i = 0; i < x->olds.n; i++)
		if (same_stripes(x->olds.data[i].c, c) && (!best || x->olds.data[i].gen > gen)) {
			best = x->olds.data[i].c;
			gen = x->olds.data[i].gen;
		}
	return best;
}

/* The chunk of block group g from its n dev extents d (sorted by device and offset). */
static int make_chunk(struct cr *x, const struct ev_bg *g, const struct ev_dext *d, size_t n,
		      struct btk_chunk **out)
{
	struct btk_fs *fs = x->fs;
	uint64_t type = g->flags & (BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK);
	int sub = type & BTRFS_BLOCK_GROUP_RAID10 ? 2 : 1;
	uint64_t ds = n < 65536 ? btk_chunk_data_stripes(type, (int)n, sub) : 0;
	struct btk_chunk *c;

	if (!n)
		return btk_err(EUCLEAN,
			       "block group [%llu, +%llu) (%s %s) has no dev extent: its chunk's "
			       "stripes are not known",
			       (unsigned long long)g->logical, (unsigned long long)g->length,
			       type & BTRFS_BLOCK_GROUP_SYSTEM	   ? "system"
			       : type & BTRFS_BLOCK_GROUP_METADATA ? "metadata"
								   : "data",
			       profile_name(type));
	for (size_t i = 0; i < n; i++)
		if (!ds || d[i].length != d[0].length || g->length % ds ||
		    g->length / ds != d[i].length)
			return btk_err(EUCLEAN,
				       "chunk %llu: %zu dev extent(s) of %llu bytes do not make a "
				       "%s chunk of %llu bytes",
				       (unsigned long long)g->logical, n,
				       (unsigned long long)d[i].length, profile_name(type),
				       (unsigned long long)g->length);
	if (!(c = calloc(1, sizeof(*c) + n * sizeof(c->stripes[0]))))
		return btk_err(ENOMEM, "out of memory");
	*c = (struct btk_chunk){.logical = g->logical,
				.length = g->length,
				.owner = BTRFS_EXTENT_TREE_OBJECTID,
				.stripe_len = BTK_STRIPE_LEN,
				.type = type,
				.io_align = BTK_STRIPE_LEN,
				.io_width = BTK_STRIPE_LEN,
				.sector_size = fs->sectorsize,
				.num_stripes = (uint16_t)n,
				.sub_stripes = (uint16_t)sub};
	for (size_t i = 0; i < n; i++) {
		const struct btk_fs_dev *fd = btk_fs_dev_find(fs, d[i].devid);
		if (!fd) {
			free(c);
			return btk_err(EUCLEAN,
				       "chunk %llu has a dev extent on devid %llu, which is not a "
				       "device of the filesystem",
				       (unsigned long long)g->logical,
				       (unsigned long long)d[i].devid);
		}
		c->stripes[i].devid = d[i].devid;
		c->stripes[i].offset = d[i].physical;
		memcpy(c->stripes[i].dev_uuid, fd->uuid, BTK_UUID_SIZE);
	}
	const struct btk_chunk *old = older_item(x, c);
	if (old) {
		/* its stripe order (which a striped profile's layout needs) and io fields */
		uint16_t ns = c->num_stripes;
		memcpy(c, old, sizeof(*c));
		c->num_stripes = ns;
		for (int i = 0; i < ns; i++) {
			const struct btk_fs_dev *fd = btk_fs_dev_find(fs, old->stripes[i].devid);
			c->stripes[i] = old->stripes[i];
			memcpy(c->stripes[i].dev_uuid, fd->uuid, BTK_UUID_SIZE);
		}
		x->res->old_items_used++;
	} else if ((type & STRIPED) && n > 1) {
		free(c);
		return btk_err(EUCLEAN,
			       "chunk %llu (%s, %zu stripes): no older copy of its chunk item was "
			       "found, and the order of its stripes is not known",
			       (unsigned long long)g->logical, profile_name(type), n);
	}
	*out = c;
	return 0;
}

/* x->chunks made from x->dexts and x->bgs (newest first). strict: a dev extent no block group
 * claims is refused (the walked dev tree's), else left out (the scan's older ones). */
static int build(struct cr *x, bool strict)
{
	struct ev_dexts *dv = &x->dexts;
	size_t j = 0;
	int ret = 0;

	btk_vec_free_each(&x->chunks);
	x->res->old_items_used = 0;
	if (dv->n)
		qsort(dv->data, dv->n, sizeof(*dv->data), dext_chunk_cmp);
	for (size_t i = 0; i < x->bgs.n && !ret; i++) {
		const struct ev_bg *g = &x->bgs.data[i];
		struct btk_chunk *c = NULL, **slot;
		while (j < dv->n && dv->data[j].chunk < g->logical) {
			if (strict)
				goto unclaimed;
			j++;
		}
		size_t k = j;
		while (k < dv->n && dv->data[k].chunk == g->logical)
			k++;
		if ((ret = make_chunk(x, g, dv->data + j, k - j, &c)))
			break;
		j = k;
		if (!(slot = btk_vec_push(&x->chunks))) {
			free(c);
			return btk_err(ENOMEM, "out of memory");
		}
		*slot = c;
	}
	if (ret || !strict || j == dv->n)
		return ret;
unclaimed:
	return btk_err(
	    EUCLEAN,
	    "dev extent [%llu, +%llu) of devid %llu names chunk %llu, which has no "
	    "block group item",
	    (unsigned long long)dv->data[j].physical, (unsigned long long)dv->data[j].length,
	    (unsigned long long)dv->data[j].devid, (unsigned long long)dv->data[j].chunk);
}

/* The rebuilt chunks become fs's map. */
static int install(struct cr *x)
{
	struct btk_fs *fs = x->fs;
	struct btk_chunk **v = calloc(x->chunks.n ? x->chunks.n : 1, sizeof(*v));

	if (!v)
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < x->chunks.n; i++)
		if (!(v[i] = chunk_dup(x->chunks.data[i]))) {
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return btk_err(ENOMEM, "out of memory");
		}
	for (int i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i]);
	fs->nchunks = 0;
	int ret = btk_chunk_map_add_all(fs, v, (int)x->chunks.n);
	free(v);
	return ret ? ret : btk_chunk_map_check(fs);
}

/* ---- the walk of the dev tree and the block group items through the first map ---- */

static int walk_leaf(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct cr *x = ctx;

	(void)fs, (void)depth;
	return btk_block_level(b) ? 0 : leaf_items(x, b, x->walk_owner, 0);
}

static int walk_tree(struct cr *x, uint64_t id, const char *what)
{
	struct btk_walk_ops ops = {.block = walk_leaf};
	struct btk_root r;
	int ret = btk_root_find(x->fs, id, &r);

	x->walk_owner = id;
	if (!ret)
		ret = btk_tree_walk(x->fs, &r, &ops, x);
	if (ret)
		return btk_err(-ret,
			       "the %s does not read through the chunks the scan found (%s): the "
			       "chunk tree cannot be rebuilt",
			       what, btk_errmsg());
	return 0;
}

static int walk_items(struct cr *x)
{
	bool bgt = btk_le64(x->fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	int ret;

	x->dexts.n = x->bgs.n = 0;
	if ((ret = walk_tree(x, BTRFS_DEV_TREE_OBJECTID, "dev tree")))
		return ret;
	ret = bgt ? walk_tree(x, BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block group tree")
		  : walk_tree(x, BTRFS_EXTENT_TREE_OBJECTID, "extent tree");
	if (!ret) {
		evidence_newest(x);
	}
	return ret;
}

static bool same_set(const struct cr_chunks *a, struct btk_chunk *const *b, size_t nb)
{
	if (a->n != nb)
		return false;
	for (size_t i = 0; i < nb; i++)
		if (!same_stripes(a->data[i], b[i]))
			return false;
	return true;
}

/* ---- cross-checks ---- */

/* Every chunk of the system chunk array and every chunk item that still reads is a rebuilt
 * chunk with the same stripes. */
static int check_known(struct cr *x)
{
	for (size_t i = 0; i < x->known.n; i++) {
		const struct btk_chunk *k = x->known.data[i];
		const struct btk_chunk *c = btk_chunk_find(x->fs, k->logical);
		if (!c || !same_stripes(c, k))
			return btk_err(
			    EUCLEAN,
			    "chunk %llu: the dev extents and block group items say other "
			    "than its chunk item that still reads (or the system chunk "
			    "array): the evidence disagrees",
			    (unsigned long long)k->logical);
	}
	return 0;
}

/* The tree blocks the scan found inside the stripes of metadata and system chunks: the map
 * must put them at the address their header names (stale blocks of an older layout may lie
 * elsewhere, but not most of them). */
static int check_placement(struct cr *x)
{
	struct btk_phys_index *ix;
	uint64_t misplaced_at = 0;
	int ret = btk_phys_index_build(x->fs, &ix);

	if (ret)
		return ret;
	for (size_t i = 0; i < x->blocks.n; i++) {
		const struct ev_block *b = &x->blocks.data[i];
		const struct btk_chunk *c;
		uint64_t logical;
		bool parity;
		if (btk_phys_index_map(ix, b->devid, b->physical, &logical, &c, &parity) ||
		    parity || !(c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM)))
			continue;
		if (logical == b->bytenr) {
			x->res->placed++;
		} else {
			x->res->misplaced++;
			if (!misplaced_at)
				misplaced_at = c->logical;
		}
	}
	btk_phys_index_free(ix);
	btk_err_clear();
	if (x->res->misplaced > x->res->placed)
		return btk_err(EUCLEAN,
			       "%llu tree block(s) lie where the rebuilt map puts other addresses "
			       "(first in chunk %llu), %llu where it puts them: the evidence "
			       "disagrees",
			       (unsigned long long)x->res->misplaced,
			       (unsigned long long)misplaced_at,
			       (unsigned long long)x->res->placed);
	return 0;
}

/* ---- what the chunk tree holds now ---- */

struct ct_walk {
	uint64_t blocks, bad;
};

static int ct_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	(void)fs, (void)b, (void)depth;
	((struct ct_walk *)ctx)->blocks++;
	return 0;
}

static int ct_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	(void)bytenr, (void)level, (void)msg;
	if (err == -ENOMEM)
		return err;
	((struct ct_walk *)ctx)->bad++;
	btk_err_clear();
	return 0;
}

/* The chunks of the map as it was opened (the system chunk array, and the chunk items that
 * read); whether the chunk tree reads whole. */
static int known_chunks(struct cr *x)
{
	struct btk_fs *fs = x->fs;
	struct btk_walk_ops ops = {.block = ct_block, .on_error = ct_error};
	struct ct_walk w = {0};
	struct btk_root r;
	int ret;

	for (int i = 0; i < fs->nchunks; i++) {
		struct btk_chunk **slot = btk_vec_push(&x->known);
		if (!slot || !(*slot = chunk_dup(fs->chunks[i]))) {
			if (slot)
				x->known.n--;
			return btk_err(ENOMEM, "out of memory");
		}
	}
	if ((ret = btk_root_find(fs, BTRFS_CHUNK_TREE_OBJECTID, &r)) ||
	    (ret = btk_tree_walk(fs, &r, &ops, &w)))
		return ret;
	x->res->bad_blocks = w.bad;
	x->res->whole = !w.bad;
	return 0;
}

/* ---- the transaction ---- */

static int verify(void *ctx, struct btk_trans *t)
{
	struct cr *x = ctx;

	return rp_view_verify(t, &x->after, "chunk tree", NULL, NULL, NULL);
}

/* Each device's item: its superblock's copy, with the bytes its dev extents take. */
static int dev_items(struct cr *x, uint8_t (*items)[BTK_DEV_ITEM_SIZE])
{
	struct btk_fs *fs = x->fs;

	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		struct btk_super_copy copies[BTK_SUPER_MIRRORS];
		uint64_t used = 0;
		int m = d->super_mirror;
		if (!d->dev)
			return btk_err(ENODEV,
				       "devid %llu is missing: its device item cannot be "
				       "written",
				       (unsigned long long)d->devid);
		int ret = btk_super_read_all(d->dev, copies);
		if (ret)
			return ret;
		if (m < 0 || m >= BTK_SUPER_MIRRORS || !copies[m].valid ||
		    BTK_GET(struct btrfs_dev_item, copies[m].sb.dev_item, devid) != d->devid)
			return btk_err(EUCLEAN,
				       "devid %llu: no valid superblock with its device item",
				       (unsigned long long)d->devid);
		for (size_t k = 0; k < x->chunks.n; k++) {
			const struct btk_chunk *c = x->chunks.data[k];
			for (int s = 0; s < c->num_stripes; s++)
				if (c->stripes[s].devid == d->devid)
					used += btk_chunk_stripe_len(c);
		}
		memcpy(items[i], copies[m].sb.dev_item, BTK_DEV_ITEM_SIZE);
		BTK_PUT(struct btrfs_dev_item, items[i], bytes_used, used);
		btk_fs_dev_fill(d, items[i]);
		d->has_item = true;
	}
	return 0;
}

/* In the transaction: the chunk tree made again from the device items and the chunks. */
static int write_tree(struct btk_trans *t, void *ctx)
{
	struct cr *x = ctx;
	struct btk_fs *fs = x->fs;
	int ret = rp_tree_replace(t, BTRFS_CHUNK_TREE_OBJECTID, &x->res->old_blocks);

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_key k = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY,
				    fs->devs[i].devid};
		ret = btk_item_insert(t, BTRFS_CHUNK_TREE_OBJECTID, &k, x->items[i],
				      BTK_DEV_ITEM_SIZE);
	}
	for (size_t i = 0; i < x->chunks.n && !ret; i++) {
		const struct btk_chunk *c = x->chunks.data[i];
		uint8_t buf[sizeof(struct btrfs_chunk) + 256 * sizeof(struct btrfs_stripe)];
		struct btk_key k = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				    c->logical};
		if (c->num_stripes > 256)
			return btk_err(EUCLEAN, "chunk %llu: %d stripes",
				       (unsigned long long)c->logical, c->num_stripes);
		ret = btk_item_insert(t, BTRFS_CHUNK_TREE_OBJECTID, &k, buf,
				      btk_chunk_to_item(c, buf));
	}
	if (!ret)
		x->res->devices = (uint64_t)fs->ndevs;
	return ret;
}

/* Whether the chunk tree reads whole (1: nothing to rebuild); a log tree is refused. */
static int look(struct btk_fs *fs, void *ctx)
{
	struct cr *x = ctx;
	int ret;

	x->fs = fs;
	if ((ret = known_chunks(x)))
		return ret;
	if (x->res->whole)
		return 1;
	if (btk_le64(fs->sb.log_root))
		return btk_err(EBUSY, "the filesystem has a log tree: its blocks would not be "
				      "known to the check of the rebuilt state");
	return 0;
}

/* Before the transaction: the chunks from the scan's evidence, and the device items. */
static int prepare(struct btk_fs *fs, void *ctx)
{
	struct cr *x = ctx;
	int ret;

	if ((ret = scan_devices(x)))
		return ret;
	evidence_newest(x);
	x->res->scan_dev_extents = x->dexts.n;
	x->res->scan_block_groups = x->bgs.n;
	if (!x->bgs.n || !x->dexts.n)
		return btk_err(
		    EUCLEAN,
		    "the scan of %llu bytes found %llu tree block(s), %zu dev extent(s) "
		    "and %zu block group item(s): nothing to rebuild the chunk tree from",
		    (unsigned long long)x->res->scanned_bytes,
		    (unsigned long long)x->res->tree_blocks, x->dexts.n, x->bgs.n);
	/* the first map from the newest items found, then from the trees it reads, until the
	 * two agree */
	if ((ret = build(x, false)) || (ret = install(x)))
		return ret;
	for (int round = 0;; round++) {
		struct cr_chunks prev = x->chunks;
		x->chunks = (struct cr_chunks){0};
		if ((ret = walk_items(x)) || (ret = build(x, true))) {
			btk_vec_free_each(&prev);
			return ret;
		}
		bool same = same_set(&prev, x->chunks.data, x->chunks.n);
		btk_vec_free_each(&prev);
		if (same)
			break;
		if (round == 2)
			return btk_err(EUCLEAN,
				       "the dev tree and block group items read through the "
				       "rebuilt chunks name other chunks again: the evidence "
				       "disagrees");
		if ((ret = install(x)))
			return ret;
	}
	x->res->dev_extents = x->dexts.n;
	x->res->block_groups = x->bgs.n;
	x->res->chunks = x->chunks.n;
	for (size_t i = 0; i < x->chunks.n; i++)
		x->res->sys_chunks += !!(x->chunks.data[i]->type & BTRFS_BLOCK_GROUP_SYSTEM);
	if ((ret = check_known(x)) || (ret = check_placement(x)))
		return ret;
	if (!(x->items = calloc((size_t)fs->ndevs, BTK_DEV_ITEM_SIZE)))
		return btk_err(ENOMEM, "out of memory");
	return dev_items(x, x->items);
}

/* Only whether the chunk tree reads whole, read-only. */
static int probe(struct cr *x, const char *const *paths, int n, const struct btk_open_opts *oo)
{
	struct btk_open_opts o = *oo;
	struct btk_fs *fs;
	int ret;

	o.write = false;
	o.chunk_damage = true;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		return ret;
	x->fs = fs;
	ret = known_chunks(x);
	btk_fs_close(fs);
	return ret;
}

static int run(const char *const *paths, int n, const struct btk_open_opts *oo,
	       struct btk_chunk_rebuild_result *res, bool probe_only)
{
	struct cr x = {.res = res};
	int ret;

	memset(res, 0, sizeof(*res));
	if (probe_only)
		ret = probe(&x, paths, n, oo);
	else
		ret = rp_run(paths, n, oo,
			     &(struct rp_run){.look = look,
					      .prepare = prepare,
					      .fn = write_tree,
					      .verify = verify,
					      .ctx = &x,
					      .write_flags = BTK_WRITE_CHUNK_REBUILD,
					      .chunk_damage = true});
	if (ret == 1)
		ret = 0; /* the chunk tree reads whole: nothing written */
	else if (!probe_only)
		res->rebuilt = !ret;
	btk_vec_free(&x.blocks);
	btk_vec_free(&x.dexts);
	btk_vec_free(&x.bgs);
	for (size_t i = 0; i < x.olds.n; i++)
		free(x.olds.data[i].c);
	btk_vec_free(&x.olds);
	btk_vec_free_each(&x.known);
	btk_vec_free_each(&x.chunks);
	btk_vec_free(&x.after);
	free(x.items);
	return ret;
}

int btk_chunk_tree_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			   struct btk_chunk_rebuild_result *res)
{
	return run(paths, n, oo, res, false);
}

int btk_chunk_tree_probe(const char *const *paths, int n, const struct btk_open_opts *oo,
			 struct btk_chunk_rebuild_result *res)
{
	return run(paths, n, oo, res, true);
}
