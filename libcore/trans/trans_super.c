/* trans_super.c — superblock fields a transaction changes: the label, and the fsid through the
 * metadata_uuid feature (as btrfstune -m/-M), so that no tree block is rewritten for it. */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "format/dev_items.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The superblocks of a commit must point at trees of its generation: copying the root tree's
 * first path is the change that makes one. */
static int touch_roots(struct btk_trans *t)
{
	struct btk_key k = {0, 0, 0};
	struct btk_path p;
	int ret = btk_tree_search_write(t, BTRFS_ROOT_TREE_OBJECTID, &k, 0, &p);

	if (ret < 0)
		return ret;
	btk_wpath_release(&p);
	return 0;
}

int btk_trans_touch(struct btk_trans *t)
{
	return touch_roots(t);
}

int btk_trans_uuid_tree_current(struct btk_trans *t)
{
	int ret = touch_roots(t);

	if (!ret)
		btk_put64(t->fs->sb.uuid_tree_generation, t->transid);
	return ret;
}

int btk_trans_set_label(struct btk_trans *t, const char *label)
{
	size_t len = strlen(label);

	if (len >= BTK_LABEL_SIZE)
		return btk_err(EINVAL, "a label of %zu bytes: at most %d", len, BTK_LABEL_SIZE - 1);
	int ret = touch_roots(t);
	if (ret)
		return ret;
	memset(t->fs->sb.label, 0, BTK_LABEL_SIZE);
	memcpy(t->fs->sb.label, label, len);
	return 0;
}

/* What refuses a change of the fsid, either way. */
static int fsid_change_refused(const struct btk_fs *fs)
{
	const struct btk_super *sb = &fs->sb;

	/* the superblocks of several devices cannot change at once: a power cut between two
	 * devices would leave them naming different filesystems */
	if (fs->ndevs != 1)
		return btk_err(EOPNOTSUPP,
			       "a filesystem of %d devices: the fsid of one device at a time could "
			       "be left disagreeing after a power cut; only single-device "
			       "filesystems are changed",
			       fs->ndevs);
	if (btk_le64(sb->flags) & (BTK_SUPER_FLAG_CHANGING_FSID | BTK_SUPER_FLAG_CHANGING_FSID_V2))
		return btk_err(EBUSY, "an fsid change by btrfstune was interrupted: finish it with "
				      "btrfstune first");
	if (btk_le64(sb->flags) & BTK_SUPER_FLAG_SEEDING)
		return btk_err(EOPNOTSUPP, "a seed filesystem: its sprouts find it by its fsid");
	return 0;
}

int btk_trans_set_fsid(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE])
{
	struct btk_fs *fs = t->fs;
	struct btk_super *sb = &fs->sb;
	uint64_t incompat = btk_le64(sb->incompat_flags);
	int ret;

	if ((ret = fsid_change_refused(fs)) || (ret = touch_roots(t)))
		return ret;
	if (!memcmp(fsid, fs->meta_uuid, BTK_FSID_SIZE)) {
		/* back to the uuid the metadata holds: no metadata_uuid any more */
		incompat &= ~(uint64_t)BTRFS_FEATURE_INCOMPAT_METADATA_UUID;
		memset(sb->metadata_uuid, 0, BTK_FSID_SIZE);
	} else {
		incompat |= BTRFS_FEATURE_INCOMPAT_METADATA_UUID;
		memcpy(sb->metadata_uuid, fs->meta_uuid, BTK_FSID_SIZE);
	}
	btk_put64(sb->incompat_flags, incompat);
	memcpy(sb->fsid, fsid, BTK_FSID_SIZE);
	memcpy(fs->fsid, fsid, BTK_FSID_SIZE);
	return 0;
}

int btk_trans_fsid_rewrite_begin(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE])
{
	struct btk_fs *fs = t->fs;
	struct btk_super *sb = &fs->sb;
	int ret;

	if ((ret = fsid_change_refused(fs)))
		return ret;
	if (btk_le64(sb->log_root))
		return btk_err(EBUSY, "the filesystem has a log tree (not replayed): its blocks "
				      "would keep the old fsid");
	if (fs->prev_meta_ok)
		return btk_err(EBUSY, "the fsid is already being rewritten");
	memcpy(fs->prev_meta_uuid, fs->meta_uuid, BTK_FSID_SIZE);
	fs->prev_meta_ok = true;
	memcpy(fs->meta_uuid, fsid, BTK_FSID_SIZE);
	ret = touch_roots(t);
	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		struct btk_key key = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, d->devid};
		uint8_t item[BTK_DEV_ITEM_SIZE];
		struct btk_path p;
		uint32_t size = 0;

		ret = btk_tree_search_cur(t->w, BTRFS_CHUNK_TREE_OBJECTID, &key, &p);
		if (!ret && btk_item_ptr(&p, &size) && size == sizeof(item))
			memcpy(item, btk_item_ptr(&p, NULL), sizeof(item));
		btk_wpath_release(&p);
		if (ret < 0)
			break;
		if (ret || size != sizeof(item)) {
			ret = btk_err(EUCLEAN, "no valid device item for devid %llu",
				      (unsigned long long)d->devid);
			break;
		}
		memcpy(item + offsetof(struct btrfs_dev_item, fsid), fsid, BTK_FSID_SIZE);
		ret = btk_item_update(t, BTRFS_CHUNK_TREE_OBJECTID, &key, item, sizeof(item));
		if (!ret)
			memcpy(d->fsid, fsid, BTK_FSID_SIZE);
	}
	if (ret) {
		btk_trans_fsid_rewrite_cancel(t);
		return ret;
	}
	/* the tree blocks and devices now hold the fsid itself: no metadata_uuid */
	btk_put64(sb->incompat_flags,
		  btk_le64(sb->incompat_flags) & ~(uint64_t)BTRFS_FEATURE_INCOMPAT_METADATA_UUID);
	memset(sb->metadata_uuid, 0, BTK_FSID_SIZE);
	memcpy(sb->fsid, fsid, BTK_FSID_SIZE);
	memcpy(fs->fsid, fsid, BTK_FSID_SIZE);
	/* older backup roots name trees whose blocks carry the old fsid: none is usable after */
	memset(sb->super_roots, 0, sizeof(sb->super_roots));
	return 0;
}

/* Every block of tree `tree` as it is now must carry the fsid (a leaf at a time, with the
 * nodes above it). */
static int tree_has_fsid(struct btk_trans *t, uint64_t tree, uint64_t *blocks)
{
	struct btk_fs *fs = t->fs;
	struct btk_key k = {0, 0, 0};
	struct btk_path p;
	uint64_t seen[BTK_MAX_LEVEL] = {0};
	int ret = btk_tree_search_cur(t->w, tree, &k, &p);

	for (ret = ret < 0 ? ret : 0; !ret;) {
		for (int l = 0; l < BTK_MAX_LEVEL && p.nodes[l]; l++) {
			const struct btk_header *h = (const struct btk_header *)p.nodes[l]->data;
			if (seen[l] == p.nodes[l]->bytenr)
				continue;
			seen[l] = p.nodes[l]->bytenr;
			(*blocks)++;
			if (memcmp(h->fsid, fs->meta_uuid, BTK_FSID_SIZE))
				ret = btk_err(EUCLEAN,
					      "tree %llu: block %llu (level %d) still has the old "
					      "fsid after the rewrite",
					      (unsigned long long)tree,
					      (unsigned long long)p.nodes[l]->bytenr, l);
		}
		if (ret)
			break;
		/* on to the next leaf */
		if (btk_block_nritems(p.nodes[0]))
			p.slots[0] = (int)btk_block_nritems(p.nodes[0]) - 1;
		ret = btk_wpath_next(fs, &p);
	}
	btk_wpath_release(&p);
	return ret < 0 ? ret : 0;
}

int btk_trans_fsid_rewrite_done(struct btk_trans *t, uint64_t *blocks)
{
	struct btk_key k = {0, 0, 0}, f;
	struct btk_path p;
	uint64_t *ids = NULL;
	size_t n = 0, cap = 0;
	int ret;

	if (!t->fs->prev_meta_ok)
		return btk_err(EINVAL, "no fsid rewrite running");
	t->fs->prev_meta_ok = false;
	*blocks = 0;
	/* the trees the root tree names, as they are now */
	ret = btk_tree_search_cur(t->w, BTRFS_ROOT_TREE_OBJECTID, &k, &p);
	for (ret = ret < 0 ? ret : 0; !ret; ret = btk_wpath_next(t->fs, &p)) {
		if (p.slots[0] >= (int)btk_block_nritems(p.nodes[0]))
			continue;
		btk_leaf_key(p.nodes[0], p.slots[0], &f);
		if (f.type != BTRFS_ROOT_ITEM_KEY)
			continue;
		if (f.objectid == BTRFS_TREE_RELOC_OBJECTID ||
		    f.objectid == BTRFS_TREE_LOG_OBJECTID) {
			ret = btk_err(EBUSY,
				      "a relocation or log tree: its blocks keep the old fsid");
			break;
		}
		if (n == cap) {
			uint64_t *m = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof(*ids));
			if (!m) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			ids = m;
		}
		ids[n++] = f.objectid;
	}
	btk_wpath_release(&p);
	if (ret >= 0)
		ret = tree_has_fsid(t, BTRFS_ROOT_TREE_OBJECTID, blocks);
	if (!ret)
		ret = tree_has_fsid(t, BTRFS_CHUNK_TREE_OBJECTID, blocks);
	for (size_t i = 0; i < n && !ret; i++)
		ret = tree_has_fsid(t, ids[i], blocks);
	free(ids);
	if (ret) /* still running, for btk_trans_fsid_rewrite_cancel */
		t->fs->prev_meta_ok = true;
	return ret;
}

void btk_trans_fsid_rewrite_cancel(struct btk_trans *t)
{
	struct btk_fs *fs = t->fs;

	if (!fs->prev_meta_ok)
		return;
	for (int i = 0; i < fs->ndevs; i++)
		if (!memcmp(fs->devs[i].fsid, fs->meta_uuid, BTK_FSID_SIZE))
			memcpy(fs->devs[i].fsid, fs->prev_meta_uuid, BTK_FSID_SIZE);
	memcpy(fs->meta_uuid, fs->prev_meta_uuid, BTK_FSID_SIZE);
	fs->prev_meta_ok = false;
}
