/* fs_read_file.c — path resolution, inode items and file extents. */
#include "fs/fs_read.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "format/dir_item.h"

int btk_path_lookup(struct btk_fs *fs, const char *path, uint64_t *root_id, uint64_t *ino)
{
	uint64_t rid = BTRFS_FS_TREE_OBJECTID, cur = BTK_ROOT_DIRID;
	uint8_t ftype = BTRFS_FT_DIR;
	struct btk_root root;
	struct btk_key loc;
	int ret;

	ret = btk_fs_root(fs, rid, &root);
	while (!ret && *path) {
		const char *end = strchrnul(path, '/');
		size_t len = end - path;

		if (len == 0 || (len == 1 && path[0] == '.')) {
			path = *end ? end + 1 : end;
			continue;
		}
		if (len == 2 && !memcmp(path, "..", 2))
			return btk_err(EINVAL, "path: '..' is not supported");
		if (ftype != BTRFS_FT_DIR)
			return btk_err(ENOTDIR, "path: a component before '%s' is not a directory",
				       path);
		if (cur == BTK_STUB_INO) /* a placeholder is empty */
			return btk_err(ENOENT, "path: '%.*s' is in an empty placeholder directory",
				       (int)len, path);
		ret = btk_dir_lookup(fs, &root, cur, path, len, &loc, &ftype);
		if (ret)
			return ret;
		if (loc.type == BTRFS_ROOT_ITEM_KEY) {
			ftype = BTRFS_FT_DIR;
			ret = btk_subvol_ref_check(fs, rid, loc.objectid, cur, path, len);
			if (ret == -ENOENT) {
				cur = BTK_STUB_INO; /* a snapshot's placeholder */
				ret = 0;
			} else if (!ret) {
				rid = loc.objectid;
				cur = BTK_ROOT_DIRID;
				ret = btk_fs_root(fs, rid, &root);
			}
		} else if (loc.type == BTRFS_INODE_ITEM_KEY) {
			cur = loc.objectid;
		} else {
			return btk_err(EUCLEAN, "path: entry '%.*s' has location type %u", (int)len,
				       path, loc.type);
		}
		path = *end ? end + 1 : end;
	}
	if (ret)
		return ret;
	*root_id = rid;
	*ino = cur;
	return 0;
}

int btk_inode_read(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		   struct btk_inode_info *out)
{
	struct btk_key key = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_path p;
	const uint8_t *d;
	uint32_t size;
	int ret;

	if (ino == BTK_STUB_INO) {
		memset(out, 0, sizeof(*out));
		out->mode = S_IFDIR | 0755;
		out->nlink = 1;
		return 0;
	}
	btk_path_init(&p);
	ret = btk_search(fs, root, &key, &p);
	if (ret == 1)
		ret = btk_err(ENOENT, "tree %llu: no inode %llu",
			      (unsigned long long)root->objectid, (unsigned long long)ino);
	if (ret)
		goto out;
	d = btk_path_data(&p, &size);
	if (btk_inode_item_parse(d, size, out))
		ret = btk_err(EUCLEAN, "tree %llu inode %llu: INODE_ITEM of %u bytes",
			      (unsigned long long)root->objectid, (unsigned long long)ino, size);
out:
	btk_path_release(&p);
	return ret;
}

int btk_file_extent_parse(const uint8_t *d, uint32_t size, uint64_t file_offset,
			  struct btk_file_extent *fe)
{
	switch (btk_file_extent_item_parse(d, size, file_offset, fe)) {
	case BTK_FE_WHOLE:
		return 0;
	case BTK_FE_SHORT_HEAD:
		return btk_err(EUCLEAN, "EXTENT_DATA at file offset %llu: %u bytes, need %u",
			       (unsigned long long)file_offset, size, BTK_FILE_EXTENT_HDR_SIZE);
	case BTK_FE_BAD_TYPE:
		return btk_err(EUCLEAN, "EXTENT_DATA at file offset %llu: unknown type %u",
			       (unsigned long long)file_offset, fe->type);
	case BTK_FE_SHORT_BODY:
		break;
	}
	return btk_err(EUCLEAN, "EXTENT_DATA at file offset %llu: %u bytes, need %zu",
		       (unsigned long long)file_offset, size,
		       sizeof(struct btrfs_file_extent_item));
}

struct extents_ctx {
	int (*fn)(void *ctx, const struct btk_file_extent *fe);
	void *ctx;
};

static int extent_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
		     const uint8_t *d, uint32_t size)
{
	struct extents_ctx *c = arg;
	struct btk_file_extent fe;
	int ret = btk_file_extent_parse(d, size, k->offset, &fe);

	if (ret)
		return ret;
	fe.leaf = leaf->bytenr;
	fe.slot = slot;
	return c->fn(c->ctx, &fe);
}

int btk_file_for_each_extent(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
			     uint64_t from, int (*fn)(void *ctx, const struct btk_file_extent *fe),
			     void *ctx)
{
	struct extents_ctx c = {fn, ctx};

	return btk_for_each_item(fs, root, ino, BTRFS_EXTENT_DATA_KEY, from, extent_cb, &c);
}
