/* corrupt — inject ONE semantic corruption into a clean btrfs image, for btk-fsck tests (or one
 * state a crash leaves, for the refusals of btk-resize: no-balance, reloc-inode).
 *
 *   corrupt [-t SUBVOL_ID] KIND IMG...   (corrupt --list prints the kinds)
 *
 * -t picks the subvolume tree for the kinds that change an inode, name or file extent (5).
 *
 * The tool finds a suitable item with libcore's read path, rewrites one field (or deletes the
 * item, shifting the rest of the leaf), recomputes the block checksum and writes every copy in
 * place. Checksums stay valid, so only the meaning of the change can betray it. It prints one
 * line saying what it changed. Exit 0 done, 1 no suitable target or I/O error, 2 usage.
 * This is a test tool: it writes in place (no copy-on-write), so use it on scratch images only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/csum.h"
#include "base/error.h"
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "fs/fs_read.h"
#include "volumes/super.h"
#include "tree/cache.h"
#include "tree/tree.h"
#include "trans/trans.h"
#include "volumes/volumes.h"

/* the subvolume tree that fs-tree kinds corrupt (-t ID) */
static uint64_t fs_tree = BTRFS_FS_TREE_OBJECTID;

struct target {
	uint64_t bytenr; /* leaf */
	int slot;
	struct btk_key key;
};

typedef bool (*match_fn)(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			 int slot, void *arg);

/* First item of tree `tree` (from key `from`) that match accepts; 0 or -ENOENT. */
static int find_item(struct btk_fs *fs, uint64_t tree, const struct btk_key *from, match_fn match,
		     void *arg, struct target *t)
{
	struct btk_root root;
	struct btk_path p;
	struct btk_key k = from ? *from : (struct btk_key){0, 0, 0};
	int ret = btk_root_find(fs, tree, &root);

	if (ret)
		return ret;
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &root, &k, &p); ret == 0; ret = btk_next(fs, &p)) {
		uint32_t sz;
		const uint8_t *d = btk_path_data(&p, &sz);
		btk_path_key(&p, &k);
		if (match(fs, &k, d, sz, p.slots[0], arg)) {
			t->bytenr = p.nodes[0]->bytenr;
			t->slot = p.slots[0];
			t->key = k;
			btk_path_release(&p);
			return 0;
		}
	}
	btk_path_release(&p);
	return ret < 0 ? ret : -ENOENT;
}

/* Writes buf (a whole tree block) with a fresh checksum to every copy. */
/* Writes buf to every copy of bytenr, its checksum computed (or, with wipe, zeros). */
static int write_block_sum(struct btk_fs *fs, uint64_t bytenr, uint8_t *buf, bool wipe)
{
	uint8_t sum[BTK_CSUM_MAX];
	struct btk_phys ph[8];
	int n = 0, ret;

	btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
	memset(buf, 0, BTK_CSUM_MAX);
	if (!wipe)
		memcpy(buf, sum, (size_t)fs->csum_size);
	ret = btk_map_logical(fs, bytenr, ph, 8, &n, NULL);
	if (ret)
		return ret;
	for (int i = 0; i < n; i++) {
		if (!ph[i].dev)
			continue;
		ret = btk_dev_write(ph[i].dev, buf, fs->nodesize, ph[i].physical);
		if (ret)
			return ret;
	}
	/* later searches of a kind that changes several items must see this version */
	btk_cache_forget(fs->cache, bytenr);
	return 0;
}

static int write_block(struct btk_fs *fs, uint64_t bytenr, uint8_t *buf)
{
	return write_block_sum(fs, bytenr, buf, false);
}

static struct btk_item *item_at(uint8_t *buf, int slot)
{
	return (struct btk_item *)(buf + sizeof(struct btk_header)) + slot;
}

static uint8_t *item_data(uint8_t *buf, int slot)
{
	return buf + sizeof(struct btk_header) + btk_le32(item_at(buf, slot)->offset);
}

/* Removes one item from a leaf image: later items and their data shift to close the gap. */
static void leaf_delete(uint8_t *buf, int slot)
{
	struct btk_header *h = (struct btk_header *)buf;
	uint32_t n = btk_le32(h->nritems), size = btk_le32(item_at(buf, slot)->size);
	uint32_t off = btk_le32(item_at(buf, slot)->offset);
	uint32_t low = btk_le32(item_at(buf, (int)n - 1)->offset);
	uint8_t *data0 = buf + sizeof(struct btk_header);

	/* data of later items sits below this item's data: move it up by `size` */
	memmove(data0 + low + size, data0 + low, off - low);
	for (uint32_t i = (uint32_t)slot + 1; i < n; i++)
		btk_put32(item_at(buf, (int)i)->offset,
			  btk_le32(item_at(buf, (int)i)->offset) + size);
	memmove(item_at(buf, slot), item_at(buf, slot + 1),
		(n - (uint32_t)slot - 1) * sizeof(struct btk_item));
	btk_put32(h->nritems, n - 1);
}

enum op { OP_ADD, OP_DELETE, OP_KEYOFF };

/* Applies op to the target: OP_ADD adds delta to the little-endian field of `width` bytes at
 * `field` inside the item data; OP_KEYOFF adds delta to the key offset; OP_DELETE drops it. */
static int apply(struct btk_fs *fs, const struct target *t, enum op op, size_t field, int width,
		 int64_t delta, const char *what)
{
	uint8_t *buf = malloc(fs->nodesize);
	uint64_t before = 0, after = 0;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, t->bytenr, buf, fs->nodesize);
	if (ret)
		goto out;
	if (op == OP_DELETE) {
		leaf_delete(buf, t->slot);
	} else if (op == OP_KEYOFF) {
		uint8_t *ko = item_at(buf, t->slot)->key.offset;
		before = btk_le64(ko);
		after = before + (uint64_t)delta;
		btk_put64(ko, after);
	} else {
		uint8_t *p = item_data(buf, t->slot) + field;
		before = width == 8 ? btk_le64(p) : width == 4 ? btk_le32(p) : *p;
		after = before + (uint64_t)delta;
		if (width == 8)
			btk_put64(p, after);
		else if (width == 4)
			btk_put32(p, (uint32_t)after);
		else
			*p = (uint8_t)after;
	}
	ret = write_block(fs, t->bytenr, buf);
	if (!ret)
		printf("%s: block %llu slot %d key (%llu %u %llu): %s %llu -> %llu\n", what,
		       (unsigned long long)t->bytenr, t->slot, (unsigned long long)t->key.objectid,
		       t->key.type, (unsigned long long)t->key.offset,
		       op == OP_DELETE ? "deleted" : "changed", (unsigned long long)before,
		       (unsigned long long)after);
out:
	free(buf);
	return ret;
}

/* ---- matchers ---- */

struct want {
	uint8_t type;
	uint64_t objectid;    /* 0: any */
	bool regular;	      /* INODE_ITEM of a regular file */
	bool dir;	      /* INODE_ITEM of a directory */
	bool not_first;	      /* not slot 0 (deleting or re-keying it would break the parent key) */
	bool data_extent;     /* EXTENT_ITEM with the DATA flag */
	int file_extent_type; /* -1 any */
	uint64_t min_nbytes;  /* INODE_ITEM: at least this many bytes of extents */
	int nth;	      /* skip this many matches first */
	uint8_t dir_ftype;    /* DIR_ITEM/DIR_INDEX: of this file type (0: any) */
};

static bool match_want(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		       int slot, void *arg)
{
	struct want *w = arg;

	(void)fs;
	if (k->type != w->type || (w->objectid && k->objectid != w->objectid))
		return false;
	if (w->not_first && slot == 0)
		return false;
	if (k->type == BTRFS_INODE_ITEM_KEY && sz >= sizeof(struct btrfs_inode_item)) {
		uint32_t mode = BTK_GET(struct btrfs_inode_item, p, mode);
		if ((w->regular && !S_ISREG(mode)) || (w->dir && !S_ISDIR(mode)))
			return false;
		if (w->regular && BTK_GET(struct btrfs_inode_item, p, nlink) != 1)
			return false;
		if (BTK_GET(struct btrfs_inode_item, p, nbytes) < w->min_nbytes ||
		    (w->min_nbytes && BTK_GET(struct btrfs_inode_item, p, flags)))
			return false;
	}
	if (w->dir_ftype && (sz < sizeof(struct btrfs_dir_item) ||
			     BTK_GET(struct btrfs_dir_item, p, type) != w->dir_ftype))
		return false;
	if (w->data_extent &&
	    (sz < sizeof(struct btrfs_extent_item) ||
	     !(BTK_GET(struct btrfs_extent_item, p, flags) & BTRFS_EXTENT_FLAG_DATA)))
		return false;
	if (w->file_extent_type >= 0 &&
	    (sz < sizeof(struct btrfs_file_extent_item) ||
	     (int)BTK_GET(struct btrfs_file_extent_item, p, type) != w->file_extent_type ||
	     !BTK_GET(struct btrfs_file_extent_item, p, disk_bytenr)))
		return false;
	return w->nth-- == 0;
}

/* Two consecutive file extents of one inode, the first at least two sectors long: the second
 * is moved back one sector so that they overlap (key order stays valid). */
struct overlap {
	uint64_t ino, end, start;
	bool have;
};

static bool match_overlap(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			  int slot, void *arg)
{
	struct overlap *o = arg;

	if (k->type != BTRFS_EXTENT_DATA_KEY || sz < sizeof(struct btrfs_file_extent_item) ||
	    BTK_GET(struct btrfs_file_extent_item, p, type) == BTRFS_FILE_EXTENT_INLINE) {
		o->have = false;
		return false;
	}
	uint64_t len = BTK_GET(struct btrfs_file_extent_item, p, num_bytes);
	bool hit = o->have && o->ino == k->objectid && o->end == k->offset &&
		   k->offset - o->start >= 2ULL * fs->sectorsize && slot > 0;
	o->have = true;
	o->ino = k->objectid;
	o->start = k->offset;
	o->end = k->offset + len;
	return hit;
}

/* ---- kinds ---- */

struct kind {
	const char *name, *help;
	int (*run)(struct btk_fs *fs, const char *name);
};

static const struct btk_key from256 = {256, 0, 0};

static int k_inode_field(struct btk_fs *fs, const char *name, size_t field, int width,
			 int64_t delta, bool dir)
{
	struct want w = {.type = BTRFS_INODE_ITEM_KEY,
			 .regular = !dir,
			 .dir = dir,
			 .file_extent_type = -1,
			 .objectid = dir ? 0 : 0};
	struct target t;
	struct btk_key from = {257, 0, 0};
	int ret = find_item(fs, fs_tree, dir ? &from256 : &from, match_want, &w, &t);
	return ret ? ret : apply(fs, &t, OP_ADD, field, width, delta, name);
}

static int k_nlink(struct btk_fs *fs, const char *n)
{
	return k_inode_field(fs, n, offsetof(struct btrfs_inode_item, nlink), 4, 1, false);
}
static int k_nbytes(struct btk_fs *fs, const char *n)
{
	return k_inode_field(fs, n, offsetof(struct btrfs_inode_item, nbytes), 8, 4096, false);
}
static int k_dir_isize(struct btk_fs *fs, const char *n)
{
	return k_inode_field(fs, n, offsetof(struct btrfs_inode_item, size), 8, 2, true);
}

static int k_simple(struct btk_fs *fs, const char *name, uint64_t tree, struct want *w,
		    const struct btk_key *from, enum op op, size_t field, int width, int64_t delta)
{
	struct target t;
	int ret = find_item(fs, tree, from, match_want, w, &t);
	return ret ? ret : apply(fs, &t, op, field, width, delta, name);
}

static int k_dir_index(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_DIR_INDEX_KEY, .not_first = true, .file_extent_type = -1};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_DELETE, 0, 0, 0);
}
static int k_name_hash(struct btk_fs *fs, const char *n)
{
	/* hashes are sparse: +1 keeps the key order and lands on no other name */
	struct want w = {.type = BTRFS_DIR_ITEM_KEY, .not_first = true, .file_extent_type = -1};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_KEYOFF, 0, 0, 1);
}
static int k_dir_type(struct btk_fs *fs, const char *n)
{
	/* a regular file's dir index gets type 0 (unknown): the kernel refuses the leaf */
	struct want w = {
	    .type = BTRFS_DIR_INDEX_KEY, .file_extent_type = -1, .dir_ftype = BTRFS_FT_REG_FILE};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD, offsetof(struct btrfs_dir_item, type),
			1, -BTRFS_FT_REG_FILE);
}
static int k_dir_type_differs(struct btk_fs *fs, const char *n)
{
	/* a regular file's dir item says symlink (a valid type), its dir index still file */
	struct want w = {
	    .type = BTRFS_DIR_ITEM_KEY, .file_extent_type = -1, .dir_ftype = BTRFS_FT_REG_FILE};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD, offsetof(struct btrfs_dir_item, type),
			1, BTRFS_FT_SYMLINK - BTRFS_FT_REG_FILE);
}
static int k_extent_refs(struct btk_fs *fs, const char *n)
{
	struct want w = {
	    .type = BTRFS_EXTENT_ITEM_KEY, .data_extent = true, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, NULL, OP_ADD,
			offsetof(struct btrfs_extent_item, refs), 8, 1);
}
static int k_backref(struct btk_fs *fs, const char *n)
{
	/* the inline data ref's inode number: the ref no longer matches its user */
	struct want w = {
	    .type = BTRFS_EXTENT_ITEM_KEY, .data_extent = true, .file_extent_type = -1};
	size_t field =
	    sizeof(struct btrfs_extent_item) + 1 + offsetof(struct btrfs_extent_data_ref, objectid);
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, NULL, OP_ADD, field, 8, 1000);
}
static int k_meta_missing(struct btk_fs *fs, const char *n)
{
	/* a tree block's METADATA_ITEM deleted: the block is used, the extent tree forgot it
	 * (its block group still counts it) */
	struct want w = {
	    .type = BTRFS_METADATA_ITEM_KEY, .not_first = true, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, NULL, OP_DELETE, 0, 0, 0);
}
static int k_data_missing(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_EXTENT_ITEM_KEY,
			 .data_extent = true,
			 .not_first = true,
			 .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, NULL, OP_DELETE, 0, 0, 0);
}
static int k_fe_bytenr(struct btk_fs *fs, const char *n)
{
	/* a regular file extent's disk_bytenr bit-flipped to an unaligned address: its extent
	 * record, whose back reference still names it, has no user */
	struct want w = {.type = BTRFS_EXTENT_DATA_KEY, .file_extent_type = BTRFS_FILE_EXTENT_REG};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD,
			offsetof(struct btrfs_file_extent_item, disk_bytenr), 8, 0x2000000 + 7);
}
static int k_index_name(struct btk_fs *fs, const char *n)
{
	/* the first byte of a DIR_INDEX's name + 1: its inode ref and dir item keep the name */
	struct want w = {.type = BTRFS_DIR_INDEX_KEY, .not_first = true, .file_extent_type = -1};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD, sizeof(struct btrfs_dir_item), 1, 1);
}
static int k_bg_used(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_BLOCK_GROUP_ITEM_KEY, .file_extent_type = -1};
	uint64_t tree = btk_le64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
			    ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			    : BTRFS_EXTENT_TREE_OBJECTID;
	return k_simple(fs, n, tree, &w, NULL, OP_ADD,
			offsetof(struct btrfs_block_group_item, used), 8, 4096);
}
static bool match_free(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		       int slot, void *arg)
{
	(void)p, (void)sz, (void)slot, (void)arg;
	/* mkfs may leave entries of a block group it removed: pick one of a live chunk */
	return k->type == BTRFS_FREE_SPACE_EXTENT_KEY && k->offset > fs->sectorsize &&
	       btk_chunk_find(fs, k->objectid);
}

static int k_free_space(struct btk_fs *fs, const char *n)
{
	struct target t;
	int ret = find_item(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, NULL, match_free, NULL, &t);
	return ret ? ret : apply(fs, &t, OP_KEYOFF, 0, 0, -(int64_t)fs->sectorsize, n);
}
static int k_fst_grow(struct btk_fs *fs, const char *n)
{
	/* a free extent a sector longer: used space (or the next group) recorded free */
	struct target t;
	int ret = find_item(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, NULL, match_free, NULL, &t);
	return ret ? ret : apply(fs, &t, OP_KEYOFF, 0, 0, (int64_t)fs->sectorsize, n);
}
static int k_fst_drop(struct btk_fs *fs, const char *n)
{
	/* a free range missing */
	struct target t;
	int ret = find_item(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, NULL, match_free, NULL, &t);
	return ret ? ret : apply(fs, &t, OP_DELETE, 0, 0, 0, n);
}
static bool match_fst_info(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			   uint32_t sz, int slot, void *arg)
{
	(void)slot, (void)arg;
	/* a live group's info with extents (not bitmaps) and at least one of them */
	return k->type == BTRFS_FREE_SPACE_INFO_KEY && sz >= sizeof(struct btrfs_free_space_info) &&
	       btk_chunk_find(fs, k->objectid) &&
	       BTK_GET(struct btrfs_free_space_info, p, extent_count) > 0 &&
	       !(BTK_GET(struct btrfs_free_space_info, p, flags) & BTRFS_FREE_SPACE_USING_BITMAPS);
}
static int k_fst_count(struct btk_fs *fs, const char *n)
{
	struct target t;
	int ret = find_item(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, NULL, match_fst_info, NULL, &t);
	return ret ? ret
		   : apply(fs, &t, OP_ADD, offsetof(struct btrfs_free_space_info, extent_count), 4,
			   1, n);
}
static int k_fst_flags(struct btk_fs *fs, const char *n)
{
	/* USING_BITMAPS set over a group that lists extents: bitmaps and extents mixed */
	struct target t;
	int ret = find_item(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, NULL, match_fst_info, NULL, &t);
	return ret ? ret
		   : apply(fs, &t, OP_ADD, offsetof(struct btrfs_free_space_info, flags), 4,
			   BTRFS_FREE_SPACE_USING_BITMAPS, n);
}
static int k_csum(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_EXTENT_CSUM_KEY, .not_first = true, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_CSUM_TREE_OBJECTID, &w, NULL, OP_DELETE, 0, 0, 0);
}
static int k_root_backref(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_ROOT_BACKREF_KEY, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, NULL, OP_ADD,
			offsetof(struct btrfs_root_ref, sequence), 8, 7);
}
static int k_dev_extent(struct btk_fs *fs, const char *n)
{
	/* the device shrinks under its last dev extent */
	struct want w = {.type = BTRFS_DEV_ITEM_KEY, .file_extent_type = -1};
	struct btk_key from = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0};
	uint64_t used = fs->devs[0].bytes_used;
	int64_t delta = -(int64_t)(fs->devs[0].total_bytes - used / 2);
	return k_simple(fs, n, BTRFS_CHUNK_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_dev_item, total_bytes), 8, delta);
}
static bool match_inline(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			 int slot, void *arg)
{
	(void)fs, (void)slot, (void)arg;
	return k->type == BTRFS_EXTENT_DATA_KEY &&
	       sz > offsetof(struct btrfs_file_extent_item, disk_bytenr) &&
	       BTK_GET(struct btrfs_file_extent_item, p, type) == BTRFS_FILE_EXTENT_INLINE &&
	       BTK_GET(struct btrfs_file_extent_item, p, compression) == 0;
}

static int k_inline_ram(struct btk_fs *fs, const char *n)
{
	struct target t;
	int ret = find_item(fs, fs_tree, &from256, match_inline, NULL, &t);
	return ret ? ret
		   : apply(fs, &t, OP_ADD, offsetof(struct btrfs_file_extent_item, ram_bytes), 8, 1,
			   n);
}
static int k_overlap(struct btk_fs *fs, const char *n)
{
	struct overlap o = {0};
	struct target t;
	int ret = find_item(fs, fs_tree, &from256, match_overlap, &o, &t);
	return ret ? ret : apply(fs, &t, OP_KEYOFF, 0, 0, -(int64_t)fs->sectorsize, n);
}
static int k_extra_ref(struct btk_fs *fs, const char *n)
{
	/* a tree block's extent item claims one more reference than it has */
	struct want w = {.type = BTRFS_METADATA_ITEM_KEY, .file_extent_type = -1, .nth = 2};
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, NULL, OP_ADD,
			offsetof(struct btrfs_extent_item, refs), 8, 1);
}
/* Applies edit to every valid superblock copy of the first device, checksum fixed. */
static int super_edit(struct btk_fs *fs, void (*edit)(struct btk_super *sb))
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	struct btk_dev *dev = fs->devs[0].dev;
	int best = btk_super_read_all(dev, copies);

	if (best < 0)
		return best;
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		if (!copies[m].valid)
			continue;
		struct btk_super *sb = &copies[m].sb;
		edit(sb);
		btk_super_csum_fill(sb);
		int ret = btk_dev_write(dev, sb, sizeof(*sb), copies[m].offset);
		if (ret)
			return ret;
	}
	return 0;
}
static void edit_devs(struct btk_super *sb)
{
	btk_put64(sb->num_devices, btk_le64(sb->num_devices) + 1);
}
static void edit_stripesize(struct btk_super *sb)
{
	btk_put32(sb->stripesize, 3 * btk_le32(sb->sectorsize));
}
static void edit_leafsize(struct btk_super *sb)
{
	btk_put32(sb->leafsize, 2 * btk_le32(sb->nodesize));
}
static void edit_sys_type(struct btk_super *sb)
{
	/* the first chunk of the system chunk array: RAID10 with its stripes, sub_stripes 0 (a
	 * profile its stripe count cannot have) */
	uint8_t *c = sb->sys_chunk_array + sizeof(struct btk_disk_key);
	BTK_PUT(struct btrfs_chunk, c, type, BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_RAID10);
	BTK_PUT(struct btrfs_chunk, c, sub_stripes, 0);
}
static void edit_chunk_root(struct btk_super *sb)
{
	/* four blocks on in the system chunk: an empty slot (or an older chunk root) */
	btk_put64(sb->chunk_root, btk_le64(sb->chunk_root) + 4 * (uint64_t)btk_le32(sb->nodesize));
}
static int k_chunk_root_ptr(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_chunk_root);
	if (!ret)
		printf("%s: superblock chunk_root + 4 nodes on every valid copy\n", n);
	return ret;
}
static void edit_sys_uuid(struct btk_super *sb)
{
	/* a byte of the first chunk's first stripe's device uuid: the array still parses */
	uint8_t *c = sb->sys_chunk_array + sizeof(struct btk_disk_key);
	c[offsetof(struct btrfs_chunk, stripe) + offsetof(struct btrfs_stripe, dev_uuid) + 3] ^= 1;
}
static int k_sys_array_uuid(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_sys_uuid);
	if (!ret)
		printf("%s: system chunk array: first stripe's device uuid changed on every valid "
		       "copy\n",
		       n);
	return ret;
}
static void edit_root_unmapped(struct btk_super *sb)
{
	btk_put64(sb->root, 1ULL << 40); /* 1 TiB: in no chunk of a small filesystem */
}
static int k_root_unmapped(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_root_unmapped);
	if (!ret)
		printf("%s: superblock root pointer 1 TiB (in no chunk) on every valid copy\n", n);
	return ret;
}
static int k_sys_array_type(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_sys_type);
	if (!ret)
		printf("%s: system chunk array: first chunk RAID10, sub_stripes 0, on every valid "
		       "copy\n",
		       n);
	return ret;
}
/* Copy 0 with the system chunk array's first chunk RAID10 (sub_stripes 0), copy 1 with its
 * generation + 2^32: checksums right, no copy opens the filesystem alone, each holds what the
 * other lost. */
static int k_super_split(struct btk_fs *fs, const char *n)
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	struct btk_dev *dev = fs->devs[0].dev;
	int ret = btk_super_read_all(dev, copies);

	if (ret < 0)
		return ret;
	if (!copies[0].valid || !copies[1].valid) {
		fprintf(stderr,
			"%s: needs two valid superblock copies (a device of 64 MiB or more)\n", n);
		return -EINVAL;
	}
	edit_sys_type(&copies[0].sb);
	btk_put64(copies[1].sb.generation, btk_le64(copies[1].sb.generation) + (1ULL << 32));
	for (int m = 0; m < 2; m++) {
		btk_super_csum_fill(&copies[m].sb);
		if ((ret =
			 btk_dev_write(dev, &copies[m].sb, sizeof(copies[m].sb), copies[m].offset)))
			return ret;
	}
	printf("%s: superblock copy 0: system chunk array's first chunk RAID10; copy 1: generation "
	       "+ 2^32\n",
	       n);
	return 0;
}
static int k_super_devs(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_devs);
	if (!ret)
		printf("%s: superblock num_devices +1 on every valid copy\n", n);
	return ret;
}
static int k_super_stripesize(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_stripesize);
	if (!ret)
		printf("%s: superblock stripesize = 3 x sectorsize on every valid copy\n", n);
	return ret;
}
static int k_super_leafsize(struct btk_fs *fs, const char *n)
{
	int ret = super_edit(fs, edit_leafsize);
	if (!ret)
		printf("%s: superblock leafsize = 2 x nodesize on every valid copy\n", n);
	return ret;
}

/* Overwrites copy `mirror` (0-based; -1: every copy) of the tree block at bytenr with bytes
 * that fail its checksum: a media error, not a semantic change. */
static int smash_block(struct btk_fs *fs, uint64_t bytenr, int mirror, const char *n)
{
	struct btk_phys ph[8];
	int np = 0, ret = btk_map_logical(fs, bytenr, ph, 8, &np, NULL);
	uint8_t *junk;

	if (ret)
		return ret;
	if (mirror >= np)
		return btk_err(ENOENT, "block %llu has %d copies", (unsigned long long)bytenr, np);
	junk = malloc(fs->nodesize);
	if (!junk)
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->nodesize; i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	for (int i = 0; i < np && !ret; i++) {
		if ((mirror >= 0 && i != mirror) || !ph[i].dev)
			continue;
		ret = btk_dev_write(ph[i].dev, junk, fs->nodesize, ph[i].physical);
		if (!ret)
			printf("%s: tree block %llu copy %d (devid %llu physical %llu) smashed\n",
			       n, (unsigned long long)bytenr, i + 1,
			       (unsigned long long)ph[i].devid, (unsigned long long)ph[i].physical);
	}
	free(junk);
	return ret;
}
/* A leaf of the fs tree (-t): its first leaf (the tree's root when it has one level). */
static int fs_leaf(struct btk_fs *fs, uint64_t *bytenr)
{
	struct btk_root root;
	struct btk_path p;
	struct btk_key k = {0, 0, 0};
	int ret = btk_root_find(fs, fs_tree, &root);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &root, &k, &p);
	if (!ret)
		*bytenr = p.nodes[0]->bytenr;
	btk_path_release(&p);
	return ret;
}
static int k_copy(struct btk_fs *fs, const char *n, int mirror)
{
	uint64_t leaf;
	int ret = fs_leaf(fs, &leaf);
	return ret ? ret : smash_block(fs, leaf, mirror, n);
}
static int k_copy1(struct btk_fs *fs, const char *n)
{
	return k_copy(fs, n, 0);
}
static int k_copy2(struct btk_fs *fs, const char *n)
{
	return k_copy(fs, n, 1);
}
/* A data or metadata chunk item with another chunk right after it. */
static bool match_chunk_next(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			     uint32_t sz, int slot, void *arg)
{
	(void)slot;
	(void)arg;
	if (k->type != BTRFS_CHUNK_ITEM_KEY || sz < sizeof(struct btrfs_chunk))
		return false;
	uint64_t len = BTK_GET(struct btrfs_chunk, p, length);
	uint64_t type = BTK_GET(struct btrfs_chunk, p, type);
	const struct btk_chunk *next = btk_chunk_find(fs, k->offset + len);
	return !(type & BTRFS_BLOCK_GROUP_SYSTEM) && next && next->logical == k->offset + len;
}
static int k_chunk_overlap(struct btk_fs *fs, const char *n)
{
	struct target t;
	int ret = find_item(fs, BTRFS_CHUNK_TREE_OBJECTID, NULL, match_chunk_next, NULL, &t);
	if (ret)
		return ret;
	return apply(fs, &t, OP_ADD, offsetof(struct btrfs_chunk, length), 8, 1 << 20, n);
}
/* A leaf of the checksum tree that is not its root (the second child of each node on the
 * way down): every copy smashed. */
static int k_csum_leaf(struct btk_fs *fs, const char *n)
{
	struct btk_root root;
	int ret = btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &root);
	uint64_t at;

	if (ret)
		return ret;
	if (!root.level)
		return btk_err(ENOENT, "the checksum tree is one leaf (more data, or -n 4096)");
	at = root.bytenr;
	for (int l = root.level, slot = 1; l > 0; l--, slot = 0) {
		struct btk_block_check chk = {.level = l};
		struct btk_block *b;
		if ((ret = btk_block_read(fs, at, &chk, &b)))
			return ret;
		if ((int)btk_block_nritems(b) > slot)
			at = btk_node_blockptr(b, slot);
		else
			ret = btk_err(ENOENT, "checksum tree node %llu has one child",
				      (unsigned long long)at);
		btk_block_put(b);
		if (ret)
			return ret;
	}
	return smash_block(fs, at, -1, n);
}
static int k_root_tree(struct btk_fs *fs, const char *n)
{
	return smash_block(fs, btk_le64(fs->sb.root), -1, n);
}
static int k_root_orphan(struct btk_fs *fs, const char *n)
{
	/* a subvolume marked deleted (refs 0) without the orphan item that finishes deletion */
	struct want w = {.type = BTRFS_ROOT_ITEM_KEY, .file_extent_type = -1};
	struct btk_key from = {256, BTRFS_ROOT_ITEM_KEY, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_root_item, refs), 4, -1);
}

/* A node pointer's key no longer equals its child's first key (gen: its generation no
 * longer equals the child's: parent transid mismatch). */
static int node_ptr(struct btk_fs *fs, const char *n, bool gen)
{
	struct btk_root root;
	struct btk_path p;
	struct btk_key k = {257, 0, 0};
	int ret = btk_root_find(fs, fs_tree, &root);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &root, &k, &p);
	if (ret || !p.nodes[1] || btk_block_nritems(p.nodes[1]) < 2) {
		btk_path_release(&p);
		return ret < 0 ? ret : btk_err(ENOENT, "the fs tree has no node with two children");
	}
	struct target t = {.bytenr = p.nodes[1]->bytenr, .slot = 1};
	btk_node_key(p.nodes[1], 1, &t.key);
	btk_path_release(&p);
	/* node pointers are 33-byte key_ptr records; patch the key offset of slot 1 */
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	if (!ret) {
		struct btk_key_ptr *kp =
		    (struct btk_key_ptr *)(buf + sizeof(struct btk_header)) + 1;
		if (gen)
			btk_put64(kp->generation, btk_le64(kp->generation) - 1);
		else
			btk_put64(kp->key.offset, btk_le64(kp->key.offset) + 1);
		ret = write_block(fs, t.bytenr, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: node %llu slot 1 key (%llu %u %llu): %s\n", n,
		       (unsigned long long)t.bytenr, (unsigned long long)t.key.objectid, t.key.type,
		       (unsigned long long)t.key.offset, gen ? "generation - 1" : "offset + 1");
	return ret;
}
static int k_node_key(struct btk_fs *fs, const char *n)
{
	return node_ptr(fs, n, false);
}
static int k_node_gen(struct btk_fs *fs, const char *n)
{
	return node_ptr(fs, n, true);
}
/* An fs tree leaf's header generation far past the filesystem's (checksum rewritten): its
 * pointer and it disagree, its contents intact. */
static int k_leaf_gen(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_INODE_ITEM_KEY, .file_extent_type = -1};
	struct target t;
	int ret = find_item(fs, fs_tree, &from256, match_want, &w, &t);
	uint8_t *buf;

	if (ret)
		return ret;
	if (!(buf = malloc(fs->nodesize)))
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	struct btk_header *h = (struct btk_header *)buf;
	uint64_t gen = btk_le64(h->generation);
	if (!ret) {
		btk_put64(h->generation, gen + 0x2d000000);
		ret = write_block(fs, t.bytenr, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: leaf %llu: generation %llu -> %llu\n", n, (unsigned long long)t.bytenr,
		       (unsigned long long)gen, (unsigned long long)gen + 0x2d000000);
	return ret;
}
/* The first leaf of the fs tree (-t) that is not its root, was not written by a relocation
 * and holds data references (or, !data, none), in *bytenr; -ENOENT when there is none. */
static int pick_leaf(struct btk_fs *fs, bool data, uint64_t *bytenr)
{
	struct btk_root root;
	struct btk_path p;
	int ret = btk_root_find(fs, fs_tree, &root);

	if (ret)
		return ret;
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &root, &from256, &p); ret == 0; ret = btk_next(fs, &p)) {
		const struct btk_block *b = p.nodes[0];
		bool has = false;
		for (uint32_t i = 0; i < btk_block_nritems(b) && !has; i++) {
			struct btk_leaf_dref d;
			has = btk_leaf_data_ref(b, (int)i, &d);
		}
		if (b->bytenr != root.bytenr && has == data &&
		    !(btk_block_flags(b) & BTK_HEADER_FLAG_RELOC)) {
			*bytenr = b->bytenr;
			break;
		}
		p.slots[0] = (int)btk_block_nritems(b) - 1; /* on to the next leaf */
	}
	btk_path_release(&p);
	return ret < 0 ? ret : ret > 0 ? -ENOENT : 0;
}
/* An fs tree leaf holding data references gets the RELOC header flag (as if a relocation had
 * written it), its extent item left without FULL_BACKREF and its data referred to by its
 * owner's id: btrfs check wants FULL_BACKREF and shared data references. */
static int k_reloc_flag(struct btk_fs *fs, const char *n)
{
	uint64_t bytenr;
	uint8_t *buf;
	int ret = pick_leaf(fs, true, &bytenr);

	if (ret)
		return ret;
	if (!(buf = malloc(fs->nodesize)))
		return -ENOMEM;
	ret = btk_read_logical(fs, bytenr, buf, fs->nodesize);
	struct btk_header *h = (struct btk_header *)buf;
	uint64_t fl = btk_le64(h->flags);
	if (!ret) {
		btk_put64(h->flags, fl | BTK_HEADER_FLAG_RELOC);
		ret = write_block(fs, bytenr, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: leaf %llu: header flags 0x%llx -> 0x%llx\n", n,
		       (unsigned long long)bytenr, (unsigned long long)fl,
		       (unsigned long long)(fl | BTK_HEADER_FLAG_RELOC));
	return ret;
}
/* The extent item of an fs tree leaf without data references (so nothing refers to it as a
 * parent either way) gets FULL_BACKREF: a block its owner reaches, newer than any snapshot. */
static int k_full_backref(struct btk_fs *fs, const char *n)
{
	uint64_t bytenr;
	int ret = pick_leaf(fs, false, &bytenr);

	if (ret)
		return ret;
	struct btk_key from = {bytenr, 0, 0};
	struct want w = {
	    .type = BTRFS_METADATA_ITEM_KEY, .objectid = bytenr, .file_extent_type = -1};
	ret = k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, &from, OP_ADD,
		       offsetof(struct btrfs_extent_item, flags), 8, BTRFS_BLOCK_FLAG_FULL_BACKREF);
	if (ret != -ENOENT)
		return ret;
	w.type = BTRFS_EXTENT_ITEM_KEY; /* without skinny metadata */
	return k_simple(fs, n, BTRFS_EXTENT_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_extent_item, flags), 8,
			BTRFS_BLOCK_FLAG_FULL_BACKREF);
}
/* An fs tree leaf's checksum field wiped to zeros on every copy (contents intact). */
static int k_leaf_csum_zero(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_INODE_ITEM_KEY, .file_extent_type = -1};
	struct target t;
	int ret = find_item(fs, fs_tree, &from256, match_want, &w, &t);
	uint8_t *buf;

	if (ret)
		return ret;
	if (!(buf = malloc(fs->nodesize)))
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	if (!ret)
		ret = write_block_sum(fs, t.bytenr, buf, true);
	free(buf);
	if (!ret)
		printf("%s: leaf %llu: checksum zeroed\n", n, (unsigned long long)t.bytenr);
	return ret;
}
/* The fs tree's root item says one level more than its root block has. */
static int k_root_level(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_ROOT_ITEM_KEY, .file_extent_type = -1};
	struct btk_key from = {fs_tree, BTRFS_ROOT_ITEM_KEY, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_root_item, level), 1, 1);
}

static bool match_csum_item(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			    uint32_t sz, int slot, void *arg)
{
	(void)fs, (void)p, (void)sz, (void)slot, (void)arg;
	return k->type == BTRFS_EXTENT_CSUM_KEY;
}

/* One byte of checksummed data flipped on the first copy (scrub's job; --check-data-csum). */
static int k_data(struct btk_fs *fs, const char *n)
{
	struct target t;
	struct btk_phys ph[8];
	int cnt = 0;
	uint8_t byte;
	int ret = find_item(fs, BTRFS_CSUM_TREE_OBJECTID, NULL, match_csum_item, NULL, &t);

	if (ret)
		return ret;
	ret = btk_map_logical(fs, t.key.offset + 100, ph, 8, &cnt, NULL);
	if (ret || !cnt || !ph[0].dev)
		return ret ? ret : -ENOENT;
	ret = btk_dev_read(ph[0].dev, &byte, 1, ph[0].physical);
	if (ret)
		return ret;
	byte ^= 0x5a;
	ret = btk_dev_write(ph[0].dev, &byte, 1, ph[0].physical);
	if (!ret)
		printf("%s: data byte at logical %llu (devid %llu physical %llu, copy 0 of %d) "
		       "flipped\n",
		       n, (unsigned long long)(t.key.offset + 100), (unsigned long long)ph[0].devid,
		       (unsigned long long)ph[0].physical, cnt);
	return ret;
}

/* 16 sectors of checksummed data overwritten on the first copy (a half-overwritten disk). */
static int k_data_run(struct btk_fs *fs, const char *n)
{
	struct target t;
	struct btk_phys ph[8];
	int cnt = 0;
	uint32_t len = 16 * fs->sectorsize;
	uint8_t *junk;
	int ret = find_item(fs, BTRFS_CSUM_TREE_OBJECTID, NULL, match_csum_item, NULL, &t);

	if (ret)
		return ret;
	ret = btk_map_logical(fs, t.key.offset, ph, 8, &cnt, NULL);
	if (ret || !cnt || !ph[0].dev)
		return ret ? ret : -ENOENT;
	if (!(junk = malloc(len)))
		return -ENOMEM;
	for (uint32_t i = 0; i < len; i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	ret = btk_dev_write(ph[0].dev, junk, len, ph[0].physical);
	free(junk);
	if (!ret)
		printf("%s: %u bytes of data at logical %llu overwritten on copy 0 of %d\n", n, len,
		       (unsigned long long)t.key.offset, cnt);
	return ret;
}

static int k_uuid(struct btk_fs *fs, const char *n)
{
	/* the uuid tree names a subvolume id that does not exist */
	struct want w = {.type = BTRFS_UUID_KEY_SUBVOL, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_UUID_TREE_OBJECTID, &w, NULL, OP_ADD, 0, 8, 1000);
}

static int k_qgroup(struct btk_fs *fs, const char *n)
{
	/* a subvolume qgroup's referenced bytes are off by one sector */
	struct want w = {.type = BTRFS_QGROUP_INFO_KEY, .file_extent_type = -1};
	return k_simple(fs, n, BTRFS_QUOTA_TREE_OBJECTID, &w, NULL, OP_ADD,
			offsetof(struct btrfs_qgroup_info_item, rfer), 8, 4096);
}

static int k_cache_mode(struct btk_fs *fs, const char *n)
{
	/* a v1 space cache inode (root tree) that is no longer a regular file */
	struct want w = {.type = BTRFS_INODE_ITEM_KEY, .file_extent_type = -1};
	struct btk_key from = {BTRFS_FIRST_FREE_OBJECTID, 0, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_inode_item, mode), 4, 0040000 - 0100000);
}

/* Inserts an item (key, data) into the leaf image at slot pos (> 0, so the parent's key for
 * this leaf stays right); the data of later items moves down to make room. */
static int leaf_insert(struct btk_fs *fs, uint8_t *buf, int pos, const struct btk_key *key,
		       const uint8_t *data, uint32_t size)
{
	struct btk_header *h = (struct btk_header *)buf;
	uint32_t n = btk_le32(h->nritems), used = 0;

	for (uint32_t i = 0; i < n; i++)
		used += btk_le32(item_at(buf, (int)i)->size);
	if (pos <= 0 || (uint32_t)pos > n ||
	    sizeof(struct btk_header) + (n + 1) * sizeof(struct btk_item) + used + size >
		fs->nodesize)
		return btk_err(ENOSPC, "no room in the leaf");
	uint32_t top = btk_le32(item_at(buf, pos - 1)->offset); /* end of the data below pos */
	uint8_t *data0 = buf + sizeof(struct btk_header);
	if ((uint32_t)pos < n) {
		uint32_t low = btk_le32(item_at(buf, (int)n - 1)->offset);
		memmove(data0 + low - size, data0 + low, top - low);
		for (uint32_t i = (uint32_t)pos; i < n; i++)
			btk_put32(item_at(buf, (int)i)->offset,
				  btk_le32(item_at(buf, (int)i)->offset) - size);
		memmove(item_at(buf, pos + 1), item_at(buf, pos),
			(n - (uint32_t)pos) * sizeof(struct btk_item));
	}
	struct btk_item *it = item_at(buf, pos);
	btk_key_to_disk(key, &it->key);
	btk_put32(it->offset, top - size);
	btk_put32(it->size, size);
	if (size) /* an empty item may come with no data pointer */
		memcpy(data0 + top - size, data, size);
	btk_put32(h->nritems, n + 1);
	return 0;
}

struct gap {
	uint64_t prev_end, gen;
	bool have;
	int skip; /* gaps to pass over first (their leaves were full) */
};

/* A data extent item followed (in the same leaf) by a free sector before the next extent. */
static bool match_gap(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		      int slot, void *arg)
{
	struct gap *g = arg;

	if (k->type != BTRFS_EXTENT_ITEM_KEY && k->type != BTRFS_METADATA_ITEM_KEY)
		return false;
	const struct btk_chunk *ch = g->have ? btk_chunk_find(fs, g->prev_end) : NULL;
	/* the free sector must be data space inside the same chunk */
	bool hit = ch && (ch->type & BTRFS_BLOCK_GROUP_DATA) && slot > 0 &&
		   g->prev_end + fs->sectorsize <= ch->logical + ch->length &&
		   k->objectid >= g->prev_end + fs->sectorsize;
	if (hit && g->skip-- <= 0)
		return true;
	g->have = k->type == BTRFS_EXTENT_ITEM_KEY && sz >= sizeof(struct btrfs_extent_item) &&
		  (BTK_GET(struct btrfs_extent_item, p, flags) & BTRFS_EXTENT_FLAG_DATA);
	g->prev_end = k->objectid + k->offset;
	if (g->have)
		g->gen = BTK_GET(struct btrfs_extent_item, p, generation);
	return false;
}

/* Inserts an extent item (one data ref) for the free sector of gap g, found in leaf t. */
static int insert_extent(struct btk_fs *fs, const struct gap *gp, const struct target *tp,
			 const char *n)
{
	struct gap g = *gp;
	struct target t = *tp;
	int ret;
	uint8_t item[sizeof(struct btrfs_extent_item) + 1 + sizeof(struct btrfs_extent_data_ref)];
	memset(item, 0, sizeof(item));
	BTK_PUT(struct btrfs_extent_item, item, refs, 1);
	BTK_PUT(struct btrfs_extent_item, item, generation, g.gen);
	BTK_PUT(struct btrfs_extent_item, item, flags, BTRFS_EXTENT_FLAG_DATA);
	uint8_t *r = item + sizeof(struct btrfs_extent_item);
	r[0] = BTRFS_EXTENT_DATA_REF_KEY;
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, root, BTRFS_FS_TREE_OBJECTID);
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, objectid, 999999);
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, count, 1);
	struct btk_key key = {g.prev_end, BTRFS_EXTENT_ITEM_KEY, fs->sectorsize};
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	/* the slot where the key belongs: after every smaller key (block group items of the
	 * same start sort after extent items) */
	int pos = 0, nr = (int)btk_le32(((struct btk_header *)buf)->nritems);
	while (!ret && pos < nr) {
		struct btk_key k;
		btk_disk_to_key(&item_at(buf, pos)->key, &k);
		if (btk_key_cmp(&k, &key) > 0)
			break;
		pos++;
	}
	if (!ret)
		ret = leaf_insert(fs, buf, pos, &key, item, sizeof(item));
	if (!ret)
		ret = write_block(fs, t.bytenr, buf);
	free(buf);
	if (!ret)
		printf("%s: block %llu slot %d: inserted EXTENT_ITEM (%llu %u %llu)\n", n,
		       (unsigned long long)t.bytenr, pos, (unsigned long long)key.objectid,
		       key.type, (unsigned long long)key.offset);
	return ret;
}

static int k_extra_extent(struct btk_fs *fs, const char *n)
{
	/* an extent item (with one data ref) for a free sector that nothing uses; a gap whose
	 * leaf is full is passed over for the next one */
	int ret = -ENOSPC;

	for (int skip = 0; ret == -ENOSPC && skip < 2000; skip++) {
		struct gap g = {.skip = skip};
		struct target t;
		ret = find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_gap, &g, &t);
		if (!ret)
			ret = insert_extent(fs, &g, &t, n);
	}
	return ret;
}

/* The top directory's last DIR_INDEX (pass 1 records its key, pass 2 finds it). */
static bool match_last_index(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			     uint32_t sz, int slot, void *arg)
{
	struct btk_key *last = arg;
	(void)fs, (void)p, (void)sz, (void)slot;
	if (k->objectid != 256 || k->type != BTRFS_DIR_INDEX_KEY)
		return false;
	if (last->type == 0xff)
		return !btk_key_cmp(k, last + 1);
	*last = *k;
	return false;
}
static int k_dup_name(struct btk_fs *fs, const char *n)
{
	/* a second DIR_INDEX (the next index) naming the same inode by the same name */
	struct btk_key keys[2] = {{0, 0, 0}, {0, 0, 0}};
	struct btk_key from = {256, BTRFS_DIR_INDEX_KEY, 0};
	struct target t;
	int ret = find_item(fs, fs_tree, &from, match_last_index, keys, &t);
	if (ret != -ENOENT || keys[0].type != BTRFS_DIR_INDEX_KEY)
		return ret ? ret : -ENOENT;
	keys[1] = keys[0];
	keys[0].type = 0xff;
	ret = find_item(fs, fs_tree, &from, match_last_index, keys, &t);
	if (ret)
		return ret;
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	struct btk_key key = t.key;
	key.offset++;
	uint32_t size = btk_le32(item_at(buf, t.slot)->size);
	uint8_t *copy = malloc(size);
	if (!copy) {
		free(buf);
		return -ENOMEM;
	}
	if (!ret) {
		memcpy(copy, item_data(buf, t.slot), size);
		ret = leaf_insert(fs, buf, t.slot + 1, &key, copy, size);
	}
	if (!ret)
		ret = write_block(fs, t.bytenr, buf);
	free(copy);
	free(buf);
	if (!ret)
		printf("%s: block %llu: DIR_INDEX (256 96 %llu) copied to index %llu\n", n,
		       (unsigned long long)t.bytenr, (unsigned long long)t.key.offset,
		       (unsigned long long)key.offset);
	return ret;
}

/* An extent item whose first two inline refs have one type (and differ): where they are. */
struct ref_pair {
	uint32_t at0, at1, len;
};
static bool match_ref_pair(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			   uint32_t sz, int slot, void *arg)
{
	struct ref_pair *rp = arg;
	struct btk_extent_head h;
	struct btk_inline_iter it;
	struct btk_extent_ref a, b;
	(void)fs, (void)slot;
	if ((k->type != BTRFS_EXTENT_ITEM_KEY && k->type != BTRFS_METADATA_ITEM_KEY) ||
	    btk_extent_head_parse(k, p, sz, &h))
		return false;
	btk_inline_iter_init(&it, p, sz, h.refs_at);
	if (btk_inline_next(&it, &a) != 1)
		return false;
	rp->at0 = it.at;
	rp->len = it.len;
	if (btk_inline_next(&it, &b) != 1 || a.type != b.type ||
	    a.type == BTRFS_EXTENT_OWNER_REF_KEY)
		return false;
	rp->at1 = it.at;
	return memcmp(p + rp->at0, p + rp->at1, rp->len) != 0;
}
static int k_inline_order(struct btk_fs *fs, const char *n)
{
	struct ref_pair rp;
	struct target t;
	int ret = find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_ref_pair, &rp, &t);
	if (ret)
		return ret;
	uint8_t *buf = malloc(fs->nodesize), tmp[64];
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	if (!ret && rp.len <= sizeof(tmp)) {
		uint8_t *d = item_data(buf, t.slot);
		memcpy(tmp, d + rp.at0, rp.len);
		memcpy(d + rp.at0, d + rp.at1, rp.len);
		memcpy(d + rp.at1, tmp, rp.len);
		ret = write_block(fs, t.bytenr, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: extent item (%llu %u %llu): its first two inline refs swapped\n", n,
		       (unsigned long long)t.key.objectid, t.key.type,
		       (unsigned long long)t.key.offset);
	return ret;
}

/* First item of a subvolume's log tree at or after key: *out gets its bytes. */
static int log_item(struct btk_fs *fs, const struct btk_key *key, struct btk_key *found,
		    uint8_t *out, uint32_t *size, uint64_t *subvol)
{
	struct btk_root lrt, lr = {.objectid = BTRFS_TREE_LOG_OBJECTID};
	struct btk_path p;
	struct btk_key k = {BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	uint32_t sz;
	int ret = btk_root_find(fs, BTRFS_TREE_LOG_OBJECTID, &lrt);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &lrt, &k, &p);
	const uint8_t *d = ret ? NULL : btk_path_data(&p, &sz);
	if (d) {
		btk_path_key(&p, &k);
		if (k.type != BTRFS_ROOT_ITEM_KEY || sz < sizeof(struct btrfs_root_item))
			ret = -ENOENT;
		lr.bytenr = BTK_GET(struct btrfs_root_item, d, bytenr);
		lr.generation = BTK_GET(struct btrfs_root_item, d, generation);
		lr.level = BTK_GET(struct btrfs_root_item, d, level);
		if (subvol)
			*subvol = k.offset;
	}
	btk_path_release(&p);
	if (ret)
		return ret < 0 ? ret : -ENOENT;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &lr, key, &p);
	if (!ret) {
		d = btk_path_data(&p, &sz);
		btk_path_key(&p, found);
		if (found->type != key->type || sz > *size)
			ret = -ENOENT;
		else
			memcpy(out, d, sz), *size = sz;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : ret ? -ENOENT : 0;
}
static int k_log_csum(struct btk_fs *fs, const char *n)
{
	/* the log's checksums of a logged extent also in the csum tree: data that only the
	 * log's file extents use has checksums (valid until the log is replayed) */
	struct btk_key from = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0}, key;
	uint8_t item[4096];
	uint32_t size = sizeof(item);
	int ret = log_item(fs, &from, &key, item, &size, NULL);
	if (ret)
		return ret;
	struct btk_root cr;
	struct btk_path p;
	if ((ret = btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &cr)))
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &cr, &key, &p);
	if (ret == 0) {
		btk_path_release(&p);
		return btk_err(EEXIST, "the csum tree has that item already");
	}
	if (ret < 0) {
		btk_path_release(&p);
		return ret;
	}
	uint64_t leaf = p.nodes[0]->bytenr;
	int slot = p.slots[0];
	btk_path_release(&p);
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
	if (!ret)
		ret = leaf_insert(fs, buf, slot, &key, item, size);
	if (!ret)
		ret = write_block(fs, leaf, buf);
	free(buf);
	if (!ret)
		printf("%s: log csum item (%llu %u %llu) copied into the csum tree leaf %llu\n", n,
		       (unsigned long long)key.objectid, key.type, (unsigned long long)key.offset,
		       (unsigned long long)leaf);
	return ret;
}

static uint64_t super_used_delta;
static void edit_bytes_used(struct btk_super *sb)
{
	btk_put64(sb->bytes_used, btk_le64(sb->bytes_used) + super_used_delta);
}

struct bg_at {
	uint64_t bytenr;
};
static bool match_bg_at(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			int slot, void *arg)
{
	const struct bg_at *a = arg;
	(void)fs, (void)p, (void)sz, (void)slot;
	return k->type == BTRFS_BLOCK_GROUP_ITEM_KEY && k->objectid <= a->bytenr &&
	       a->bytenr < k->objectid + k->offset;
}

/* The first regular file extent with data of the first log tree (inodes 256-100000). */
static int log_file_extent(struct btk_fs *fs, struct btk_key *key, struct btk_file_extent *fe,
			   uint64_t *subvol)
{
	uint8_t item[256];

	for (uint64_t ino = 256; ino < 100000; ino++) {
		struct btk_key from = {ino, BTRFS_EXTENT_DATA_KEY, 0};
		uint32_t size = sizeof(item);
		key->objectid = 0;
		int ret = log_item(fs, &from, key, item, &size, subvol);
		if (ret == -ENOENT && key->objectid > ino)
			ino = key->objectid - 1; /* the next inode with items */
		if (ret == -ENOENT)
			continue;
		if (ret)
			return ret;
		if (key->objectid == ino &&
		    btk_file_extent_item_parse(item, size, key->offset, fe) == BTK_FE_WHOLE &&
		    fe->type == BTRFS_FILE_EXTENT_REG && fe->disk_bytenr)
			return 0;
	}
	return -ENOENT;
}

static int k_log_extent(struct btk_fs *fs, const char *n)
{
	/* an extent item (one data ref, as the log's file extent names it) for data that only a
	 * log tree's file extent uses, with the block group's and the superblock's used bytes
	 * grown to match and the log's checksums in the csum tree: the state of an extent
	 * whose only user is logged, valid until the log is replayed */
	struct btk_key fk;
	struct btk_file_extent fe;
	uint64_t subvol = 0;
	int ret = log_file_extent(fs, &fk, &fe, &subvol);
	if (ret)
		return ret;
	uint8_t item[sizeof(struct btrfs_extent_item) + 1 + sizeof(struct btrfs_extent_data_ref)];
	memset(item, 0, sizeof(item));
	BTK_PUT(struct btrfs_extent_item, item, refs, 1);
	BTK_PUT(struct btrfs_extent_item, item, generation, fs->generation);
	BTK_PUT(struct btrfs_extent_item, item, flags, BTRFS_EXTENT_FLAG_DATA);
	uint8_t *r = item + sizeof(struct btrfs_extent_item);
	r[0] = BTRFS_EXTENT_DATA_REF_KEY;
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, root, subvol);
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, objectid, fk.objectid);
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, offset, fk.offset - fe.extent_offset);
	BTK_PUT(struct btrfs_extent_data_ref, r + 1, count, 1);
	struct btk_key key = {fe.disk_bytenr, BTRFS_EXTENT_ITEM_KEY, fe.disk_num_bytes};
	struct btk_root er;
	struct btk_path p;
	if ((ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &er)))
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &er, &key, &p);
	if (ret <= 0) {
		btk_path_release(&p);
		return ret ? ret : btk_err(EEXIST, "the extent tree has that item already");
	}
	uint64_t leaf = p.nodes[0]->bytenr;
	int slot = p.slots[0];
	btk_path_release(&p);
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
	if (!ret)
		ret = leaf_insert(fs, buf, slot, &key, item, sizeof(item));
	if (!ret)
		ret = write_block(fs, leaf, buf);
	free(buf);
	struct bg_at at = {fe.disk_bytenr};
	struct target t;
	uint64_t bgt = btk_le64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
			   ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			   : BTRFS_EXTENT_TREE_OBJECTID;
	if (!ret)
		ret = find_item(fs, bgt, NULL, match_bg_at, &at, &t);
	if (!ret)
		ret = apply(fs, &t, OP_ADD, offsetof(struct btrfs_block_group_item, used), 8,
			    (int64_t)fe.disk_num_bytes, n);
	super_used_delta = fe.disk_num_bytes;
	if (!ret)
		ret = super_edit(fs, edit_bytes_used);
	if (!ret)
		printf("%s: extent item (%llu %u %llu) for root %llu inode %llu offset %llu of the "
		       "log\n",
		       n, (unsigned long long)key.objectid, key.type,
		       (unsigned long long)key.offset, (unsigned long long)subvol,
		       (unsigned long long)fk.objectid, (unsigned long long)fk.offset);
	return ret ? ret : k_log_csum(fs, n);
}

static int k_leaf_gap(struct btk_fs *fs, const char *n)
{
	/* the fs tree's first leaf: its last item's data moved 8 bytes lower (offset with it),
	 * so nothing decodes differently but the data is no longer packed: a layout problem */
	uint64_t leaf;
	int ret = fs_leaf(fs, &leaf);
	if (ret)
		return ret;
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
	uint32_t nr = btk_le32(((struct btk_header *)buf)->nritems);
	uint32_t floor = nr * sizeof(struct btk_item);
	if (!ret && nr) {
		struct btk_item *it = item_at(buf, (int)nr - 1);
		uint32_t off = btk_le32(it->offset), sz = btk_le32(it->size);
		if (off < floor + 8) {
			ret = btk_err(ENOSPC, "no free space below the last item");
		} else {
			uint8_t *data0 = buf + sizeof(struct btk_header);
			memmove(data0 + off - 8, data0 + off, sz);
			btk_put32(it->offset, off - 8);
			ret = write_block(fs, leaf, buf);
		}
	}
	free(buf);
	if (!ret)
		printf("%s: leaf %llu: item %u data moved 8 bytes down (a gap above it)\n", n,
		       (unsigned long long)leaf, nr - 1);
	return ret;
}

/* Inserts an empty item with key into tree `tree` (a leaf with room, not at slot 0). */
static int insert_empty(struct btk_fs *fs, uint64_t tree, const struct btk_key *key)
{
	struct btk_root r;
	struct btk_path p;
	int ret = btk_root_find(fs, tree, &r);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &r, key, &p);
	uint64_t leaf = ret == 1 ? p.nodes[0]->bytenr : 0;
	int slot = p.slots[0];
	btk_path_release(&p);
	if (ret != 1)
		return ret < 0 ? ret : -EEXIST;
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
	if (!ret)
		ret = leaf_insert(fs, buf, slot, key, NULL, 0);
	if (!ret)
		ret = write_block(fs, leaf, buf);
	free(buf);
	return ret;
}

/* Every item of objectid `ino` of the fs tree (types lo..hi), and exact keys. */
struct obj_items {
	uint64_t ino;
	uint8_t lo, hi;
};
static bool match_obj(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		      int slot, void *arg)
{
	const struct obj_items *o = arg;
	(void)fs, (void)p, (void)sz, (void)slot;
	return k->objectid == o->ino && k->type >= o->lo && k->type <= o->hi;
}
/* Deletes the items of ino with types lo..hi; how many. */
static int drop_items(struct btk_fs *fs, uint64_t ino, uint8_t lo, uint8_t hi, const char *n)
{
	struct obj_items o = {ino, lo, hi};
	struct btk_key from = {ino, lo, 0};
	struct target t;
	int count = 0;
	while (count < 1000 && !find_item(fs, fs_tree, &from, match_obj, &o, &t) &&
	       !apply(fs, &t, OP_DELETE, 0, 0, 0, n))
		count++;
	return count;
}
struct dir_pick {
	uint64_t dir, child, parent_index, child_index;
	uint32_t name_hash;
	uint16_t name_len;
};
/* The first DIR_INDEX of a directory other than the top one (use an image whose first
 * subdirectory holds one file). */
static bool match_lone_entry(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			     uint32_t sz, int slot, void *arg)
{
	struct dir_pick *d = arg;
	(void)fs, (void)slot;
	if (k->type != BTRFS_DIR_INDEX_KEY || k->objectid <= 256 ||
	    sz < sizeof(struct btrfs_dir_item))
		return false;
	struct btk_key loc;
	btk_disk_to_key((const struct btk_disk_key *)p, &loc);
	if (loc.type != BTRFS_INODE_ITEM_KEY)
		return false;
	d->dir = k->objectid;
	d->child = loc.objectid;
	d->child_index = k->offset;
	d->name_len = BTK_GET(struct btrfs_dir_item, p, name_len);
	return true;
}
static int k_orphan_dir(struct btk_fs *fs, const char *n)
{
	/* a directory being deleted (unlinked, nlink 0, on the orphan list) whose child is gone
	 * already while the dir's own entry for it is partly dropped (its DIR_INDEX): the state
	 * an interrupted removal leaves; btrfs check passes it */
	struct dir_pick d = {0};
	struct btk_key from = {257, 0, 0};
	struct target t;
	int ret = find_item(fs, fs_tree, &from, match_lone_entry, &d, &t);
	if (ret)
		return ret;
	/* the child: every item */
	if (!drop_items(fs, d.child, 0, 255, n))
		return -ENOENT;
	/* the dir's index entry for it: dropped first by a truncation (highest keys first) */
	drop_items(fs, d.dir, BTRFS_DIR_INDEX_KEY, BTRFS_DIR_INDEX_KEY, n);
	/* the dir's name in the top directory and its inode ref: unlinked */
	struct btk_key ref = {d.dir, BTRFS_INODE_REF_KEY, 256};
	struct want w = {.type = BTRFS_INODE_REF_KEY, .objectid = d.dir, .file_extent_type = -1};
	if ((ret = find_item(fs, fs_tree, &ref, match_want, &w, &t)))
		return ret;
	uint8_t rb[sizeof(struct btrfs_inode_ref) + 255];
	struct btk_path p;
	struct btk_root root;
	btk_root_find(fs, fs_tree, &root);
	btk_path_init(&p);
	ret = btk_search(fs, &root, &ref, &p);
	uint32_t rsz = 0;
	if (ret == 0) {
		const uint8_t *rd = btk_path_data(&p, &rsz);
		memcpy(rb, rd, rsz < sizeof(rb) ? rsz : sizeof(rb));
	}
	btk_path_release(&p);
	if (ret)
		return ret < 0 ? ret : -ENOENT;
	uint64_t pidx = BTK_GET(struct btrfs_inode_ref, rb, index);
	uint16_t nl = BTK_GET(struct btrfs_inode_ref, rb, name_len);
	const uint8_t *name = rb + sizeof(struct btrfs_inode_ref);
	struct btk_key k1 = {256, BTRFS_DIR_ITEM_KEY, btk_name_hash((const char *)name, nl)};
	struct btk_key k2 = {256, BTRFS_DIR_INDEX_KEY, pidx};
	struct btk_key *ks[] = {&ref, &k1, &k2};
	for (int i = 0; i < 3; i++) {
		struct want wk = {
		    .type = ks[i]->type, .objectid = ks[i]->objectid, .file_extent_type = -1};
		struct btk_key fk = *ks[i];
		/* exact key: search from it, first match of its type and objectid */
		if ((ret = find_item(fs, fs_tree, &fk, match_want, &wk, &t)))
			return ret;
		if (btk_key_cmp(&t.key, ks[i]))
			return btk_err(ENOENT, "key not found");
		if ((ret = apply(fs, &t, OP_DELETE, 0, 0, 0, n)))
			return ret;
	}
	/* the top directory's size loses the name twice; the dir: nlink 0, orphan item */
	struct want wt = {.type = BTRFS_INODE_ITEM_KEY, .objectid = 256, .file_extent_type = -1};
	if ((ret = find_item(fs, fs_tree, &from256, match_want, &wt, &t)) ||
	    (ret = apply(fs, &t, OP_ADD, offsetof(struct btrfs_inode_item, size), 8,
			 -2 * (int64_t)nl, n)))
		return ret;
	struct btk_key dk = {d.dir, 0, 0};
	struct want wd = {.type = BTRFS_INODE_ITEM_KEY, .objectid = d.dir, .file_extent_type = -1};
	if ((ret = find_item(fs, fs_tree, &dk, match_want, &wd, &t)) ||
	    (ret = apply(fs, &t, OP_ADD, offsetof(struct btrfs_inode_item, nlink), 4, -1, n)))
		return ret;
	/* rmdir leaves the size 0 (the entries left are being dropped) */
	wd.nth = 0;
	if ((ret = find_item(fs, fs_tree, &dk, match_want, &wd, &t)) ||
	    (ret = apply(fs, &t, OP_ADD, offsetof(struct btrfs_inode_item, size), 8,
			 -2 * (int64_t)d.name_len, n)))
		return ret;
	struct btk_key ok = {BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, d.dir};
	if ((ret = insert_empty(fs, fs_tree, &ok)))
		return ret;
	printf("%s: directory %llu unlinked, nlink 0, orphan item; child %llu gone, its dir "
	       "index dropped, its dir item kept\n",
	       n, (unsigned long long)d.dir, (unsigned long long)d.child);
	return 0;
}

static int k_nodatasum(struct btk_fs *fs, const char *n)
{
	/* a checksummed file claims NODATASUM: its checksums become forbidden */
	struct want w = {.type = BTRFS_INODE_ITEM_KEY,
			 .regular = true,
			 .file_extent_type = -1,
			 .min_nbytes = 65536};
	struct btk_key from = {257, 0, 0};
	return k_simple(fs, n, fs_tree, &w, &from, OP_ADD, offsetof(struct btrfs_inode_item, flags),
			8, 1);
}

static bool match_meta(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		       int slot, void *arg)
{
	uint64_t *nth = arg;

	(void)fs, (void)p, (void)sz, (void)slot;
	if (k->type != BTRFS_METADATA_ITEM_KEY &&
	    !(k->type == BTRFS_EXTENT_ITEM_KEY && sz >= sizeof(struct btrfs_extent_item) &&
	      (BTK_GET(struct btrfs_extent_item, p, flags) & BTRFS_EXTENT_FLAG_TREE_BLOCK)))
		return false;
	return (*nth)-- == 0;
}

/* Random damage for robustness runs (not a semantic case): CORRUPT_SEED picks a tree block
 * and 1-8 bytes after its header to overwrite; the checksum is fixed so the damage is read. */
static int k_fuzz(struct btk_fs *fs, const char *n)
{
	const char *env = getenv("CORRUPT_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 1, count = 0, nth;
	struct target t;
	int ret;

	srandom((unsigned)seed);
	nth = UINT64_MAX; /* count the tree blocks first */
	find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_meta, &nth, &t);
	count = UINT64_MAX - nth;
	if (!count)
		return -ENOENT;
	nth = (uint64_t)random() % count;
	ret = find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_meta, &nth, &t);
	if (ret)
		return ret;
	uint64_t bytenr = t.key.objectid;
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = btk_read_logical(fs, bytenr, buf, fs->nodesize);
	int nbytes = 1 + (int)(random() % 8);
	for (int i = 0; !ret && i < nbytes; i++) {
		/* half the time aim at the item headers / key pointers, where damage is subtle */
		uint32_t span = random() % 2 ? 25 * 8 : fs->nodesize - sizeof(struct btk_header);
		uint32_t off = sizeof(struct btk_header) + (uint32_t)random() % span;
		buf[off] = (uint8_t)random();
	}
	if (!ret)
		ret = write_block(fs, bytenr, buf);
	free(buf);
	if (!ret)
		printf("%s: seed %llu: %d bytes of tree block %llu overwritten\n", n,
		       (unsigned long long)seed, nbytes, (unsigned long long)bytenr);
	return ret;
}

/* A value for a fuzzed field of width bytes that held old: random, a flipped bit, 0, all
 * ones, one more or less (the kinds of values fuzzers write). */
static uint64_t fuzz_value(uint64_t old, int width)
{
	uint64_t mask = width >= 8 ? UINT64_MAX : (1ULL << (8 * width)) - 1;
	uint64_t r = ((uint64_t)random() << 62) ^ ((uint64_t)random() << 31) ^ (uint64_t)random();

	switch (random() % 6) {
	case 0:
		return r & mask;
	case 1:
		return (old ^ (1ULL << (random() % (8 * width)))) & mask;
	case 2:
		return 0;
	case 3:
		return mask;
	case 4:
		return (old + 1) & mask;
	default:
		return (old - 1) & mask;
	}
}

static uint64_t get_le(const uint8_t *p, int width)
{
	uint64_t v = 0;
	for (int i = width - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, int width, uint64_t v)
{
	for (int i = 0; i < width; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Writes the field [off, +width) of buf with a fuzzed value; its description into what. */
static void fuzz_field(uint8_t *buf, uint32_t off, int width, const char *name, char *what,
		       size_t cap)
{
	uint64_t old = get_le(buf + off, width), v = fuzz_value(old, width);

	if (v == old)
		v = old ^ 1;
	put_le(buf + off, width, v);
	snprintf(what, cap, "%s (byte %u, %d bytes): %llu -> %llu", name, off, width,
		 (unsigned long long)old, (unsigned long long)v);
}

static bool match_meta_of(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			  int slot, void *arg);

/* Fuzz-image damage (bench/fuzz-repair.sh), the way fuzzed test images are made: one field
 * given a fuzzed value, the checksum fixed so that the damage is read. CORRUPT_SEED seeds it;
 * CORRUPT_FUZZ says where: hdr (a tree block header field), item (a leaf item header or node
 * pointer field: key objectid/type/offset, data offset or size, block pointer, generation), body
 * (an integer in an item's data), super (a field of the primary superblock), sys (bytes of the
 * system chunk array, in the primary superblock). Tree blocks are picked among the metadata
 * records of the extent tree, of tree CORRUPT_TREE when set (its header owner); the block is
 * written to its first copy only when CORRUPT_ONE_COPY=1 (else to every copy). */
static int k_fuzz_field(struct btk_fs *fs, const char *n)
{
	const char *env = getenv("CORRUPT_SEED"), *mode = getenv("CORRUPT_FUZZ");
	const char *tree_env = getenv("CORRUPT_TREE"), *one_env = getenv("CORRUPT_ONE_COPY");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 1;
	uint64_t want_tree = tree_env ? strtoull(tree_env, NULL, 0) : 0;
	bool one = one_env && *one_env == '1';
	char what[256] = "";
	int ret = 0;

	srandom((unsigned)seed);
	if (!mode)
		mode = "item";
	if (!strcmp(mode, "super") || !strcmp(mode, "sys")) {
		static const struct {
			const char *name;
			uint32_t off;
			int width;
		} f[] = {
#define SF(x, w) {#x, (uint32_t)offsetof(struct btk_super, x), w}
		    SF(bytenr, 8),
		    SF(flags, 8),
		    SF(generation, 8),
		    SF(root, 8),
		    SF(chunk_root, 8),
		    SF(log_root, 8),
		    SF(total_bytes, 8),
		    SF(bytes_used, 8),
		    SF(root_dir_objectid, 8),
		    SF(num_devices, 8),
		    SF(sectorsize, 4),
		    SF(nodesize, 4),
		    SF(leafsize, 4),
		    SF(stripesize, 4),
		    SF(sys_chunk_array_size, 4),
		    SF(chunk_root_generation, 8),
		    SF(compat_ro_flags, 8),
		    SF(incompat_flags, 8),
		    SF(csum_type, 2),
		    SF(root_level, 1),
		    SF(chunk_root_level, 1),
		    SF(log_root_level, 1),
		    SF(dev_item, 8),
		    SF(cache_generation, 8),
		    SF(uuid_tree_generation, 8),
#undef SF
		};
		struct btk_super_copy copies[BTK_SUPER_MIRRORS];
		struct btk_dev *dev = fs->devs[0].dev;
		if ((ret = btk_super_read_all(dev, copies)) < 0)
			return ret;
		for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
			if (!copies[m].valid || (one && m))
				continue;
			struct btk_super *sb = &copies[m].sb;
			uint8_t *b = (uint8_t *)sb;
			srandom((unsigned)seed); /* the same change on every copy */
			if (!strcmp(mode, "super")) {
				int i = (int)(random() % (sizeof(f) / sizeof(f[0])));
				fuzz_field(b, f[i].off, f[i].width, f[i].name, what, sizeof(what));
			} else {
				uint32_t size = btk_le32(sb->sys_chunk_array_size);
				if (!size || size > BTK_SYS_ARRAY_SIZE)
					return -ENOENT;
				int w = 1 << (random() % 4);
				uint32_t off = (uint32_t)random() % size;
				if (off + (uint32_t)w > size)
					off = size - (uint32_t)w;
				fuzz_field(
				    b, (uint32_t)offsetof(struct btk_super, sys_chunk_array) + off,
				    w, "sys_chunk_array", what, sizeof(what));
			}
			btk_super_csum_fill(sb);
			if ((ret = btk_dev_write(dev, sb, sizeof(*sb), copies[m].offset)))
				return ret;
		}
		printf("%s: seed %llu: superblock %s%s\n", n, (unsigned long long)seed, what,
		       one ? " (primary copy)" : " (every valid copy)");
		return 0;
	}
	/* a tree block: count the candidates, pick one */
	struct target t;
	uint64_t pick[2] = {UINT64_MAX, want_tree}, count, nth;
	find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_meta_of, pick, &t);
	count = UINT64_MAX - pick[0];
	if (!count)
		return -ENOENT;
	nth = (uint64_t)random() % count;
	pick[0] = nth;
	if ((ret = find_item(fs, BTRFS_EXTENT_TREE_OBJECTID, NULL, match_meta_of, pick, &t)))
		return ret;
	uint64_t bytenr = t.key.objectid;
	uint8_t *buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	if ((ret = btk_read_logical(fs, bytenr, buf, fs->nodesize))) {
		free(buf);
		return ret;
	}
	struct btk_header *h = (struct btk_header *)buf;
	uint32_t nr = btk_le32(h->nritems), hs = (uint32_t)sizeof(struct btk_header);
	bool leaf = h->level == 0;
	uint64_t owner = btk_le64(h->owner);
	unsigned level = h->level;
	uint32_t isz = leaf ? (uint32_t)sizeof(struct btk_item) : 33;
	if (nr * isz + hs > fs->nodesize)
		nr = 0;
	if (!strcmp(mode, "hdr") || !nr) {
		static const struct {
			const char *name;
			uint32_t off;
			int width;
		} f[] = {
#define HF(x, w) {"header " #x, (uint32_t)offsetof(struct btk_header, x), w}
		    HF(bytenr, 8),  HF(flags, 8), HF(generation, 8), HF(owner, 8),
		    HF(nritems, 4), HF(level, 1), HF(fsid, 1),	     HF(chunk_tree_uuid, 1),
#undef HF
		};
		int i = (int)(random() % (sizeof(f) / sizeof(f[0])));
		fuzz_field(buf, f[i].off, f[i].width, f[i].name, what, sizeof(what));
	} else if (!strcmp(mode, "item") || !leaf) {
		static const struct {
			const char *name;
			uint32_t off;
			int width;
		} li[] = {{"key objectid", 0, 8},
			  {"key type", 8, 1},
			  {"key offset", 9, 8},
			  {"data offset", 17, 4},
			  {"data size", 21, 4}},
		  np[] = {{"key objectid", 0, 8},
			  {"key type", 8, 1},
			  {"key offset", 9, 8},
			  {"block pointer", 17, 8},
			  {"generation", 25, 8}};
		uint32_t slot = (uint32_t)random() % nr;
		int i = (int)(random() % 5);
		char name[64];
		snprintf(name, sizeof(name), "slot %u %s", slot, leaf ? li[i].name : np[i].name);
		fuzz_field(buf, hs + slot * isz + (leaf ? li[i].off : np[i].off),
			   leaf ? li[i].width : np[i].width, name, what, sizeof(what));
	} else { /* body */
		uint32_t slot = (uint32_t)random() % nr;
		struct btk_item *it = item_at(buf, (int)slot);
		uint32_t off = btk_le32(it->offset), size = btk_le32(it->size);
		int w = 1 << (random() % 4);
		if (!size || off + size > fs->nodesize - hs || size < (uint32_t)w) {
			free(buf);
			return -ENOENT;
		}
		uint32_t at = hs + off + (uint32_t)random() % (size - (uint32_t)w + 1);
		char name[64];
		snprintf(name, sizeof(name), "slot %u data", slot);
		fuzz_field(buf, at, w, name, what, sizeof(what));
	}
	if (one) {
		uint8_t sum[BTK_CSUM_MAX];
		struct btk_phys ph[8];
		int np = 0;
		btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
		memset(buf, 0, BTK_CSUM_MAX);
		memcpy(buf, sum, (size_t)fs->csum_size);
		ret = btk_map_logical(fs, bytenr, ph, 8, &np, NULL);
		if (!ret && np && ph[0].dev)
			ret = btk_dev_write(ph[0].dev, buf, fs->nodesize, ph[0].physical);
	} else {
		ret = write_block(fs, bytenr, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: seed %llu: tree block %llu (owner %llu, level %u): %s%s\n", n,
		       (unsigned long long)seed, (unsigned long long)bytenr,
		       (unsigned long long)owner, level, what, one ? " (first copy)" : "");
	return ret;
}

/* match_meta with an owner filter: arg {nth, tree (0: any)}; the owner is the block
 * header's. */
static bool match_meta_of(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			  int slot, void *arg)
{
	uint64_t *a = arg, nth = 0;

	if (!match_meta(fs, k, p, sz, slot, &nth))
		return false;
	if (a[1]) {
		uint8_t hdr[sizeof(struct btk_header)];
		if (btk_read_logical(fs, k->objectid, hdr, sizeof(hdr)) ||
		    btk_le64(((struct btk_header *)hdr)->owner) != a[1])
			return false;
	}
	return a[0]-- == 0;
}

struct cache_pick {
	int nth;
	uint64_t ino, gen;
};

static bool match_cache_hdr(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			    uint32_t sz, int slot, void *arg)
{
	struct cache_pick *c = arg;

	(void)fs, (void)slot;
	if (k->objectid != BTRFS_FREE_SPACE_OBJECTID || k->type != 0 ||
	    sz < sizeof(struct btrfs_free_space_header) ||
	    !BTK_GET(struct btrfs_free_space_header, p, num_entries) ||
	    BTK_GET(struct btrfs_free_space_header, p, num_bitmaps) || c->nth-- > 0)
		return false;
	struct btk_key loc;
	btk_disk_to_key((const struct btk_disk_key *)p, &loc);
	c->ino = loc.objectid;
	c->gen = BTK_GET(struct btrfs_free_space_header, p, generation);
	return true;
}

static bool match_ino_item(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			   uint32_t sz, int slot, void *arg)
{
	(void)fs, (void)p, (void)slot;
	return k->objectid == *(uint64_t *)arg && k->type == BTRFS_INODE_ITEM_KEY &&
	       sz >= sizeof(struct btrfs_inode_item);
}

static bool match_ino_extent(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			     uint32_t sz, int slot, void *arg)
{
	(void)fs, (void)p, (void)slot;
	return k->objectid == *(uint64_t *)arg && k->type == BTRFS_EXTENT_DATA_KEY &&
	       k->offset == 0 && sz >= sizeof(struct btrfs_file_extent_item);
}

/* Item data of target t, copied (size bytes at most). */
static int item_copy(struct btk_fs *fs, const struct target *t, void *out, size_t size)
{
	struct btk_block *b;
	int ret = btk_block_read(fs, t->bytenr, NULL, &b);

	if (ret)
		return ret;
	uint32_t sz = btk_leaf_size(b, t->slot);
	memcpy(out, btk_leaf_data(b, t->slot), sz < size ? sz : size);
	btk_block_put(b);
	return 0;
}

/* The first entry of a v1 space cache moves one sector up; the page checksum is recomputed
 * and the amount of free space kept, so that the kernel would trust (and misuse) the cache.
 * Takes the first cache the kernel would load (generations agree, page 0 on disk). */
static int k_cache_entry(struct btk_fs *fs, const char *n)
{
	uint8_t ii[sizeof(struct btrfs_inode_item)], fe[sizeof(struct btrfs_file_extent_item)];
	uint8_t page[4096];
	uint64_t disk = 0, pages = 0;
	struct cache_pick pick;
	struct target t;
	int ret;

	for (int nth = 0;; nth++) {
		pick = (struct cache_pick){.nth = nth};
		ret = find_item(fs, BTRFS_ROOT_TREE_OBJECTID, NULL, match_cache_hdr, &pick, &t);
		if (ret)
			return ret;
		if (find_item(fs, BTRFS_ROOT_TREE_OBJECTID, NULL, match_ino_item, &pick.ino, &t) ||
		    item_copy(fs, &t, ii, sizeof(ii)) ||
		    BTK_GET(struct btrfs_inode_item, ii, generation) != pick.gen)
			continue;
		pages = BTK_GET(struct btrfs_inode_item, ii, size) / sizeof(page);
		if (!pages || pages * 4 + 8 + 17 > sizeof(page) ||
		    find_item(fs, BTRFS_ROOT_TREE_OBJECTID, NULL, match_ino_extent, &pick.ino,
			      &t) ||
		    item_copy(fs, &t, fe, sizeof(fe)) ||
		    BTK_GET(struct btrfs_file_extent_item, fe, type) != BTRFS_FILE_EXTENT_REG ||
		    BTK_GET(struct btrfs_file_extent_item, fe, num_bytes) < sizeof(page))
			continue;
		disk = BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr) +
		       BTK_GET(struct btrfs_file_extent_item, fe, offset);
		break;
	}
	ret = btk_read_logical(fs, disk, page, sizeof(page));
	if (ret)
		return ret;
	uint8_t *entry = page + pages * 4 + 8;
	/* same amount of free space, one sector later: the kernel checks only the amount */
	btk_put64(entry, btk_le64(entry) + fs->sectorsize);
	uint32_t off = (uint32_t)pages * 4;
	btk_put32(page, ~btk_crc32c(~0U, page + off, sizeof(page) - off));
	struct btk_phys ph[8];
	int cnt = 0;
	ret = btk_map_logical(fs, disk, ph, 8, &cnt, NULL);
	for (int i = 0; !ret && i < cnt; i++)
		if (ph[i].dev)
			ret = btk_dev_write(ph[i].dev, page, sizeof(page), ph[i].physical);
	if (!ret)
		printf("%s: cache inode %llu: first entry moved to [%llu, +%llu)\n", n,
		       (unsigned long long)pick.ino, (unsigned long long)btk_le64(entry),
		       (unsigned long long)btk_le64(entry + 8));
	return ret;
}

/* ---- what an interrupted relocation leaves (refusal tests of btk-resize) ---- */

/* Deletes the balance item: what is left looks like a relocation a crash stopped in a shrink
 * (btrfs filesystem resize relocates without a balance item). */
static int k_no_balance(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_TEMPORARY_ITEM_KEY,
			 .objectid = BTRFS_BALANCE_OBJECTID,
			 .not_first = true,
			 .file_extent_type = -1};
	struct btk_key from = {BTRFS_BALANCE_OBJECTID, 0, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_DELETE, 0, 0, 0);
}

/* Inserts (key, data) into the leaf image after every smaller key. */
static int leaf_insert_sorted(struct btk_fs *fs, uint8_t *buf, const struct btk_key *key,
			      const uint8_t *data, uint32_t size)
{
	int pos = 0, nr = (int)btk_le32(((struct btk_header *)buf)->nritems);

	for (; pos < nr; pos++) {
		struct btk_key k;
		btk_disk_to_key(&item_at(buf, pos)->key, &k);
		if (btk_key_cmp(&k, key) > 0)
			break;
	}
	return leaf_insert(fs, buf, pos, key, data, size);
}

/* The data relocation inode a relocation creates first (the kernel's: regular, mode 0600, no
 * links, NOCOMPRESS|PREALLOC) and the orphan item naming it, as a relocation stopped before
 * it moved any data leaves them: inode 257 of the data reloc tree, whose root is one leaf. */
static int k_reloc_inode(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_INODE_ITEM_KEY,
			 .objectid = BTRFS_FIRST_FREE_OBJECTID,
			 .file_extent_type = -1};
	uint8_t ii[sizeof(struct btrfs_inode_item)] = {0};
	struct btk_key ik = {BTRFS_FIRST_FREE_OBJECTID + 1, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_key ok = {BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ik.objectid};
	struct btk_root rt;
	struct target t;
	uint8_t *buf;
	int ret = find_item(fs, BTRFS_DATA_RELOC_TREE_OBJECTID, &from256, match_want, &w, &t);

	if (!ret)
		ret = btk_root_find(fs, BTRFS_DATA_RELOC_TREE_OBJECTID, &rt);
	if (ret)
		return ret;
	if (rt.bytenr != t.bytenr)
		return btk_err(ENOSPC, "the data reloc tree is more than one leaf");
	BTK_PUT(struct btrfs_inode_item, ii, generation, 1);
	BTK_PUT(struct btrfs_inode_item, ii, transid, btk_le64(fs->sb.generation));
	BTK_PUT(struct btrfs_inode_item, ii, mode, 0100600);
	BTK_PUT(struct btrfs_inode_item, ii, sequence, 1);
	BTK_PUT(struct btrfs_inode_item, ii, flags, BTK_INODE_NOCOMPRESS | BTK_INODE_PREALLOC);
	if (!(buf = malloc(fs->nodesize)))
		return -ENOMEM;
	ret = btk_read_logical(fs, t.bytenr, buf, fs->nodesize);
	if (!ret)
		ret = leaf_insert_sorted(fs, buf, &ik, ii, sizeof(ii));
	if (!ret)
		ret = leaf_insert_sorted(fs, buf, &ok, NULL, 0);
	if (!ret)
		ret = write_block(fs, t.bytenr, buf);
	free(buf);
	if (!ret)
		printf("%s: block %llu: inserted data reloc inode %llu and its orphan item\n", n,
		       (unsigned long long)t.bytenr, (unsigned long long)ik.objectid);
	return ret;
}

/* ---- fields only btrfs check, the kernel or nobody looked at ---- */

/* A chunk item (not SYSTEM: those are in the superblock's array too) of type `type_bit`. */
static bool match_chunk_type(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			     uint32_t sz, int slot, void *arg)
{
	(void)fs, (void)slot;
	return k->type == BTRFS_CHUNK_ITEM_KEY && sz >= sizeof(struct btrfs_chunk) &&
	       (BTK_GET(struct btrfs_chunk, p, type) & *(const uint64_t *)arg);
}
static int chunk_field(struct btk_fs *fs, const char *n, size_t field, int width, int64_t delta)
{
	uint64_t type = BTRFS_BLOCK_GROUP_DATA;
	struct target t;
	int ret = find_item(fs, BTRFS_CHUNK_TREE_OBJECTID, NULL, match_chunk_type, &type, &t);
	return ret ? ret : apply(fs, &t, OP_ADD, field, width, delta, n);
}
static int k_chunk_sector(struct btk_fs *fs, const char *n)
{
	return chunk_field(fs, n, offsetof(struct btrfs_chunk, sector_size), 4, fs->sectorsize);
}
static int k_chunk_dev_uuid(struct btk_fs *fs, const char *n)
{
	return chunk_field(
	    fs, n, offsetof(struct btrfs_chunk, stripe) + offsetof(struct btrfs_stripe, dev_uuid),
	    1, 1);
}
static int dev_item_field(struct btk_fs *fs, const char *n, size_t field)
{
	struct want w = {.type = BTRFS_DEV_ITEM_KEY, .file_extent_type = -1};
	struct btk_key from = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0};
	return k_simple(fs, n, BTRFS_CHUNK_TREE_OBJECTID, &w, &from, OP_ADD, field, 1, 1);
}
static int k_dev_item_uuid(struct btk_fs *fs, const char *n)
{
	return dev_item_field(fs, n, offsetof(struct btrfs_dev_item, uuid));
}
static int k_dev_item_fsid(struct btk_fs *fs, const char *n)
{
	return dev_item_field(fs, n, offsetof(struct btrfs_dev_item, fsid));
}
static int root_item_field(struct btk_fs *fs, const char *n, size_t field, int width, int64_t delta)
{
	struct want w = {.type = BTRFS_ROOT_ITEM_KEY, .objectid = fs_tree, .file_extent_type = -1};
	struct btk_key from = {fs_tree, BTRFS_ROOT_ITEM_KEY, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_ADD, field, width, delta);
}
static int k_fs_root_refs(struct btk_fs *fs, const char *n)
{
	return root_item_field(fs, n, offsetof(struct btrfs_root_item, refs), 4, -1);
}
static int k_root_dirid(struct btk_fs *fs, const char *n)
{
	return root_item_field(fs, n, offsetof(struct btrfs_root_item, root_dirid), 8, 1);
}
/* A fuzzed drop progress in the dev tree's root item (a tree that is never deleted). */
static int k_dev_root_drop(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_ROOT_ITEM_KEY,
			 .objectid = BTRFS_DEV_TREE_OBJECTID,
			 .file_extent_type = -1};
	struct btk_key from = {BTRFS_DEV_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	return k_simple(fs, n, BTRFS_ROOT_TREE_OBJECTID, &w, &from, OP_ADD,
			offsetof(struct btrfs_root_item, drop_progress), 8, 7318349394477056LL);
}
static int k_bg_chunk_objectid(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_BLOCK_GROUP_ITEM_KEY, .file_extent_type = -1};
	uint64_t tree = btk_le64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
			    ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			    : BTRFS_EXTENT_TREE_OBJECTID;
	return k_simple(fs, n, tree, &w, NULL, OP_ADD,
			offsetof(struct btrfs_block_group_item, chunk_objectid), 8, 1);
}
static int k_bg_len(struct btk_fs *fs, const char *n)
{
	/* the key's offset is the block group's length: the first group one sector shorter than
	 * its chunk (the key order stays: nothing else has its objectid and type) */
	struct want w = {.type = BTRFS_BLOCK_GROUP_ITEM_KEY, .file_extent_type = -1};
	uint64_t tree = btk_le64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
			    ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			    : BTRFS_EXTENT_TREE_OBJECTID;
	return k_simple(fs, n, tree, &w, NULL, OP_KEYOFF, 0, 0, -(int64_t)fs->sectorsize);
}
static int k_root_dir_ref(struct btk_fs *fs, const char *n)
{
	struct want w = {.type = BTRFS_INODE_REF_KEY, .objectid = 256, .file_extent_type = -1};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD,
			offsetof(struct btrfs_inode_ref, index), 8, 1);
}
/* An inode item of mode type `ifmt` with 0 < size < a sector (inline data). */
static bool match_small_inode(struct btk_fs *fs, const struct btk_key *k, const uint8_t *p,
			      uint32_t sz, int slot, void *arg)
{
	(void)slot;
	if (k->type != BTRFS_INODE_ITEM_KEY || sz < sizeof(struct btrfs_inode_item))
		return false;
	uint64_t size = BTK_GET(struct btrfs_inode_item, p, size);
	return (BTK_GET(struct btrfs_inode_item, p, mode) & S_IFMT) == *(const uint32_t *)arg &&
	       size > 1 && size < fs->sectorsize;
}
static int small_inode_size(struct btk_fs *fs, const char *n, uint32_t ifmt, int64_t delta)
{
	struct target t;
	int ret = find_item(fs, fs_tree, &from256, match_small_inode, &ifmt, &t);
	return ret ? ret
		   : apply(fs, &t, OP_ADD, offsetof(struct btrfs_inode_item, size), 8, delta, n);
}
static int k_symlink_size(struct btk_fs *fs, const char *n)
{
	return small_inode_size(fs, n, S_IFLNK, 1);
}
static int k_isize_inline(struct btk_fs *fs, const char *n)
{
	return small_inode_size(fs, n, S_IFREG, -1);
}
static int k_fe_disk_len(struct btk_fs *fs, const char *n)
{
	/* one file extent's disk_num_bytes a sector more than its extent's */
	struct want w = {.type = BTRFS_EXTENT_DATA_KEY, .file_extent_type = BTRFS_FILE_EXTENT_REG};
	return k_simple(fs, n, fs_tree, &w, &from256, OP_ADD,
			offsetof(struct btrfs_file_extent_item, disk_num_bytes), 8, fs->sectorsize);
}

/* Chunk tree damage that stops a reader that trusts it (the data chunk). */
static int k_chunk_profiles(struct btk_fs *fs, const char *n)
{
	return chunk_field(fs, n, offsetof(struct btrfs_chunk, type), 8,
			   BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP);
}
static int k_chunk_stripe_len0(struct btk_fs *fs, const char *n)
{
	return chunk_field(fs, n, offsetof(struct btrfs_chunk, stripe_len), 8,
			   -(int64_t)BTK_STRIPE_LEN);
}
static int k_chunk_len_unaligned(struct btk_fs *fs, const char *n)
{
	return chunk_field(fs, n, offsetof(struct btrfs_chunk, length), 8, 2048);
}
static int k_chunk_type0(struct btk_fs *fs, const char *n)
{
	return chunk_field(fs, n, offsetof(struct btrfs_chunk, type), 8, -BTRFS_BLOCK_GROUP_DATA);
}
static int k_chunk_transid(struct btk_fs *fs, const char *n)
{
	/* the chunk root's generation one past its pointer's (the superblock's) */
	uint64_t root = btk_le64(fs->sb.chunk_root);
	uint8_t *buf = malloc(fs->nodesize);
	int ret = buf ? btk_read_logical(fs, root, buf, fs->nodesize) : -ENOMEM;

	if (!ret) {
		struct btk_header *h = (struct btk_header *)buf;
		btk_put64(h->generation, btk_le64(h->generation) + 1);
		ret = write_block(fs, root, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: chunk root %llu generation + 1\n", n, (unsigned long long)root);
	return ret;
}

/* Edits the header of the fs tree's (-t) first leaf; checksum fixed, every copy. */
static int leaf_header(struct btk_fs *fs, const char *n, void (*edit)(struct btk_header *h))
{
	uint64_t leaf;
	uint8_t *buf;
	int ret = fs_leaf(fs, &leaf);

	if (ret)
		return ret;
	if (!(buf = malloc(fs->nodesize)))
		return -ENOMEM;
	ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
	if (!ret) {
		edit((struct btk_header *)buf);
		ret = write_block(fs, leaf, buf);
	}
	free(buf);
	if (!ret)
		printf("%s: leaf %llu header changed\n", n, (unsigned long long)leaf);
	return ret;
}
static void edit_flags(struct btk_header *h)
{
	btk_put64(h->flags, btk_le64(h->flags) & ~BTK_HEADER_FLAG_WRITTEN);
}
static void edit_chunk_uuid(struct btk_header *h)
{
	h->chunk_tree_uuid[5] ^= 0x5a;
}
static void edit_owner(struct btk_header *h)
{
	/* another subvolume id: an owner the walker takes, the back references do not name */
	btk_put64(h->owner, btk_le64(h->owner) + 1000);
}
static int k_tb_flags(struct btk_fs *fs, const char *n)
{
	return leaf_header(fs, n, edit_flags);
}
static int k_tb_chunk_uuid(struct btk_fs *fs, const char *n)
{
	return leaf_header(fs, n, edit_chunk_uuid);
}
static int k_tb_owner(struct btk_fs *fs, const char *n)
{
	return leaf_header(fs, n, edit_owner);
}

/* Superblock copy 1 (64 MiB) of the first device gets another label, generation kept. */
static int k_super_copy(struct btk_fs *fs, const char *n)
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	struct btk_dev *dev = fs->devs[0].dev;
	int ret = btk_super_read_all(dev, copies);

	if (ret < 0)
		return ret;
	if (!copies[1].valid)
		return btk_err(ENOENT, "no valid superblock copy 1");
	copies[1].sb.label[0] ^= 0x20;
	btk_super_csum_fill(&copies[1].sb);
	ret = btk_dev_write(dev, &copies[1].sb, sizeof(copies[1].sb), copies[1].offset);
	if (!ret)
		printf("%s: superblock copy 1 label changed, generation kept\n", n);
	return ret;
}

/* A FREE_SPACE_INFO and a bitmap of one free run for a block group past every chunk. */
static int k_fst_ghost(struct btk_fs *fs, const char *n)
{
	const struct btk_chunk *last = fs->chunks[fs->nchunks - 1];
	uint64_t start = last->logical + last->length + (1 << 20), len = 1 << 20;
	struct btk_key ik = {start, BTRFS_FREE_SPACE_INFO_KEY, len};
	struct btk_key bk = {start, BTRFS_FREE_SPACE_BITMAP_KEY, len};
	uint32_t bits = (uint32_t)(len / fs->sectorsize);
	uint8_t info[sizeof(struct btrfs_free_space_info)] = {0}, *bm = calloc(bits / 8, 1);
	struct btk_root rt;
	struct btk_path p;
	struct btk_key k = {UINT64_MAX, 0, 0};
	uint8_t *buf = malloc(fs->nodesize);
	int ret = bm && buf ? btk_root_find(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &rt) : -ENOMEM;

	if (!ret) {
		/* the last leaf: the new keys sort after every other */
		btk_path_init(&p);
		ret = btk_search_ge(fs, &rt, &k, &p);
		if (ret >= 0 && p.nodes[0]) {
			uint64_t leaf = p.nodes[0]->bytenr;
			btk_path_release(&p);
			memset(bm, 0xff, bits / 8);
			BTK_PUT(struct btrfs_free_space_info, info, extent_count, 1);
			BTK_PUT(struct btrfs_free_space_info, info, flags,
				BTRFS_FREE_SPACE_USING_BITMAPS);
			ret = btk_read_logical(fs, leaf, buf, fs->nodesize);
			if (!ret)
				ret = leaf_insert_sorted(fs, buf, &ik, info, sizeof(info));
			if (!ret)
				ret = leaf_insert_sorted(fs, buf, &bk, bm, bits / 8);
			if (!ret)
				ret = write_block(fs, leaf, buf);
			if (!ret)
				printf("%s: free space info and bitmap for [%llu, +%llu), no block "
				       "group\n",
				       n, (unsigned long long)start, (unsigned long long)len);
		} else {
			btk_path_release(&p);
			ret = ret < 0 ? ret : -ENOENT;
		}
	}
	free(bm);
	free(buf);
	return ret;
}

/* ---- valid but unusual layouts (false alarm tests) ---- */

/* Adds an empty SINGLE data chunk of 1 MiB + 4 KiB after the last chunk (logical and
 * physical): a valid chunk whose end is not 64 KiB aligned, so that the next chunk the kernel
 * allocates (at the end of the last) starts unaligned, as after btrfs-convert and a balance. */
static int k_chunk_tail(struct btk_fs *fs, const char *n)
{
	uint64_t logical = 0, physical = 1 << 20, len = (1 << 20) + fs->sectorsize;
	struct btk_wfs *w;
	struct btk_trans *t;
	int ret;

	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *ch = fs->chunks[i];
		uint64_t ssz = btk_chunk_stripe_len(ch);
		if (ch->logical + ch->length > logical)
			logical = ch->logical + ch->length;
		for (int s = 0; s < ch->num_stripes; s++)
			if (ch->stripes[s].devid == fs->devs[0].devid &&
			    ch->stripes[s].offset + ssz > physical)
				physical = ch->stripes[s].offset + ssz;
	}
	physical = (physical + (1 << 20) - 1) & ~((uint64_t)(1 << 20) - 1);
	ret = btk_write_open(fs, 0, &w);
	if (ret)
		return ret;
	ret = btk_trans_start(w, &t);
	if (!ret) {
		ret = btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, logical, physical, len);
		int r2 = btk_trans_commit(t);
		ret = ret ? ret : r2;
	}
	btk_write_close(w);
	if (!ret)
		printf("%s: data chunk [%llu, +%llu) at physical %llu\n", n,
		       (unsigned long long)logical, (unsigned long long)len,
		       (unsigned long long)physical);
	return ret;
}

static const struct kind kinds[] = {
    {"nlink", "a regular file's nlink + 1", k_nlink},
    {"nbytes", "a regular file's nbytes + 4096", k_nbytes},
    {"dir-isize", "a directory's size + 2", k_dir_isize},
    {"dir-index", "delete a DIR_INDEX item", k_dir_index},
    {"name-hash", "a DIR_ITEM key offset (name hash) + 1", k_name_hash},
    {"dir-type", "a regular file's DIR_INDEX type 0 (unknown)", k_dir_type},
    {"dir-type-differs", "a regular file's DIR_ITEM type symlink, its DIR_INDEX still file",
     k_dir_type_differs},
    {"inline-ram", "an inline extent's ram_bytes + 1", k_inline_ram},
    {"file-overlap", "move a file extent back one sector over its predecessor", k_overlap},
    {"extent-refs", "a data extent item's refs + 1", k_extent_refs},
    {"meta-refs", "a tree block's METADATA_ITEM refs + 1", k_extra_ref},
    {"backref", "a data extent's inline ref names another inode", k_backref},
    {"meta-missing", "delete a tree block's METADATA_ITEM (its block group still counts it)",
     k_meta_missing},
    {"data-missing", "delete a data extent's EXTENT_ITEM", k_data_missing},
    {"fe-bytenr", "a regular file extent's disk_bytenr + 32 MiB + 7 (unaligned)", k_fe_bytenr},
    {"index-name", "a DIR_INDEX's name changed (first byte + 1)", k_index_name},
    {"leaf-gen", "an fs tree leaf's header generation far past the filesystem's", k_leaf_gen},
    {"leaf-csum-zero", "an fs tree leaf's checksum wiped to zeros (every copy)", k_leaf_csum_zero},
    {"reloc-flag",
     "an fs tree leaf with file extents gets the RELOC header flag (not FULL_BACKREF)",
     k_reloc_flag},
    {"full-backref", "an fs tree leaf without file extents gets FULL_BACKREF in its extent item",
     k_full_backref},
    {"bg-used", "a block group's used + 4096", k_bg_used},
    {"free-space", "a free space extent 4096 shorter", k_free_space},
    {"fst-grow", "a free space extent 4096 longer (used space recorded free)", k_fst_grow},
    {"fst-drop", "delete a free space extent (a free range missing)", k_fst_drop},
    {"fst-count", "a FREE_SPACE_INFO extent count + 1", k_fst_count},
    {"fst-flags", "USING_BITMAPS set in a FREE_SPACE_INFO whose group lists extents", k_fst_flags},
    {"csum", "delete a csum item", k_csum},
    {"root-backref", "a ROOT_BACKREF's sequence + 7", k_root_backref},
    {"root-orphan", "a linked subvolume's root item refs 0, no orphan item (looks deleted)",
     k_root_orphan},
    {"dev-extent", "device item total_bytes below its last dev extent", k_dev_extent},
    {"super-devs", "superblock num_devices + 1", k_super_devs},
    {"super-stripesize", "superblock stripesize = 3 x sectorsize", k_super_stripesize},
    {"super-leafsize", "superblock leafsize = 2 x nodesize", k_super_leafsize},
    {"copy1", "smash copy 1 of the fs tree's first leaf (checksum left bad)", k_copy1},
    {"copy2", "smash copy 2 of the fs tree's first leaf (checksum left bad)", k_copy2},
    {"root-tree", "smash every copy of the root tree's root block", k_root_tree},
    {"csum-leaf", "smash every copy of a checksum tree leaf that is not its root", k_csum_leaf},
    {"super-split",
     "copy 0's system chunk array RAID10 (sub_stripes 0), copy 1's generation + 2^32: no copy "
     "opens alone",
     k_super_split},
    {"chunk-root-ptr", "the superblock's chunk root pointer moved 4 nodes on (every copy)",
     k_chunk_root_ptr},
    {"sys-array-type", "the system chunk array's first chunk gets RAID10 (sub_stripes 0)",
     k_sys_array_type},
    {"root-unmapped", "the superblock's root tree pointer at 1 TiB, in no chunk", k_root_unmapped},
    {"sys-array-uuid", "the system chunk array's first stripe names another device uuid",
     k_sys_array_uuid},
    {"inline-order", "swap the first two inline refs (one type) of an extent item", k_inline_order},
    {"log-csum", "copy a log tree's checksums of a logged extent into the csum tree", k_log_csum},
    {"log-extent", "an extent item for data only a log tree uses (and its checksums)",
     k_log_extent},
    {"leaf-gap", "a gap in a leaf's item data (contents intact): not the kernel's layout",
     k_leaf_gap},
    {"orphan-dir", "an unlinked directory on the orphan list, its entries partly dropped",
     k_orphan_dir},
    {"dup-name", "a second dir index entry with the same name in the top directory", k_dup_name},
    {"chunk-overlap", "a chunk item 1 MiB longer: it overlaps the next chunk", k_chunk_overlap},
    {"node-key", "an fs tree node pointer's key differs from its child's first key", k_node_key},
    {"node-gen", "an fs tree node pointer's generation is one less than its child's", k_node_gen},
    {"root-level", "the fs tree's root item level is one more than its root block's", k_root_level},
    {"data", "flip one checksummed data byte on the first copy", k_data},
    {"data-run", "overwrite 16 sectors of checksummed data on the first copy", k_data_run},
    {"uuid", "a uuid tree entry names a subvolume that does not exist", k_uuid},
    {"qgroup", "a qgroup's referenced bytes + 4096", k_qgroup},
    {"cache-mode", "a v1 space cache inode's mode becomes a directory's", k_cache_mode},
    {"extra-extent", "insert a data extent item that nothing uses", k_extra_extent},
    {"nodatasum", "a checksummed file gets the NODATASUM flag", k_nodatasum},
    {"fuzz", "overwrite random bytes of a random tree block (CORRUPT_SEED)", k_fuzz},
    {"fuzz-field", "one fuzzed field (CORRUPT_FUZZ=hdr|item|body|super|sys, CORRUPT_SEED)",
     k_fuzz_field},
    {"cache-entry", "a v1 space cache entry moved one sector (page checksum fixed)", k_cache_entry},
    {"no-balance", "delete the balance item (relocation left as a crash in a shrink leaves it)",
     k_no_balance},
    {"reloc-inode", "a data reloc inode and its orphan item (a relocation stopped early)",
     k_reloc_inode},
    {"chunk-sector", "a data chunk item's sector_size twice the filesystem's", k_chunk_sector},
    {"chunk-dev-uuid", "a data chunk's first stripe names another device uuid", k_chunk_dev_uuid},
    {"dev-item-uuid", "the first DEV_ITEM's device uuid changed", k_dev_item_uuid},
    {"dev-item-fsid", "the first DEV_ITEM's fsid changed", k_dev_item_fsid},
    {"fs-root-refs", "the fs tree's (-t) root item refs - 1 (0 for a live tree)", k_fs_root_refs},
    {"root-dirid", "the fs tree's (-t) root item root_dirid + 1", k_root_dirid},
    {"dev-root-drop", "the dev tree's root item gets a drop progress (objectid 7318349394477056)",
     k_dev_root_drop},
    {"bg-chunk-objectid", "a block group item's chunk_objectid + 1", k_bg_chunk_objectid},
    {"bg-len", "the first block group item's key length one sector less than its chunk's",
     k_bg_len},
    {"root-dir-ref", "the top directory's INODE_REF (\"..\") index + 1", k_root_dir_ref},
    {"symlink-size", "a symlink's size + 1", k_symlink_size},
    {"isize-inline", "a small (inline) regular file's size - 1", k_isize_inline},
    {"fe-disk-len", "a regular file extent's disk_num_bytes + a sector (-t: in that tree)",
     k_fe_disk_len},
    {"tb-flags", "the fs tree's first leaf without the WRITTEN header flag", k_tb_flags},
    {"tb-chunk-uuid", "the fs tree's first leaf: a byte of its chunk tree uuid changed",
     k_tb_chunk_uuid},
    {"tb-owner", "the fs tree's first leaf's header owner + 1000 (a subvolume id)", k_tb_owner},
    {"super-copy", "superblock copy 1 with another label at the same generation", k_super_copy},
    {"fst-ghost", "a free space info and bitmap for a block group past every chunk", k_fst_ghost},
    {"chunk-profiles", "a data chunk's type gets two profile bits (RAID1 and DUP)",
     k_chunk_profiles},
    {"chunk-stripe-len0", "a data chunk's stripe_len 0", k_chunk_stripe_len0},
    {"chunk-len-unaligned", "a data chunk's length + 2048 (not sector aligned)",
     k_chunk_len_unaligned},
    {"chunk-type0", "a data chunk's type 0", k_chunk_type0},
    {"chunk-transid", "the chunk root's generation + 1 (parent transid mismatch)", k_chunk_transid},
    {"chunk-tail",
     "(valid) an empty 1 MiB + 4 KiB data chunk after the last: the next chunk "
     "starts unaligned",
     k_chunk_tail},
};

int main(int argc, char **argv)
{
	const size_t nk = sizeof(kinds) / sizeof(kinds[0]);
	struct btk_open_opts oo = {.write = true, .no_scan = true, .super_mirror = -1};
	struct btk_fs *fs;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < nk; i++)
			printf("%-14s %s\n", kinds[i].name, kinds[i].help);
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "-t")) {
		fs_tree = strtoull(argv[2], NULL, 0);
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: corrupt [-t SUBVOL_ID] KIND IMG...   (corrupt --list)\n");
		return 2;
	}
	const struct kind *k = NULL;
	for (size_t i = 0; i < nk; i++)
		if (!strcmp(kinds[i].name, argv[1]))
			k = &kinds[i];
	if (!k) {
		fprintf(stderr, "corrupt: unknown kind %s\n", argv[1]);
		return 2;
	}
	ret = btk_fs_open((const char *const *)argv + 2, argc - 2, &oo, &fs);
	if (ret) {
		fprintf(stderr, "corrupt: cannot open %s: %s\n", argv[2], btk_errmsg());
		return 1;
	}
	ret = k->run(fs, k->name);
	if (!ret)
		for (int i = 0; i < fs->ndevs; i++)
			if (fs->devs[i].dev)
				btk_dev_flush(fs->devs[i].dev);
	btk_fs_close(fs);
	if (ret) {
		fprintf(stderr, "corrupt: %s: %s (%s)\n", k->name, strerror(-ret), btk_errmsg());
		return 1;
	}
	return 0;
}
