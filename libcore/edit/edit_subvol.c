/* edit_subvol.c (layer 8) — snapshot, subvolume create / delete / default of a session. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/uuid.h"
#include "edit/edit.h"
#include "fs/fs_read.h"

#define PATH_BUF 4096

/* The subvolume whose top directory path is. */
static int subvol_at(struct btk_edit *e, const char *path, uint64_t *id)
{
	uint64_t ino;
	bool is_dir;
	int ret = btk_edit_lookup(e, path, id, &ino, &is_dir);

	if (!ret && ino == BTK_STUB_INO)
		return btk_err(EINVAL,
			       "%s: not a subvolume but a snapshot's placeholder of one (an empty "
			       "directory; rm -r removes it)",
			       path);
	if (!ret && ino != BTK_ROOT_DIRID)
		return btk_err(EINVAL, "%s: not a subvolume", path);
	return ret;
}

int btk_edit_snapshot(struct btk_edit *e, const char *src, const char *path, bool readonly,
		      uint64_t *id)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t sid, root, dir;

	*id = 0;
	return subvol_at(e, src, &sid) ?: btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir,
							   &name, &len)
		   ?: btk_fs_next_subvol_id(e->t, id)
		   ?: btk_tree_snapshot(e->t, sid, *id, readonly, e->now.sec)
		   ?: btk_subvol_link(e->t, root, dir, name, len, *id, &e->now)
		   ?: btk_qgroup_create(e->t, *id);
}

int btk_edit_subvol_create(struct btk_edit *e, const char *path, uint64_t *id)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir, index;
	struct btk_dentry d;
	int ret;

	*id = 0;
	if ((ret = btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return ret;
	if (btk_dir_find(e->t, root, dir, name, len, &d) == 0)
		return btk_err(EEXIST, "%s: exists", path);
	btk_err_clear();
	if ((ret = btk_fs_next_subvol_id(e->t, id)) ||
	    (ret = btk_dir_next_index(e->t, root, dir, &index)))
		return ret;
	struct btk_subvol_new sv = {
	    .id = *id, .parent = root, .dir = dir, .name = name, .name_len = len, .index = index};
	struct btk_inode_attr a = {.mode = S_IFDIR | 0755,
				   .nlink = 1,
				   .atime = e->now,
				   .mtime = e->now,
				   .ctime = e->now,
				   .otime = e->now};
	struct btk_inode_change c = {.mtime = &e->now, .ctime = &e->now};
	btk_uuid_make(e->epoch_set ? e->fs->fsid : NULL, "subvol", *id, sv.uuid);
	return btk_subvol_create(e->t, &sv, &a) ?: btk_inode_change(e->t, root, dir, &c, NULL);
}

int btk_edit_subvol_delete(struct btk_edit *e, const char *path, uint64_t *id)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir;
	int ret = subvol_at(e, path, id);

	if (!ret && *id == BTRFS_FS_TREE_OBJECTID)
		return btk_err(EPERM, "%s: the top-level subvolume cannot be deleted", path);
	return ret ?: btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &len)
		   ?: btk_edit_guard(e, *id, 0, true, "subvol delete", path)
		   ?: btk_subvol_delete(e->t, *id, &e->now, e->progress, e->progress_ctx);
}

int btk_edit_subvol_default(struct btk_edit *e, const char *path, uint64_t *id)
{
	return subvol_at(e, path, id) ?: btk_subvol_set_default(e->t, *id);
}
