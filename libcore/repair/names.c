/* names.c (layer 10) — a name's missing side rebuilt from the side that has it: the inode ref
 * (which the inode keeps, and which says the name and its index) gives the directory's
 * DIR_INDEX and DIR_ITEM. A DIR_INDEX at that index that names the same inode by a name
 * nothing else agrees with is replaced. The directory's size follows the names added and
 * removed, as the kernel keeps it.
 */
#include "repair/repair_int.h"
#include "base/error.h"
#include "format/dir_item.h"
#include "format/inode_item.h"
#include "fs/fs_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static uint64_t val(const struct rp_prob *p, unsigned i)
{
	return i < p->nvals ? p->vals[i] : 0;
}

struct rp_name {
	char name[BTK_NAME_MAX];
	uint16_t len;
	uint8_t ftype;
};

/* The name of child in dir at index idx, from child's INODE_REF, and child's file type:
 * 0, 1 when there is none (no ref with that index, no inode item), negative errno. */
static int name_from_ref(struct btk_trans *t, uint64_t root, uint64_t child, uint64_t dir,
			 uint64_t idx, struct rp_name *n)
{
	static uint8_t buf[65536];
	uint8_t ino[sizeof(struct btrfs_inode_item)];
	struct btk_key k = {child, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_ref_iter it;
	struct btk_ref_ent r;
	uint32_t size = 0;
	int ret = btk_item_next(t, root, &k, ino, sizeof(ino), &size);

	if (ret || k.objectid != child || k.type != BTRFS_INODE_ITEM_KEY || size < sizeof(ino))
		return ret < 0 ? ret : 1;
	n->ftype = btk_mode_ftype(BTK_GET(struct btrfs_inode_item, ino, mode));
	k = (struct btk_key){child, BTRFS_INODE_REF_KEY, dir};
	ret = btk_item_next(t, root, &k, buf, sizeof(buf), &size);
	if (ret || k.objectid != child || k.type != BTRFS_INODE_REF_KEY || k.offset != dir ||
	    size > sizeof(buf))
		return ret < 0 ? ret : 1;
	btk_ref_iter_init(&it, &k, buf, size);
	while (btk_ref_next(&it, &r) == 1)
		if (r.index == idx && r.name_len && r.name_len <= BTK_NAME_MAX) {
			memcpy(n->name, r.name, r.name_len);
			n->len = r.name_len;
			return 0;
		}
	return 1;
}

/* The sides a name report found ("DIR_ITEM DIR_INDEX INODE_REF" in any part). */
static bool found_side(const struct rp_prob *p, const char *side)
{
	return strstr(p->found, side) != NULL;
}

/* What the directory's size gains from a side of a name of len bytes added back: len, or 0 when
 * the check found the size larger than its names by exactly that (the side was lost, not
 * its count, which the kernel keeps: the size is right once the side is back, in this round). */
static uint64_t size_gain(const struct rp_ctx *x, uint64_t root, uint64_t dir, uint64_t len)
{
	for (size_t i = 0; i < x->all->n; i++) {
		const struct rp_prob *q = &x->all->data[i];
		if (q->id == BTK_P_DIR_ISIZE && q->tree == root && q->has_key &&
		    q->key.objectid == dir && q->nvals > 2 && val(q, 2) == val(q, 1) + len)
			return 0;
	}
	return len;
}

/* E1209: a name whose DIR_INDEX is missing gets one from its inode ref. */
int rp_fix_name_index(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		      size_t cap)
{
	struct btk_trans *t = x->t;
	uint64_t root = p->tree, child = val(p, 1), dir = val(p, 2), idx = p->key.offset;
	struct btk_key loc = {child, BTRFS_INODE_ITEM_KEY, 0};
	uint8_t old[sizeof(struct btrfs_dir_item) + BTK_NAME_MAX + 64];
	struct rp_name n;
	uint32_t size = 0;
	int64_t delta = 0;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_DIR_INDEX_KEY || p->key.objectid != dir ||
	    !found_side(p, "INODE_REF"))
		return 1;
	if ((ret = name_from_ref(t, root, child, dir, idx, &n)))
		return ret;
	struct btk_key k = p->key;
	ret = btk_item_next(t, root, &k, old, sizeof(old), &size);
	if (ret < 0)
		return ret;
	snprintf(before, cap, "no dir index %llu", (unsigned long long)idx);
	if (!ret && !btk_key_cmp(&k, &p->key)) {
		/* another name at this index: replaced only when it names the same inode and
		 * nothing else has that name (its own report: a dir index alone) */
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		struct btk_key l;
		const struct rp_prob *orphan = NULL;
		for (size_t i = 0; i < x->all->n; i++) {
			const struct rp_prob *q = &x->all->data[i];
			if (q->id == BTK_P_NAME_MISSING_ITEM && q->tree == p->tree && q->has_key &&
			    !btk_key_cmp(&q->key, &p->key) && !found_side(q, "INODE_REF") &&
			    !found_side(q, "DIR_ITEM"))
				orphan = q;
		}
		if (size > sizeof(old))
			return 1;
		btk_dir_iter_init(&it, old, size);
		if (!orphan || btk_dir_next(&it, &e) != 1 || btk_dir_next(&it, &e) != 0)
			return 1;
		btk_dir_iter_init(&it, old, size);
		btk_dir_next(&it, &e);
		btk_dir_ent_location(&e, &l);
		if (l.objectid != child || l.type != BTRFS_INODE_ITEM_KEY)
			return 1;
		snprintf(before, cap, "dir index %llu names \"%.*s\"", (unsigned long long)idx,
			 (int)(e.name_len < 40 ? e.name_len : 40), e.name);
		delta -= e.name_len;
		if ((ret = btk_item_delete(t, root, &p->key)))
			return ret;
	}
	if ((ret = btk_dir_name_add(t, root, dir, n.name, n.len, &loc, n.ftype, idx,
				    BTK_NAME_DIR_INDEX)))
		return ret;
	delta += delta ? n.len : size_gain(x, root, dir, n.len);
	if (delta && (ret = btk_inode_add_dir_size(t, root, dir, (uint64_t)delta)))
		return ret;
	snprintf(after, cap, "dir index %llu names \"%.*s\" (its inode ref's name)",
		 (unsigned long long)idx, (int)(n.len < 40 ? n.len : 40), n.name);
	return 0;
}

/* E1210: a name whose DIR_ITEM is missing gets one from its inode ref; a dir index alone (no
 * other side agrees with it) is the dir-index fix's to replace. */
int rp_fix_name_item(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		     size_t cap)
{
	struct btk_trans *t = x->t;
	uint64_t root = p->tree, child = val(p, 1), dir = val(p, 2), idx = p->key.offset;
	struct btk_key loc = {child, BTRFS_INODE_ITEM_KEY, 0};
	struct rp_name n;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_DIR_INDEX_KEY || p->key.objectid != dir ||
	    !found_side(p, "INODE_REF") || !found_side(p, "DIR_INDEX"))
		return 1; /* a dir index alone: replaced by the dir-index fix, or left */
	if ((ret = name_from_ref(t, root, child, dir, idx, &n)))
		return ret;
	if ((ret = btk_dir_name_add(t, root, dir, n.name, n.len, &loc, n.ftype, idx,
				    BTK_NAME_DIR_ITEM)))
		return ret;
	uint64_t gain = size_gain(x, root, dir, n.len);
	if (gain && (ret = btk_inode_add_dir_size(t, root, dir, gain)))
		return ret;
	snprintf(before, cap, "no dir item for \"%.*s\"", (int)(n.len < 40 ? n.len : 40), n.name);
	snprintf(after, cap, "dir item \"%.*s\" (its inode ref's name)",
		 (int)(n.len < 40 ? n.len : 40), n.name);
	return 0;
}
