/* trans_super.c — superblock fields a transaction changes: the label, and the fsid through the
 * metadata_uuid feature (as btrfstune -m/-M), so that no tree block is rewritten for it. */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
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

int btk_trans_set_fsid(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE])
{
	struct btk_fs *fs = t->fs;
	struct btk_super *sb = &fs->sb;
	uint64_t incompat = btk_le64(sb->incompat_flags);
	int ret;

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
	if ((ret = touch_roots(t)))
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
