/* fs_subvol.c — creating subvolumes and choosing the default one. */
#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"
#include "format/qgroup_item.h"
#include "format/root_item.h"
#include "fs/fs_write.h"

#include <errno.h>

static int root_refs(struct btk_trans *t, const struct btk_subvol_new *s)
{
	uint8_t buf[sizeof(struct btrfs_root_ref) + BTK_NAME_MAX];
	struct btk_key k = {s->parent, BTRFS_ROOT_REF_KEY, s->id};
	uint32_t len = btk_root_ref_write(buf, s->dir, s->index, s->name, s->name_len);
	int ret;

	if ((ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, len)))
		return ret;
	k = (struct btk_key){s->id, BTRFS_ROOT_BACKREF_KEY, s->parent};
	return btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, len);
}

int btk_qgroup_create(struct btk_trans *t, uint64_t id)
{
	uint8_t info[BTK_QGROUP_INFO_SIZE];
	struct btrfs_qgroup_limit_item limit = {0};
	struct btk_key k = {0, BTRFS_QGROUP_INFO_KEY, id}; /* level 0: the qgroup id is the id */
	struct btk_root q;
	int ret;

	if (btk_root_find(btk_trans_fs(t), BTRFS_QUOTA_TREE_OBJECTID, &q)) {
		btk_err_clear();
		return 0; /* quotas off */
	}
	ret = btk_item_next(t, BTRFS_QUOTA_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (ret == 0 && k.objectid == 0 && k.type == BTRFS_QGROUP_INFO_KEY && k.offset == id)
		return 0; /* there already */
	btk_qgroup_info_write(info, btk_trans_id(t), &(struct btk_qgroup_counts){0});
	k = (struct btk_key){0, BTRFS_QGROUP_INFO_KEY, id};
	if ((ret = btk_item_insert(t, BTRFS_QUOTA_TREE_OBJECTID, &k, info, sizeof(info))))
		return ret;
	k.type = BTRFS_QGROUP_LIMIT_KEY;
	return btk_item_insert(t, BTRFS_QUOTA_TREE_OBJECTID, &k, &limit, sizeof(limit));
}

int btk_subvol_create(struct btk_trans *t, const struct btk_subvol_new *s,
		      const struct btk_inode_attr *a)
{
	struct btk_key loc = {s->id, BTRFS_ROOT_ITEM_KEY, UINT64_MAX};
	struct btk_key uk = {btk_le64(s->uuid), BTRFS_UUID_KEY_SUBVOL, btk_le64(s->uuid + 8)};
	struct btrfs_root_item *item;
	struct btk_root_item ri;
	uint8_t idbuf[8];
	int ret;

	if (s->id < BTRFS_FIRST_FREE_OBJECTID || s->id > BTRFS_LAST_FREE_OBJECTID)
		return btk_err(EINVAL, "invalid subvolume id %llu", (unsigned long long)s->id);
	if ((ret = btk_tree_new(t, s->id)) ||
	    (ret = btk_top_dir_create(t, s->id, BTRFS_FIRST_FREE_OBJECTID, a, false)))
		return ret;
	item = btk_tree_root_item(t, s->id); /* a new tree: a whole item */
	if (!item || btk_root_item_parse((uint8_t *)item, sizeof(*item), &ri))
		return btk_err(EIO, "subvolume %llu has no root item", (unsigned long long)s->id);
	ri.root_dirid = BTRFS_FIRST_FREE_OBJECTID;
	/* without ROOT_ITEM_INIT the kernel discards flags on load: RDONLY would be lost */
	ri.inode.flags |= BTK_INODE_ROOT_ITEM_INIT;
	ri.flags = s->ro ? BTRFS_ROOT_SUBVOL_RDONLY : 0;
	ri.ctransid = ri.otransid = btk_trans_id(t);
	memcpy(ri.uuid, s->uuid, BTK_UUID_SIZE);
	ri.ctime = a->ctime;
	ri.otime = a->otime;
	btk_root_item_write((uint8_t *)item, sizeof(*item), &ri);
	if ((ret = btk_dir_link(t, s->parent, s->dir, s->name, s->name_len, &loc, BTRFS_FT_DIR,
				s->index)))
		return ret;
	if ((ret = root_refs(t, s)))
		return ret;
	btk_put64(idbuf, s->id);
	if ((ret = btk_item_insert(t, BTRFS_UUID_TREE_OBJECTID, &uk, idbuf, sizeof(idbuf))))
		return ret;
	return btk_qgroup_create(t, s->id);
}

int btk_root_dir_create(struct btk_trans *t, const struct btk_inode_attr *a)
{
	static const char name[] = "default";
	uint8_t di[sizeof(struct btrfs_dir_item) + sizeof(name) - 1];
	uint8_t ref[sizeof(struct btrfs_inode_ref) + sizeof(name) - 1];
	struct btk_key loc = {BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, UINT64_MAX};
	struct btk_key k = {BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			    btk_name_hash(name, sizeof(name) - 1)};
	int ret =
	    btk_top_dir_create(t, BTRFS_ROOT_TREE_OBJECTID, BTRFS_ROOT_TREE_DIR_OBJECTID, a, true);

	if (ret)
		return ret;
	/* a DIR_ITEM alone (no DIR_INDEX), and the FS tree's name as an INODE_REF of its id */
	btk_dir_ent_write(di, &loc, 0, BTRFS_FT_DIR, name, sizeof(name) - 1, NULL, 0);
	if ((ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, di, sizeof(di))))
		return ret;
	btk_ref_ent_write(ref, false, BTRFS_ROOT_TREE_DIR_OBJECTID, 0, name, sizeof(name) - 1);
	k = (struct btk_key){BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_REF_KEY,
			     BTRFS_ROOT_TREE_DIR_OBJECTID};
	return btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, ref, sizeof(ref));
}

int btk_subvol_set_default(struct btk_trans *t, uint64_t id)
{
	static const char name[] = "default";
	struct btk_key k = {BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			    btk_name_hash(name, sizeof(name) - 1)};
	struct btk_key loc = {id, BTRFS_ROOT_ITEM_KEY, UINT64_MAX};
	struct btk_path p;
	uint32_t size;
	uint8_t *d;
	int ret;

	btk_path_init(&p);
	ret = btk_tree_search_write(t, BTRFS_ROOT_TREE_OBJECTID, &k, 0, &p);
	if (ret == 0) {
		struct btk_dir_iter it;
		struct btk_dir_ent e;

		d = btk_item_ptr(&p, &size);
		btk_dir_iter_init(&it, d, size);
		if (btk_dir_next(&it, &e) != 1)
			ret = btk_err(EUCLEAN, "root tree \"default\" entry too short");
		else
			btk_dir_ent_set_location(d + it.at, &loc);
	} else if (ret > 0) {
		ret = btk_err(ENOENT, "root tree has no \"default\" entry");
	}
	btk_wpath_release(&p);
	if (!ret)
		btk_put64(btk_trans_fs(t)->sb.incompat_flags,
			  btk_le64(btk_trans_fs(t)->sb.incompat_flags) |
			      BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL);
	return ret;
}
