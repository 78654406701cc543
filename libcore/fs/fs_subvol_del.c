/* fs_subvol_del.c — deleting a subvolume: its names, its uuid entries, then its tree. */
#include "fs/fs_edit.h"
#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"

#include <errno.h>
#include <stdlib.h>

#define RREF_SZ BTK_ROOT_REF_HEAD

int btk_subvol_parent(struct btk_trans *t, uint64_t id, uint64_t *parent, uint64_t *dir,
		      uint64_t *index, char *name, uint16_t *len)
{
	struct btk_key k = {id, BTRFS_ROOT_BACKREF_KEY, 0};
	uint8_t buf[RREF_SZ + BTK_NAME_MAX];
	struct btk_root_ref_ent r;
	uint32_t size;
	int ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, sizeof(buf), &size);

	if (ret < 0)
		return ret;
	if (ret || k.objectid != id || k.type != BTRFS_ROOT_BACKREF_KEY)
		return btk_err(ENOENT, "subvolume %llu has no parent", (unsigned long long)id);
	if (btk_root_ref_parse(buf, size > sizeof(buf) ? (uint32_t)sizeof(buf) : size, &r) ||
	    r.name_len > BTK_NAME_MAX || !r.name_len)
		return btk_err(EUCLEAN, "subvolume %llu: bad root back reference",
			       (unsigned long long)id);
	*parent = k.offset;
	*dir = r.dirid;
	*index = r.sequence;
	*len = r.name_len;
	memcpy(name, r.name, *len);
	name[*len] = 0;
	return 0;
}

/* Removes id from the uuid tree item of uuid u (type UUID_KEY_*), if there. */
static int uuid_drop(struct btk_trans *t, const uint8_t *u, uint8_t type, uint64_t id)
{
	struct btk_key k = {btk_le64(u), type, btk_le64(u + 8)};
	struct btk_path p;
	uint32_t size;
	uint8_t *d;
	int ret;

	for (int i = 0; i < 16 && !u[i]; i++)
		if (i == 15)
			return 0; /* no uuid */
	ret = btk_tree_search_write(t, BTRFS_UUID_TREE_OBJECTID, &k, -1, &p);
	if (ret) {
		btk_wpath_release(&p);
		if (ret == -ENOENT || ret == 1) {
			btk_err_clear();
			return 0;
		}
		return ret;
	}
	d = btk_item_ptr(&p, &size);
	for (uint32_t pos = 0; pos + 8 <= size; pos += 8) {
		if (btk_le64(d + pos) != id)
			continue;
		if (size == 8)
			return btk_item_delete_at(t, BTRFS_UUID_TREE_OBJECTID, &p);
		memmove(d + pos, d + pos + 8, size - pos - 8);
		ret = btk_item_truncate(t, &p, size - 8);
		break;
	}
	btk_wpath_release(&p);
	return ret;
}

static int default_id(struct btk_trans *t, uint64_t *id)
{
	static const char name[] = "default";
	struct btk_key k = {BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			    btk_name_hash(name, sizeof(name) - 1)};
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	uint8_t *d;
	uint32_t size;
	int ret = btk_fs_item_get(t, BTRFS_ROOT_TREE_OBJECTID, &k, &d, &size);

	*id = BTRFS_FS_TREE_OBJECTID;
	if (ret)
		return ret < 0 ? ret : 0;
	btk_dir_iter_init(&it, d, size);
	if (btk_dir_next(&it, &e) == 1) {
		struct btk_key loc;
		btk_dir_ent_location(&e, &loc);
		*id = loc.objectid;
	}
	free(d);
	return 0;
}

int btk_subvol_delete(struct btk_trans *t, uint64_t id, const struct btk_time *now,
		      void (*progress)(void *ctx, uint64_t blocks), void *ctx)
{
	uint64_t parent, dir, index, def;
	struct btk_key k = {id, BTRFS_ROOT_REF_KEY, 0};
	char name[BTK_NAME_MAX + 1];
	uint8_t item[sizeof(struct btrfs_root_item)];
	uint32_t size;
	uint16_t len;
	int ret;

	if ((ret = default_id(t, &def)))
		return ret;
	if (def == id)
		return btk_err(EPERM, "subvolume %llu is the default one: choose another first",
			       (unsigned long long)id);
	ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (ret == 0 && k.objectid == id && k.type == BTRFS_ROOT_REF_KEY)
		return btk_err(ENOTEMPTY, "subvolume %llu holds subvolume %llu: delete that first",
			       (unsigned long long)id, (unsigned long long)k.offset);
	if ((ret = btk_subvol_parent(t, id, &parent, &dir, &index, name, &len)))
		return ret;
	k = (struct btk_key){id, BTRFS_ROOT_ITEM_KEY, 0};
	memset(item, 0, sizeof(item));
	ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, item, sizeof(item), &size);
	if (ret < 0)
		return ret;
	if (ret || k.objectid != id || k.type != BTRFS_ROOT_ITEM_KEY)
		return btk_err(ENOENT, "subvolume %llu has no root item", (unsigned long long)id);
	if ((ret = btk_subvol_unlink(t, id, parent, dir, name, len, index, now)))
		return ret;
	if (size >= offsetof(struct btrfs_root_item, received_uuid) + 16) {
		if ((ret = uuid_drop(t, item + offsetof(struct btrfs_root_item, uuid),
				     BTRFS_UUID_KEY_SUBVOL, id)) ||
		    (ret = uuid_drop(t, item + offsetof(struct btrfs_root_item, received_uuid),
				     BTRFS_UUID_KEY_RECEIVED_SUBVOL, id)))
			return ret;
	}
	return btk_tree_drop(t, id, progress, ctx);
}

int btk_subvol_unlink(struct btk_trans *t, uint64_t id, uint64_t parent, uint64_t dir,
		      const char *name, uint16_t len, uint64_t index, const struct btk_time *now)
{
	struct btk_key k = {parent, BTRFS_ROOT_REF_KEY, id};
	int ret = btk_dir_unlink(t, parent, dir, name, len, index, now, NULL);

	if (ret || (ret = btk_item_delete(t, BTRFS_ROOT_TREE_OBJECTID, &k)))
		return ret;
	k = (struct btk_key){id, BTRFS_ROOT_BACKREF_KEY, parent};
	return btk_item_delete(t, BTRFS_ROOT_TREE_OBJECTID, &k);
}

int btk_subvol_link(struct btk_trans *t, uint64_t parent, uint64_t dir, const char *name,
		    uint16_t len, uint64_t id, const struct btk_time *now)
{
	uint8_t buf[RREF_SZ + BTK_NAME_MAX];
	struct btk_key loc = {id, BTRFS_ROOT_ITEM_KEY, UINT64_MAX}, k;
	struct btk_inode_change c = {.mtime = now, .ctime = now};
	struct btk_dentry d;
	uint64_t index;
	int ret;

	if (!len || len > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "name of %u bytes", len);
	ret = btk_dir_find(t, parent, dir, name, len, &d);
	if (ret != -ENOENT)
		return ret ? ret : btk_err(EEXIST, "%.*s: exists", (int)len, name);
	btk_err_clear();
	if ((ret = btk_dir_next_index(t, parent, dir, &index)) ||
	    (ret = btk_dir_link(t, parent, dir, name, len, &loc, BTRFS_FT_DIR, index)) ||
	    (ret = btk_inode_change(t, parent, dir, &c, NULL)))
		return ret;
	uint32_t rlen = btk_root_ref_write(buf, dir, index, name, len);
	k = (struct btk_key){parent, BTRFS_ROOT_REF_KEY, id};
	if ((ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, rlen)))
		return ret;
	k = (struct btk_key){id, BTRFS_ROOT_BACKREF_KEY, parent};
	return btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, rlen);
}
