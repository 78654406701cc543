/* trans_snap.c — snapshots at the tree level: the new tree's root is a copy of the source's
 * root block, every child gains a reference from the new tree, both roots record the
 * transaction in last_snapshot (so later copies check for sharing), and blocks the source
 * changed earlier in this transaction are marked shared until the commit.
 */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "base/uuid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Marks every block of this transaction reachable from the source's root (not the root
 * itself, which the snapshot copies) as shared. Only blocks of this transaction are visited:
 * older ones are recognised by their generation. */
static int mark_shared(struct btk_trans *t, uint64_t bytenr, int level, int depth)
{
	struct btk_block *b;
	int ret;

	if (depth > BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "tree deeper than %d levels", BTK_MAX_LEVEL);
	ret = btk_wblock_read(t->fs, bytenr, level, &b);
	if (ret)
		return ret;
	if (btk_block_generation(b) != t->transid) {
		btk_block_put(b);
		return 0;
	}
	if (depth > 0)
		ret = btk_rs_add(&t->w->snap_shared, bytenr, t->fs->nodesize);
	for (uint32_t i = 0; !ret && level > 0 && i < btk_block_nritems(b); i++)
		ret = mark_shared(t, btk_node_blockptr(b, (int)i), level - 1, depth + 1);
	btk_block_put(b);
	return ret;
}

/* The snapshot's ROOT_ITEM: the source's, with its own identity. */
static void snap_item(struct btk_trans *t, const struct btk_wroot *src, struct btk_wroot *dst,
		      bool readonly, uint64_t now)
{
	struct btk_root_item ri;

	wroot_item(src, &ri);
	memcpy(dst->item, src->item, sizeof(dst->item));
	memset(dst->item + src->item_size, 0, sizeof(dst->item) - src->item_size);
	dst->item_size = sizeof(struct btrfs_root_item);
	/* as the kernel: flags and byte_limit of an item without ROOT_ITEM_INIT are not valid;
	 * the mark must be set, or the kernel drops RDONLY when it loads the snapshot */
	ri.flags &= ~(uint64_t)BTRFS_ROOT_SUBVOL_RDONLY;
	if (!(ri.inode.flags & BTK_INODE_ROOT_ITEM_INIT)) {
		ri.flags = 0;
		ri.byte_limit = 0;
	}
	ri.inode.flags |= BTK_INODE_ROOT_ITEM_INIT;
	if (readonly)
		ri.flags |= BTRFS_ROOT_SUBVOL_RDONLY;
	ri.refs = 1;
	ri.last_snapshot = t->transid;
	ri.drop_progress = (struct btk_key){0};
	ri.drop_level = 0;
	memcpy(ri.parent_uuid, ri.uuid, BTK_UUID_SIZE);
	/* as populate names subvolumes: one uuid per tree id when derived */
	btk_uuid_make(t->w->uuid_seed, "subvol", dst->objectid, ri.uuid);
	memset(ri.received_uuid, 0, BTK_UUID_SIZE);
	ri.ctransid = ri.otransid = t->transid;
	ri.stransid = ri.rtransid = 0;
	ri.ctime = ri.otime = (struct btk_time){.sec = now};
	ri.stime = ri.rtime = (struct btk_time){0};
	wroot_item_set(dst, &ri);
}

int btk_tree_snapshot(struct btk_trans *t, uint64_t src, uint64_t dst, bool readonly, uint64_t now)
{
	struct btk_wfs *w = t->w;
	struct btk_wroot *s = btk_wroot_get(w, src), *d;
	struct btk_block *b, *nb;
	struct btk_header *h;
	uint64_t bytenr;
	int ret;

	if (!s || !s->in_root_tree)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)src);
	if (src != BTRFS_FS_TREE_OBJECTID &&
	    (src < BTRFS_FIRST_FREE_OBJECTID || src > BTRFS_LAST_FREE_OBJECTID))
		return btk_err(EINVAL, "tree %llu is not a subvolume", (unsigned long long)src);
	if (dst < BTRFS_FIRST_FREE_OBJECTID || dst > BTRFS_LAST_FREE_OBJECTID)
		return btk_err(EINVAL, "%llu is not a subvolume id", (unsigned long long)dst);
	if (btk_wroot_get(w, dst))
		return btk_err(EEXIST, "tree %llu exists", (unsigned long long)dst);
	btk_err_clear();
	struct btk_snapshot_note note = {.src = src, .dst = dst};
	if ((ret = btk_wblock_read(t->fs, s->bytenr, s->level, &b)))
		return ret;
	note.src_new = btk_block_generation(b) == t->transid;
	btk_block_put(b);
	/* as the kernel, the source's root is copied into this transaction first: its root item
	 * changes (last_snapshot), and a root item's generation must be its root block's */
	{
		struct btk_key k0 = {0, 0, 0};
		struct btk_path p;
		ret = btk_tree_search_write(t, src, &k0, 0, &p);
		btk_wpath_release(&p);
		if (ret < 0)
			return ret;
		s = btk_wroot_get(w, src);
	}
	if ((ret = mark_shared(t, s->bytenr, s->level, 0)))
		return ret;
	struct btk_root_item sri;
	wroot_item(s, &sri);
	sri.last_snapshot = t->transid;
	wroot_item_set(s, &sri);
	/* the new tree and its root: a copy of the source's root block */
	if ((ret = btk_tree_create(t, dst, &d)))
		return ret;
	bytenr = d->bytenr;
	/* as the kernel keys a snapshot's root item: by the transaction that made it, which its
	 * drop uses to tell the blocks it owns from those it shares with the source */
	d->item_key.offset = t->transid;
	snap_item(t, s, d, readonly, now);
	if ((ret = btk_wblock_read(t->fs, s->bytenr, s->level, &b)))
		return ret;
	nb = btk_cache_lookup(t->fs->cache, bytenr);
	if (!nb) {
		btk_block_put(b);
		return btk_err(EIO, "new root block %llu vanished", (unsigned long long)bytenr);
	}
	memcpy(nb->data, b->data, t->fs->nodesize);
	btk_block_put(b);
	h = (struct btk_header *)nb->data;
	btk_put64(h->bytenr, bytenr);
	btk_put64(h->generation, t->transid);
	btk_put64(h->owner, dst);
	btk_put64(h->flags, (uint64_t)BTK_MIXED_BACKREF_REV << BTK_BACKREF_REV_SHIFT);
	nb->dirty = true;
	d->level = s->level;
	if (s->level) {
		/* btk_tree_create queued the root's record as a leaf: correct its level */
		for (size_t i = w->nrefs; i-- > 0;)
			if (w->refs[i].bytenr == bytenr && w->refs[i].delta > 0) {
				w->refs[i].level = s->level;
				break;
			}
	}
	ret = btk_block_child_refs(t, dst, nb, 1, false);
	btk_block_put(nb);
	note.dst_block = bytenr;
	if (!ret)
		ret = btk_note_snapshot(w, &note);
	if (ret)
		return ret;
	/* the uuid tree maps the new uuid to the snapshot */
	{
		const uint8_t *u = d->item + offsetof(struct btrfs_root_item, uuid);
		struct btk_key k = {btk_le64(u), BTRFS_UUID_KEY_SUBVOL, btk_le64(u + 8)};
		uint8_t id[8];
		btk_put64(id, dst);
		if (btk_wroot_get(w, BTRFS_UUID_TREE_OBJECTID))
			ret = btk_item_insert(t, BTRFS_UUID_TREE_OBJECTID, &k, id, sizeof(id));
		else
			btk_err_clear();
	}
	w->mods++;
	return ret;
}
