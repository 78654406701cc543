/* lostleaf.c (layer 10) — a lost leaf of a subvolume tree rebuilt from what points at it.
 *
 * A leaf no copy of which reads holds the items of one key range of its tree: [lo, hi), lo
 * the key its parent points at it with, hi the first key of the next leaf that reads. The
 * leaf leaves its parent (btk_tree_drop_lost) and what it held is made again, item by item,
 * only at keys inside that range (so nothing that still reads is touched), from:
 *  - names: directory entries (DIR_INDEX, DIR_ITEM) elsewhere naming an inode, and inode
 *    references (INODE_REF) elsewhere naming its directory: each name gets back the sides
 *    that lay in the leaf; entries naming subvolumes from the root tree's ROOT_REF items;
 *  - file data: the extent tree's keyed data references (root, inode, file offset) give one
 *    regular extent each, from its start up to the file's next extent (a later write over
 *    its end, whose rest a snapshot keeps); compressed when one algorithm decodes the extent
 *    whole to at least a sector more than it holds (base/compress.h btk_decompress_whole),
 *    its length then the decoded one;
 *  - inodes: an inode item that lay in the leaf is made from what names it (a directory when
 *    something names it as parent; else the type its entry says; a regular file when only
 *    data names it): owner and times of its parent, one link per name, the size of its
 *    names (directories) or its extents: a compressed last extent decodes to the exact
 *    size, a plain one's trailing zero bytes of its last sector are left out (the kernel
 *    zero-fills a file's tail; a file that truly ends in zero bytes is cut short unless an
 *    older copy of its item says more), NODATASUM when its data has no checksums.
 * What none of these names (an inode with data but no name left) is linked into lost+found in
 * the top directory under its inode number. Lost for good, unless an older copy of the leaf is
 * still on disk (the root scan of older generations, tree/scan.h): inline file data (it lives
 * in the leaf only), names both of whose sides lay in the leaf, symlink targets, xattrs,
 * inode flags and times.
 * A lost block that snapshots share is made again in every tree that reaches it (each has its
 * own problem; the items are the tree's own from then on, with its own keyed references):
 *  - still its owner's (keyed references): each tree takes the owner's data references whose
 *    keys lie in its range and do not read in the owner either (place_shared);
 *  - copied away by its owner after the snapshot (full back references: the data below it
 *    names it by address): the snapshot's source (the root item's parent uuid) gives every
 *    item of an inode it has not changed since the block was written (inode transid no later
 *    than the block's generation and before the snapshot: copy_collect), whole; the other
 *    extents get their (inode, offset) from the source's keyed references to the same extent
 *    or an older copy of the leaf; the source's changed inodes serve as older copies do (names,
 *    attributes); an extent nothing places becomes a new inode in lost+found. The lost
 *    block's shared references go once, with the first tree's fix.
 * Refused: a lost node below which blocks are named by address (the blocks under it).
 */
#include "repair/repair_int.h"
#include "base/compress.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dir_item.h"
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "format/root_item.h"
#include "fs/fs_write.h"
#include "tree/scan.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ll_range {
	struct btk_key lo, hi; /* hi {~0, ~0, ~0}: the end of the tree */
	uint64_t bytenr, gen;
	int level;  /* of the lost block */
	bool first; /* the first tree the check found it lost in (it drops the shared
		       references of its data, for every tree that reaches it) */
};
BTK_VEC(ll_ranges, struct ll_range);

/* A block of the tree that its extent record still names (a keyed reference from the tree)
 * but that no block which reads reaches: a child of a lost node, whole on disk. */
struct ll_orphan {
	uint64_t bytenr, gen;
	int level;
	struct btk_key first, last; /* a leaf's */
	struct btk_block *b;	    /* a leaf inside a lost range: its items come back */
};
BTK_VEC(ll_orphans, struct ll_orphan);
BTK_VEC(ll_u64s, uint64_t);

/* One name, from whichever side of it still reads. */
struct ll_name {
	uint64_t dir, ino, index; /* index ~0: not known */
	uint8_t type;		  /* BTRFS_FT_*, 0 not known */
	uint16_t len;
	char name[256];
};
BTK_VEC(ll_names, struct ll_name);

struct ll_ino {
	uint64_t ino;
	bool have;	/* its inode item reads */
	uint32_t mode;	/* have: its mode */
	uint64_t flags; /* have: its flags */
	uint64_t ext_end, nbytes;
	struct btk_file_extent tail; /* the extent item that reads and ends at ext_end */
	bool rebuilt;		     /* its item was made again */
	bool copied;		     /* its items came from the snapshot's source (copy_collect) */
	bool fresh;		     /* a new inode for data whose place is not known */
	uint64_t sub_size;	     /* a directory: what its entries naming subvolumes count */
	uint64_t sub_added;	     /* of that, the sides of such entries made again */
	struct btk_inode_info info;  /* have: the item */
};
BTK_VEC(ll_inos, struct ll_ino);

struct ll_mode {
	uint64_t ino;
	uint32_t mode;
};
BTK_VEC(ll_modes, struct ll_mode);

struct ll_ref { /* a data reference naming the tree */
	uint64_t bytenr, len, ino, offset, gen;
	uint64_t dec; /* rebuilt compressed: the length it decodes to (else 0) */
	uint64_t num; /* rebuilt: the bytes of file it covers (else 0) */
	bool foreign; /* named by another tree or by a lost block's address: the tree's own
			 reference is added with the item */
	bool fresh;   /* its place is not known: a new inode in lost+found holds it */
};
BTK_VEC(ll_refs, struct ll_ref);

/* A data extent that a lost block named by its address (a shared reference: the block was
 * copied by its owner after a snapshot, which kept it), or one that another tree names by
 * (root, inode, offset) in the window. */
struct ll_xref {
	uint64_t bytenr, len, gen, root, ino, offset; /* root 0: a shared one */
	uint64_t parent, count;			      /* a shared one's */
	bool used;
};
BTK_VEC(ll_xrefs, struct ll_xref);

/* An item of a lost range found in an older copy of a leaf (tree/scan.h). */
struct ll_old {
	struct btk_key key;
	uint64_t gen; /* the copy's */
	uint32_t size;
	uint8_t *data;
};
BTK_VEC(ll_olds, struct ll_old);

struct ll {
	struct btk_fs *fs;
	struct btk_trans *t;
	uint64_t tree;
	struct ll_ranges r;	/* the key ranges whose items are made again */
	struct ll_ranges lostb; /* the lost blocks, each with the key range it held */
	struct ll_orphans orph; /* blocks below lost nodes */
	struct ll_u64s live;	/* the blocks the tree reaches, sorted */
	bool first_walk;	/* the walk that finds the lost blocks' ranges */
	uint64_t gen;		/* the lost blocks' newest generation */
	struct ll_names names;
	struct ll_names subs; /* entries naming subvolumes with a side in a lost range (ino: the
				 subvolume's id) */
	struct ll_inos inos;
	struct ll_refs refs;
	struct ll_modes modes;	   /* every inode item that reads, in key order */
	struct ll_olds old;	   /* the newest older copy of each lost key that one holds */
	struct ll_olds cp;	   /* items of the lost ranges the snapshot's source still has as
				      they were (copy_collect), by key: not lost */
	struct btk_inode_info top; /* the top directory's item (zeros: it does not read) */
	uint64_t omin, omax;	   /* objectids the ranges touch */
	uint64_t max_ino;	   /* the highest inode number anything names */
	uint64_t top_max_idx;	   /* the highest DIR_INDEX of the top directory */
	bool top_has_lf;	   /* the top directory has a lost+found */
	uint64_t lf_ino, lf_max_idx, lf_added; /* lf_added: bytes of names put in lost+found */
	uint64_t shared;	   /* full back references naming a block below a lost node */
	struct ll_u64s rel;	   /* the trees the lost blocks came from: owners of blocks the tree
				      reaches, other trees' keyed references to a lost block */
	struct ll_xrefs sh;	   /* data named by a lost block's address */
	struct ll_xrefs oref;	   /* data other trees name in the window */
	uint64_t placed, unplaced; /* of sh: given their place, not (fresh inodes) */
	uint64_t fresh_ino;	   /* the last inode number given to such data */
	uint8_t *zin, *zout;	   /* an extent's bytes and what they decode to */
};

static bool in_ranges(const struct ll *l, const struct btk_key *k)
{
	for (size_t i = 0; i < l->r.n; i++)
		if (btk_key_cmp(k, &l->r.data[i].lo) >= 0 && btk_key_cmp(k, &l->r.data[i].hi) < 0)
			return true;
	return false;
}

static int cmp_old_key(const void *a, const void *b)
{
	return btk_key_cmp(&((const struct ll_old *)a)->key, &((const struct ll_old *)b)->key);
}

/* Whether the item at k lay in a lost block and is still to be made again. */
static bool lost(const struct ll *l, const struct btk_key *k)
{
	struct ll_old want = {.key = *k};

	return in_ranges(l, k) && !btk_vec_bsearch(&l->cp, &want, cmp_old_key);
}

static bool in_window(const struct ll *l, uint64_t o)
{
	return o >= l->omin && o <= l->omax;
}

/* The shared references of the lost blocks whose data got its place go with them (after the
 * tree's own references are added: one extent may have no other). */
static int shared_drop(struct ll *l)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->sh.n; i++) {
		const struct ll_xref *s = &l->sh.data[i];
		bool first = false;
		for (size_t j = 0; j < l->lostb.n; j++)
			first = first ||
				(l->lostb.data[j].bytenr == s->parent && l->lostb.data[j].first);
		if (s->used && first)
			ret = btk_data_ref(l->t, s->bytenr, s->len, 0, s->parent, 0, 0,
					   -(int)s->count);
	}
	return ret;
}

static bool subvolume(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

static bool rel_has(const struct ll *l, uint64_t root)
{
	for (size_t i = 0; i < l->rel.n; i++)
		if (l->rel.data[i] == root)
			return true;
	return false;
}

/* root, a subvolume other than the tree, shares blocks with it */
static int rel_add(struct ll *l, uint64_t root)
{
	uint64_t *v;

	if (root == l->tree || !subvolume(root) || rel_has(l, root))
		return 0;
	if (!(v = btk_vec_push(&l->rel)))
		return btk_err(ENOMEM, "out of memory");
	*v = root;
	return 0;
}

static struct ll_ino *ino_get(struct ll *l, uint64_t ino, bool add)
{
	for (size_t i = 0; i < l->inos.n; i++)
		if (l->inos.data[i].ino == ino)
			return &l->inos.data[i];
	if (!add)
		return NULL;
	struct ll_ino *e = btk_vec_push(&l->inos);
	if (e)
		*e = (struct ll_ino){.ino = ino};
	return e;
}

static int name_add(struct ll *l, uint64_t dir, uint64_t ino, uint64_t index, uint8_t type,
		    const char *name, uint16_t len)
{
	if (!len || len > 255)
		return 0;
	for (size_t i = 0; i < l->names.n; i++) {
		struct ll_name *n = &l->names.data[i];
		if (n->dir == dir && n->ino == ino && n->len == len &&
		    !memcmp(n->name, name, len)) {
			if (n->index == UINT64_MAX)
				n->index = index;
			if (!n->type)
				n->type = type;
			return 0;
		}
	}
	struct ll_name *n = btk_vec_push(&l->names);
	if (!n)
		return btk_err(ENOMEM, "out of memory");
	*n = (struct ll_name){.dir = dir, .ino = ino, .index = index, .type = type, .len = len};
	memcpy(n->name, name, len);
	return 0;
}

/* ---- what still reads ---- */

static int scan_item(struct ll *l, const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	int ret = 0;

	if (k->objectid >= BTRFS_FIRST_FREE_OBJECTID && k->objectid <= BTRFS_LAST_FREE_OBJECTID &&
	    k->objectid > l->max_ino)
		l->max_ino = k->objectid;
	switch (k->type) {
	case BTRFS_INODE_ITEM_KEY: {
		struct btk_inode_info in;
		if (btk_inode_item_parse(d, size, &in))
			return 0;
		if (k->objectid == BTRFS_FIRST_FREE_OBJECTID)
			l->top = in; /* the owner and times a rebuilt inode takes */
		struct ll_mode *m = btk_vec_push(&l->modes);
		if (!m)
			return btk_err(ENOMEM, "out of memory");
		*m = (struct ll_mode){k->objectid, in.mode};
		if (!in_window(l, k->objectid))
			return 0;
		struct ll_ino *e = ino_get(l, k->objectid, true);
		if (!e)
			return btk_err(ENOMEM, "out of memory");
		e->have = true;
		e->mode = in.mode;
		e->flags = in.flags;
		e->info = in;
		return 0;
	}
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_DIR_ITEM_KEY: {
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		btk_dir_iter_init(&it, d, size);
		while (!ret && btk_dir_next(&it, &e) == 1) {
			struct btk_key loc;
			btk_dir_ent_location(&e, &loc);
			if (l->top_has_lf && k->objectid == l->lf_ino &&
			    k->type == BTRFS_DIR_INDEX_KEY && k->offset > l->lf_max_idx)
				l->lf_max_idx = k->offset;
			if (k->objectid == BTRFS_FIRST_FREE_OBJECTID) {
				if (k->type == BTRFS_DIR_INDEX_KEY && k->offset > l->top_max_idx)
					l->top_max_idx = k->offset;
				if (e.name_len == 10 && !memcmp(e.name, "lost+found", 10)) {
					l->top_has_lf = true;
					l->lf_ino = loc.objectid;
				}
			}
			if (loc.type != BTRFS_INODE_ITEM_KEY) {
				struct ll_ino *dd = in_window(l, k->objectid)
							? ino_get(l, k->objectid, true)
							: NULL;
				if (in_window(l, k->objectid) && !dd)
					return btk_err(ENOMEM, "out of memory");
				if (dd)
					dd->sub_size += e.name_len;
				continue;
			}
			if (loc.objectid > l->max_ino && loc.objectid <= BTRFS_LAST_FREE_OBJECTID)
				l->max_ino = loc.objectid;
			if (!in_window(l, loc.objectid) && !in_window(l, k->objectid))
				continue;
			ret = name_add(l, k->objectid, loc.objectid,
				       k->type == BTRFS_DIR_INDEX_KEY ? k->offset : UINT64_MAX,
				       e.type, e.name, e.name_len);
		}
		return ret;
	}
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY: {
		struct btk_ref_iter it;
		struct btk_ref_ent r;
		btk_ref_iter_init(&it, k, d, size);
		while (!ret && btk_ref_next(&it, &r) == 1) {
			if (!in_window(l, k->objectid) && !in_window(l, r.parent))
				continue;
			if (r.parent == k->objectid)
				continue; /* a top directory's ".." */
			ret = name_add(l, r.parent, k->objectid, r.index, 0, r.name, r.name_len);
		}
		return ret;
	}
	case BTRFS_EXTENT_DATA_KEY: {
		struct btk_file_extent fe;
		if (!in_window(l, k->objectid) ||
		    btk_file_extent_item_parse(d, size, k->offset, &fe) != BTK_FE_WHOLE)
			return 0;
		struct ll_ino *e = ino_get(l, k->objectid, true);
		if (!e)
			return btk_err(ENOMEM, "out of memory");
		uint64_t end = k->offset + fe.num_bytes;
		if (end > e->ext_end) {
			e->ext_end = end;
			e->tail = fe;
			e->tail.inline_data = NULL; /* (points into the leaf) */
		}
		if (fe.type == BTRFS_FILE_EXTENT_INLINE || fe.disk_bytenr)
			e->nbytes += fe.num_bytes;
		return 0;
	}
	}
	return 0;
}

static int scan_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct ll *l = ctx;
	int ret = 0;

	(void)fs, (void)depth;
	if ((ret = rel_add(l, btk_block_owner(b))))
		return ret;
	if (l->first_walk) {
		uint64_t *v = btk_vec_push(&l->live);
		if (!v)
			return btk_err(ENOMEM, "out of memory");
		*v = b->bytenr;
	}
	if (btk_block_level(b)) {
		/* a pointer to a lost block: where its range starts */
		for (uint32_t i = 0; l->first_walk && i < btk_block_nritems(b); i++)
			for (size_t j = 0; j < l->r.n; j++)
				if (btk_node_blockptr(b, (int)i) == l->r.data[j].bytenr) {
					btk_node_key(b, (int)i, &l->r.data[j].lo);
					l->r.data[j].gen = btk_node_gen(b, (int)i);
				}
		return 0;
	}
	for (uint32_t i = 0; !ret && i < btk_block_nritems(b); i++) {
		struct btk_key k;
		btk_leaf_key(b, (int)i, &k);
		/* where each range ends: the first key past its start that reads */
		for (size_t j = 0; j < l->r.n; j++)
			if (btk_key_cmp(&k, &l->r.data[j].lo) > 0 &&
			    btk_key_cmp(&k, &l->r.data[j].hi) < 0)
				l->r.data[j].hi = k;
		ret = scan_item(l, &k, btk_leaf_data(b, (int)i), btk_leaf_size(b, (int)i));
	}
	return ret;
}

static int scan_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	(void)ctx, (void)bytenr, (void)level, (void)msg;
	return err == -ENOMEM ? err : 0;
}

static int xref_add(struct ll_xrefs *v, const struct btk_key *rec, uint64_t gen,
		    const struct btk_extent_ref *r)
{
	struct ll_xref *x = btk_vec_push(v);

	if (!x)
		return btk_err(ENOMEM, "out of memory");
	*x = (struct ll_xref){.bytenr = rec->objectid,
			      .len = rec->offset,
			      .gen = gen,
			      .root = r->root,
			      .ino = r->objectid,
			      .offset = r->offset,
			      .parent = r->parent,
			      .count = r->count};
	return 0;
}

static int ref_of(void *ctx, const struct btk_key *rec, const struct btk_extent_head *h,
		  const struct btk_extent_ref *r)
{
	struct ll *l = ctx;

	if (h->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		/* the blocks of the tree: those below a lost node are found among them */
		if (r->type == BTRFS_SHARED_BLOCK_REF_KEY)
			for (size_t j = 0; j < l->lostb.n; j++)
				l->shared += r->parent == l->lostb.data[j].bytenr;
		/* another tree that reaches a lost block: the block is theirs too */
		for (size_t j = 0; r->type == BTRFS_TREE_BLOCK_REF_KEY && j < l->lostb.n; j++)
			if (rec->objectid == l->lostb.data[j].bytenr) {
				int ret = rel_add(l, r->root);
				if (ret)
					return ret;
			}
		if (r->type != BTRFS_TREE_BLOCK_REF_KEY || r->root != l->tree || h->level < 0)
			return 0;
		struct ll_orphan *o = btk_vec_push(&l->orph);
		if (!o)
			return btk_err(ENOMEM, "out of memory");
		*o = (struct ll_orphan){
		    .bytenr = rec->objectid, .gen = h->generation, .level = h->level};
		return 0;
	}
	if (!(h->flags & BTRFS_EXTENT_FLAG_DATA))
		return 0;
	if (r->type == BTRFS_SHARED_DATA_REF_KEY) {
		for (size_t j = 0; j < l->lostb.n; j++)
			if (r->parent == l->lostb.data[j].bytenr)
				return xref_add(&l->sh, rec, h->generation, r);
		return 0;
	}
	if (r->type != BTRFS_EXTENT_DATA_REF_KEY || !in_window(l, r->objectid))
		return 0;
	if (r->root != l->tree)
		return subvolume(r->root) ? xref_add(&l->oref, rec, h->generation, r) : 0;
	struct ll_ref *o = btk_vec_push(&l->refs);
	if (!o)
		return btk_err(ENOMEM, "out of memory");
	*o = (struct ll_ref){.bytenr = rec->objectid,
			     .len = rec->offset,
			     .ino = r->objectid,
			     .offset = r->offset,
			     .gen = h->generation};
	return 0;
}

/* The data references naming the tree's inodes of the window (keyed by root, inode, offset),
 * the other trees' keyed ones of the window and the shared ones naming a lost leaf, from the
 * extent tree. */
static int scan_refs(struct ll *l)
{
	return rp_extent_refs_walk(l->fs, ref_of, l);
}

/* ---- what is made again ---- */

/* Whether [bytenr, +len) has checksums (its first sector). */
static bool summed(struct ll *l, uint64_t bytenr)
{
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr};
	uint32_t size = 0;
	int ret = btk_item_prev(l->t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);

	if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY ||
	    !l->fs->csum_size) {
		btk_err_clear();
		return false;
	}
	return bytenr < k.offset + (uint64_t)size / l->fs->csum_size * l->fs->sectorsize;
}

/* The trailing zero bytes of the sector that ends at byte end of extent [bytenr, +len) (how
 * much of the file's last sector the kernel zero-filled past its size); 0 when it does not
 * read. */
static uint64_t tail_zeros(struct ll *l, uint64_t bytenr, uint64_t len)
{
	uint32_t ss = l->fs->sectorsize;
	uint8_t *b = malloc(ss);
	uint64_t z = 0;

	if (!b || len < ss || btk_read_logical(l->fs, bytenr + len - ss, b, ss)) {
		btk_err_clear();
		free(b);
		return 0;
	}
	while (z < ss && !b[ss - 1 - z])
		z++;
	free(b);
	return z == ss ? 0 : z; /* a whole sector of zeros: a sparse tail, size unknown */
}

/* The buffers an extent is read and decoded into (allocated once); false: out of memory. */
static bool zbufs(struct ll *l)
{
	if (!l->zin && !(l->zin = malloc(2 * BTK_MAX_COMPRESSED_IN)))
		return false;
	l->zout = l->zin + BTK_MAX_COMPRESSED_IN;
	return true;
}

/* The bytes of the file's last sector past its size, for an inode whose item is lost but whose
 * last extent item (fe, ending at the file's extent end) reads: what a compressed extent
 * decodes to short of its length, or a plain one's trailing zeros (0: not known). */
static uint64_t tail_short(struct ll *l, const struct btk_file_extent *fe)
{
	uint32_t ss = l->fs->sectorsize;

	if (fe->type != BTRFS_FILE_EXTENT_REG || !fe->disk_bytenr)
		return 0;
	if (!fe->compression)
		return fe->extent_offset > UINT64_MAX - fe->disk_bytenr
			   ? 0
			   : tail_zeros(l, fe->disk_bytenr + fe->extent_offset, fe->num_bytes);
	if (fe->compression >= BTK_COMPRESS_TYPES || fe->disk_num_bytes > BTK_MAX_COMPRESSED_IN ||
	    fe->extent_offset + fe->num_bytes != fe->ram_bytes || fe->ram_bytes % ss)
		return 0; /* the file does not end where the extent's data does */
	long n = -1;
	if (zbufs(l) && !btk_read_logical(l->fs, fe->disk_bytenr, l->zin, fe->disk_num_bytes))
		n = btk_decompress_whole(fe->compression, ss, l->zin, fe->disk_num_bytes, l->zout,
					 BTK_MAX_COMPRESSED_IN);
	btk_err_clear();
	if (n <= 0 || (uint64_t)n > fe->ram_bytes || fe->ram_bytes - (uint64_t)n >= ss)
		return 0;
	return fe->ram_bytes - (uint64_t)n;
}

static uint64_t mode_ino(const void *m)
{
	return ((const struct ll_mode *)m)->ino;
}

/* The mode of an inode whose item reads (0: none). */
static uint32_t mode_find(const struct ll *l, uint64_t ino)
{
	size_t i = btk_array_lower_bound(l->modes.data, l->modes.n, ino, mode_ino);

	return i < l->modes.n && l->modes.data[i].ino == ino ? l->modes.data[i].mode : 0;
}

/* Whether the extent at bytenr (len bytes) holds compressed data, which a data reference
 * does not tell (nor its decoded length): it is not longer than a compressed extent can be,
 * one algorithm decodes it whole (the stream ends inside it, only zeros after), and what it
 * decodes to is at least a sector longer than the extent (the kernel keeps data compressed
 * only then). Sets *type and *dec (the decoded length); false: plain data. */
static bool compressed(struct ll *l, uint64_t bytenr, uint64_t len, int *type, uint64_t *dec)
{
	static const int types[] = {BTK_COMPRESS_ZSTD, BTK_COMPRESS_ZLIB, BTK_COMPRESS_LZO};
	uint32_t ss = l->fs->sectorsize;

	if (len > BTK_MAX_COMPRESSED_IN || len < ss)
		return false;
	if (!zbufs(l) || btk_read_logical(l->fs, bytenr, l->zin, len)) {
		btk_err_clear();
		return false;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		long n =
		    btk_decompress_whole(types[i], ss, l->zin, len, l->zout, BTK_MAX_COMPRESSED_IN);
		if (n < 0) {
			btk_err_clear();
			continue;
		}
		if ((((uint64_t)n + ss - 1) / ss) * ss < len + ss)
			continue;
		*type = types[i];
		*dec = (uint64_t)n;
		return true;
	}
	return false;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct ll_ref *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static uint32_t mode_of(uint8_t type)
{
	uint32_t ifmt = btk_ftype_mode(type);

	if (ifmt == S_IFDIR)
		return S_IFDIR | 0755;
	if (ifmt == S_IFLNK)
		return S_IFLNK | 0777;
	return (ifmt ? ifmt : S_IFREG) | 0644;
}

/* The inode item of ino (which reads) with size, nbytes and nlink set (those that differ). */
static int inode_fix(struct ll *l, uint64_t ino, uint64_t size, uint64_t nbytes, uint32_t nlink,
		     bool *changed)
{
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	uint8_t it[sizeof(struct btrfs_inode_item)];
	struct btk_inode_info in;
	uint32_t sz = 0;
	int ret = btk_item_next(l->t, l->tree, &k, it, sizeof(it), &sz);

	*changed = false;
	if (ret < 0)
		return ret;
	if (ret || k.objectid != ino || k.type != BTRFS_INODE_ITEM_KEY || sz != sizeof(it) ||
	    btk_inode_item_parse(it, sz, &in))
		return btk_err(ENOENT, "inode %llu: no inode item to set right",
			       (unsigned long long)ino);
	if (in.size == size && in.nbytes == nbytes && in.nlink == nlink)
		return 0;
	in.size = size;
	in.nbytes = nbytes;
	in.nlink = nlink;
	btk_inode_item_write(it, &in);
	*changed = true;
	k = (struct btk_key){ino, BTRFS_INODE_ITEM_KEY, 0};
	return btk_item_update(l->t, l->tree, &k, it, sz);
}

/* Whether any key (o, type, *) lies in a lost range. */
static bool lost_type(const struct ll *l, uint64_t o, uint8_t type)
{
	struct btk_key a = {o, type, 0}, b = {o, type, UINT64_MAX};

	for (size_t i = 0; i < l->r.n; i++)
		if (btk_key_cmp(&a, &l->r.data[i].hi) < 0 && btk_key_cmp(&b, &l->r.data[i].lo) >= 0)
			return true;
	return false;
}

struct ll_done {
	uint64_t inodes, names, extents, lost_found, set_right, from_old, compressed, subvols;
};

/* ---- older copies of the lost leaves ---- */

static bool owner_is(void *ctx, uint64_t owner)
{
	const struct ll *l = ctx;

	return owner == l->tree || rel_has(l, owner);
}

static const struct ll_old *old_find(const struct ll *l, const struct btk_key *k)
{
	for (size_t i = 0; i < l->old.n; i++)
		if (!btk_key_cmp(&l->old.data[i].key, k))
			return &l->old.data[i];
	return NULL;
}

/* Every leaf of the tree still on disk from before the lost leaves' generation (one that
 * validates at its own address, found by scanning the metadata chunks): the items of the
 * lost ranges it holds, the newest copy of each key. */
static int old_copies(struct ll *l)
{
	struct btk_found_blocks fb = {0};
	uint64_t gen = 0;
	int ret;

	gen = l->gen;
	struct btk_scan_filter flt = {owner_is, l};

	ret = btk_scan_blocks_filter(l->fs, &flt, &fb, NULL, NULL);
	for (size_t i = 0; !ret && i < fb.n; i++) {
		const struct btk_found_block *f = &fb.data[i];
		struct btk_block_check chk = {.level = 0, .generation = f->generation};
		struct btk_block *b;
		bool lost_one = false;
		for (size_t j = 0; j < l->lostb.n; j++)
			lost_one = lost_one || f->bytenr == l->lostb.data[j].bytenr;
		for (size_t j = 0; j < l->orph.n; j++)
			lost_one = lost_one || f->bytenr == l->orph.data[j].bytenr;
		if (!owner_is(l, f->owner) || f->level || f->generation >= gen || lost_one)
			continue;
		if (btk_block_read(l->fs, f->bytenr, &chk, &b)) {
			btk_err_clear();
			continue;
		}
		for (uint32_t s = 0; !ret && s < btk_block_nritems(b); s++) {
			struct btk_key k;
			btk_leaf_key(b, (int)s, &k);
			if (!lost(l, &k))
				continue;
			struct ll_old *o = (struct ll_old *)old_find(l, &k);
			if (o && o->gen >= f->generation)
				continue;
			if (!o && !(o = btk_vec_push(&l->old))) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			uint32_t sz = btk_leaf_size(b, (int)s);
			uint8_t *d = malloc(sz ? sz : 1);
			if (!d) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			free(o->data);
			memcpy(d, btk_leaf_data(b, (int)s), sz);
			*o = (struct ll_old){k, f->generation, sz, d};
		}
		btk_block_put(b);
	}
	btk_vec_free(&fb);
	return ret;
}

/* Whether dir is a directory that reads, the top one, or one whose lost item an older copy
 * has (as a directory). */
static bool dir_ok(const struct ll *l, uint64_t dir)
{
	struct btk_key k = {dir, BTRFS_INODE_ITEM_KEY, 0};
	const struct ll_old *o;
	struct btk_inode_info in;

	if (dir == BTRFS_FIRST_FREE_OBJECTID || S_ISDIR(mode_find(l, dir)))
		return true;
	return lost(l, &k) && (o = old_find(l, &k)) &&
	       !btk_inode_item_parse(o->data, o->size, &in) && S_ISDIR(in.mode);
}

/* One pass of old_names. */
static int old_names_pass(struct ll *l)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->old.n; i++) {
		const struct ll_old *o = &l->old.data[i];
		const struct btk_key *k = &o->key;
		if (k->type == BTRFS_DIR_INDEX_KEY) {
			struct btk_dir_iter it;
			struct btk_dir_ent e;
			struct btk_key loc;
			btk_dir_iter_init(&it, o->data, o->size);
			if (btk_dir_next(&it, &e) != 1)
				continue;
			btk_dir_ent_location(&e, &loc);
			if (loc.type != BTRFS_INODE_ITEM_KEY)
				continue;
			bool named = false;
			for (size_t j = 0; j < l->names.n && !named; j++)
				named = l->names.data[j].ino == loc.objectid;
			if (named || !ino_get(l, loc.objectid, false) || !dir_ok(l, k->objectid))
				continue;
			ret = name_add(l, k->objectid, loc.objectid, k->offset, e.type, e.name,
				       e.name_len);
			if (!ret && !ino_get(l, k->objectid, true))
				ret = btk_err(ENOMEM, "out of memory");
		} else if (k->type == BTRFS_INODE_REF_KEY) {
			struct btk_ref_iter it;
			struct btk_ref_ent r;
			bool named = false;
			for (size_t j = 0; j < l->names.n && !named; j++)
				named = l->names.data[j].ino == k->objectid;
			btk_ref_iter_init(&it, k, o->data, o->size);
			if (named || !ino_get(l, k->objectid, false) || k->offset == k->objectid ||
			    !dir_ok(l, k->offset) || btk_ref_next(&it, &r) != 1)
				continue;
			ret = name_add(l, r.parent, k->objectid, r.index, 0, r.name, r.name_len);
			if (!ret && !ino_get(l, r.parent, true))
				ret = btk_err(ENOMEM, "out of memory");
		}
	}
	return ret;
}

/* Names of inodes that have none left, from the older copies (a DIR_INDEX, or an INODE_REF),
 * whose directory still reads as one, or had a lost item that an older copy has. */
static int old_names(struct ll *l)
{
	size_t had = SIZE_MAX;
	int ret = 0;

	/* again while names come: a directory that a name just given holds is named next */
	while (!ret && had != l->names.n) {
		had = l->names.n;
		ret = old_names_pass(l);
	}
	return ret;
}

/* The older copy's inline extent of ino (its data lay only in the leaf), when ino has no
 * other extent and it is as long as the size the inode has (size UINT64_MAX: not known). */
static const struct ll_old *old_inline(const struct ll *l, uint64_t ino, uint64_t size)
{
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, 0};
	const struct ll_old *o = old_find(l, &k);
	struct btk_file_extent fe;

	if (!o || btk_file_extent_item_parse(o->data, o->size, 0, &fe) != BTK_FE_WHOLE ||
	    fe.type != BTRFS_FILE_EXTENT_INLINE || (size != UINT64_MAX && fe.ram_bytes != size))
		return NULL;
	for (size_t i = 0; i < l->refs.n; i++)
		if (l->refs.data[i].ino == ino)
			return NULL;
	return o;
}

/* Puts back an older copy's item (inline extent, xattr) at its key. */
static int old_put(struct ll *l, const struct ll_old *o, struct ll_done *done)
{
	int ret = btk_item_insert(l->t, l->tree, &o->key, o->data, o->size);

	if (ret == -EEXIST)
		return 0;
	done->from_old += !ret;
	return ret;
}

/* The entries of the tree's directories that name subvolumes, from the root tree's ROOT_REF
 * items (tree, ROOT_REF, subvolume): those with a side in a lost range, and what those sides
 * add to their directory's size. */
static int sub_refs(struct ll *l)
{
	uint8_t buf[BTK_ROOT_REF_HEAD + 255];
	struct btk_key k = {l->tree, BTRFS_ROOT_REF_KEY, 0};
	uint32_t size;
	int ret;

	while (
	    !(ret = btk_item_next(l->t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, sizeof(buf), &size)) &&
	    k.objectid == l->tree && k.type == BTRFS_ROOT_REF_KEY) {
		struct btk_root_ref_ent r;
		if (size <= sizeof(buf) && !btk_root_ref_parse(buf, size, &r) && r.name_len &&
		    r.name_len <= 255) {
			struct btk_key ki = {r.dirid, BTRFS_DIR_ITEM_KEY,
					     btk_name_hash(r.name, r.name_len)};
			struct btk_key kx = {r.dirid, BTRFS_DIR_INDEX_KEY, r.sequence};
			unsigned n = lost(l, &ki) + lost(l, &kx);
			struct ll_ino *d = n ? ino_get(l, r.dirid, true) : NULL;
			struct ll_name *e = n ? btk_vec_push(&l->subs) : NULL;
			if (n && (!d || !e))
				return btk_err(ENOMEM, "out of memory");
			if (n) {
				*e = (struct ll_name){.dir = r.dirid,
						      .ino = k.offset,
						      .index = r.sequence,
						      .type = BTRFS_FT_DIR,
						      .len = r.name_len};
				memcpy(e->name, r.name, r.name_len);
				d->sub_size += n * (uint64_t)r.name_len;
				d->sub_added += n * (uint64_t)r.name_len;
			}
		}
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	return ret < 0 ? ret : 0;
}

/* Puts back the lost sides of the entries naming subvolumes. */
static int sub_names(struct ll *l, struct ll_done *done)
{
	for (size_t i = 0; i < l->subs.n; i++) {
		const struct ll_name *n = &l->subs.data[i];
		struct btk_key ki = {n->dir, BTRFS_DIR_ITEM_KEY, btk_name_hash(n->name, n->len)};
		struct btk_key kx = {n->dir, BTRFS_DIR_INDEX_KEY, n->index};
		struct btk_key loc = {n->ino, BTRFS_ROOT_ITEM_KEY, UINT64_MAX};
		unsigned sides = (lost(l, &ki) ? BTK_NAME_DIR_ITEM : 0) |
				 (lost(l, &kx) ? BTK_NAME_DIR_INDEX : 0);
		int ret = btk_dir_name_add(l->t, l->tree, n->dir, n->name, n->len, &loc,
					   BTRFS_FT_DIR, n->index, sides);
		if (ret)
			return ret;
		done->subvols++;
	}
	return 0;
}

/* ---- the snapshot's source ---- */

/* The subvolume the tree is a snapshot of (its root item's parent uuid names it), and the
 * transaction that made the snapshot (*otransid); 0 when it is none or not known. */
static uint64_t source_of(struct ll *l, uint64_t *otransid)
{
	static const uint8_t none[BTK_UUID_SIZE];
	uint8_t buf[sizeof(struct btrfs_root_item)];
	struct btk_key k = {l->tree, BTRFS_ROOT_ITEM_KEY, 0};
	struct btk_root_item me, ri;
	uint32_t size = 0;

	if (btk_item_next(l->t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, sizeof(buf), &size) ||
	    k.objectid != l->tree || k.type != BTRFS_ROOT_ITEM_KEY ||
	    btk_root_item_parse(buf, size < sizeof(buf) ? size : sizeof(buf), &me) || !me.v2 ||
	    !memcmp(me.parent_uuid, none, sizeof(none))) {
		btk_err_clear();
		return 0;
	}
	*otransid = me.otransid;
	k = (struct btk_key){BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	while (!btk_item_next(l->t, BTRFS_ROOT_TREE_OBJECTID, &k, buf, sizeof(buf), &size) &&
	       k.objectid <= BTRFS_LAST_FREE_OBJECTID) {
		if (k.type == BTRFS_ROOT_ITEM_KEY && subvolume(k.objectid) &&
		    k.objectid != l->tree &&
		    !btk_root_item_parse(buf, size < sizeof(buf) ? size : sizeof(buf), &ri) &&
		    ri.v2 && !memcmp(ri.uuid, me.parent_uuid, sizeof(ri.uuid)))
			return k.objectid;
		k = (struct btk_key){k.objectid + 1, BTRFS_ROOT_ITEM_KEY, 0};
	}
	btk_err_clear();
	return 0;
}

/* Whether inode ino of src is as the lost block of generation gen held it: its item was last
 * changed (transid) no later than that block was written and before the snapshot was made,
 * and the tree's own item of it, when that reads, is the same change of it. */
static bool unchanged(struct ll *l, uint64_t src, uint64_t ino, uint64_t gen, uint64_t otransid)
{
	uint8_t it[sizeof(struct btrfs_inode_item)];
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_inode_info in;
	const struct ll_ino *e;
	uint32_t sz = 0;

	if (btk_item_next(l->t, src, &k, it, sizeof(it), &sz) || k.objectid != ino ||
	    k.type != BTRFS_INODE_ITEM_KEY || btk_inode_item_parse(it, sz, &in)) {
		btk_err_clear();
		return false;
	}
	if (!in.transid || in.transid > gen || in.transid >= otransid)
		return false;
	k = (struct btk_key){ino, BTRFS_INODE_ITEM_KEY, 0};
	if (in_ranges(l, &k))
		return true;
	e = ino_get(l, ino, false);
	return e && e->have && e->info.transid == in.transid && e->info.generation == in.generation;
}

/* A lost block that a snapshot shares with its source came from the source: the items of the
 * lost ranges whose inodes the source has not changed since (copy_unchanged) are what the
 * block held, taken whole (names, inline data, xattrs, times); they count as items that read. */
static int copy_collect(struct ll *l)
{
	uint64_t otransid = 0, src = source_of(l, &otransid);
	uint32_t cap = l->fs->nodesize;
	uint8_t *buf;
	int ret = 0;

	if (!src || !rel_has(l, src))
		return 0;
	if (!(buf = malloc(cap)))
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < l->r.n; i++) {
		const struct ll_range *r = &l->r.data[i];
		struct btk_key k = r->lo;
		uint64_t ino = 0;
		bool same = false;
		uint32_t sz = 0;
		int got;
		while (!ret && !(got = btk_item_next(l->t, src, &k, buf, cap, &sz)) &&
		       btk_key_cmp(&k, &r->hi) < 0) {
			if (k.objectid != ino) {
				ino = k.objectid;
				same = ino >= BTRFS_FIRST_FREE_OBJECTID &&
				       ino <= BTRFS_LAST_FREE_OBJECTID &&
				       unchanged(l, src, ino, r->gen, otransid);
			}
			/* an inode the source changed since: its item is another version of
			 * the lost one, as an older copy is (names, attributes, when nothing
			 * else has them) */
			struct ll_olds *to = same ? &l->cp : old_find(l, &k) ? NULL : &l->old;
			struct ll_old *o = to && sz <= cap ? btk_vec_push(to) : NULL;
			uint8_t *d = o ? malloc(sz ? sz : 1) : NULL;
			if (o && !d) {
				to->n--;
				ret = btk_err(ENOMEM, "out of memory");
			} else if (o) {
				memcpy(d, buf, sz);
				*o = (struct ll_old){k, r->gen, sz, d};
			}
			btk_key_after(&k);
		}
		if (got < 0)
			btk_err_clear(); /* the source's block lost too: nothing more from it */
	}
	free(buf);
	btk_vec_sort(&l->cp, cmp_old_key);
	for (size_t i = 0; !ret && i < l->cp.n; i++) {
		const struct ll_old *o = &l->cp.data[i];
		struct ll_ino *e;
		ret = scan_item(l, &o->key, o->data, o->size);
		if (!ret && in_window(l, o->key.objectid) &&
		    (e = ino_get(l, o->key.objectid, true)))
			e->copied = true;
	}
	return ret;
}

/* Puts the source's items back (copy_collect), each data extent with the tree's reference. */
static int copy_put(struct ll *l, uint64_t *items)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->cp.n; i++) {
		const struct ll_old *o = &l->cp.data[i];
		struct btk_file_extent fe;
		ret = btk_item_insert(l->t, l->tree, &o->key, o->data, o->size);
		*items += !ret;
		if (!ret && o->key.type == BTRFS_EXTENT_DATA_KEY &&
		    btk_file_extent_item_parse(o->data, o->size, o->key.offset, &fe) ==
			BTK_FE_WHOLE &&
		    fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr &&
		    fe.extent_offset <= o->key.offset)
			ret = btk_data_ref(l->t, fe.disk_bytenr, fe.disk_num_bytes, l->tree, 0,
					   o->key.objectid, o->key.offset - fe.extent_offset, 1);
	}
	return ret;
}

/* How many of the source's items put back name the data extent at bytenr. */
static uint64_t copies_naming(const struct ll *l, uint64_t bytenr)
{
	uint64_t n = 0;

	for (size_t i = 0; i < l->cp.n; i++) {
		const struct ll_old *o = &l->cp.data[i];
		struct btk_file_extent fe;
		n += o->key.type == BTRFS_EXTENT_DATA_KEY &&
		     btk_file_extent_item_parse(o->data, o->size, o->key.offset, &fe) ==
			 BTK_FE_WHOLE &&
		     fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr == bytenr;
	}
	return n;
}

static int ref_push(struct ll *l, const struct ll_xref *x, uint64_t ino, uint64_t offset)
{
	struct ll_ref *o = btk_vec_push(&l->refs);

	if (!o)
		return btk_err(ENOMEM, "out of memory");
	*o = (struct ll_ref){.bytenr = x->bytenr,
			     .len = x->len,
			     .ino = ino,
			     .offset = offset,
			     .gen = x->gen,
			     .foreign = true};
	return 0;
}

/* Whether tree root's own key k does not read (its search meets a block that does not): k lies
 * in a block it shares with the tree, lost in both. */
static bool unreadable_in(struct ll *l, uint64_t root, const struct btk_key *k)
{
	struct btk_root r;
	struct btk_path p;
	int ret;

	btk_path_init(&p);
	if (btk_root_find(l->fs, root, &r)) {
		btk_err_clear();
		return false;
	}
	ret = btk_search(l->fs, &r, k, &p);
	btk_path_release(&p);
	btk_err_clear();
	return ret < 0 && ret != -ENOMEM;
}

/* Past every inode number anything names (the tree, the data references, the older copies and
 * the source's items): the first one data without a known place may take. */
static uint64_t fresh_base(const struct ll *l)
{
	uint64_t m = l->max_ino;

	for (size_t j = 0; j < l->refs.n; j++)
		m = l->refs.data[j].ino > m ? l->refs.data[j].ino : m;
	for (size_t j = 0; j < l->oref.n; j++)
		m = l->oref.data[j].ino > m ? l->oref.data[j].ino : m;
	for (size_t j = 0; j < l->old.n; j++)
		if (l->old.data[j].key.objectid <= BTRFS_LAST_FREE_OBJECTID)
			m = l->old.data[j].key.objectid > m ? l->old.data[j].key.objectid : m;
	for (size_t j = 0; j < l->cp.n; j++)
		if (l->cp.data[j].key.objectid <= BTRFS_LAST_FREE_OBJECTID)
			m = l->cp.data[j].key.objectid > m ? l->cp.data[j].key.objectid : m;
	return m < BTRFS_FIRST_FREE_OBJECTID ? BTRFS_FIRST_FREE_OBJECTID : m;
}

/* The data that lost blocks shared with other trees held, at the (inode, offset) the trees
 * they came from name it by (those trees' keys inside the lost range):
 *  - a lost block its owner copied after a snapshot (full back references: the extents below
 *    it name it by address): the owner's copy still names the same extent at the same place,
 *    or an older copy of the leaf does; what neither places is counted (unplaced);
 *  - a lost block that is still the owner's (keyed references, the owner's root): the owner's
 *    key that does not read either (lost in both trees). */
static int place_shared(struct ll *l)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->sh.n; i++) {
		struct ll_xref *s = &l->sh.data[i];
		uint64_t kept = copies_naming(l, s->bytenr);
		size_t had = l->refs.n;
		if (kept >= s->count) {
			l->placed++;
			s->used = true;
			continue;
		}
		for (size_t j = 0; !ret && j < l->oref.n && kept + l->refs.n - had < s->count;
		     j++) {
			struct ll_xref *o = &l->oref.data[j];
			struct btk_key k = {o->ino, BTRFS_EXTENT_DATA_KEY, o->offset};
			if (o->bytenr != s->bytenr || !rel_has(l, o->root) || !lost(l, &k))
				continue;
			o->used = true;
			ret = ref_push(l, s, o->ino, o->offset);
		}
		for (size_t j = 0; !ret && had == l->refs.n && j < l->old.n && s->count; j++) {
			const struct ll_old *o = &l->old.data[j];
			struct btk_file_extent fe;
			if (o->key.type == BTRFS_EXTENT_DATA_KEY &&
			    btk_file_extent_item_parse(o->data, o->size, o->key.offset, &fe) ==
				BTK_FE_WHOLE &&
			    fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr == s->bytenr &&
			    fe.extent_offset <= o->key.offset)
				ret = ref_push(l, s, o->key.objectid,
					       o->key.offset - fe.extent_offset);
		}
		if (had == l->refs.n && !kept) {
			/* which inode held it nothing says: a new one, in lost+found */
			if (!l->fresh_ino)
				l->fresh_ino = fresh_base(l);
			if (!ret && !(ret = ref_push(l, s, ++l->fresh_ino, 0))) {
				l->refs.data[l->refs.n - 1].fresh = true;
				s->used = true;
			}
			l->unplaced++;
			continue;
		}
		l->placed++;
		s->used = true;
	}
	for (size_t j = 0; !ret && j < l->oref.n; j++) {
		struct ll_xref *o = &l->oref.data[j];
		struct btk_key k = {o->ino, BTRFS_EXTENT_DATA_KEY, o->offset};
		if (o->used || !rel_has(l, o->root) || !lost(l, &k) ||
		    !unreadable_in(l, o->root, &k))
			continue;
		ret = ref_push(l, o, o->ino, o->offset);
		l->placed += !ret;
	}
	return ret;
}

static int rebuild(struct ll *l, struct ll_done *done)
{
	struct btk_trans *t = l->t;
	uint64_t root_dir = BTRFS_FIRST_FREE_OBJECTID, gen = l->gen;
	uint32_t ss = l->fs->sectorsize;
	struct btk_inode_info top = l->top; /* the owner and times a rebuilt inode takes */
	int ret = 0;

	/* extents: each data reference whose item lay in the leaf, up to where the file's next
	 * extent starts (a write over its end: the rest is held by a snapshot) */
	btk_vec_sort(&l->refs, cmp_ref);
	for (size_t i = 0; i < l->refs.n; i++) {
		const struct ll_ref *r = &l->refs.data[i];
		struct btk_key k = {r->ino, BTRFS_EXTENT_DATA_KEY, r->offset};
		if (!lost(l, &k) && !r->fresh)
			continue;
		int type = 0;
		uint64_t dec = 0, ram = r->len;
		if (compressed(l, r->bytenr, r->len, &type, &dec))
			ram = (dec + ss - 1) / ss * ss;
		uint64_t num = ram;
		for (size_t j = i + 1; j < l->refs.n && l->refs.data[j].ino == r->ino; j++)
			if (l->refs.data[j].offset > r->offset) {
				if (l->refs.data[j].offset - r->offset < num) {
					num = l->refs.data[j].offset - r->offset;
					dec = 0; /* not the file's tail */
				}
				break;
			}
		struct btk_file_extent fe = {.file_offset = r->offset,
					     .type = BTRFS_FILE_EXTENT_REG,
					     .compression = (uint8_t)type,
					     .disk_bytenr = r->bytenr,
					     .disk_num_bytes = r->len,
					     .num_bytes = num,
					     .ram_bytes = ram};
		ret = btk_file_extent_insert(t, l->tree, r->ino, &fe);
		if (ret == -EEXIST)
			continue; /* two references at one offset: the first one */
		if (ret)
			return ret;
		if (r->foreign &&
		    (ret = btk_data_ref(t, r->bytenr, r->len, l->tree, 0, r->ino, r->offset, 1)))
			return ret;
		l->refs.data[i].dec = dec;
		l->refs.data[i].num = num;
		done->extents++;
		done->compressed += type != 0;
		struct ll_ino *e = ino_get(l, r->ino, true);
		if (!e)
			return btk_err(ENOMEM, "out of memory");
		e->fresh = r->fresh;
		e->nbytes += num;
		if (r->offset + num > e->ext_end)
			e->ext_end = r->offset + num;
	}
	/* every inode something names whose item lay in the leaf */
	for (size_t i = 0; i < l->names.n; i++) {
		struct ll_name *n = &l->names.data[i];
		if (!ino_get(l, n->ino, true) || !ino_get(l, n->dir, true))
			return btk_err(ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < l->refs.n; i++)
		if (!ino_get(l, l->refs.data[i].ino, true))
			return btk_err(ENOMEM, "out of memory");
	struct btk_key top_k = {root_dir, BTRFS_INODE_ITEM_KEY, 0};
	if (lost(l, &top_k) && !ino_get(l, root_dir, true)) /* a lost root leaf: the top too */
		return btk_err(ENOMEM, "out of memory");
	/* names only an older copy still has */
	if ((ret = old_names(l)))
		return ret;
	/* lost+found for what has no name left */
	for (size_t i = 0; i < l->inos.n; i++) {
		struct ll_ino *e = &l->inos.data[i];
		struct btk_key k = {e->ino, BTRFS_INODE_ITEM_KEY, 0};
		bool named = e->ino == root_dir;
		if (e->have || (!lost(l, &k) && !e->fresh))
			continue;
		for (size_t j = 0; j < l->names.n && !named; j++)
			named = l->names.data[j].ino == e->ino;
		if (named)
			continue;
		if (!l->lf_ino) {
			/* past every inode number anything names, the data references and the
			 * older copies' items included */
			for (size_t j = 0; j < l->refs.n; j++)
				if (l->refs.data[j].ino > l->max_ino)
					l->max_ino = l->refs.data[j].ino;
			for (size_t j = 0; j < l->inos.n; j++)
				if (l->inos.data[j].ino > l->max_ino &&
				    l->inos.data[j].ino <= BTRFS_LAST_FREE_OBJECTID)
					l->max_ino = l->inos.data[j].ino;
			for (size_t j = 0; j < l->old.n; j++)
				if (l->old.data[j].key.objectid > l->max_ino &&
				    l->old.data[j].key.objectid <= BTRFS_LAST_FREE_OBJECTID)
					l->max_ino = l->old.data[j].key.objectid;
			l->lf_ino = l->max_ino + 1;
			if (!l->top_has_lf) {
				if ((ret = name_add(l, root_dir, l->lf_ino, ++l->top_max_idx,
						    BTRFS_FT_DIR, "lost+found", 10)))
					return ret;
				/* the top directory grows by its name (below), also when
				 * nothing else of it lay in the window */
				if (!ino_get(l, l->lf_ino, true) || !ino_get(l, root_dir, true))
					return btk_err(ENOMEM, "out of memory");
			}
		}
		char nm[24];
		int len = snprintf(nm, sizeof(nm), "%llu", (unsigned long long)e->ino);
		if ((ret = name_add(l, l->lf_ino, e->ino, 0, 0, nm, (uint16_t)len)))
			return ret;
		l->names.data[l->names.n - 1].index = UINT64_MAX - 1; /* given below */
		done->lost_found++;
	}
	/* entries naming subvolumes: their directories count them */
	if ((ret = sub_refs(l)))
		return ret;
	/* the inode items: a directory when something names it as its parent */
	for (size_t i = 0; i < l->inos.n; i++) {
		struct ll_ino *e = &l->inos.data[i];
		struct btk_key k = {e->ino, BTRFS_INODE_ITEM_KEY, 0};
		bool new_lf = e->ino == l->lf_ino && !l->top_has_lf;
		if (e->have || (!lost(l, &k) && !new_lf && !e->fresh))
			continue;
		uint8_t type = 0;
		uint32_t nlink = 0;
		uint64_t dsize = 0;
		bool dir = new_lf || e->ino == root_dir;
		for (size_t j = 0; j < l->names.n; j++) {
			const struct ll_name *n = &l->names.data[j];
			if (n->dir == e->ino) {
				dir = true;
				dsize += 2 * (uint64_t)n->len;
			}
			if (n->ino == e->ino) {
				nlink++;
				if (n->type)
					type = n->type;
			}
		}
		struct btk_inode_attr a = {.uid = top.uid,
					   .gid = top.gid,
					   .atime = top.atime,
					   .mtime = top.mtime,
					   .ctime = top.ctime,
					   .otime = top.otime,
					   .generation = gen};
		if (dir) {
			a.mode = new_lf ? (S_IFDIR | 0700) : (S_IFDIR | 0755);
			a.nlink = 1;
			a.size = dsize + e->sub_size;
		} else {
			a.mode = mode_of(type);
			a.nlink = nlink ? nlink : 1;
			a.nbytes = e->nbytes;
			a.size = e->ext_end;
			/* the file's tail: the kernel zero-fills its last sector past the size; a
			 * compressed last extent decodes to the size itself */
			bool tail = false;
			const struct ll_ref *last = NULL; /* the file's last extent */
			for (size_t j = 0; j < l->refs.n; j++)
				if (l->refs.data[j].ino == e->ino &&
				    (!last || l->refs.data[j].offset > last->offset))
					last = &l->refs.data[j];
			if (last && e->ext_end && last->dec &&
			    last->offset + (last->dec + ss - 1) / ss * ss == e->ext_end) {
				a.size = last->offset + last->dec;
				tail = true;
			} else if (last && e->ext_end && last->offset + last->len == e->ext_end &&
				   (!last->num || last->num == last->len)) {
				a.size -= tail_zeros(l, last->bytenr, last->len);
				tail = true;
			}
			/* or the last extent item, which reads, says it */
			if (!tail && e->ext_end && e->tail.num_bytes &&
			    e->tail.file_offset + e->tail.num_bytes == e->ext_end)
				a.size -= tail_short(l, &e->tail);
			bool sums = false, any = false;
			for (size_t j = 0; j < l->refs.n; j++)
				if (l->refs.data[j].ino == e->ino) {
					any = true;
					sums = sums || summed(l, l->refs.data[j].bytenr);
				}
			if (any && !sums)
				a.flags |= BTK_INODE_NODATASUM;
		}
		/* an older copy of the item, of the same type: its owner, mode, times, flags */
		const struct ll_old *oi = old_find(l, &k);
		struct btk_inode_info in;
		if (oi && !btk_inode_item_parse(oi->data, oi->size, &in) &&
		    S_ISDIR(in.mode) == dir && (dir || !type || btk_mode_ftype(in.mode) == type)) {
			const struct ll_old *il = dir ? NULL : old_inline(l, e->ino, in.size);
			a.mode = in.mode;
			a.uid = in.uid;
			a.gid = in.gid;
			a.rdev = in.rdev;
			a.atime = in.atime, a.mtime = in.mtime, a.ctime = in.ctime,
			a.otime = in.otime;
			a.flags = in.flags;
			a.generation = in.generation;
			if (il) { /* a small file: its data inline, in the older copy */
				a.size = in.size;
				a.nbytes = in.size;
				if ((ret = old_put(l, il, done)))
					return ret;
			} else if (!dir && in.size <= e->ext_end &&
				   in.size + l->fs->sectorsize > e->ext_end) {
				/* the older size, unless the data says the file grew since
				 * (non-zero bytes past it): that copy predates a write */
				if (in.size > a.size)
					a.size = in.size;
			} else if (!dir && !e->ext_end && !in.size) {
				a.size = 0;
			}
			done->from_old++;
		}
		e->mode = a.mode;
		if ((ret = btk_inode_create(t, l->tree, e->ino, &a)))
			return ret;
		if (e->ino == root_dir) {
			/* the top directory's own ".." reference */
			struct btk_key rk = {root_dir, BTRFS_INODE_REF_KEY, root_dir};
			uint8_t ref[BTK_INODE_REF_HEAD + 2];
			uint32_t rl = btk_ref_ent_write(ref, false, root_dir, 0, "..", 2);
			if (lost(l, &rk) && (ret = btk_item_insert(t, l->tree, &rk, ref, rl)))
				return ret;
		}
		e->have = e->rebuilt = true;
		done->inodes++;
	}
	/* the sides of each name that lay in the leaf */
	uint64_t lf_idx = l->lf_max_idx > 1 ? l->lf_max_idx : 1;
	for (size_t i = 0; i < l->names.n; i++) {
		struct ll_name *n = &l->names.data[i];
		struct ll_ino *c = ino_get(l, n->ino, false);
		struct ll_ino *pd = ino_get(l, n->dir, false);
		if (n->index == UINT64_MAX - 1) {
			n->index = ++lf_idx;
			l->lf_added += 2 * (uint64_t)n->len;
		}
		if (n->index == UINT64_MAX) {
			/* its DIR_INDEX and INODE_REF lay in the leaf: the next free index */
			uint64_t mx = 1;
			for (size_t j = 0; j < l->names.n; j++)
				if (l->names.data[j].dir == n->dir &&
				    l->names.data[j].index < UINT64_MAX - 1 &&
				    l->names.data[j].index > mx)
					mx = l->names.data[j].index;
			n->index = mx + 1;
		}
		struct btk_key ki = {n->dir, BTRFS_DIR_ITEM_KEY, btk_name_hash(n->name, n->len)};
		struct btk_key kx = {n->dir, BTRFS_DIR_INDEX_KEY, n->index};
		struct btk_key kr = {n->ino, BTRFS_INODE_REF_KEY, n->dir};
		bool in_lf = n->dir == l->lf_ino && (!l->top_has_lf || n->ino != l->lf_ino);
		unsigned sides = (lost(l, &ki) || in_lf ? BTK_NAME_DIR_ITEM : 0) |
				 (lost(l, &kx) || in_lf ? BTK_NAME_DIR_INDEX : 0) |
				 (lost(l, &kr) || in_lf ? BTK_NAME_REF : 0);
		if (n->dir == root_dir && n->ino == l->lf_ino && !l->top_has_lf)
			sides = BTK_NAME_DIR_ITEM | BTK_NAME_DIR_INDEX | BTK_NAME_REF;
		if (!sides)
			continue;
		uint32_t cm = c && c->mode ? c->mode : mode_find(l, n->ino);
		uint8_t type = n->type ? n->type : cm ? btk_mode_ftype(cm) : BTRFS_FT_REG_FILE;
		struct btk_key loc = {n->ino, BTRFS_INODE_ITEM_KEY, 0};
		if ((ret = btk_dir_name_add(t, l->tree, n->dir, n->name, n->len, &loc, type,
					    n->index, sides)))
			return ret;
		/* a directory whose item still reads counted the name already; a new
		 * lost+found entry grows it */
		(void)pd;
		done->names++;
	}
	if ((ret = sub_names(l, done)))
		return ret;
	/* the inline data of files that still read, and xattrs, from the older copies */
	for (size_t i = 0; i < l->inos.n; i++) {
		struct ll_ino *e = &l->inos.data[i];
		if (!e->have || e->rebuilt || S_ISDIR(e->mode) || e->ext_end ||
		    !lost_type(l, e->ino, BTRFS_EXTENT_DATA_KEY))
			continue;
		const struct ll_old *il = old_inline(l, e->ino, e->info.size);
		if (il && !(ret = old_put(l, il, done)))
			e->nbytes += e->info.size;
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < l->old.n; i++) {
		const struct ll_old *o = &l->old.data[i];
		struct ll_ino *e = ino_get(l, o->key.objectid, false);
		if (o->key.type == BTRFS_XATTR_ITEM_KEY && e && e->have &&
		    (ret = old_put(l, o, done)))
			return ret;
	}
	/* what the inodes that still read count: sizes of directories whose entries lay in
	 * the leaf or that got lost+found entries, nbytes of files whose extents did, links */
	for (size_t i = 0; i < l->inos.n; i++) {
		struct ll_ino *e = &l->inos.data[i];
		struct btk_key k = {e->ino, BTRFS_INODE_ITEM_KEY, 0};
		uint32_t mode = e->mode ? e->mode : mode_find(l, e->ino);
		if (lost(l, &k) || !mode || e->rebuilt)
			continue;
		uint64_t size = e->info.size, nbytes = e->info.nbytes;
		uint32_t nlink = e->info.nlink;
		bool dir = S_ISDIR(mode), changed;
		if (!e->have || e->copied) { /* outside the objectids of the leaf, or as the
						source has it: a directory that gets lost+found
						(its size read below) */
			uint64_t grow = dir && e->ino == root_dir && l->lf_ino && !l->top_has_lf
					    ? 20
					: dir && e->ino == l->lf_ino && l->top_has_lf ? l->lf_added
										      : 0;
			if (dir)
				grow += e->sub_added;
			if (!grow)
				continue;
			if ((ret = btk_inode_add_dir_size(t, l->tree, e->ino, grow)))
				return ret;
			done->set_right++;
			continue;
		}
		if (dir) {
			size = e->sub_size;
			for (size_t j = 0; j < l->names.n; j++)
				if (l->names.data[j].dir == e->ino)
					size += 2 * (uint64_t)l->names.data[j].len;
		} else {
			nbytes = e->nbytes;
			nlink = 0;
			for (size_t j = 0; j < l->names.n; j++)
				nlink += l->names.data[j].ino == e->ino;
			if (!nlink)
				nlink = e->info.nlink;
		}
		if (!dir && !lost_type(l, e->ino, BTRFS_EXTENT_DATA_KEY))
			nbytes = e->info.nbytes;
		if ((ret = inode_fix(l, e->ino, size, nbytes, nlink, &changed)))
			return ret;
		done->set_right += changed;
	}
	return 0;
}

bool rp_lost_leaf(const struct rp_prob *p)
{
	return p->id == BTK_P_TB_UNREADABLE && subvolume(p->tree) && p->nvals &&
	       (int64_t)p->vals[0] >= 0 && (int64_t)p->vals[0] < BTK_MAX_LEVEL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_orphan(const void *a, const void *b)
{
	const struct ll_orphan *x = a, *y = b;
	int c = (x->b != NULL) - (y->b != NULL);

	return c ? -c : btk_key_cmp(&x->first, &y->first);
}

static const struct ll_range *lost_block_of(const struct ll *l, const struct btk_key *k)
{
	for (size_t i = 0; i < l->lostb.n; i++)
		if (btk_key_cmp(k, &l->lostb.data[i].lo) >= 0 &&
		    btk_key_cmp(k, &l->lostb.data[i].hi) < 0)
			return &l->lostb.data[i];
	return NULL;
}

/* The blocks below the lost nodes: every block with a keyed reference from the tree that no
 * block which reads reaches, whose first key lies in a lost block's range; the leaves among
 * them are read (their items come back as they are). Sorted: the leaves first, by key. */
static int orphans(struct ll *l)
{
	size_t n = 0;

	btk_vec_sort(&l->live, cmp_u64);
	for (size_t i = 0; i < l->orph.n; i++) {
		struct ll_orphan o = l->orph.data[i];
		struct btk_block_check chk = {.level = o.level, .owner = l->tree};
		bool skip = btk_vec_bsearch(&l->live, &o.bytenr, cmp_u64) != NULL;
		for (size_t j = 0; j < l->lostb.n && !skip; j++)
			skip = o.bytenr == l->lostb.data[j].bytenr;
		if (skip || btk_block_read(l->fs, o.bytenr, &chk, &o.b)) {
			btk_err_clear();
			continue; /* reached, lost itself, or not whole: not one */
		}
		uint32_t items = btk_block_nritems(o.b);
		if (!items) {
			btk_block_put(o.b);
			continue;
		}
		btk_block_key(o.b, 0, &o.first);
		if (!o.level)
			btk_leaf_key(o.b, (int)items - 1, &o.last);
		const struct ll_range *lb = lost_block_of(l, &o.first);
		if (!lb || lb->level <= o.level || (!o.level && lost_block_of(l, &o.last) != lb)) {
			btk_block_put(o.b);
			continue; /* not below a lost node */
		}
		if (o.level) {
			btk_block_put(o.b);
			o.b = NULL;
		}
		l->orph.data[n++] = o;
	}
	l->orph.n = n;
	btk_vec_sort(&l->orph, cmp_orphan);
	for (size_t i = 1; i < l->orph.n && l->orph.data[i].b; i++)
		if (btk_key_cmp(&l->orph.data[i].first, &l->orph.data[i - 1].last) <= 0)
			return btk_err(EUCLEAN,
				       "tree %llu: leaves %llu and %llu below a lost node hold "
				       "the same keys",
				       (unsigned long long)l->tree,
				       (unsigned long long)l->orph.data[i - 1].bytenr,
				       (unsigned long long)l->orph.data[i].bytenr);
	return 0;
}

/* Counts the shared data references naming a block below a lost node (orphans_shared). */
static int orphan_ref(void *ctx, const struct btk_key *rec, const struct btk_extent_head *h,
		      const struct btk_extent_ref *r)
{
	struct ll *l = ctx;

	(void)rec;
	if (!(h->flags & BTRFS_EXTENT_FLAG_DATA) || r->type != BTRFS_SHARED_DATA_REF_KEY)
		return 0;
	for (size_t j = 0; j < l->orph.n; j++)
		l->shared += r->parent == l->orph.data[j].bytenr;
	return 0;
}

/* The blocks below a lost node whose data names them by their address (a snapshot shares
 * them): their items would come back without their inodes' references. */
static int orphans_shared(struct ll *l)
{
	return l->orph.n ? rp_extent_refs_walk(l->fs, orphan_ref, l) : 0;
}

/* The ranges whose items are made again: each lost block's, but the keys its orphan leaves
 * hold (from a leaf's first key to its last). */
static int gaps(struct ll *l)
{
	l->r.n = 0;
	for (size_t i = 0; i < l->lostb.n; i++) {
		const struct ll_range *lb = &l->lostb.data[i];
		struct btk_key cur = lb->lo;
		for (size_t j = 0; j <= l->orph.n; j++) {
			const struct ll_orphan *o = j < l->orph.n ? &l->orph.data[j] : NULL;
			if (o && (!o->b || lost_block_of(l, &o->first) != lb))
				continue;
			struct btk_key end = o ? o->first : lb->hi;
			if (btk_key_cmp(&cur, &end) < 0) {
				struct ll_range *r = btk_vec_push(&l->r);
				if (!r)
					return btk_err(ENOMEM, "out of memory");
				*r = *lb;
				r->lo = cur;
				r->hi = end;
			}
			if (o) {
				cur = o->last;
				btk_key_after(&cur);
			}
		}
	}
	return 0;
}

/* What the orphan leaves hold, as if it read in the tree. */
static int scan_orphans(struct ll *l)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->orph.n; i++) {
		const struct btk_block *b = l->orph.data[i].b;
		for (uint32_t s = 0; b && !ret && s < btk_block_nritems(b); s++) {
			struct btk_key k;
			btk_leaf_key(b, (int)s, &k);
			ret = scan_item(l, &k, btk_leaf_data(b, (int)s), btk_leaf_size(b, (int)s));
		}
	}
	return ret;
}

/* The orphan blocks leave the extent tree (their keyed references from the tree); the leaves'
 * items go back into the tree. */
static int orphans_back(struct ll *l, uint64_t *items)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < l->orph.n; i++) {
		const struct ll_orphan *o = &l->orph.data[i];
		ret = btk_tree_block_ref(l->t, o->bytenr, o->level, l->tree, 0, -1, false, o->gen);
		for (uint32_t s = 0; o->b && !ret && s < btk_block_nritems(o->b); s++) {
			struct btk_key k;
			btk_leaf_key(o->b, (int)s, &k);
			ret = btk_item_insert(l->t, l->tree, &k, btk_leaf_data(o->b, (int)s),
					      btk_leaf_size(o->b, (int)s));
			*items += !ret;
		}
	}
	return ret;
}

int rp_fix_lost_leaf(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		     size_t cap)
{
	struct ll l = {.fs = btk_trans_fs(x->t), .t = x->t, .tree = p->tree, .omin = UINT64_MAX};
	struct ll_done done = {0};
	struct btk_root root;
	uint64_t relinked = 0;
	bool root_lost;
	int ret;

	if (x->lost_leaves_of == p->tree)
		return 1; /* this round rebuilt the tree's lost blocks together */
	x->lost_leaves_of = p->tree;
	if ((ret = btk_root_find(l.fs, p->tree, &root)))
		goto out;
	root_lost = root.bytenr == p->bytenr;
	/* every lost block of the tree, in one go (one may end where the next starts) */
	for (size_t i = 0; i < x->all->n; i++) {
		const struct rp_prob *q = &x->all->data[i];
		if (!rp_lost_leaf(q) || q->tree != p->tree)
			continue;
		if (root_lost && q->bytenr != root.bytenr)
			continue; /* below the lost root: found again as orphans, or not at all */
		struct ll_range *r = btk_vec_push(&l.lostb);
		if (!r) {
			ret = btk_err(ENOMEM, "out of memory");
			goto out;
		}
		bool first = true;
		for (size_t j = 0; j < i && first; j++)
			first =
			    !rp_lost_leaf(&x->all->data[j]) || x->all->data[j].bytenr != q->bytenr;
		*r = (struct ll_range){.bytenr = q->bytenr,
				       .first = first,
				       .level = (int)q->vals[0],
				       .lo = {UINT64_MAX, UINT8_MAX, UINT64_MAX},
				       .hi = {UINT64_MAX, UINT8_MAX, UINT64_MAX}};
		if (root_lost) {
			r->lo = (struct btk_key){0, 0, 0};
			r->gen = root.generation;
			r->level = root.level;
		}
	}
	/* the ranges first (the pointers to the lost blocks, the blocks that read), then the
	 * data and tree block references, then what reads in the ranges */
	struct btk_walk_ops ops = {.block = scan_block, .on_error = scan_error};
	l.omin = 0, l.omax = 0; /* nothing collected on the first walk */
	l.first_walk = true;
	l.r = l.lostb; /* the first walk sets their ranges */
	if (!root_lost && (ret = btk_tree_walk(l.fs, &root, &ops, &l))) {
		l.r = (struct ll_ranges){0};
		goto out;
	}
	l.r = (struct ll_ranges){0};
	l.first_walk = false;
	l.omin = UINT64_MAX;
	for (size_t i = 0; i < l.lostb.n; i++) {
		const struct ll_range *r = &l.lostb.data[i];
		if (r->lo.objectid == UINT64_MAX && r->lo.type == UINT8_MAX) {
			ret = btk_err(ENOENT, "tree %llu: no pointer to lost block %llu",
				      (unsigned long long)p->tree, (unsigned long long)r->bytenr);
			goto out;
		}
		if (r->lo.objectid < l.omin)
			l.omin = r->lo.objectid;
		if (r->hi.objectid > l.omax)
			l.omax = r->hi.objectid;
		if (r->gen > l.gen)
			l.gen = r->gen;
	}
	if ((ret = scan_refs(&l)) || (ret = orphans(&l)) || (ret = orphans_shared(&l)) ||
	    (ret = gaps(&l)))
		goto out;
	l.names.n = l.inos.n = l.modes.n = 0;
	l.max_ino = l.top_max_idx = l.lf_max_idx = 0;
	l.top_has_lf = false;
	l.lf_ino = 0;
	if ((!root_lost && (ret = btk_tree_walk(l.fs, &root, &ops, &l))) ||
	    (ret = scan_orphans(&l)) || (ret = old_copies(&l)) || (ret = copy_collect(&l)) ||
	    (ret = place_shared(&l)))
		goto out;
	btk_vec_sort(&l.modes, cmp_u64); /* orphan leaves' inode items come after the walk's */
	if (l.shared) {
		ret = btk_err(EOPNOTSUPP,
			      "tree %llu: %llu reference(s) name a block below a lost node by its "
			      "address (a snapshot shares it): which inodes they belong to is not "
			      "known",
			      (unsigned long long)p->tree, (unsigned long long)l.shared);
		goto out;
	}
	/* the lost blocks leave their parents (a lost root: the tree starts again empty), the
	 * blocks below them the extent tree; then their items come back */
	for (size_t i = 0; i < l.lostb.n; i++) {
		const struct ll_range *r = &l.lostb.data[i];
		if (root_lost) {
			ret = btk_tree_restart(x->t, p->tree);
			if (!ret)
				ret = btk_tree_block_ref(x->t, r->bytenr, r->level, p->tree, 0, -1,
							 false, r->gen);
		} else {
			ret = btk_tree_drop_lost(x->t, p->tree, &r->lo, r->level, r->bytenr);
		}
		if (ret == 1)
			ret = btk_err(ENOENT, "tree %llu: lost block %llu not reached",
				      (unsigned long long)p->tree, (unsigned long long)r->bytenr);
		if (ret)
			goto out;
	}
	if ((ret = orphans_back(&l, &relinked)) || (ret = copy_put(&l, &relinked)) ||
	    (ret = rebuild(&l, &done)) || (ret = shared_drop(&l)))
		goto out;
	snprintf(before, cap, "%zu lost block(s) from key (%llu %u %llu)", l.lostb.n,
		 (unsigned long long)l.lostb.data[0].lo.objectid, l.lostb.data[0].lo.type,
		 (unsigned long long)l.lostb.data[0].lo.offset);
	/* (before and after are short: 96 bytes) */
	snprintf(after, cap,
		 "%llu items kept, %llu inodes, %llu names, %llu extents back (%llu old), %llu "
		 "in lost+found",
		 (unsigned long long)relinked, (unsigned long long)done.inodes,
		 (unsigned long long)done.names, (unsigned long long)done.extents,
		 (unsigned long long)done.from_old, (unsigned long long)done.lost_found);
out:
	btk_vec_free(&l.r);
	btk_vec_free(&l.lostb);
	for (size_t i = 0; i < l.orph.n; i++)
		if (l.orph.data[i].b)
			btk_block_put(l.orph.data[i].b);
	btk_vec_free(&l.orph);
	btk_vec_free(&l.live);
	btk_vec_free(&l.names);
	btk_vec_free(&l.subs);
	btk_vec_free(&l.inos);
	btk_vec_free(&l.refs);
	btk_vec_free(&l.rel);
	btk_vec_free(&l.sh);
	btk_vec_free(&l.oref);
	btk_vec_free(&l.modes);
	for (size_t i = 0; i < l.old.n; i++)
		free(l.old.data[i].data);
	btk_vec_free(&l.old);
	for (size_t i = 0; i < l.cp.n; i++)
		free(l.cp.data[i].data);
	btk_vec_free(&l.cp);
	free(l.zin);
	return ret;
}
