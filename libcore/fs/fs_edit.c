/* fs_edit.c — lookups in the current state, free numbers, entry removal, inode changes. */
#include "fs/fs_edit.h"
#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"
#include "format/inode_item.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#define EXTREF_SZ BTK_INODE_EXTREF_HEAD

/* The item at exactly key, copied into a malloc'd buffer of nodesize bytes (*out, caller
 * frees): 0, 1 absent, negative errno. */
int btk_fs_item_get(struct btk_trans *t, uint64_t tree, const struct btk_key *key, uint8_t **out,
		    uint32_t *size)
{
	struct btk_key k = *key;
	uint32_t cap = btk_trans_fs(t)->nodesize;
	uint8_t *buf = malloc(cap);
	int ret;

	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	ret = btk_item_next(t, tree, &k, buf, cap, size);
	if (ret == 0 && btk_key_cmp(&k, key))
		ret = 1;
	if (ret == 0 && *size > cap)
		ret = btk_err(EUCLEAN, "item larger than a leaf");
	if (ret)
		free(buf);
	else
		*out = buf;
	return ret;
}

static int highest(struct btk_trans *t, uint64_t tree, uint64_t below, uint64_t *obj)
{
	struct btk_key k = {below, 0xff, UINT64_MAX};
	int ret = btk_item_prev(t, tree, &k, NULL, 0, NULL);

	*obj = ret == 0 ? k.objectid : 0;
	return ret < 0 ? ret : 0;
}

int btk_fs_next_ino(struct btk_trans *t, uint64_t root, uint64_t *ino)
{
	uint64_t h;
	int ret = highest(t, root, BTRFS_LAST_FREE_OBJECTID, &h);

	if (ret)
		return ret;
	if (h >= BTRFS_LAST_FREE_OBJECTID)
		return btk_err(EOVERFLOW, "tree %llu has no free inode number",
			       (unsigned long long)root);
	*ino = (h < BTRFS_FIRST_FREE_OBJECTID ? BTRFS_FIRST_FREE_OBJECTID : h) + 1;
	return 0;
}

int btk_fs_next_subvol_id(struct btk_trans *t, uint64_t *id)
{
	uint64_t h;
	int ret = highest(t, BTRFS_ROOT_TREE_OBJECTID, BTRFS_LAST_FREE_OBJECTID, &h);

	if (ret)
		return ret;
	if (h >= BTRFS_LAST_FREE_OBJECTID)
		return btk_err(EOVERFLOW, "no free subvolume id");
	*id = h < BTRFS_FIRST_FREE_OBJECTID ? BTRFS_FIRST_FREE_OBJECTID : h + 1;
	return 0;
}

int btk_dir_next_index(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t *index)
{
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, UINT64_MAX};
	int ret = btk_item_prev(t, root, &k, NULL, 0, NULL);

	if (ret < 0)
		return ret;
	*index = ret == 0 && k.objectid == dir && k.type == BTRFS_DIR_INDEX_KEY && k.offset >= 2
		     ? k.offset + 1
		     : 2;
	return 0;
}

/* Finds the entry naming `name` in the item at key (DIR_ITEM, DIR_INDEX, XATTR_ITEM; INODE_REF;
 * INODE_EXTREF of `parent`): 1 and what the entry says (index, de, each if not NULL) and where
 * it is (*at, *el bytes); 0 none; -EUCLEAN an entry before it overruns the item. */
static int find_entry(const struct btk_key *key, const uint8_t *d, uint32_t size, const char *name,
		      uint16_t len, uint64_t parent, uint64_t *index, struct btk_dentry *de,
		      uint32_t *at, uint32_t *el)
{
	uint32_t from, to;
	int ret;

	if (key->type == BTRFS_INODE_REF_KEY || key->type == BTRFS_INODE_EXTREF_KEY) {
		struct btk_ref_iter it;
		struct btk_ref_ent r;
		btk_ref_iter_init(&it, key, d, size);
		while ((ret = btk_ref_next(&it, &r)) > 0)
			if (r.name_len == len && !memcmp(r.name, name, len) &&
			    (key->type == BTRFS_INODE_REF_KEY || r.parent == parent))
				break;
		if (ret <= 0)
			return ret;
		if (index)
			*index = r.index;
		from = it.pos.at, to = it.pos.next;
	} else {
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		btk_dir_iter_init(&it, d, size);
		while ((ret = btk_dir_next(&it, &e)) > 0)
			if (e.name_len == len && !memcmp(e.name, name, len))
				break;
		if (ret <= 0)
			return ret;
		if (de) {
			btk_dir_ent_location(&e, &de->loc);
			de->ftype = e.type;
		}
		from = it.at, to = it.next;
	}
	if (at)
		*at = from, *el = to - from;
	return 1;
}

/* Sets d->stub: whether the subvolume entry d (name in dir of tree root) is a placeholder,
 * linked by no ROOT_REF (root, subvolume) that names this directory and name, as the kernel's
 * lookup decides (fixup_tree_root_location). */
static int stub_check(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		      uint16_t len, struct btk_dentry *d)
{
	struct btk_key k = {root, BTRFS_ROOT_REF_KEY, d->loc.objectid};
	struct btk_root_ref_ent r;
	uint32_t size;
	uint8_t *b;
	int ret;

	d->stub = false;
	if (d->loc.type != BTRFS_ROOT_ITEM_KEY)
		return 0;
	ret = btk_fs_item_get(t, BTRFS_ROOT_TREE_OBJECTID, &k, &b, &size);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		d->stub = true;
		return 0;
	}
	if (btk_root_ref_parse(b, size, &r))
		ret = btk_err(EUCLEAN, "ROOT_REF %llu -> %llu: %u bytes", (unsigned long long)root,
			      (unsigned long long)d->loc.objectid, size);
	else
		d->stub = r.dirid != dir || r.name_len != len || memcmp(r.name, name, len);
	free(b);
	return ret;
}

int btk_dir_find(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		 struct btk_dentry *out)
{
	struct btk_key k = {dir, BTRFS_DIR_ITEM_KEY, btk_name_hash(name, len)};
	uint8_t *d;
	uint32_t size;
	int ret = btk_fs_item_get(t, root, &k, &d, &size);

	if (ret < 0)
		return ret;
	if (ret == 1)
		return -ENOENT;
	ret = find_entry(&k, d, size, name, len, 0, NULL, out, NULL, NULL);
	free(d);
	if (ret < 0)
		return btk_err(EUCLEAN, "directory %llu: bad entry", (unsigned long long)dir);
	return ret ? stub_check(t, root, dir, name, len, out) : -ENOENT;
}

int btk_dir_first(struct btk_trans *t, uint64_t root, uint64_t dir, char *name, uint16_t *len,
		  struct btk_dentry *out)
{
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, 0};
	uint32_t cap = btk_trans_fs(t)->nodesize, size;
	uint8_t *d = malloc(cap);
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	int ret;

	if (!d)
		return btk_err(ENOMEM, "out of memory");
	ret = btk_item_next(t, root, &k, d, cap, &size);
	if (ret == 0 && (k.objectid != dir || k.type != BTRFS_DIR_INDEX_KEY))
		ret = 1;
	if (ret)
		goto out;
	btk_dir_iter_init(&it, d, size > cap ? 0 : size); /* a longer item: not read whole */
	if (btk_dir_next(&it, &e) != 1 || !e.name_len || e.name_len > BTK_NAME_MAX) {
		ret = btk_err(EUCLEAN, "directory %llu: bad index entry %llu",
			      (unsigned long long)dir, (unsigned long long)k.offset);
		goto out;
	}
	*len = e.name_len;
	memcpy(name, e.name, *len);
	name[*len] = 0;
	if (out) {
		btk_dir_ent_location(&e, &out->loc);
		out->ftype = e.type;
		ret = stub_check(t, root, dir, name, *len, out);
	}
out:
	free(d);
	return ret;
}

int btk_inode_get(struct btk_trans *t, uint64_t root, uint64_t ino, struct btk_inode_info *out)
{
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	uint8_t *d;
	uint32_t size;
	int ret = btk_fs_item_get(t, root, &k, &d, &size);

	if (ret == 1)
		return btk_err(ENOENT, "tree %llu: no inode %llu", (unsigned long long)root,
			       (unsigned long long)ino);
	if (ret)
		return ret;
	ret = btk_inode_item_parse(d, size, out);
	free(d);
	return ret ? btk_err(EUCLEAN, "tree %llu: inode %llu item too short",
			     (unsigned long long)root, (unsigned long long)ino)
		   : 0;
}

int btk_inode_parent(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t *parent)
{
	struct btk_key k = {ino, BTRFS_INODE_REF_KEY, 0};
	uint8_t buf[EXTREF_SZ + BTK_NAME_MAX]; /* the first reference whole */
	struct btk_ref_iter it;
	struct btk_ref_ent r;
	uint32_t size;
	int ret = btk_item_next(t, root, &k, buf, sizeof(buf), &size);

	if (ret < 0)
		return ret;
	if (ret == 0 && k.objectid == ino && k.type == BTRFS_INODE_REF_KEY) {
		*parent = k.offset;
		return 0;
	}
	if (ret == 0 && k.objectid == ino && k.type == BTRFS_INODE_EXTREF_KEY) {
		btk_ref_iter_init(&it, &k, buf, size < sizeof(buf) ? size : (uint32_t)sizeof(buf));
		if (btk_ref_next(&it, &r) == 1) {
			*parent = r.parent;
			return 0;
		}
	}
	return btk_err(ENOENT, "tree %llu: inode %llu has no name", (unsigned long long)root,
		       (unsigned long long)ino);
}

int btk_inode_change(struct btk_trans *t, uint64_t root, uint64_t ino,
		     const struct btk_inode_change *c, struct btk_inode_info *after)
{
	typedef struct btrfs_inode_item I;
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_path p;
	uint32_t size;
	uint8_t *it;
	int ret = btk_tree_search_write(t, root, &k, 0, &p);

	if (ret > 0)
		ret = btk_err(ENOENT, "tree %llu: no inode %llu", (unsigned long long)root,
			      (unsigned long long)ino);
	if (ret)
		goto out;
	it = btk_item_ptr(&p, &size);
	if (size < sizeof(I)) {
		ret = btk_err(EUCLEAN, "tree %llu: inode %llu item too short",
			      (unsigned long long)root, (unsigned long long)ino);
		goto out;
	}
	if (c->nlink_delta) {
		int64_t n = (int64_t)BTK_GET(I, it, nlink) + c->nlink_delta;
		if (n < 0 || n > UINT32_MAX) {
			ret = btk_err(EMLINK, "inode %llu: link count out of range",
				      (unsigned long long)ino);
			goto out;
		}
		BTK_PUT(I, it, nlink, (uint32_t)n);
	}
	if (c->set_mode)
		BTK_PUT(I, it, mode, (BTK_GET(I, it, mode) & S_IFMT) | (c->mode & 07777));
	if (c->kill_suid && !S_ISDIR(BTK_GET(I, it, mode))) {
		uint32_t m = BTK_GET(I, it, mode) & ~(uint32_t)S_ISUID;
		if (m & S_IXGRP)
			m &= ~(uint32_t)S_ISGID;
		BTK_PUT(I, it, mode, m);
	}
	if (c->set_uid)
		BTK_PUT(I, it, uid, c->uid);
	if (c->set_gid)
		BTK_PUT(I, it, gid, c->gid);
	if (c->atime)
		btk_put_time(it + offsetof(I, atime), c->atime);
	if (c->mtime)
		btk_put_time(it + offsetof(I, mtime), c->mtime);
	if (c->ctime)
		btk_put_time(it + offsetof(I, ctime), c->ctime);
	BTK_PUT(I, it, transid, btk_trans_id(t));
	BTK_PUT(I, it, sequence, BTK_GET(I, it, sequence) + 1);
	if (after)
		btk_inode_item_parse(it, size, after);
out:
	btk_wpath_release(&p);
	return ret;
}

/* ---- cutting one entry out of a multi-entry item ---- */

/* Removes the entry naming `name` from the item at key: 0, -ENOENT absent. */
static int cut_entry(struct btk_trans *t, uint64_t root, const struct btk_key *key,
		     const char *name, uint16_t len, uint64_t parent, uint64_t *index,
		     struct btk_dentry *de)
{
	struct btk_path p;
	uint32_t size, pos = 0, el = 0;
	uint8_t *d;
	int ret = btk_tree_search_write(t, root, key, -1, &p);

	if (ret) {
		btk_wpath_release(&p);
		return ret < 0 ? ret : -ENOENT;
	}
	d = btk_item_ptr(&p, &size);
	ret = find_entry(key, d, size, name, len, parent, index, de, &pos, &el);
	if (ret <= 0) {
		btk_wpath_release(&p);
		if (ret == 0)
			return -ENOENT;
		return btk_err(EUCLEAN, "tree %llu: bad entry in item (%llu %u %llu)",
			       (unsigned long long)root, (unsigned long long)key->objectid,
			       key->type, (unsigned long long)key->offset);
	}
	if (el == size)
		return btk_item_delete_at(t, root, &p);
	memmove(d + pos, d + pos + el, size - pos - el);
	ret = btk_item_truncate(t, &p, size - el);
	btk_wpath_release(&p);
	return ret;
}

static int touch_dir(struct btk_trans *t, uint64_t root, uint64_t dir, int64_t size_delta,
		     const struct btk_time *now)
{
	int ret = size_delta ? btk_inode_add_dir_size(t, root, dir, (uint64_t)size_delta) : 0;
	struct btk_inode_change c = {.mtime = now, .ctime = now};

	return ret ? ret : btk_inode_change(t, root, dir, &c, NULL);
}

int btk_dir_unlink(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		   uint64_t index, const struct btk_time *now, struct btk_dentry *out)
{
	struct btk_key k = {dir, BTRFS_DIR_ITEM_KEY, btk_name_hash(name, len)};
	struct btk_dentry de = {.stub = false};
	uint64_t idx = 0;
	int ret = cut_entry(t, root, &k, name, len, 0, &idx, &de);

	if (ret == -ENOENT)
		return btk_err(ENOENT, "directory %llu has no \"%.*s\"", (unsigned long long)dir,
			       (int)len, name);
	if (ret)
		return ret;
	if (de.loc.type == BTRFS_INODE_ITEM_KEY) {
		k = (struct btk_key){de.loc.objectid, BTRFS_INODE_REF_KEY, dir};
		ret = cut_entry(t, root, &k, name, len, dir, &index, NULL);
		if (ret == -ENOENT) {
			k = (struct btk_key){de.loc.objectid, BTRFS_INODE_EXTREF_KEY,
					     btk_extref_hash(dir, name, len)};
			ret = cut_entry(t, root, &k, name, len, dir, &index, NULL);
		}
		if (ret == -ENOENT)
			ret = btk_err(EUCLEAN, "inode %llu has no back reference for \"%.*s\"",
				      (unsigned long long)de.loc.objectid, (int)len, name);
		if (ret)
			return ret;
	}
	k = (struct btk_key){dir, BTRFS_DIR_INDEX_KEY, index};
	if ((ret = btk_item_delete(t, root, &k)))
		return ret;
	if (out)
		*out = de;
	return touch_dir(t, root, dir, -2 * (int64_t)len, now);
}

int btk_dir_add(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		const struct btk_dentry *d, const struct btk_time *now)
{
	uint64_t index;
	int ret = btk_dir_next_index(t, root, dir, &index);

	if (!ret)
		ret = btk_dir_link(t, root, dir, name, len, &d->loc, d->ftype, index);
	return ret ? ret : touch_dir(t, root, dir, 0, now);
}

int btk_xattr_remove(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
		     uint16_t len)
{
	struct btk_key k = {ino, BTRFS_XATTR_ITEM_KEY, btk_name_hash(name, len)};
	uint64_t idx;
	int ret = cut_entry(t, root, &k, name, len, 0, &idx, NULL);

	if (ret == -ENOENT)
		return btk_err(ENODATA, "inode %llu has no xattr %.*s", (unsigned long long)ino,
			       (int)len, name);
	return ret;
}

int btk_xattr_replace(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
		      uint16_t nlen, const void *value, uint16_t vlen)
{
	int ret = btk_xattr_remove(t, root, ino, name, nlen);

	if (ret && ret != -ENODATA)
		return ret;
	btk_err_clear();
	return btk_xattr_set(t, root, ino, name, nlen, value, vlen);
}

#define INHERITED                                                                                  \
	(BTK_INODE_NODATACOW | BTK_INODE_NODATASUM | BTK_INODE_COMPRESS | BTK_INODE_NOCOMPRESS)

int btk_dir_inherit_flags(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t *flags)
{
	struct btk_inode_info in;
	int ret = btk_inode_get(t, root, dir, &in);

	*flags = ret ? 0 : in.flags & INHERITED;
	return ret;
}

int btk_xattr_permitted(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
			uint16_t len)
{
	struct btk_inode_info in;
	int ret;

	if (len < 5 || memcmp(name, "user.", 5))
		return 0;
	if ((ret = btk_inode_get(t, root, ino, &in)))
		return ret;
	if (!S_ISREG(in.mode) && !S_ISDIR(in.mode))
		return btk_err(EPERM, "%.*s: user attributes only on regular files and directories",
			       (int)len, name);
	return 0;
}

int btk_dir_inherit_owner(struct btk_trans *t, uint64_t root, uint64_t dir,
			  struct btk_inode_attr *a)
{
	struct btk_inode_info in;
	int ret = dir == BTK_STUB_INO ? 1 : btk_inode_get(t, root, dir, &in);

	if (ret || !(in.mode & S_ISGID))
		return ret < 0 ? ret : 0;
	a->gid = in.gid;
	if (S_ISDIR(a->mode))
		a->mode |= S_ISGID;
	return 0;
}

int btk_fs_create(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		  const struct btk_inode_attr *a, const char *target, uint32_t tlen, uint64_t *ino)
{
	struct btk_inode_attr at = *a;
	struct btk_dentry d;
	uint64_t fl;
	int ret;

	if (!len || len > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "name of %u bytes", len);
	if ((ret = btk_dir_creatable(dir, name, len)))
		return ret;
	ret = btk_dir_find(t, root, dir, name, len, &d);
	if (ret != -ENOENT)
		return ret ? ret : btk_err(EEXIST, "%.*s: exists", (int)len, name);
	btk_err_clear();
	if ((ret = btk_fs_next_ino(t, root, ino)) ||
	    (ret = btk_dir_inherit_flags(t, root, dir, &fl)) ||
	    (ret = btk_dir_inherit_owner(t, root, dir, &at)))
		return ret;
	at.nlink = 1;
	at.flags |= fl;
	if (S_ISLNK(at.mode)) {
		if (tlen > btk_inline_max(btk_trans_fs(t)) || tlen >= 4096)
			return btk_err(ENAMETOOLONG, "symlink target of %u bytes is too long",
				       tlen);
		at.size = at.nbytes = tlen;
	}
	if ((ret = btk_inode_create(t, root, *ino, &at)))
		return ret;
	if (S_ISLNK(at.mode) &&
	    (ret = btk_file_extent_inline(t, root, *ino, target, tlen, tlen, 0)))
		return ret;
	d.loc = (struct btk_key){*ino, BTRFS_INODE_ITEM_KEY, 0};
	d.ftype = btk_mode_ftype(at.mode);
	if ((ret = btk_dir_add(t, root, dir, name, len, &d, &at.ctime)))
		return ret;
	return btk_acl_inherit(t, root, dir, *ino, false);
}
