/* backref.c — one logical address to its owners through back references (see backref.h). */
#include "backref/backref_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"
#include "fs/fs_read.h"

void btk_owner_release(struct btk_owner *o)
{
	free(o->data);
	free(o->tree);
	free(o->error);
	memset(o, 0, sizeof(*o));
}

/* Records a failure to follow one reference; the result stays usable. */
void br_owner_error(struct btk_owner *o, int err)
{
	(void)err;
	if (!o->nerrors++)
		o->error = strdup(btk_errmsg());
}

int br_add_data(struct btk_owner *o, const struct btk_data_owner *d, size_t *cap)
{
	struct btk_data_owner *slot = btk_array_push(o->data, o->ndata, *cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory");
	*slot = *d;
	return 0;
}

int br_add_tree(struct btk_owner *o, uint64_t root, int level, int found, size_t *cap)
{
	struct btk_tree_owner *slot = btk_array_push(o->tree, o->ntree, *cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory");
	*slot = (struct btk_tree_owner){root, level, (uint8_t)found};
	return 0;
}

static int cmp_data(const void *a, const void *b)
{
	const struct btk_data_owner *x = a, *y = b;

	return btk_cmp_u64(x->root, y->root) ?: btk_cmp_u64(x->inode, y->inode)
		   ?: btk_cmp_u64(x->offset, y->offset);
}

static int cmp_tree(const void *a, const void *b)
{
	const struct btk_tree_owner *x = a, *y = b;

	return x->root < y->root ? -1 : x->root > y->root;
}

/* Sorts n elements of size sz and drops the repeats (cmp equal); the count left. */
static size_t sort_unique(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	uint8_t *a = base;
	size_t j = 0;

	if (!n)
		return 0;
	qsort(a, n, sz, cmp);
	for (size_t i = 1; i < n; i++)
		if (cmp(a + i * sz, a + j * sz))
			memmove(a + ++j * sz, a + i * sz, sz);
	return j + 1;
}

/* Sorts owners and drops duplicates (the same owner reached through two references). */
void br_owner_finish(struct btk_owner *o)
{
	o->ndata = sort_unique(o->data, o->ndata, sizeof(*o->data), cmp_data);
	o->ntree = sort_unique(o->tree, o->ntree, sizeof(*o->tree), cmp_tree);
}

/* Does file extent fe (of inode ino) hold logical? Fills the owner's offset fields. */
bool br_extent_covers(const struct btk_file_extent *fe, uint64_t logical, uint64_t ino,
		      struct btk_data_owner *d)
{
	uint64_t pos;

	if (fe->type == BTRFS_FILE_EXTENT_INLINE || !fe->disk_bytenr)
		return false;
	if (logical < fe->disk_bytenr || logical - fe->disk_bytenr >= fe->disk_num_bytes)
		return false;
	memset(d, 0, sizeof(*d));
	d->inode = ino;
	d->file_start = fe->file_offset;
	d->file_len = fe->num_bytes;
	d->leaf = fe->leaf;
	d->type = fe->type;
	d->compression = fe->compression;
	pos = logical - fe->disk_bytenr;
	if (fe->compression || fe->encryption || fe->other_encoding) {
		/* Encoded bytes do not map one to one to file bytes: the whole item owns them. */
		d->offset = fe->file_offset;
		return true;
	}
	if (pos < fe->extent_offset || pos - fe->extent_offset >= fe->num_bytes)
		return false;
	d->offset = fe->file_offset + (pos - fe->extent_offset);
	return true;
}

struct data_walk {
	struct btk_backref *br;
	struct btk_owner *o;
	const struct btk_extent *ext;
	const struct btk_extent_ref *ref;
	uint64_t logical;
	uint32_t matched;
	size_t cap;
	bool whole; /* every item pointing into the extent owns it, whichever bytes it uses */
};

/* An EXTENT_DATA item found for the extent: every root reaching its leaf owns the byte. */
static int add_item(struct data_walk *w, const struct btk_key *k, const struct btk_file_extent *fe)
{
	struct btk_data_owner d;
	const uint64_t *roots;
	size_t n;
	int ret;

	if (w->whole) {
		memset(&d, 0, sizeof(d));
		d.inode = k->objectid;
		d.leaf = fe->leaf;
	} else if (!br_extent_covers(fe, w->logical, k->objectid, &d)) {
		return 0;
	}
	ret = btk_block_roots(w->br, fe->leaf, &roots, &n);
	if (ret)
		br_owner_error(w->o, ret);
	if (ret == -ENOMEM)
		return ret;
	d.found = BTK_FOUND_BACKREF;
	for (size_t i = 0; i < n; i++) {
		d.root = roots[i];
		if (br_add_data(w->o, &d, &w->cap))
			return btk_err(ENOMEM, "out of memory");
	}
	return 0;
}

/* An item of the indirect ref's inode, from where its items can start (the ref offset, or 0
 * when it wrapped): it is one of the ref's when it points at the extent and its file offset
 * minus its extent offset, modulo 2^64, is the ref's offset. */
static int indirect_item(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
			 const uint8_t *data, uint32_t size)
{
	struct data_walk *w = arg;
	struct btk_file_extent fe;
	int ret = btk_file_extent_parse(data, size, k->offset, &fe);

	if (ret) {
		br_owner_error(w->o, ret);
		return 0;
	}
	fe.leaf = leaf->bytenr;
	fe.slot = slot;
	if (fe.type == BTRFS_FILE_EXTENT_INLINE || fe.disk_bytenr != w->ext->start ||
	    btk_data_ref_offset(k->offset, fe.extent_offset) != w->ref->offset)
		return 0;
	ret = add_item(w, k, &fe);
	if (ret)
		return ret;
	/* The ref stands for `count` items of this root: stop when all were seen. */
	return ++w->matched >= w->ref->count ? 1 : 0;
}

static int shared_leaf(struct data_walk *w, uint64_t parent)
{
	struct btk_block_check chk = {.level = 0};
	struct btk_file_extent fe;
	struct btk_block *b;
	struct btk_key k;
	int ret = btk_block_read(w->br->fs, parent, &chk, &b);

	if (ret)
		return ret;
	for (uint32_t s = 0; s < btk_block_nritems(b) && !ret; s++) {
		btk_leaf_key(b, s, &k);
		if (k.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		if (btk_file_extent_parse(btk_leaf_data(b, s), btk_leaf_size(b, s), k.offset, &fe))
			continue;
		if (fe.type == BTRFS_FILE_EXTENT_INLINE || fe.disk_bytenr != w->ext->start)
			continue;
		fe.leaf = parent;
		fe.slot = (int)s;
		ret = add_item(w, &k, &fe);
	}
	btk_block_put(b);
	return ret;
}

static int data_ref_cb(void *arg, const struct btk_extent_ref *ref)
{
	struct data_walk *w = arg;
	struct btk_root root;
	int ret = 0;

	w->ref = ref;
	w->matched = 0;
	if (ref->type == BTRFS_EXTENT_DATA_REF_KEY) {
		ret = btk_backref_root(w->br, ref->root, &root);
		if (!ret)
			ret = btk_for_each_item(
			    w->br->fs, &root, ref->objectid, BTRFS_EXTENT_DATA_KEY,
			    btk_data_ref_search_from(ref->offset), indirect_item, w);
		if (ret == 1)
			ret = 0;
		if (!ret && !w->matched)
			ret = btk_err(
			    ENOENT,
			    "extent %llu: EXTENT_DATA_REF root %llu inode %llu "
			    "offset %llu matches no file extent",
			    (unsigned long long)w->ext->start, (unsigned long long)ref->root,
			    (unsigned long long)ref->objectid, (unsigned long long)ref->offset);
	} else if (ref->type == BTRFS_SHARED_DATA_REF_KEY) {
		ret = shared_leaf(w, ref->parent);
	}
	if (ret && ret != -ENOMEM) {
		br_owner_error(w->o, ret);
		ret = 0;
	}
	return ret;
}

void br_read_keys(struct btk_fs *fs, struct btk_owner *o, uint64_t bytenr, int level)
{
	struct btk_block_check chk = {.level = level};
	struct btk_block *b;
	uint32_t n;
	int ret = btk_block_read(fs, bytenr, &chk, &b);

	if (ret) {
		br_owner_error(o, ret);
		return;
	}
	n = btk_block_nritems(b);
	if (n) {
		btk_block_key(b, 0, &o->first_key);
		btk_block_key(b, (int)n - 1, &o->last_key);
		o->have_keys = true;
	}
	btk_block_put(b);
}

static int metadata_owners(struct btk_backref *br, struct btk_owner *o)
{
	const uint64_t *roots;
	size_t n, cap = 0;
	int ret = btk_block_roots(br, o->ext.start, &roots, &n);

	if (ret)
		br_owner_error(o, ret);
	if (ret == -ENOMEM)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (br_add_tree(o, roots[i], o->ext.level, BTK_FOUND_BACKREF, &cap))
			return btk_err(ENOMEM, "out of memory");
	br_read_keys(br->fs, o, o->ext.start, o->ext.level);
	return 0;
}

/* Classifies logical into o (kind, extent); 1 when the caller should look for owners. */
int br_classify(struct btk_fs *fs, uint64_t logical, struct btk_owner *o)
{
	int ret;

	o->logical = logical;
	if (!btk_chunk_find(fs, logical)) {
		o->kind = BTK_KIND_UNMAPPED;
		return 0;
	}
	ret = btk_extent_lookup(fs, logical, &o->ext);
	if (ret == -ENOENT) {
		o->kind = BTK_KIND_FREE;
		return 0;
	}
	if (ret)
		return ret;
	o->have_extent = true;
	o->kind = (o->ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) ? BTK_KIND_METADATA : BTK_KIND_DATA;
	return 1;
}

int btk_owner_lookup(struct btk_backref *br, uint64_t logical, struct btk_owner *o)
{
	struct data_walk w = {.br = br, .o = o, .logical = logical};
	int ret;

	memset(o, 0, sizeof(*o));
	ret = br_classify(br->fs, logical, o);
	if (ret <= 0) {
		if (ret < 0)
			br_owner_error(o, ret);
		return ret;
	}
	if (o->kind == BTK_KIND_METADATA) {
		ret = metadata_owners(br, o);
	} else {
		w.ext = &o->ext;
		ret = btk_extent_for_each_ref(br->fs, &o->ext, data_ref_cb, &w);
		if (ret > 0)
			ret = 0;
		if (ret && ret != -ENOMEM) {
			br_owner_error(o, ret);
			ret = 0;
		}
	}
	br_owner_finish(o);
	return ret;
}

int btk_extent_roots(struct btk_backref *br, uint64_t bytenr, uint64_t **roots, size_t *n)
{
	struct btk_owner o = {0};
	struct data_walk w = {.br = br, .o = &o, .logical = bytenr, .whole = true};
	const uint64_t *troots = NULL;
	size_t cap = 0;
	int ret = btk_extent_lookup(br->fs, bytenr, &o.ext);

	*roots = NULL;
	*n = 0;
	if (ret == -ENOENT || (!ret && o.ext.start != bytenr)) {
		btk_err_clear();
		return 0; /* no extent starts here */
	}
	if (ret)
		return ret;
	if (o.ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		size_t nt = 0;
		ret = btk_block_roots(br, bytenr, &troots, &nt);
		for (size_t i = 0; i < nt; i++)
			if (br_u64_push(roots, n, &cap, troots[i])) {
				ret = -ENOMEM;
				break;
			}
	} else {
		w.ext = &o.ext;
		ret = btk_extent_for_each_ref(br->fs, &o.ext, data_ref_cb, &w);
		if (ret > 0)
			ret = 0;
		for (size_t i = 0; i < o.ndata && !ret; i++)
			ret = br_u64_push(roots, n, &cap, o.data[i].root);
		*n = br_u64_uniq(*roots, *n);
		if (!ret && o.nerrors)
			ret =
			    btk_err(EUCLEAN, "%s", o.error ? o.error : "a reference not followed");
	}
	btk_owner_release(&o);
	return ret;
}
