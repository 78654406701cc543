/* ctree_push.c — making room in a full leaf by moving items into a sibling leaf under the same
 * parent before it is split. Inserts in increasing or decreasing key order (a populated tree
 * gets its inodes and directory indexes that way) then fill leaves instead of leaving every
 * split half empty.
 *
 * The strategy is the kernel's: first try the right sibling, then the left one; move as many
 * items as the sibling takes (so that one push makes room for many inserts), and only when the
 * leaf that will hold the new or grown item then has room.
 *
 * Back references stay as they are: only leaf items move, never a block pointer, and the
 * file extent items of a leaf this transaction changes refer to their data by (root, inode,
 * offset). A data reference keyed by a leaf (FULL_BACKREF) only ever names a block that
 * copy-on-write left behind for a snapshot (refs_for_cow), and that block is never changed.
 */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ITEM_SZ ((uint32_t)sizeof(struct btk_item))
#define HDR_SZ	((uint32_t)sizeof(struct btk_header))

/* A leaf being laid out in a scratch buffer: item headers from the front, data compact from
 * the back. */
struct leaf_img {
	uint8_t *buf; /* the leaf's area after its header */
	uint32_t n, end;
};

/* Appends items [from, to) of src to the image (the caller made sure they fit). */
static void img_put(struct leaf_img *img, const struct btk_block *src, uint32_t from, uint32_t to)
{
	const uint8_t *sb = src->data + HDR_SZ;

	for (uint32_t i = from; i < to; i++, img->n++) {
		const struct btk_item *s = (const struct btk_item *)sb + i;
		struct btk_item *d = (struct btk_item *)img->buf + img->n;
		uint32_t sz = btk_le32(s->size);

		img->end -= sz;
		memcpy(img->buf + img->end, sb + btk_le32(s->offset), sz);
		*d = *s;
		btk_put32(d->offset, img->end);
	}
}

static void img_start(struct leaf_img *img, uint8_t *buf, uint32_t cap)
{
	memset(buf, 0, cap);
	img->buf = buf;
	img->n = 0;
	img->end = cap;
}

static void img_store(struct leaf_img *img, struct btk_block *dst, uint32_t cap)
{
	memcpy(dst->data + HDR_SZ, img->buf, cap);
	btk_set_nritems(dst, img->n);
}

/* Reads the leaf at parent slot ps of p->nodes[1] without copying it. */
static int read_sibling(struct btk_trans *t, struct btk_path *p, int ps, struct btk_block **out)
{
	return btk_wblock_read(t->fs, btk_node_blockptr(p->nodes[1], ps), 0, out);
}

/* Copies the sibling leaf at parent slot ps for this transaction (the parent, already copied,
 * is pointed at the copy); *s is replaced by the copy. */
static int cow_sibling(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int ps,
		       struct btk_block **s)
{
	struct btk_path sp;
	int ret;

	btk_path_init(&sp);
	sp.nodes[0] = *s;
	sp.nodes[1] = p->nodes[1];
	btk_block_get(sp.nodes[1]);
	sp.slots[1] = ps;
	*s = NULL;
	ret = btk_cow_at(t, wr, &sp, 0);
	if (!ret) {
		*s = sp.nodes[0];
		sp.nodes[0] = NULL;
	}
	btk_wpath_release(&sp);
	return ret;
}

/* Sets the parent's key of the leaf at parent slot ps to that leaf's first key. Never slot 0
 * here (a right sibling, or a leaf with a left sibling), so nothing above changes. */
static void set_parent_key(struct btk_path *p, int ps, const struct btk_block *leaf)
{
	struct btk_block *up = p->nodes[1];
	struct btk_key k;

	btk_leaf_key(leaf, 0, &k);
	btk_node_set_ptr(up, ps, &k, btk_node_blockptr(up, ps), btk_node_gen(up, ps));
}

/* The planned move: `k` virtual entries, `kr` of them real items. */
struct push_plan {
	uint32_t k, kr;
	bool target_moves;
};

/* Right: the last entries of the leaf's virtual layout v[0, vm) go to the front of a sibling
 * with `room` free bytes; the first real item stays. True when the changed item then has
 * room (*pl says how). */
static bool plan_right(const uint32_t *v, uint32_t vm, uint32_t tgt, bool found, uint32_t total,
		       uint32_t cap, uint32_t room, struct push_plan *pl)
{
	uint32_t keep = (!found && tgt == 0) ? 2 : 1, sum = 0, k = 0;

	while (k + keep < vm && sum + v[vm - 1 - k] <= room)
		sum += v[vm - 1 - k++];
	pl->k = k;
	pl->target_moves = tgt >= vm - k;
	pl->kr = k - (!found && pl->target_moves);
	return k && (pl->target_moves || total - sum <= cap);
}

/* Left: the first entries go to the end of a sibling with `room` free bytes; the last real
 * item stays. */
static bool plan_left(const uint32_t *v, uint32_t vm, uint32_t tgt, bool found, uint32_t total,
		      uint32_t cap, uint32_t room, struct push_plan *pl)
{
	uint32_t keep = (!found && tgt == vm - 1) ? 2 : 1, sum = 0, k = 0;

	while (k + keep < vm && sum + v[k] <= room)
		sum += v[k++];
	pl->k = k;
	pl->target_moves = tgt < k;
	pl->kr = k - (!found && pl->target_moves);
	return k && (pl->target_moves || total - sum <= cap);
}

static int push_right(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p,
		      struct btk_block *r, const struct push_plan *pl, uint32_t tgt, uint32_t vm,
		      uint8_t *scratch)
{
	const struct btk_fs *fs = t->fs;
	uint32_t cap = btk_leaf_data_size(fs);
	struct btk_block *l = p->nodes[0];
	uint32_t ln = btk_block_nritems(l);
	int ps = p->slots[1] + 1, ret;
	struct leaf_img img;

	ret = cow_sibling(t, wr, p, ps, &r);
	if (ret)
		return ret;
	if (pl->kr) {
		img_start(&img, scratch, cap);
		img_put(&img, l, ln - pl->kr, ln);
		img_put(&img, r, 0, btk_block_nritems(r));
		img_store(&img, r, cap);
		btk_set_nritems(l, ln - pl->kr);
		set_parent_key(p, ps, r);
	}
	t->w->mods++;
	if (pl->target_moves) {
		btk_block_put(l);
		p->nodes[0] = r;
		p->slots[0] = (int)(tgt - (vm - pl->k));
		p->slots[1] = ps;
	} else {
		btk_block_put(r);
	}
	return 0;
}

static int push_left(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p,
		     struct btk_block *s, const struct push_plan *pl, uint32_t tgt,
		     uint8_t *scratch)
{
	const struct btk_fs *fs = t->fs;
	uint32_t cap = btk_leaf_data_size(fs);
	struct btk_block *l = p->nodes[0];
	uint32_t ln = btk_block_nritems(l), sn;
	int ps = p->slots[1] - 1, ret;
	struct leaf_img img;

	ret = cow_sibling(t, wr, p, ps, &s);
	if (ret)
		return ret;
	sn = btk_block_nritems(s);
	img_start(&img, scratch, cap);
	img_put(&img, s, 0, sn);
	img_put(&img, l, 0, pl->kr);
	img_store(&img, s, cap);
	img_start(&img, scratch, cap);
	img_put(&img, l, pl->kr, ln);
	img_store(&img, l, cap);
	set_parent_key(p, p->slots[1], l);
	t->w->mods++;
	if (pl->target_moves) {
		btk_block_put(l);
		p->nodes[0] = s;
		p->slots[0] = (int)(sn + tgt);
		p->slots[1] = ps;
	} else {
		btk_block_put(s);
		p->slots[0] -= (int)pl->kr;
	}
	return 0;
}

int btk_leaf_push(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, const uint32_t *v,
		  uint32_t vm, bool found)
{
	const struct btk_fs *fs = t->fs;
	uint32_t cap = btk_leaf_data_size(fs), total = 0, tgt = (uint32_t)p->slots[0];
	struct btk_block *up = p->nodes[1];
	int ps = p->slots[1];

	if (!up || wr->level < 1)
		return 1;
	for (uint32_t i = 0; i < vm; i++)
		total += v[i];
	for (int right = 1; right >= 0; right--) {
		int sps = right ? ps + 1 : ps - 1, ret;
		struct btk_block *s;
		struct push_plan pl;
		uint8_t *scratch;
		bool ok;

		if (sps < 0 || sps >= (int)btk_block_nritems(up))
			continue;
		ret = read_sibling(t, p, sps, &s);
		if (ret)
			return ret;
		ok = right ? plan_right(v, vm, tgt, found, total, cap, btk_leaf_free(fs, s), &pl)
			   : plan_left(v, vm, tgt, found, total, cap, btk_leaf_free(fs, s), &pl);
		if (!ok) {
			btk_block_put(s);
			continue;
		}
		scratch = malloc(cap);
		if (!scratch) {
			btk_block_put(s);
			return btk_err(ENOMEM, "out of memory");
		}
		ret = right ? push_right(t, wr, p, s, &pl, tgt, vm, scratch)
			    : push_left(t, wr, p, s, &pl, tgt, scratch);
		free(scratch);
		return ret;
	}
	return 1;
}
