/* fs_read_dir.c — directory entries, name lookup, root items and xattrs (see
 * fs_read.h). */
#include "fs/fs_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"
#include "format/root_item.h"

/* DIR_INDEX and XATTR_ITEM share one layout (format/dir_item.h). */
struct dir_walk {
	int (*entry)(struct dir_walk *w, const struct btk_dir_ent *e, const struct btk_key *k);
	uint64_t ino;
	void *fn, *ctx;
	const char *owner; /* "inode" or "directory", for the overrun message */
};

static int dir_items_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
			const uint8_t *d, uint32_t size)
{
	struct dir_walk *w = arg;
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	int ret;

	(void)leaf, (void)slot;
	btk_dir_iter_init(&it, d, size);
	while ((ret = btk_dir_next(&it, &e)) > 0)
		if ((ret = w->entry(w, &e, k)))
			return ret;
	if (ret < 0)
		return btk_err(EUCLEAN, "%s %llu: %s item (offset %llu) overruns its %u bytes",
			       w->owner, (unsigned long long)w->ino,
			       k->type == BTRFS_XATTR_ITEM_KEY ? "XATTR_ITEM"
			       : k->type == BTRFS_DIR_ITEM_KEY ? "DIR_ITEM"
							       : "DIR_INDEX",
			       (unsigned long long)k->offset, size);
	return 0;
}

static int dir_entry(struct dir_walk *w, const struct btk_dir_ent *e, const struct btk_key *k)
{
	int (*fn)(void *, const struct btk_dir_entry *) = w->fn;
	struct btk_dir_entry de = {.index = k->offset, .name = e->name, .name_len = e->name_len};

	btk_dir_ent_location(e, &de.loc);
	de.transid = btk_dir_ent_transid(e);
	de.type = e->type;
	if (de.loc.type == BTRFS_ROOT_ITEM_KEY)
		de.subvol = de.loc.objectid, de.ino = BTK_ROOT_DIRID;
	else if (de.loc.type == BTRFS_INODE_ITEM_KEY)
		de.ino = de.loc.objectid;
	else
		return btk_err(EUCLEAN, "directory %llu: entry '%.*s' has location type %u",
			       (unsigned long long)w->ino, (int)e->name_len, e->name, de.loc.type);
	return fn(w->ctx, &de);
}

struct lookup_ctx {
	const char *name;
	size_t len;
	struct btk_key loc;
	uint8_t ftype;
	bool found;
};

/* DIR_ITEM / DIR_INDEX entries (several on hash collisions): the one with c's name. */
static int lookup_entry(struct dir_walk *w, const struct btk_dir_ent *e, const struct btk_key *k)
{
	struct lookup_ctx *c = w->ctx;

	(void)k;
	if (e->name_len != c->len || memcmp(e->name, c->name, e->name_len))
		return 0;
	btk_dir_ent_location(e, &c->loc);
	c->ftype = e->type;
	c->found = true;
	return 1;
}

int btk_dir_lookup(struct btk_fs *fs, const struct btk_root *root, uint64_t dir, const char *name,
		   size_t len, struct btk_key *loc, uint8_t *ftype)
{
	struct lookup_ctx c = {.name = name, .len = len};
	struct dir_walk w = {lookup_entry, dir, NULL, &c, "directory"};
	uint64_t hash = btk_name_hash(name, len);
	int ret;

	ret = btk_for_each_item(fs, root, dir, BTRFS_DIR_ITEM_KEY, hash, dir_items_cb, &w);
	if (ret < 0)
		return ret;
	/* The hashed item only holds names with that hash: stop at the first other offset. */
	if (!c.found) {
		/* Fallback when the DIR_ITEM is missing or the hash disagrees: every DIR_INDEX. */
		ret = btk_for_each_item(fs, root, dir, BTRFS_DIR_INDEX_KEY, 0, dir_items_cb, &w);
		if (ret < 0)
			return ret;
	}
	if (!c.found)
		return btk_err(ENOENT, "tree %llu directory %llu: no entry '%.*s'",
			       (unsigned long long)root->objectid, (unsigned long long)dir,
			       (int)(len > 255 ? 255 : len), name);
	*loc = c.loc;
	if (ftype)
		*ftype = c.ftype;
	return 0;
}

int btk_dir_for_each(struct btk_fs *fs, const struct btk_root *root, uint64_t dir,
		     int (*fn)(void *ctx, const struct btk_dir_entry *e), void *ctx)
{
	struct dir_walk w = {dir_entry, dir, (void *)fn, ctx, "inode"};

	return btk_for_each_item(fs, root, dir, BTRFS_DIR_INDEX_KEY, 0, dir_items_cb, &w);
}

static int root_item_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
			const uint8_t *d, uint32_t size)
{
	struct btk_root_item *ri = arg;

	(void)leaf, (void)slot;
	if (btk_root_item_parse(d, size, ri))
		return btk_err(EUCLEAN, "ROOT_ITEM of tree %llu: %u bytes",
			       (unsigned long long)k->objectid, size);
	return 0; /* the last one (highest offset) stays */
}

int btk_subvol_item(struct btk_fs *fs, uint64_t id, struct btk_root_item *out)
{
	struct btk_root rt;
	int ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	ret = btk_for_each_item(fs, &rt, id, BTRFS_ROOT_ITEM_KEY, 0, root_item_cb, out);
	if (!ret && !out->bytenr)
		ret = btk_err(ENOENT, "tree %llu: no root item", (unsigned long long)id);
	return ret;
}

static int backref_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
		      const uint8_t *d, uint32_t size)
{
	(void)leaf, (void)slot, (void)d, (void)size;
	*(uint64_t *)arg = k->offset;
	return 1;
}

/* The subvolume after id whose ROOT_ITEM the root tree holds: 0 found, 1 none. */
static int next_subvol(struct btk_fs *fs, const struct btk_root *rt, uint64_t *id)
{
	struct btk_key k = {*id + 1, BTRFS_ROOT_ITEM_KEY, 0};
	struct btk_path p;
	int ret;

	if (*id < BTRFS_FIRST_FREE_OBJECTID)
		k.objectid = BTRFS_FIRST_FREE_OBJECTID;
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, rt, &k, &p); !ret; ret = btk_next(fs, &p)) {
		btk_path_key(&p, &k);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID) {
			ret = 1;
			break;
		}
		if (k.type == BTRFS_ROOT_ITEM_KEY) {
			*id = k.objectid;
			break;
		}
	}
	btk_path_release(&p);
	return ret;
}

int btk_subvol_for_each(struct btk_fs *fs, int (*fn)(void *ctx, uint64_t id, uint64_t parent),
			void *ctx)
{
	struct btk_root rt;
	uint64_t id = BTRFS_FS_TREE_OBJECTID, parent;
	int ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);

	if (ret || (ret = fn(ctx, id, 0)))
		return ret;
	while (!(ret = next_subvol(fs, &rt, &id))) {
		parent = 0;
		if ((ret = btk_for_each_item(fs, &rt, id, BTRFS_ROOT_BACKREF_KEY, 0, backref_cb,
					     &parent)) < 0 ||
		    (ret = fn(ctx, id, parent)))
			return ret;
	}
	return ret < 0 ? ret : 0;
}

struct ref_check {
	uint64_t child, dir;
	const char *name;
	size_t len;
	bool found;
};

static int root_ref_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
		       const uint8_t *d, uint32_t size)
{
	struct ref_check *r = arg;
	struct btk_root_ref_ent e;

	(void)leaf, (void)slot;
	if (k->offset != r->child)
		return 1;
	if (btk_root_ref_parse(d, size, &e))
		return btk_err(EUCLEAN, "ROOT_REF %llu -> %llu: %u bytes",
			       (unsigned long long)k->objectid, (unsigned long long)k->offset,
			       size);
	r->found = e.dirid == r->dir && e.name_len == r->len && !memcmp(e.name, r->name, r->len);
	return 1;
}

int btk_subvol_ref_check(struct btk_fs *fs, uint64_t parent, uint64_t child, uint64_t dir,
			 const char *name, size_t len)
{
	struct ref_check r = {child, dir, name, len, false};
	struct btk_root rt;
	int ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);

	if (!ret)
		ret =
		    btk_for_each_item(fs, &rt, parent, BTRFS_ROOT_REF_KEY, child, root_ref_cb, &r);
	if (ret < 0)
		return ret;
	return r.found ? 0 : -ENOENT;
}

int btk_subvol_readonly(struct btk_fs *fs, uint64_t id, bool *ro)
{
	struct btk_root_item ri;
	int ret = btk_subvol_item(fs, id, &ri);

	if (!ret)
		*ro = !!(ri.flags & BTRFS_ROOT_SUBVOL_RDONLY);
	return ret;
}

static int xattr_entry(struct dir_walk *w, const struct btk_dir_ent *e, const struct btk_key *k)
{
	btk_xattr_fn fn = (btk_xattr_fn)w->fn;

	(void)k;
	return fn(w->ctx, e->name, e->name_len, e->data, e->data_len);
}

int btk_xattr_for_each(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		       btk_xattr_fn fn, void *ctx)
{
	struct dir_walk w = {xattr_entry, ino, (void *)fn, ctx, "inode"};

	return btk_for_each_item(fs, root, ino, BTRFS_XATTR_ITEM_KEY, 0, dir_items_cb, &w);
}

struct xattr_get {
	const char *name;
	size_t len;
	uint8_t *value;
	size_t vlen;
	bool found;
};

static int xattr_get_cb(void *arg, const char *name, uint16_t nlen, const uint8_t *v, uint16_t vlen)
{
	struct xattr_get *g = arg;

	if (nlen != g->len || memcmp(name, g->name, nlen))
		return 0;
	g->value = malloc(vlen ? vlen : 1);
	if (!g->value)
		return btk_err(ENOMEM, "xattr value of %u bytes", vlen);
	memcpy(g->value, v, vlen);
	g->vlen = vlen;
	g->found = true;
	return 1;
}

/* Only the item with the name's hash can hold it; its offset is that hash. */
static int xattr_hash_cb(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
			 const uint8_t *d, uint32_t size)
{
	struct dir_walk *w = arg;
	struct xattr_get *g = w->ctx;

	if (k->offset != btk_name_hash(g->name, g->len))
		return 1;
	return dir_items_cb(arg, leaf, slot, k, d, size);
}

int btk_xattr_get(struct btk_fs *fs, const struct btk_root *root, uint64_t ino, const char *name,
		  size_t name_len, uint8_t **value, size_t *len)
{
	struct xattr_get g = {.name = name, .len = name_len};
	struct dir_walk w = {xattr_entry, ino, (void *)xattr_get_cb, &g, "inode"};
	int ret = btk_for_each_item(fs, root, ino, BTRFS_XATTR_ITEM_KEY,
				    btk_name_hash(name, name_len), xattr_hash_cb, &w);

	if (ret < 0)
		return ret;
	if (!g.found)
		return btk_err(ENODATA, "inode %llu: no xattr '%.*s'", (unsigned long long)ino,
			       (int)(name_len > 255 ? 255 : name_len), name);
	*value = g.value;
	*len = g.vlen;
	return 0;
}
