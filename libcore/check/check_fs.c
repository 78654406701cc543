/* check_fs.c — fs trees (subvolumes, snapshots, data reloc tree), streamed in key order.
 *
 * Items of one inode are contiguous (objectid = inode number), so per-inode facts (nlink
 * against its names, nbytes against its extents, directory size against its entries) are
 * checked when the objectid changes, from a small state. Names cross inodes: check_names.c
 * matches a directory's entries with its children's inode refs.
 */
#include "check/check_fs_priv.h"
#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "fs/fs_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* A dir index entry of dir: a second entry with its name is a duplicate (one inode under two
 * indexes, or two inodes under one name). */
static void dir_seen_add(struct chk *c, uint64_t dir, const uint8_t *name, size_t len,
			 uint64_t child, uint64_t index)
{
	struct chk_fstree *t = c->fst;

	if (t->seen_dir != dir) {
		chk_tab_clear(&t->seen);
		t->seen_dir = dir;
	}
	struct chk_name *n = chk_tab_get(c, &t->seen, dir, 0, chk_name_hash64(name, len));
	if (!n)
		return;
	if (n->src) {
		struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, index};
		chk_fs_rep(c, CHK_M_NAME_DUPLICATE, 0, &k, CHK_U(dir), CHK_U(n->idx_ref),
			   CHK_U(n->idx_dir), CHK_U(child), CHK_U(index));
		return;
	}
	n->src = SRC_DIR_INDEX;
	n->idx_dir = index;
	n->idx_ref = child;
}

static int orphan_cb(void *ctx, const struct btk_block *leaf, int slot, const struct btk_key *key,
		     const uint8_t *data, uint32_t size)
{
	struct chk_fstree *t = ctx;
	uint64_t *p = btk_vec_push(&t->orphans);

	(void)leaf, (void)slot, (void)data, (void)size;
	if (!p)
		return btk_err(ENOMEM, "out of memory");
	*p = key->offset;
	return 0;
}

bool chk_has_u64(const struct chk_u64s *v, uint64_t x)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t m = *btk_vec_at(v, mid);
		if (m == x)
			return true;
		if (m < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int chk_fs_begin(struct chk *c, const struct btk_root *root)
{
	struct chk_fstree *t = calloc(1, sizeof(*t));

	if (!t)
		return btk_err(ENOMEM, "out of memory");
	t->tree = root->objectid;
	/* Orphan items sort last; gather them first so inodes being deleted are judged as such. */
	int ret = btk_for_each_item(c->fs, root, BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, 0,
				    orphan_cb, t);
	if (ret == -ENOMEM) {
		btk_vec_free(&t->orphans);
		free(t);
		return ret;
	}
	if (ret < 0 && ret != -ENOENT)
		t->gap = true; /* unreadable: reported by the walk */
	c->fst = t;
	return 0;
}

static void inode_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		       uint64_t leaf)
{
	struct ino_state *s = &c->fst->cur;
	struct btk_inode_info ii;

	if (btk_inode_item_parse(p, sz, &ii)) {
		chk_fs_rep(c, CHK_M_INODE_SIZE, leaf, k, CHK_U(sizeof(struct btrfs_inode_item)),
			   CHK_U(sz));
		return;
	}
	s->has_item = true;
	s->leaf = leaf;
	s->mode = ii.mode;
	s->nlink = ii.nlink;
	s->size = ii.size;
	s->nbytes = ii.nbytes;
	s->flags = ii.flags;
	uint64_t gen = ii.generation, transid = ii.transid;
	uint64_t lim = c->fs->generation + 1;
	if (gen > lim || transid > lim)
		chk_fs_rep(c, CHK_M_INODE_GENERATION, leaf, k, CHK_U(lim), CHK_U(gen),
			   CHK_U(transid));
	if (btk_mode_ftype(s->mode) == BTRFS_FT_UNKNOWN)
		chk_fs_rep(c, CHK_M_INODE_MODE, leaf, k, CHK_U(s->mode));
	if (S_ISLNK(s->mode) && (s->flags & (BTK_INODE_IMMUTABLE | BTK_INODE_APPEND)))
		chk_fs_rep(c, CHK_M_INODE_FLAGS, leaf, k, CHK_U(s->flags));
	if (S_ISDIR(s->mode) && s->nlink >= 2)
		chk_fs_rep(c, CHK_M_DIR_LINKS, leaf, k, CHK_U(s->nlink));
	chk_ino_add(c, k->objectid, s->mode);
}

/* DIR_ITEM, DIR_INDEX and XATTR_ITEM share one layout (format/dir_item.h). Collisions of the
 * name hash share one item; equal names may not (entries before the current one were
 * bounds-checked already). */
static void dir_entries(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			uint64_t leaf)
{
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	int n = 0, ret;

	btk_dir_iter_init(&it, p, sz);
	while ((ret = btk_dir_next(&it, &e)) > 0) {
		uint16_t nl = e.name_len, dl = e.data_len;
		uint8_t ft = e.type;
		uint32_t off = it.at;
		const uint8_t *name = (const uint8_t *)e.name;
		struct btk_key loc;
		btk_dir_ent_location(&e, &loc);
		if (k->type == BTRFS_DIR_ITEM_KEY &&
		    btk_dir_item_has_name(p, off, (const char *)name, nl))
			chk_fs_rep(c, CHK_M_NAME_DUPLICATE_ITEM, leaf, k,
				   CHK_SN(name, nl > 64 ? 64 : nl));
		if (k->type != BTRFS_DIR_INDEX_KEY &&
		    (uint64_t)btk_name_hash(name, nl) != k->offset)
			chk_fs_rep(c, CHK_M_NAME_HASH, leaf, k, CHK_U(btk_name_hash(name, nl)),
				   CHK_U(k->offset));
		if (nl == 0 || nl > BTK_NAME_MAX)
			chk_fs_rep(c, CHK_M_NAME_LEN, leaf, k, CHK_U(nl));
		n++;
		/* the kernel's leaf checks: a name has a file type (1..7), an xattr FT_XATTR */
		bool xattr = k->type == BTRFS_XATTR_ITEM_KEY;
		if (xattr ? ft != BTRFS_FT_XATTR
			  : (ft == BTRFS_FT_UNKNOWN || ft >= BTRFS_FT_XATTR)) {
			chk_fs_rep(c, xattr ? CHK_M_DIR_TYPE_XATTR : CHK_M_DIR_TYPE, leaf, k,
				   CHK_U(ft));
			/* reported: the name is not judged again for it */
			ft = BTRFS_FT_UNKNOWN;
		}
		if (xattr)
			continue;
		c->fst->cur.dirsize += nl;
		if (dl)
			chk_fs_rep(c, CHK_M_DIR_DATA, leaf, k, CHK_U(dl));
		uint8_t src = k->type == BTRFS_DIR_ITEM_KEY ? SRC_DIR_ITEM : SRC_DIR_INDEX;
		uint64_t idx = k->type == BTRFS_DIR_INDEX_KEY ? k->offset : 0;
		if (loc.type == BTRFS_INODE_ITEM_KEY && src == SRC_DIR_INDEX)
			dir_seen_add(c, k->objectid, name, nl, loc.objectid, idx);
		if (loc.type == BTRFS_INODE_ITEM_KEY)
			chk_name_entry(c, k->objectid, loc.objectid, idx, name, nl, src, ft);
		else if (loc.type == BTRFS_ROOT_ITEM_KEY)
			chk_rootref_push(c, c->fst->tree, loc.objectid, k->objectid, idx, name, nl,
					 src == SRC_DIR_ITEM ? 2 : 3);
		else
			chk_fs_rep(c, CHK_M_DIR_LOCATION, leaf, k, CHK_U(loc.type));
	}
	if (ret < 0) {
		chk_fs_rep(c, CHK_M_DIR_OVERRUN, leaf, k);
		return;
	}
	if (k->type == BTRFS_DIR_INDEX_KEY && n != 1)
		chk_fs_rep(c, CHK_M_DIR_INDEX_COUNT, leaf, k, CHK_I(n));
}

struct ref_walk {
	struct chk *c;
	const struct btk_key *k;
	uint64_t leaf;
};

static int inode_ref_entry(void *arg, const struct btk_name_ref *r)
{
	struct ref_walk *w = arg;
	const struct btk_key *k = w->k;
	const uint8_t *name = (const uint8_t *)r->name;

	if (r->extref && (uint64_t)btk_extref_hash(r->parent, name, r->name_len) != k->offset)
		chk_fs_rep(w->c, CHK_M_EXTREF_HASH, w->leaf, k,
			   CHK_U(btk_extref_hash(r->parent, name, r->name_len)), CHK_U(k->offset));
	w->c->fst->cur.names++;
	/* the top directory's ".." names itself and has no dir entry; its index is 0 */
	if (!(r->parent == k->objectid && k->objectid == BTK_ROOT_DIRID))
		chk_name_ref(w->c, r->parent, k->objectid, r->index, name, r->name_len);
	else if (r->index != 0 || r->name_len != 2 || memcmp(name, "..", 2))
		chk_fs_rep(w->c, CHK_M_ROOT_DIR_REF, w->leaf, k, CHK_U(r->index),
			   CHK_U(r->name_len));
	return 0;
}

static void inode_refs(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		       uint64_t leaf)
{
	struct ref_walk w = {c, k, leaf};

	/* inode_ref_entry never stops the walk: an error is an entry that overruns the item */
	if (btk_inode_ref_walk(k, p, sz, inode_ref_entry, &w))
		chk_fs_rep(c, CHK_M_REF_OVERRUN, leaf, k);
}

/* Records data that must have checksums (need) or must have none (forbid: prealloc space;
 * nodsum: the data of NODATASUM inodes). */
static void need_csum(struct chk *c, uint64_t start, uint64_t len, struct chk_ranges *v)
{
	struct chk_range *r;

	if (!c->leaf_first)
		return; /* a leaf shared with a tree already checked */
	r = chk_push(c, v);
	if (!r)
		return;
	r->start = start;
	r->len = len;
	chk_rec_range(c, v, start, len);
}

static void file_extent(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			uint64_t leaf)
{
	struct ino_state *s = &c->fst->cur;
	uint64_t mask = c->fs->sectorsize - 1, len;
	struct btk_file_extent fe;
	enum btk_fe_fault fault = btk_file_extent_item_parse(p, sz, k->offset, &fe);

	if (fault == BTK_FE_SHORT_HEAD) {
		chk_fs_rep(c, CHK_M_FE_SIZE_HEAD, leaf, k, CHK_U(sz));
		return;
	}
	uint8_t type = fe.type, comp = fe.compression;
	uint64_t ram = fe.ram_bytes;
	if (s->has_ext && s->ext_end > k->offset)
		chk_fs_rep(c, CHK_M_FE_OVERLAP, leaf, k, CHK_U(s->ext_end), CHK_U(k->offset));
	else if (!c->no_holes && k->offset > (s->has_ext ? s->ext_end : 0))
		chk_fs_rep(c, CHK_M_FE_GAP, leaf, k, CHK_U((s->has_ext ? s->ext_end : 0)),
			   CHK_U(k->offset));
	if (type == BTRFS_FILE_EXTENT_INLINE) {
		uint32_t dlen = fe.inline_len;
		if (ram == 0 || ram > c->fs->sectorsize)
			chk_fs_rep(c, CHK_M_FE_INLINE_SIZE, leaf, k, CHK_U(c->fs->sectorsize),
				   CHK_U(ram));
		else if (!comp && dlen != ram)
			chk_fs_rep(c, CHK_M_FE_INLINE_RAM, leaf, k, CHK_U(dlen), CHK_U(ram));
		if (k->offset != 0)
			chk_fs_rep(c, CHK_M_FE_INLINE_OFFSET, leaf, k, CHK_U(k->offset));
		else {
			s->has_inline = true;
			s->inline_plain = !comp;
			s->inline_ram = comp ? ram : dlen; /* the data it holds */
			s->inline_nul =
			    !comp && dlen && fe.inline_data && !fe.inline_data[dlen - 1];
		}
		s->found_bytes += ram;
		len = (ram + mask) & ~mask;
	} else if (type == BTRFS_FILE_EXTENT_REG || type == BTRFS_FILE_EXTENT_PREALLOC) {
		if (fault == BTK_FE_SHORT_BODY) {
			chk_fs_rep(c, CHK_M_FE_SIZE_BODY, leaf, k,
				   CHK_U(sizeof(struct btrfs_file_extent_item)), CHK_U(sz));
			return;
		}
		uint64_t db = fe.disk_bytenr, dnb = fe.disk_num_bytes, eoff = fe.extent_offset;
		len = fe.num_bytes;
		if (len == 0 || (len & mask) || eoff + len > ram || eoff + len < eoff)
			chk_fs_rep(c, CHK_M_FE_SIZES, leaf, k, CHK_U(ram), CHK_U(eoff), CHK_U(len));
		if (db & mask)
			chk_fs_rep(c, CHK_M_FE_DISK_ALIGN, leaf, k, CHK_U(c->fs->sectorsize),
				   CHK_U(db));
		if (type == BTRFS_FILE_EXTENT_PREALLOC && comp)
			chk_fs_rep(c, CHK_M_FE_COMPRESSED_PREALLOC, leaf, k, CHK_U(comp));
		if (comp && (s->flags & BTK_INODE_NODATASUM))
			chk_fs_rep(c, CHK_M_FE_COMPRESSED_NODSUM, leaf, k);
		if (db) {
			s->found_bytes += len;
			bool need = type == BTRFS_FILE_EXTENT_REG &&
				    (comp || !(s->flags & BTK_INODE_NODATASUM));
			need_csum(c, comp ? db : db + eoff, comp ? dnb : len,
				  need				       ? &c->csum_need
				  : type == BTRFS_FILE_EXTENT_PREALLOC ? &c->csum_forbid
								       : &c->csum_nodsum);
		}
	} else {
		chk_fs_rep(c, CHK_M_FE_TYPE, leaf, k, CHK_U(type));
		return;
	}
	s->has_ext = true;
	s->ext_end = k->offset + len;
	if (k->offset & mask)
		chk_fs_rep(c, CHK_M_FE_OFFSET_ALIGN, leaf, k, CHK_U(c->fs->sectorsize),
			   CHK_U(k->offset));
}

/* Judges the inode whose items just ended. */
static void inode_end(struct chk *c)
{
	struct chk_fstree *t = c->fst;
	struct ino_state *s = &t->cur;
	struct btk_key k = {s->ino, BTRFS_INODE_ITEM_KEY, 0};

	if (!t->active)
		return;
	t->active = false;
	chk_names_inode_end(c, s->ino);
	if (s->ino == BTRFS_ORPHAN_OBJECTID)
		return;
	if (s->ino == BTRFS_FREE_INO_OBJECTID) {
		chk_fs_rep(c, CHK_M_INODE_CACHE, 0, &k);
		return;
	}
	if (s->ino < BTRFS_FIRST_FREE_OBJECTID || s->ino > BTRFS_LAST_FREE_OBJECTID) {
		chk_fs_rep(c, CHK_M_INODE_BAD_OBJECTID, 0, &k, CHK_U(s->ino));
		return;
	}
	if (!s->has_item) {
		if (!t->gap && !s->partial)
			chk_fs_rep(c, CHK_M_INODE_MISSING, 0, &k, CHK_U(s->ino));
		return;
	}
	c->sum->nr_inodes++;
	s->orphan = chk_has_u64(&t->orphans, s->ino);
	if (t->gap || s->orphan || s->partial)
		return; /* names or extents may legitimately be partial */
	if (s->nlink == 0)
		chk_fs_rep(c, CHK_M_INODE_NO_ORPHAN, s->leaf, &k);
	else if (s->nlink != s->names)
		chk_fs_rep(c, CHK_M_INODE_NLINK, s->leaf, &k, CHK_U(s->names), CHK_U(s->nlink));
	if (S_ISDIR(s->mode) && s->size != s->dirsize)
		chk_fs_rep(c, CHK_M_DIR_ISIZE, s->leaf, &k, CHK_U(s->dirsize), CHK_U(s->size));
	if (!S_ISDIR(s->mode) && s->nbytes != s->found_bytes)
		chk_fs_rep(c, CHK_M_INODE_NBYTES, s->leaf, &k, CHK_U(s->found_bytes),
			   CHK_U(s->nbytes));
	/* a symlink's target is its inline extent, its size that length (mkfs.btrfs --rootdir
	 * stores the target's NUL too, which the size does not count: a target holds no NUL);
	 * an uncompressed inline extent is cut to the size when a file shrinks (a compressed one
	 * stays whole). A target whose bytes a metadata dump zeroed ends in a NUL too, and then
	 * the size is the whole length. */
	uint64_t target = s->inline_ram - (s->inline_nul && s->size != s->inline_ram ? 1 : 0);
	if (S_ISLNK(s->mode) && s->has_inline && s->size != target)
		chk_fs_rep(c, CHK_M_SYMLINK_SIZE, s->leaf, &k, CHK_U(target), CHK_U(s->size));
	else if (S_ISREG(s->mode) && s->has_inline && s->inline_plain && s->size < s->inline_ram)
		chk_fs_rep(c, CHK_M_ISIZE_INLINE, s->leaf, &k, CHK_U(s->inline_ram),
			   CHK_U(s->size));
	uint64_t mask = c->fs->sectorsize - 1, end = (s->size + mask) & ~mask;
	if (!c->no_holes && S_ISREG(s->mode) && (s->has_ext ? s->ext_end : 0) < end)
		chk_fs_rep(c, CHK_M_FE_MISSING_END, s->leaf, &k, CHK_U(end),
			   CHK_U((s->has_ext ? s->ext_end : 0)));
}

static void item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		 uint64_t leaf)
{
	struct chk_fstree *t = c->fst;

	if (!t->active || t->cur.ino != k->objectid) {
		inode_end(c);
		memset(&t->cur, 0, sizeof(t->cur));
		t->cur.ino = k->objectid;
		t->active = true;
		/* an inode starting right after a skipped range may have begun inside it */
		if (t->after_skip && k->type != BTRFS_INODE_ITEM_KEY)
			t->cur.partial = true;
		t->after_skip = false;
	}
	switch (k->type) {
	case BTRFS_INODE_ITEM_KEY:
		inode_item(c, k, p, sz, leaf);
		break;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		inode_refs(c, k, p, sz, leaf);
		break;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		dir_entries(c, k, p, sz, leaf);
		break;
	case BTRFS_EXTENT_DATA_KEY:
		file_extent(c, k, p, sz, leaf);
		break;
	case BTRFS_ORPHAN_ITEM_KEY:
	case BTRFS_VERITY_DESC_ITEM_KEY:
	case BTRFS_VERITY_MERKLE_ITEM_KEY:
		break;
	default:
		chk_fs_rep(c, CHK_M_INODE_ITEM_TYPE, leaf, k, CHK_U(k->type));
	}
}

static void close_skip(struct chk *c, const struct btk_key *hi)
{
	struct chk_fstree *t = c->fst;
	struct key_range *r;

	if (!t->skip_open)
		return;
	t->skip_open = false;
	t->after_skip = true;
	if (!(r = chk_push(c, &t->skips)))
		return;
	r->lo = t->skip_lo;
	r->hi = *hi;
}

void chk_fs_skip(struct chk *c, const struct btk_block *node)
{
	struct chk_fstree *t = c->fst;

	if (t->skip_open)
		return; /* consecutive skipped subtrees make one range */
	btk_node_key(node, 0, &t->skip_lo);
	t->skip_open = true;
	if (t->active && t->cur.ino == t->skip_lo.objectid)
		t->cur.partial = true;
}

bool chk_fs_skipped(const struct chk_fstree *t, uint64_t objectid, uint8_t type, uint64_t lo,
		    uint64_t hi)
{
	struct btk_key a = {objectid, type, lo}, b = {objectid, type, hi};

	for (size_t i = 0; i < t->skips.n; i++) {
		const struct key_range *r = btk_vec_at(&t->skips, i);
		if (btk_key_cmp(&r->lo, &b) <= 0 && btk_key_cmp(&a, &r->hi) < 0)
			return true;
	}
	return false;
}

void chk_fs_leaf(struct chk *c, const struct btk_block *b)
{
	if (!b) {
		c->fst->gap = true;
		return;
	}
	chk_for_items (c, b, 0, it) {
		if (c->fst->skip_open)
			close_skip(c, &it.k);
		item(c, &it.k, it.p, it.sz, b->bytenr);
	}
}

void chk_fs_end(struct chk *c)
{
	struct chk_fstree *t = c->fst;

	inode_end(c);
	if (t->skip_open) {
		struct btk_key end = {UINT64_MAX, UINT8_MAX, UINT64_MAX};
		close_skip(c, &end);
	}
	uint32_t mode;
	if (!t->gap && !c->oom) {
		if (!chk_ino_mode(t, BTK_ROOT_DIRID, &mode) &&
		    !chk_fs_skipped(t, BTK_ROOT_DIRID, BTRFS_INODE_ITEM_KEY, 0, 0)) {
			struct btk_key k = {BTK_ROOT_DIRID, BTRFS_INODE_ITEM_KEY, 0};
			chk_fs_rep(c, CHK_M_TOP_DIR_MISSING, 0, &k);
		}
	}
	chk_names_final(c, !t->gap && !c->oom);
	btk_vec_free(&t->orphans);
	chk_tab_free(&t->seen);
	for (size_t i = 0; i < t->skips.n && !c->oom; i++) {
		const struct key_range *r = btk_vec_at(&t->skips, i);
		struct chk_skip *g = chk_push(c, &c->skips);
		if (!g)
			break;
		*g = (struct chk_skip){t->tree, r->lo, r->hi};
	}
	btk_vec_free(&t->skips);
	free(t);
	c->fst = NULL;
}
