/* history.c — deleted names and changes between roots (history.h). */
#include "history/history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/u64set.h"
#include "format/dev_items.h"
#include "format/dir_item.h"
#include "format/extent_refs.h"
#include "format/geometry.h"
#include "format/root_item.h"
#include "fs/fs_read.h"

const char *btk_data_state_name(enum btk_data_state s)
{
	static const char *const n[] = {"none", "inline", "free", "reused", "kept"};
	return (unsigned)s < 5 ? n[s] : "?";
}

const char *btk_change_name(enum btk_change c)
{
	static const char *const n[] = {"created", "deleted", "modified", "renamed"};
	return (unsigned)c < 4 ? n[c] : "?";
}

/* A block as the set knows it: its address and generation (a bytenr reused by a later tree
 * block is another block), in the subvolume tree it is seen in (a snapshot shares blocks with
 * its source: a block current in the snapshot says nothing of the source's names). */
static uint64_t bkey(uint64_t bytenr, uint64_t gen, uint64_t tree)
{
	return bytenr ^ (gen * 0x9E3779B97F4A7C15ULL) ^ (tree * 0xff51afd7ed558ccdULL);
}

BTK_VEC(roots_vec, struct btk_root);

/* The root tree whose root block is at bytenr (level and generation from its header). */
static int root_tree_at(struct btk_fs *fs, uint64_t bytenr, struct btk_root *rt)
{
	struct btk_block *b;
	int ret = btk_block_read(fs, bytenr, NULL, &b);

	if (ret)
		return ret;
	memset(rt, 0, sizeof(*rt));
	rt->objectid = BTRFS_ROOT_TREE_OBJECTID;
	rt->bytenr = bytenr;
	rt->level = btk_block_level(b);
	rt->generation = btk_block_generation(b);
	ret = btk_block_owner(b) == BTRFS_ROOT_TREE_OBJECTID
		  ? 0
		  : btk_err(EINVAL, "block %llu is no root tree block", (unsigned long long)bytenr);
	btk_block_put(b);
	return ret;
}

/* The subvolume trees a root tree names (the last ROOT_ITEM of each id), but deleted ones
 * (no reference left: the cleaner drops them later, their names are gone). */
static int fs_trees(struct btk_fs *fs, const struct btk_root *rt, struct roots_vec *out)
{
	struct btk_key k = {BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	struct btk_path p;
	int ret;

	btk_path_init(&p);
	for (ret = btk_search_ge(fs, rt, &k, &p); !ret; ret = btk_next(fs, &p)) {
		const uint8_t *d;
		uint32_t size;
		struct btk_root r;
		struct btk_root_item ri;
		btk_path_key(&p, &k);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break;
		if (k.type != BTRFS_ROOT_ITEM_KEY || !btk_is_fs_tree(k.objectid))
			continue;
		d = btk_path_data(&p, &size);
		if (btk_root_from_item(k.objectid, k.offset, d, size, &r) ||
		    r.level >= BTK_MAX_LEVEL || btk_root_item_parse(d, size, &ri))
			continue;
		bool same = out->n && out->data[out->n - 1].objectid == r.objectid;
		if (!ri.refs) {
			if (same)
				out->n--;
			continue;
		}
		if (same)
			out->data[out->n - 1] = r;
		else if (!btk_vec_push(out)) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		} else
			out->data[out->n - 1] = r;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

static const struct btk_root *tree_of(const struct roots_vec *v, uint64_t id)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->data[i].objectid == id)
			return &v->data[i];
	return NULL;
}

struct pend {
	uint64_t bytenr, gen;
	int level;
};
BTK_VEC(pend_vec, struct pend);

/* Visits root's tree depth first, descending only into blocks not in skip: leaf() for each
 * such leaf, and every block visited (nodes too) added to skip unless keep_skip. With leaf
 * NULL only nodes are read (the set of a tree's blocks). Blocks that do not read count in
 * *missing. */
static int visit(struct btk_fs *fs, const struct btk_root *root, struct btk_u64set *skip,
		 int (*leaf)(void *ctx, const struct btk_block *b), void *ctx, uint64_t *missing)
{
	struct pend_vec st = {0};
	struct pend *top = btk_vec_push(&st);
	int ret = 0;

	if (!top)
		return btk_err(ENOMEM, "out of memory");
	*top = (struct pend){root->bytenr, root->generation, root->level};
	while (st.n && !ret) {
		struct pend w = st.data[--st.n];
		struct btk_block_check chk = {.level = w.level, .generation = w.gen};
		struct btk_block *b;
		uint64_t key = bkey(w.bytenr, w.gen, root->objectid);
		if (btk_u64set_has(skip, key))
			continue;
		if ((ret = btk_u64set_add(skip, key)) < 0)
			break;
		ret = 0;
		if (!w.level && !leaf)
			continue; /* a leaf's address is all the set needs */
		if (btk_block_read(fs, w.bytenr, &chk, &b)) {
			if (missing)
				(*missing)++;
			continue;
		}
		if (!w.level) {
			ret = leaf(ctx, b);
		} else {
			for (uint32_t s = btk_block_nritems(b); s-- > 0 && !ret;) {
				struct pend *c = btk_vec_push(&st);
				if (!c)
					ret = btk_err(ENOMEM, "out of memory");
				else
					*c = (struct pend){btk_node_blockptr(b, s),
							   btk_node_gen(b, s), w.level - 1};
			}
		}
		btk_block_put(b);
	}
	btk_vec_free(&st);
	return ret;
}

/* Does tree hold DIR_INDEX (dir, index) with this name? */
static bool has_entry(struct btk_fs *fs, const struct btk_root *tree, uint64_t dir, uint64_t index,
		      const char *name, uint16_t len)
{
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, index};
	struct btk_path p;
	bool has = false;

	btk_path_init(&p);
	if (btk_search(fs, tree, &k, &p) == 0) {
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		btk_dir_iter_init(&it, d, size);
		has = btk_dir_next(&it, &e) > 0 && e.name_len == len && !memcmp(e.name, name, len);
	}
	btk_path_release(&p);
	return has;
}

/* A cursor that walks a tree forward in key order: the lookups of one leaf's items, which come
 * in key order, cost a step each instead of a search each. */
struct cursor {
	struct btk_fs *fs;
	const struct btk_root *tree;
	struct btk_path p;
	int state; /* 0: not positioned; 1: at an item; 2: past the end or failed */
};

/* Is the cursor's tree's item at key k a DIR_INDEX entry with this name? Keys asked must not
 * decrease between calls (until cursor_reset). */
static bool cursor_has_entry(struct cursor *c, const struct btk_key *k, const char *name,
			     uint16_t len)
{
	struct btk_key ck;
	int ret = 0;

	if (c->state == 0) {
		ret = btk_search_ge(c->fs, c->tree, k, &c->p);
		c->state = ret ? 2 : 1;
	}
	while (c->state == 1) {
		btk_path_key(&c->p, &ck);
		if (btk_key_cmp(&ck, k) >= 0)
			break;
		if (btk_next(c->fs, &c->p))
			c->state = 2;
	}
	if (c->state != 1)
		return false;
	btk_path_key(&c->p, &ck);
	if (btk_key_cmp(&ck, k))
		return false;
	uint32_t size;
	const uint8_t *d = btk_path_data(&c->p, &size);
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	btk_dir_iter_init(&it, d, size);
	return btk_dir_next(&it, &e) > 0 && e.name_len == len && !memcmp(e.name, name, len);
}

static void cursor_reset(struct cursor *c)
{
	btk_path_release(&c->p);
	c->state = 0;
}

/* Does tree hold inode ino of inode generation igen (the same file, not a number reused)? */
static bool inode_alive(struct btk_fs *fs, const struct btk_root *tree, uint64_t ino, uint64_t igen,
			struct btk_inode_info *out)
{
	struct btk_inode_info i;

	if (btk_inode_read(fs, tree, ino, &i) || i.generation != igen)
		return false;
	if (out)
		*out = i;
	return true;
}

/* What the extent tree says of [start, start+len), a data extent of a tree of generation gen:
 * FREE when no extent lies on it; KEPT when the extent there is this very one (its start and
 * length, allocated at gen or before: never freed since); REUSED otherwise. */
static enum btk_data_state allocated(struct btk_fs *fs, const struct btk_root *ext, uint64_t start,
				     uint64_t len, uint64_t gen)
{
	struct btk_key k = {start + len - 1, 255, (uint64_t)-1};
	struct btk_path p;
	enum btk_data_state alloc = BTK_DATA_REUSED; /* when in doubt, do not promise the data */
	int ret;

	btk_path_init(&p);
	ret = btk_search(fs, ext, &k, &p);
	for (int n = 0; ret >= 0 && n < 64; n++) {
		if ((ret = btk_prev(fs, &p))) {
			alloc = ret < 0;
			break;
		}
		btk_path_key(&p, &k);
		uint64_t end = k.objectid + btk_extent_key_len(&k, fs->nodesize);
		if (end == k.objectid)
			continue; /* not an extent record */
		struct btk_extent_head h;
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		if (end <= start)
			alloc = BTK_DATA_FREE;
		else if (k.type == BTRFS_EXTENT_ITEM_KEY && k.objectid == start &&
			 k.offset == len && !btk_extent_head_parse(&k, d, size, &h) &&
			 h.generation <= gen)
			alloc = BTK_DATA_KEPT;
		break;
	}
	btk_path_release(&p);
	return alloc;
}

struct data_ctx {
	struct btk_fs *fs;
	const struct btk_root *ext;
	uint64_t gen;
	enum btk_data_state st;
};

static int data_cb(void *ctx, const struct btk_file_extent *fe)
{
	struct data_ctx *d = ctx;

	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		if (d->st == BTK_DATA_NONE)
			d->st = BTK_DATA_INLINE;
		return 0;
	}
	if (!fe->disk_bytenr)
		return 0;
	enum btk_data_state s =
	    d->ext ? allocated(d->fs, d->ext, fe->disk_bytenr, fe->disk_num_bytes, d->gen)
		   : BTK_DATA_FREE;
	if (s == BTK_DATA_REUSED) {
		d->st = s;
		return 1;
	}
	if (d->st != BTK_DATA_KEPT) /* some extent kept, the others free: kept */
		d->st = s;
	return 0;
}

static enum btk_data_state data_state(struct btk_fs *fs, const struct btk_root *tree, uint64_t ino,
				      const struct btk_root *ext, uint64_t gen)
{
	struct data_ctx d = {fs, ext, gen, BTK_DATA_NONE};

	if (btk_file_for_each_extent(fs, tree, ino, 0, data_cb, &d) < 0 && d.st != BTK_DATA_REUSED)
		d.st = BTK_DATA_REUSED; /* extents that do not read: nothing to promise */
	return d.st;
}

/* "/sub" for a subvolume (its path in root tree rt, or "/<subvolume ID>" when it has none
 * there), "" for the top level. */
static char *subvol_prefix(struct btk_fs *fs, const struct btk_root *rt, uint64_t id)
{
	char *p = NULL, buf[48];

	if (id == BTRFS_FS_TREE_OBJECTID)
		return strdup("");
	if (!btk_subvol_path_at(fs, rt, id, &p))
		return p;
	snprintf(buf, sizeof(buf), "/<subvolume %llu>", (unsigned long long)id);
	return strdup(buf);
}

/* prefix + the path of dir in tree + "/" + name. */
static char *entry_path(struct btk_fs *fs, const struct btk_root *tree, const char *prefix,
			uint64_t dir, const char *name, uint16_t len)
{
	char *dp = NULL, *out;
	size_t n;

	if (btk_dir_path(fs, tree, dir, &dp)) {
		char buf[48];
		snprintf(buf, sizeof(buf), "/<dir %llu>", (unsigned long long)dir);
		dp = strdup(buf);
		if (!dp)
			return NULL;
	}
	n = strlen(prefix) + strlen(dp) + len + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s/%.*s", prefix, dp, (int)len, name);
	free(dp);
	return out;
}

/* ---- deleted names ---- */

struct del_ctx {
	struct btk_fs *fs;
	const struct btk_root *old, *cur, *ext;
	uint64_t generation, root_tree;
	const char *prefix;
	struct btk_u64set *reported;
	int (*fn)(void *ctx, const struct btk_hist_name *n);
	void *ctx;
};

static uint64_t name_key(uint64_t subvol, uint64_t dir, uint64_t index)
{
	return (subvol * 0xff51afd7ed558ccdULL) ^ (dir * 0x9E3779B97F4A7C15ULL) ^
	       (index * 0xc4ceb9fe1a85ec53ULL);
}

static int del_leaf(void *ctx, const struct btk_block *b)
{
	struct del_ctx *c = ctx;
	struct cursor cur = {.fs = c->fs, .tree = c->cur};
	int ret = 0;

	for (uint32_t s = 0; s < btk_block_nritems(b) && !ret; s++) {
		struct btk_key k, loc;
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		btk_leaf_key(b, (int)s, &k);
		if (k.type != BTRFS_DIR_INDEX_KEY)
			continue;
		btk_dir_iter_init(&it, btk_leaf_data(b, (int)s), btk_leaf_size(b, (int)s));
		if (btk_dir_next(&it, &e) <= 0)
			continue;
		uint64_t nk = name_key(c->old->objectid, k.objectid, k.offset);
		if (btk_u64set_has(c->reported, nk))
			continue;
		if (c->cur && cursor_has_entry(&cur, &k, e.name, e.name_len))
			continue;
		btk_dir_ent_location(&e, &loc);
		struct btk_hist_name n = {.subvol = c->old->objectid,
					  .dir = k.objectid,
					  .index = k.offset,
					  .type = e.type,
					  .generation = c->generation,
					  .root_tree = c->root_tree,
					  .tree = *c->old};
		if (loc.type == BTRFS_INODE_ITEM_KEY) {
			n.ino = loc.objectid;
			n.have_inode = !btk_inode_read(c->fs, c->old, n.ino, &n.info);
			/* the file lives on under another name: renamed, not deleted */
			if (n.have_inode && c->cur &&
			    inode_alive(c->fs, c->cur, n.ino, n.info.generation, NULL))
				continue;
			if (n.have_inode && e.type == BTRFS_FT_REG_FILE)
				n.data = data_state(c->fs, c->old, n.ino, c->ext, c->generation);
		}
		if ((ret = btk_u64set_add(c->reported, nk)) < 0)
			break;
		char *path = entry_path(c->fs, c->old, c->prefix, k.objectid, e.name, e.name_len);
		if (!path) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		n.path = path;
		ret = c->fn(c->ctx, &n);
		free(path);
	}
	cursor_reset(&cur);
	return ret;
}

static bool is_root_tree(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

int btk_hist_deleted(struct btk_fs *fs, const struct btk_found_blocks *blocks,
		     int (*fn)(void *ctx, const struct btk_hist_name *n), void *ctx,
		     uint64_t *missing)
{
	struct btk_found_roots roots = {0};
	struct roots_vec cur = {0};
	struct btk_u64set skip = {0}, reported = {0};
	struct btk_root rt, ext, *extp = NULL;
	uint64_t cur_root = btk_le64(fs->sb.root), lost = 0;
	int ret;

	if (!btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext))
		extp = &ext;
	ret = root_tree_at(fs, cur_root, &rt);
	if (!ret)
		ret = fs_trees(fs, &rt, &cur);
	for (size_t i = 0; i < cur.n && !ret; i++) {
		struct btk_root r;
		/* an --fs-root choice counts as the current tree */
		if (!btk_root_find(fs, cur.data[i].objectid, &r))
			cur.data[i] = r;
		ret = visit(fs, &cur.data[i], &skip, NULL, NULL, NULL);
	}
	if (!ret)
		ret = btk_scan_roots(blocks, is_root_tree, &roots);
	if (!ret)
		ret = btk_scan_roots_commits(fs, &roots);
	/* the committed roots first: a name gets the newest generation whose commit has it;
	 * then the root trees their transaction copied again (names only they hold) */
	for (size_t k = 0; k < 2 * roots.n && !ret; k++) {
		const struct btk_found_root *fr = &roots.data[k % roots.n];
		struct roots_vec old = {0};
		if (fr->superseded != (k >= roots.n))
			continue;
		if (fr->generation >= fs->generation || fr->bytenr == cur_root)
			continue;
		if (root_tree_at(fs, fr->bytenr, &rt) || fs_trees(fs, &rt, &old)) {
			btk_vec_free(&old);
			lost++;
			continue;
		}
		for (size_t t = 0; t < old.n && !ret; t++) {
			char *prefix = subvol_prefix(fs, &rt, old.data[t].objectid);
			struct del_ctx c = {
			    fs,	    &old.data[t],   tree_of(&cur, old.data[t].objectid),
			    extp,   fr->generation, fr->bytenr,
			    prefix, &reported,	    fn,
			    ctx};
			if (!prefix)
				ret = btk_err(ENOMEM, "out of memory");
			else
				ret = visit(fs, &old.data[t], &skip, del_leaf, &c, &lost);
			free(prefix);
		}
		btk_vec_free(&old);
	}
	if (missing)
		*missing = lost;
	btk_vec_free(&roots);
	btk_vec_free(&cur);
	btk_u64set_free(&skip);
	btk_u64set_free(&reported);
	return ret;
}

/* ---- changes between two roots ---- */

struct diff_ctx {
	struct btk_fs *fs;
	const struct btk_root *self, *other; /* the leaf's tree and the one compared with */
	bool newer;			     /* self is the newer ("to") tree */
	uint64_t generation, root_tree;
	const char *prefix;
	int (*fn)(void *ctx, enum btk_change c, const struct btk_hist_name *n);
	void *ctx;
};

/* The first path of ino in tree (from the top level), malloc'ed, or NULL. */
struct first_path {
	char *p;
};
static int first_path_cb(void *ctx, const char *path)
{
	struct first_path *f = ctx;
	f->p = strdup(path);
	return 1;
}

static int diff_entry(struct diff_ctx *c, const struct btk_key *k, const struct btk_dir_ent *e)
{
	struct btk_key loc;
	struct btk_inode_info other;
	struct btk_hist_name n = {.subvol = c->self->objectid,
				  .dir = k->objectid,
				  .index = k->offset,
				  .type = e->type,
				  .generation = c->generation,
				  .root_tree = c->root_tree,
				  .tree = *c->self};
	enum btk_change ch = c->newer ? BTK_CH_CREATED : BTK_CH_DELETED;
	struct first_path np = {0};
	int ret;

	if (c->other && has_entry(c->fs, c->other, k->objectid, k->offset, e->name, e->name_len))
		return 0;
	btk_dir_ent_location(e, &loc);
	if (loc.type == BTRFS_INODE_ITEM_KEY) {
		n.ino = loc.objectid;
		n.have_inode = !btk_inode_read(c->fs, c->self, n.ino, &n.info);
		if (n.have_inode && c->other &&
		    inode_alive(c->fs, c->other, n.ino, n.info.generation, &other)) {
			if (c->newer)
				return 0; /* a rename: said from the older side */
			ch = BTK_CH_RENAMED;
			btk_inode_paths(c->fs, c->other, n.ino, first_path_cb, &np);
		}
	}
	char *path = entry_path(c->fs, c->self, c->prefix, k->objectid, e->name, e->name_len);
	char *newp = NULL;
	if (np.p) {
		size_t l = strlen(c->prefix) + strlen(np.p) + 1;
		newp = malloc(l);
		if (newp)
			snprintf(newp, l, "%s%s", c->prefix, np.p);
		free(np.p);
	}
	if (!path || (ch == BTK_CH_RENAMED && !newp)) {
		free(path);
		free(newp);
		return btk_err(ENOMEM, "out of memory");
	}
	n.path = path;
	n.new_path = newp;
	ret = c->fn(c->ctx, ch, &n);
	free(path);
	free(newp);
	return ret;
}

static int modified_inode(struct diff_ctx *c, uint64_t ino, const uint8_t *d, uint32_t size)
{
	struct btk_inode_info old;
	struct btk_hist_name n = {.subvol = c->self->objectid,
				  .ino = ino,
				  .generation = c->generation,
				  .root_tree = c->root_tree,
				  .tree = *c->self};
	struct first_path fp = {0};
	int ret;

	if (btk_inode_item_parse(d, size, &n.info) || (n.info.mode & 0170000) == 0040000)
		return 0;
	if (!c->other || !inode_alive(c->fs, c->other, ino, n.info.generation, &old))
		return 0; /* new: its name says "created" */
	if (old.size == n.info.size && old.mtime.sec == n.info.mtime.sec &&
	    old.mtime.nsec == n.info.mtime.nsec)
		return 0;
	n.have_inode = true;
	n.type = btk_mode_ftype(n.info.mode);
	btk_inode_paths(c->fs, c->self, ino, first_path_cb, &fp);
	size_t l = strlen(c->prefix) + (fp.p ? strlen(fp.p) : 32) + 1;
	char *path = malloc(l);
	if (!path) {
		free(fp.p);
		return btk_err(ENOMEM, "out of memory");
	}
	if (fp.p)
		snprintf(path, l, "%s%s", c->prefix, fp.p);
	else
		snprintf(path, l, "%s/<inode %llu>", c->prefix, (unsigned long long)ino);
	free(fp.p);
	n.path = path;
	ret = c->fn(c->ctx, BTK_CH_MODIFIED, &n);
	free(path);
	return ret;
}

static int diff_leaf(void *ctx, const struct btk_block *b)
{
	struct diff_ctx *c = ctx;
	int ret = 0;

	for (uint32_t s = 0; s < btk_block_nritems(b) && !ret; s++) {
		struct btk_key k;
		btk_leaf_key(b, (int)s, &k);
		if (k.type == BTRFS_DIR_INDEX_KEY) {
			struct btk_dir_iter it;
			struct btk_dir_ent e;
			btk_dir_iter_init(&it, btk_leaf_data(b, (int)s), btk_leaf_size(b, (int)s));
			if (btk_dir_next(&it, &e) > 0)
				ret = diff_entry(c, &k, &e);
		} else if (k.type == BTRFS_INODE_ITEM_KEY && c->newer) {
			ret = modified_inode(c, k.objectid, btk_leaf_data(b, (int)s),
					     btk_leaf_size(b, (int)s));
		}
	}
	return ret;
}

/* The leaves of self that other does not share, compared with other. */
static int diff_side(struct btk_fs *fs, struct diff_ctx *c, uint64_t *missing)
{
	struct btk_u64set skip = {0};
	int ret = 0;

	if (c->other)
		ret = visit(fs, c->other, &skip, NULL, NULL, NULL);
	if (!ret)
		ret = visit(fs, c->self, &skip, diff_leaf, c, missing);
	btk_u64set_free(&skip);
	return ret;
}

int btk_hist_diff(struct btk_fs *fs, uint64_t from, uint64_t to,
		  int (*fn)(void *ctx, enum btk_change c, const struct btk_hist_name *n), void *ctx,
		  uint64_t *missing)
{
	struct btk_root ra, rb;
	struct roots_vec a = {0}, b = {0};
	uint64_t lost = 0;
	int ret = root_tree_at(fs, from, &ra);

	if (!ret)
		ret = root_tree_at(fs, to, &rb);
	if (!ret)
		ret = fs_trees(fs, &ra, &a);
	if (!ret)
		ret = fs_trees(fs, &rb, &b);
	for (int side = 0; side < 2 && !ret; side++) {
		const struct roots_vec *self = side ? &b : &a, *other = side ? &a : &b;
		for (size_t i = 0; i < self->n && !ret; i++) {
			char *prefix = subvol_prefix(fs, side ? &rb : &ra, self->data[i].objectid);
			struct diff_ctx c = {
			    .fs = fs,
			    .self = &self->data[i],
			    .other = tree_of(other, self->data[i].objectid),
			    .newer = side == 1,
			    .generation = side ? rb.generation : ra.generation,
			    .root_tree = side ? to : from,
			    .prefix = prefix,
			    .fn = fn,
			    .ctx = ctx,
			};
			if (!prefix)
				ret = btk_err(ENOMEM, "out of memory");
			else
				ret = diff_side(fs, &c, &lost);
			free(prefix);
		}
	}
	if (missing)
		*missing = lost;
	btk_vec_free(&a);
	btk_vec_free(&b);
	return ret;
}

/* ---- stale tree blocks ---- */

int btk_hist_stale_block(struct btk_fs *fs, uint64_t logical, struct btk_stale *out)
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	uint64_t meta = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM;
	uint8_t *buf;
	char why[160];
	int ret;

	memset(out, 0, sizeof(*out));
	if (!c || !(c->type & meta) || logical < c->logical)
		return -ENOENT;
	out->bytenr = logical - (logical - c->logical) % fs->nodesize;
	if (!(buf = malloc(fs->nodesize)))
		return btk_err(ENOMEM, "out of memory");
	ret = btk_read_logical(fs, out->bytenr, buf, fs->nodesize);
	if (!ret && btk_block_check_raw(fs, out->bytenr, buf, why, sizeof(why)))
		ret = -ENOENT;
	if (ret) {
		free(buf);
		return ret;
	}
	/* the checks passed: a block of this filesystem, its items inside it */
	struct btk_block b = {.bytenr = out->bytenr, .len = fs->nodesize, .data = buf};
	out->owner = btk_block_owner(&b);
	out->generation = btk_block_generation(&b);
	out->level = btk_block_level(&b);
	out->nritems = btk_block_nritems(&b);
	if (out->nritems) {
		btk_block_key(&b, 0, &out->first);
		btk_block_key(&b, (int)out->nritems - 1, &out->last);
	}
	for (uint32_t s = 0; !out->level && btk_is_fs_tree(out->owner) && s < out->nritems; s++) {
		struct btk_key k, loc;
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		btk_leaf_key(&b, (int)s, &k);
		if (k.type == BTRFS_INODE_ITEM_KEY) {
			if (out->ninodes < BTK_STALE_NAMES)
				out->inodes[out->ninodes] = k.objectid;
			out->ninodes++;
		}
		if (k.type != BTRFS_DIR_INDEX_KEY)
			continue;
		btk_dir_iter_init(&it, btk_leaf_data(&b, (int)s), btk_leaf_size(&b, (int)s));
		if (btk_dir_next(&it, &e) <= 0)
			continue;
		if (out->nnames < BTK_STALE_NAMES) {
			btk_dir_ent_location(&e, &loc);
			out->names[out->nnames].dir = k.objectid;
			out->names[out->nnames].ino = loc.objectid;
			snprintf(out->names[out->nnames].name, sizeof(out->names[0].name), "%.*s",
				 (int)e.name_len, e.name);
		}
		out->nnames++;
	}
	free(buf);
	return 0;
}

/* ---- free and unallocated space ---- */

/* fn for each logical range of chunk c that no extent item of ext covers, in order. */
static int chunk_free(struct btk_fs *fs, const struct btk_root *ext, const struct btk_chunk *c,
		      int (*fn)(void *ctx, uint64_t logical, uint64_t len), void *ctx)
{
	struct btk_key k = {c->logical, 0, 0};
	uint64_t pos = c->logical, end = c->logical + c->length;
	struct btk_path p;
	int ret;

	btk_path_init(&p);
	for (ret = btk_search_ge(fs, ext, &k, &p); !ret; ret = btk_next(fs, &p)) {
		uint64_t s, e;
		btk_path_key(&p, &k);
		if (k.objectid >= end)
			break;
		if (!btk_extent_key_len(&k, fs->nodesize))
			continue; /* not an extent record */
		e = k.objectid + btk_extent_key_len(&k, fs->nodesize);
		s = k.objectid;
		if (s > pos && (ret = fn(ctx, pos, s - pos))) {
			btk_path_release(&p);
			return ret;
		}
		if (e > pos)
			pos = e;
	}
	btk_path_release(&p);
	if (ret < 0)
		return ret;
	return pos < end ? fn(ctx, pos, end - pos) : 0;
}

struct free_fwd {
	int (*fn)(void *ctx, uint64_t logical, uint64_t len, uint64_t type);
	void *ctx;
	uint64_t type;
};

static int free_fwd(void *ctx, uint64_t logical, uint64_t len)
{
	struct free_fwd *f = ctx;

	return f->fn(f->ctx, logical, len, f->type);
}

int btk_hist_free_ranges(struct btk_fs *fs,
			 int (*fn)(void *ctx, uint64_t logical, uint64_t len, uint64_t type),
			 void *ctx)
{
	struct free_fwd f = {fn, ctx, 0};
	struct btk_root ext;
	int ret = 0;

	if (!fs->nchunks)
		return 0;
	if ((ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext)))
		return ret;
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		f.type = fs->chunks[i]->type;
		ret = chunk_free(fs, &ext, fs->chunks[i], free_fwd, &f);
	}
	return ret;
}

int btk_hist_unallocated(struct btk_fs *fs,
			 int (*fn)(void *ctx, uint64_t devid, uint64_t physical, uint64_t len),
			 void *ctx)
{
	struct btk_key k = {0, BTRFS_DEV_EXTENT_KEY, 0};
	struct btk_root dev;
	struct btk_path p;
	int d = 0, ret;
	uint64_t pos = 1ULL << 20;

	if ((ret = btk_root_find(fs, BTRFS_DEV_TREE_OBJECTID, &dev)))
		return ret;
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &dev, &k, &p); ret >= 0 && d < fs->ndevs;) {
		const struct btk_fs_dev *fd = &fs->devs[d];
		bool have = !ret;
		uint32_t size = 0;
		const uint8_t *data = NULL;
		if (have) {
			btk_path_key(&p, &k);
			data = btk_path_data(&p, &size);
			if (k.type != BTRFS_DEV_EXTENT_KEY ||
			    size < sizeof(struct btrfs_dev_extent)) {
				ret = btk_next(fs, &p);
				continue;
			}
		}
		if (!have || k.objectid > fd->devid) { /* the rest of this device is free */
			if (pos < fd->total_bytes &&
			    (ret = fn(ctx, fd->devid, pos, fd->total_bytes - pos)))
				break;
			d++;
			pos = 1ULL << 20;
			ret = have ? 0 : 1;
			if (!have && d >= fs->ndevs)
				break;
			continue;
		}
		if (k.objectid == fd->devid) {
			uint64_t len = BTK_GET(struct btrfs_dev_extent, data, length);
			if (k.offset > pos && (ret = fn(ctx, fd->devid, pos, k.offset - pos)))
				break;
			if (k.offset + len > pos)
				pos = k.offset + len;
		}
		ret = btk_next(fs, &p);
	}
	btk_path_release(&p);
	return ret < 0 || ret > 1 ? ret : 0;
}

/* ---- unused bytes of the devices, in physical order ---- */

struct unused_walk {
	struct btk_fs *fs;
	uint64_t devid, end; /* the device's readable end */
	struct btk_byte_range res[BTK_SUPER_MIRRORS];
	int nres;
	struct btk_unused pend; /* coalesced, not yet passed on (len 0: none) */
	int (*fn)(void *ctx, const struct btk_unused *u);
	void *ctx;
	/* the dev extent being filled */
	uint64_t dstart, dlen;
	const struct btk_chunk *chunk;
};

static int unused_flush(struct unused_walk *w)
{
	int ret = w->pend.len ? w->fn(w->ctx, &w->pend) : 0;

	w->pend.len = 0;
	return ret;
}

/* One piece, cut at the device end and around the ranges btrfs keeps for itself. */
static int unused_emit(struct unused_walk *w, uint64_t phys, uint64_t len, uint64_t logical,
		       uint64_t type)
{
	uint64_t end = phys + len < w->end ? phys + len : w->end;
	int ret;

	while (phys < end) {
		uint64_t cut = end, skip = 0;
		for (int i = 0; i < w->nres; i++) {
			uint64_t rs = w->res[i].start, re = rs + w->res[i].len;
			if (re <= phys || rs >= cut)
				continue;
			if (rs <= phys) { /* phys lies in a kept range: skip past it */
				skip = re - phys;
				cut = phys;
				break;
			}
			cut = rs;
		}
		if (cut > phys) {
			uint64_t n = cut - phys, lg = logical;
			struct btk_unused *p = &w->pend;
			bool same = p->len && p->physical + p->len == phys && p->type == type &&
				    (lg == BTK_UNALLOCATED ? p->logical == BTK_UNALLOCATED
							   : p->logical + p->len == lg);
			if (same) {
				p->len += n;
			} else {
				if ((ret = unused_flush(w)))
					return ret;
				*p = (struct btk_unused){w->devid, phys, n, lg, type};
			}
			skip = n;
		}
		phys += skip;
		if (logical != BTK_UNALLOCATED)
			logical += skip;
	}
	return 0;
}

/* A free logical range of the chunk of the current dev extent: its bytes on this stripe. */
static int unused_free_cb(void *ctx, uint64_t logical, uint64_t len)
{
	struct unused_walk *w = ctx;
	uint64_t end = logical + len;
	int ret;

	while (logical < end) {
		struct btk_phys ph[BTK_MAX_COPIES];
		uint64_t contig = 0, step;
		int n = 0;
		if ((ret = btk_map_logical(w->fs, logical, ph, BTK_MAX_COPIES, &n, &contig)))
			return ret == -ENOENT ? 0 : ret;
		if (!contig)
			break;
		step = contig < end - logical ? contig : end - logical;
		for (int i = 0; i < n; i++)
			if (ph[i].devid == w->devid && ph[i].physical >= w->dstart &&
			    ph[i].physical - w->dstart < w->dlen &&
			    (ret = unused_emit(w, ph[i].physical, step, logical, w->chunk->type)))
				return ret;
		logical += step;
	}
	return 0;
}

int btk_hist_unused(struct btk_fs *fs, uint64_t devid,
		    int (*fn)(void *ctx, const struct btk_unused *u), void *ctx)
{
	struct unused_walk w = {.fs = fs, .fn = fn, .ctx = ctx};
	struct btk_root dev, ext;
	int ret;

	if ((ret = btk_root_find(fs, BTRFS_DEV_TREE_OBJECTID, &dev)) ||
	    (ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext)))
		return ret;
	for (int d = 0; d < fs->ndevs && !ret; d++) {
		const struct btk_fs_dev *fd = &fs->devs[d];
		struct btk_key k = {fd->devid, BTRFS_DEV_EXTENT_KEY, 0};
		uint64_t pos = BTK_DEV_RESERVED;
		struct btk_path p;
		if ((devid && fd->devid != devid) || !fd->dev)
			continue; /* a missing device has no bytes to give */
		w.devid = fd->devid;
		w.end = fd->total_bytes < fd->dev->size ? fd->total_bytes : fd->dev->size;
		w.nres = btk_dev_reserved(fd->total_bytes, w.res);
		btk_path_init(&p);
		for (ret = btk_search_ge(fs, &dev, &k, &p); !ret; ret = btk_next(fs, &p)) {
			struct btk_dev_extent_ent de;
			uint32_t size = 0;
			const uint8_t *data;
			btk_path_key(&p, &k);
			if (k.objectid != fd->devid)
				break;
			data = btk_path_data(&p, &size);
			if (k.type != BTRFS_DEV_EXTENT_KEY || btk_dev_extent_parse(data, size, &de))
				continue;
			if (k.offset > pos &&
			    (ret = unused_emit(&w, pos, k.offset - pos, BTK_UNALLOCATED, 0)))
				break;
			w.dstart = k.offset;
			w.dlen = de.length;
			w.chunk = btk_chunk_find(fs, de.chunk_offset);
			/* a dev extent of no chunk: left alone (not known to be unused) */
			if (w.chunk && (ret = chunk_free(fs, &ext, w.chunk, unused_free_cb, &w)))
				break;
			if (k.offset + w.dlen > pos)
				pos = k.offset + w.dlen;
		}
		btk_path_release(&p);
		if (ret < 0 || ret > 1)
			break;
		ret = 0;
		if (pos < fd->total_bytes)
			ret = unused_emit(&w, pos, fd->total_bytes - pos, BTK_UNALLOCATED, 0);
		if (!ret)
			ret = unused_flush(&w);
	}
	return ret;
}

int btk_hist_unused_read(struct btk_fs *fs, uint64_t devid, uint64_t physical, void *buf,
			 size_t len)
{
	struct btk_fs_dev *fd = btk_fs_dev_find(fs, devid);

	if (!fd || !fd->dev)
		return btk_err(-ENODEV, "device %llu is missing", (unsigned long long)devid);
	return btk_dev_read(fd->dev, buf, len, physical);
}

/* ---- salvage: inodes by their own items ---- */

struct sv_rec {
	uint64_t ino, parent; /* parent of the first reference; name NULL: none read */
	char *name;
	bool have_inode, looked; /* looked: older roots were asked for its reference */
	struct btk_inode_info info;
	uint64_t data_end;
};
BTK_VEC(sv_vec, struct sv_rec);

struct sv {
	struct btk_fs *fs;
	struct sv_vec recs;   /* from the tree, by inode number */
	struct sv_vec ghosts; /* ancestors known only to older roots (or to none) */
	struct roots_vec older;
};

static int sv_cmp(const void *a, const void *b)
{
	const struct sv_rec *x = a, *y = b;

	return btk_cmp_u64(x->ino, y->ino);
}

static struct sv_rec *sv_find(struct sv *s, uint64_t ino)
{
	struct sv_rec key = {.ino = ino}, *r;

	if (s->recs.n && (r = bsearch(&key, s->recs.data, s->recs.n, sizeof(key), sv_cmp)))
		return r;
	for (size_t i = 0; i < s->ghosts.n; i++)
		if (s->ghosts.data[i].ino == ino)
			return &s->ghosts.data[i];
	return NULL;
}

/* The first reference of an INODE_REF / INODE_EXTREF item into r (when it has none yet). */
static int sv_ref(struct sv_rec *r, const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	struct btk_ref_iter it;
	struct btk_ref_ent e;

	if (r->name)
		return 0;
	btk_ref_iter_init(&it, k, d, size);
	if (btk_ref_next(&it, &e) != 1)
		return 0;
	if (!(r->name = strndup(e.name, e.name_len)))
		return btk_err(ENOMEM, "out of memory");
	r->parent = e.parent;
	return 0;
}

/* ino's reference from the newest older root that has one (a ghost record, also when none
 * does, so that it is asked once). */
static struct sv_rec *sv_ghost(struct sv *s, uint64_t ino)
{
	struct sv_rec *r = btk_vec_push(&s->ghosts);

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->ino = ino;
	r->looked = true;
	for (size_t i = 0; i < s->older.n && !r->name; i++) {
		struct btk_key k = {ino, BTRFS_INODE_REF_KEY, 0};
		struct btk_path p;
		btk_path_init(&p);
		if (!btk_search_ge(s->fs, &s->older.data[i], &k, &p)) {
			uint32_t size;
			const uint8_t *d = btk_path_item(&p, &k, &size);
			if (k.objectid == ino &&
			    (k.type == BTRFS_INODE_REF_KEY || k.type == BTRFS_INODE_EXTREF_KEY))
				sv_ref(r, &k, d, size);
		}
		btk_path_release(&p);
	}
	return r;
}

/* r's path below the top ("a/b/c"), or below the nearest ancestor without a known name
 * (*lost: its number; r's own when r has none, the path then ""). */
static char *sv_path(struct sv *s, const struct sv_rec *r, uint64_t *lost)
{
	const char *parts[BTK_SALVAGE_DEPTH];
	const struct sv_rec *cur = r;
	size_t n = 0, len = 1;
	char *out, *o;

	*lost = 0;
	while (cur->ino != BTRFS_FIRST_FREE_OBJECTID) {
		struct sv_rec *up;
		uint64_t parent = cur->parent;
		if (!cur->name || n == BTK_SALVAGE_DEPTH || parent == cur->ino) {
			*lost = cur->ino;
			break;
		}
		parts[n++] = cur->name;
		len += strlen(cur->name) + 1;
		up = sv_find(s, parent);
		if (!up || (!up->name && !up->looked && parent != BTRFS_FIRST_FREE_OBJECTID)) {
			/* the parent's own items did not read (or hold no reference) */
			if (up)
				up->looked = true;
			struct sv_rec *g = up && up->name ? up : sv_ghost(s, parent);
			if (!g)
				return NULL;
			if (up && !up->name && g->name) {
				/* a ghost found the name: the record takes it over */
				up = sv_find(s, parent); /* the push may have moved records */
				up->name = g->name, up->parent = g->parent;
				g->name = NULL;
			} else {
				up = g;
			}
		}
		cur = up;
	}
	if (!(out = malloc(len)))
		return NULL;
	o = out;
	*o = 0;
	while (n--)
		o += sprintf(o, "%s%s", o == out ? "" : "/", parts[n]);
	return out;
}

int btk_hist_salvage(struct btk_fs *fs, const struct btk_root *tree, const uint64_t *older,
		     size_t nolder, int (*fn)(void *ctx, const struct btk_salvaged *f), void *ctx)
{
	struct sv s = {.fs = fs};
	struct btk_key k = {BTRFS_FIRST_FREE_OBJECTID, 0, 0};
	bool was = btk_tree_skip_unreadable(fs, true);
	struct btk_path p;
	int ret;

	/* the same tree at older roots, newest first (where its blocks still read) */
	for (size_t i = 0; i < nolder; i++) {
		struct btk_root rt;
		struct roots_vec v = {0};
		const struct btk_root *t;
		if (!root_tree_at(fs, older[i], &rt) && !fs_trees(fs, &rt, &v) &&
		    (t = tree_of(&v, tree->objectid)) && t->bytenr != tree->bytenr) {
			struct btk_root *o = btk_vec_push(&s.older);
			if (o)
				*o = *t;
		}
		btk_vec_free(&v);
	}
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, tree, &k, &p); !ret; ret = btk_next(fs, &p)) {
		struct sv_rec *r;
		uint32_t size;
		const uint8_t *d;
		btk_path_key(&p, &k);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break;
		if (k.type != BTRFS_INODE_ITEM_KEY && k.type != BTRFS_INODE_REF_KEY &&
		    k.type != BTRFS_INODE_EXTREF_KEY && k.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		if (s.recs.n && s.recs.data[s.recs.n - 1].ino == k.objectid) {
			r = &s.recs.data[s.recs.n - 1];
		} else if ((r = btk_vec_push(&s.recs))) {
			memset(r, 0, sizeof(*r));
			r->ino = k.objectid;
		} else {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		d = btk_path_data(&p, &size);
		if (k.type == BTRFS_INODE_ITEM_KEY) {
			r->have_inode = !btk_inode_item_parse(d, size, &r->info);
		} else if (k.type == BTRFS_EXTENT_DATA_KEY) {
			struct btk_file_extent fe;
			if (btk_file_extent_item_parse(d, size, k.offset, &fe) == BTK_FE_WHOLE) {
				uint64_t e =
				    k.offset + (fe.type == BTRFS_FILE_EXTENT_INLINE ? fe.ram_bytes
										    : fe.num_bytes);
				if (e > r->data_end)
					r->data_end = e;
			}
		} else if ((ret = sv_ref(r, &k, d, size))) {
			break;
		}
	}
	btk_path_release(&p);
	btk_tree_skip_unreadable(fs, was);
	if (ret == 1)
		ret = 0;
	for (size_t i = 0; !ret && i < s.recs.n; i++) {
		struct sv_rec *r = &s.recs.data[i];
		struct btk_salvaged f = {.ino = r->ino};
		if (r->ino == BTRFS_FIRST_FREE_OBJECTID || (!r->have_inode && !r->data_end))
			continue;
		if (!(f.path = sv_path(&s, r, &f.lost))) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		r = &s.recs.data[i];
		f.have_inode = r->have_inode;
		f.info = r->info;
		f.data_end = r->data_end;
		ret = fn(ctx, &f);
		free((char *)f.path);
	}
	for (size_t i = 0; i < s.recs.n; i++)
		free(s.recs.data[i].name);
	for (size_t i = 0; i < s.ghosts.n; i++)
		free(s.ghosts.data[i].name);
	btk_vec_free(&s.recs);
	btk_vec_free(&s.ghosts);
	btk_vec_free(&s.older);
	return ret;
}
