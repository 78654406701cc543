/* image_dump.c — the dump side: find every tree block by walking every root (and those the
 * extent tree lists), then store them as btrfs-image does: in logical order, the log trees'
 * blocks after the others in walk order, then the v1 space cache's data; unused bytes
 * zeroed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/root_item.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/u64set.h"
#include "base/vec.h"
#include "image/image.h"
#include "image/image_int.h"
#include "image/metadump.h"
#include "tree/tree.h"

BTK_VEC(u64vec, uint64_t);
/* A disk range of file data the dump carries. */
struct drange {
	uint64_t at, len;
};
BTK_VEC(drange_vec, struct drange);
BTK_VEC(root_vec, struct btk_root);

static int push_block(struct u64vec *v, uint64_t bytenr)
{
	uint64_t *x = btk_vec_push(v);

	if (!x)
		return btk_err(ENOMEM, "dump block list");
	*x = bytenr;
	return 0;
}

struct dump {
	struct btk_fs *fs;
	const struct btk_dump_opts *o;
	struct btk_dump_stats *st;
	struct btk_u64set seen;
	struct u64vec blocks, log_blocks; /* log: in walk order, after the others */
	struct u64vec listed;		  /* tree blocks the extent tree lists */
	struct drange_vec data;
	struct root_vec roots; /* trees found in root-tree and log-tree leaves */
	uint64_t tree;	       /* objectid of the tree being walked */
	uint64_t resume;       /* a node dumped already whose children a walk starts from */
	struct btk_sanitizer san;
};

static int queue_root(struct dump *d, uint64_t objectid, const uint8_t *ri, uint32_t size)
{
	if (size < BTK_ROOT_ITEM_V0_SIZE)
		return 0;
	struct btk_root *r = btk_vec_push(&d->roots);

	if (!r)
		return btk_err(ENOMEM, "dump root list");
	btk_root_from_item(objectid, 0, ri, size, r);
	return 0;
}

/* The disk range of a regular file extent item, if it names one. */
static int push_extent(struct dump *d, const uint8_t *p, uint32_t size)
{
	struct drange *r;

	if (size < sizeof(struct btrfs_file_extent_item) ||
	    BTK_GET(struct btrfs_file_extent_item, p, type) != BTRFS_FILE_EXTENT_REG)
		return 0;
	uint64_t at = BTK_GET(struct btrfs_file_extent_item, p, disk_bytenr);
	uint64_t len = BTK_GET(struct btrfs_file_extent_item, p, disk_num_bytes);
	/* an extent is at most 128 MiB; more is a damaged item, not worth a huge read */
	if (!at || !len || len > (1ULL << 30))
		return 0;
	if (!(r = btk_vec_push(&d->data)))
		return btk_err(ENOMEM, "dump data list");
	r->at = at, r->len = len;
	return 0;
}

/* Root-tree and log-root-tree leaves name further trees; root-tree leaves also hold the file
 * extents of v1 space cache inodes, whose data the dump carries as btrfs-image's does; with
 * --data, the file extents of every tree. */
static int scan_leaf(struct dump *d, const struct btk_block *b)
{
	int ret;

	for (uint32_t i = 0; i < btk_block_nritems(b); i++) {
		struct btk_key k;
		uint32_t size = btk_leaf_size(b, (int)i);
		const uint8_t *p = btk_leaf_data(b, (int)i);

		btk_leaf_key(b, (int)i, &k);
		if (k.type == BTRFS_ROOT_ITEM_KEY && k.objectid != BTRFS_ROOT_TREE_OBJECTID &&
		    k.objectid != BTRFS_CHUNK_TREE_OBJECTID) {
			if ((ret = queue_root(d, k.objectid, p, size)))
				return ret;
		} else if (k.type == BTRFS_EXTENT_DATA_KEY &&
			   (d->o->data || d->tree == BTRFS_ROOT_TREE_OBJECTID)) {
			if ((ret = push_extent(d, p, size)))
				return ret;
		}
	}
	return 0;
}

/* The tree blocks an extent-tree leaf lists (METADATA_ITEM, or EXTENT_ITEM flagged as a tree
 * block): those no walk reaches are dumped too when they read, as btrfs-image, which dumps
 * what the extent tree lists, keeps them. */
static int list_tree_blocks(struct dump *d, const struct btk_block *b)
{
	int ret;

	for (uint32_t i = 0; i < btk_block_nritems(b); i++) {
		struct btk_key k;
		btk_leaf_key(b, (int)i, &k);
		if (k.type == BTRFS_EXTENT_ITEM_KEY &&
		    (btk_leaf_size(b, (int)i) < sizeof(struct btrfs_extent_item) ||
		     !(BTK_GET(struct btrfs_extent_item, btk_leaf_data(b, (int)i), flags) &
		       BTRFS_EXTENT_FLAG_TREE_BLOCK)))
			continue;
		if ((k.type == BTRFS_EXTENT_ITEM_KEY || k.type == BTRFS_METADATA_ITEM_KEY) &&
		    (ret = push_block(&d->listed, k.objectid)))
			return ret;
	}
	return 0;
}

/* Dumps the listed blocks no walk reached (their children are listed too, or not at all). */
static int add_listed(struct dump *d)
{
	for (size_t i = 0; i < d->listed.n; i++) {
		struct btk_block *b;
		uint64_t bytenr = d->listed.data[i];
		if (btk_u64set_has(&d->seen, bytenr))
			continue;
		if (btk_block_read(d->fs, bytenr, NULL, &b)) {
			btk_err_clear(); /* not a readable tree block: nothing to keep */
			continue;
		}
		int ret = btk_u64set_add(&d->seen, bytenr);
		if (ret > 0)
			ret = push_block(&d->blocks, bytenr);
		btk_block_put(b);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int on_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct dump *d = ctx;
	int ret;

	(void)fs, (void)depth;
	if (d->resume && b->bytenr == d->resume) {
		d->resume = 0;
		return 0;
	}
	ret = btk_u64set_add(&d->seen, b->bytenr);
	if (ret < 0)
		return ret;
	if (ret == 0) /* shared with a tree walked before: so is everything below it */
		return btk_block_level(b) ? BTK_WALK_SKIP : 0;
	ret =
	    push_block(d->tree == BTRFS_TREE_LOG_OBJECTID ? &d->log_blocks : &d->blocks, b->bytenr);
	if (ret)
		return ret;
	size_t found = d->blocks.n + d->log_blocks.n;
	if (d->o->progress && (found & 15) == 1)
		d->o->progress(d->o->ctx, (uint64_t)found * d->fs->nodesize, 0);
	if (btk_block_level(b) == 0 && d->tree == BTRFS_EXTENT_TREE_OBJECTID)
		return list_tree_blocks(d, b);
	if (btk_block_level(b) == 0 && (d->o->data || d->tree == BTRFS_ROOT_TREE_OBJECTID ||
					d->tree == BTRFS_TREE_LOG_OBJECTID))
		return scan_leaf(d, b);
	return 0;
}

static int walk_from(struct dump *d, const struct btk_block *b);

/* A block the walk could not take as its parent says it should be (another generation,
 * first key or owner; leaves whose items are not packed, in the safety-only read mode) is
 * still dumped as it is when it reads whole: right checksum, bytenr and fsid, items inside
 * it. btrfs-image keeps such blocks too, and a dump of a damaged filesystem must show the
 * damage. Below a node of the expected level the walk goes on (the level bounds how deep
 * this recursion goes); what cannot be read at all is skipped. */
static int on_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct dump *d = ctx;
	struct btk_block *b;
	char why[256];

	(void)err;
	snprintf(why, sizeof(why), "%s", msg);
	if (!btk_block_read(d->fs, bytenr, NULL, &b)) {
		int ret = btk_u64set_has(&d->seen, bytenr) ? 0 : on_block(d, d->fs, b, 0);
		if (!ret && btk_block_level(b) > 0 && btk_block_level(b) == level)
			ret = walk_from(d, b);
		btk_block_put(b);
		return ret == BTK_WALK_SKIP ? 0 : ret;
	}
	btk_err_clear();
	msg = why;
	d->st->skipped++;
	if (d->o->skipped)
		d->o->skipped(d->o->ctx, bytenr, msg);
	return 0;
}

/* Walks the children of node b (dumped already) as a tree of its own. */
static int walk_from(struct dump *d, const struct btk_block *b)
{
	struct btk_walk_ops ops = {.block = on_block, .on_error = on_error};
	struct btk_root r = {.objectid = d->tree,
			     .bytenr = b->bytenr,
			     .level = btk_block_level(b),
			     .generation = btk_block_generation(b)};

	d->resume = b->bytenr;
	int ret = btk_tree_walk(d->fs, &r, &ops, d);
	d->resume = 0;
	return ret;
}

static int walk(struct dump *d, const struct btk_root *r)
{
	struct btk_walk_ops ops = {.block = on_block, .on_error = on_error};

	d->tree = r->objectid;
	d->st->trees++;
	return btk_tree_walk(d->fs, r, &ops, d);
}

static int walk_all(struct dump *d)
{
	struct btk_root r;
	int ret;

	if ((ret = btk_root_find(d->fs, BTRFS_CHUNK_TREE_OBJECTID, &r)) || (ret = walk(d, &r)))
		return ret;
	if ((ret = btk_root_find(d->fs, BTRFS_ROOT_TREE_OBJECTID, &r)) || (ret = walk(d, &r)))
		return ret;
	uint64_t log = btk_le64(d->fs->sb.log_root);
	if (log) {
		struct btk_root lr = {.objectid = BTRFS_TREE_LOG_OBJECTID,
				      .bytenr = log,
				      .level = d->fs->sb.log_root_level};
		if ((ret = walk(d, &lr)))
			return ret;
	}
	/* roots queued by the walks above, and those queued while walking them (log trees) */
	for (size_t i = 0; i < d->roots.n; i++) {
		r = d->roots.data[i];
		if (r.objectid == BTRFS_TREE_LOG_OBJECTID && log && r.bytenr == log)
			continue;
		if ((ret = walk(d, &r)))
			return ret;
	}
	return 0;
}

static int cmp_drange(const void *a, const void *b)
{
	return btk_u64_order(&((const struct drange *)a)->at, &((const struct drange *)b)->at);
}

/* The block as the dump stores it: bytes no item uses zeroed, then its checksum redone. */
static void prepare_block(struct dump *d, uint8_t *buf)
{
	uint32_t ns = d->fs->nodesize, n = btk_le32(((struct btk_header *)buf)->nritems);
	uint32_t hdr = sizeof(struct btk_header);
	uint8_t csum[BTK_CSUM_MAX];

	if (((struct btk_header *)buf)->level) {
		uint64_t used = hdr + (uint64_t)n * sizeof(struct btk_key_ptr);
		if (used < ns)
			memset(buf + used, 0, ns - used);
	} else {
		uint64_t items_end = hdr + (uint64_t)n * sizeof(struct btk_item), data_start = ns;
		for (uint32_t i = 0; i < n; i++) {
			const struct btk_item *it = (const struct btk_item *)(buf + hdr) + i;
			uint64_t off = hdr + (uint64_t)btk_le32(it->offset);
			if (off < data_start)
				data_start = off;
		}
		if (items_end < data_start)
			memset(buf + items_end, 0, data_start - items_end);
		btk_image_scrub_leaf(d->fs, buf, d->o->keep_inline || d->o->data,
				     d->o->sanitize ? &d->san : NULL, d->st);
	}
	btk_csum(d->fs->csum_type, buf + BTK_CSUM_MAX, ns - BTK_CSUM_MAX, csum);
	memcpy(buf, csum, (size_t)d->fs->csum_size);
}

static int store_blocks(struct dump *d, struct btk_md_writer *w, const struct u64vec *v,
			uint64_t *done, uint64_t total)
{
	uint8_t *buf = malloc(d->fs->nodesize);
	int ret = 0;

	if (!buf)
		return btk_err(ENOMEM, "dump block buffer");
	for (size_t i = 0; i < v->n && !ret; i++) {
		struct btk_block *b;
		if (btk_block_read(d->fs, v->data[i], NULL, &b)) {
			on_error(d, v->data[i], -1, 0, btk_errmsg());
			continue;
		}
		memcpy(buf, b->data, d->fs->nodesize);
		btk_block_put(b);
		prepare_block(d, buf);
		ret = btk_md_add(w, v->data[i], buf, d->fs->nodesize, true);
		d->st->blocks++;
		*done += d->fs->nodesize;
		/* the callee draws at most every 0.1 s; the first call draws at once */
		if (d->o->progress && (d->st->blocks & 15) == 1)
			d->o->progress(d->o->ctx, *done, total);
	}
	free(buf);
	return ret;
}

/* Sorts the data ranges and merges the overlapping ones (shared extents). */
static void merge_data(struct dump *d, uint64_t *total)
{
	struct drange *v = d->data.data;
	size_t out = 0;

	btk_vec_sort(&d->data, cmp_drange);
	for (size_t i = 0; i < d->data.n; i++) {
		uint64_t end = v[i].at + v[i].len;
		if (out && v[i].at <= v[out - 1].at + v[out - 1].len) {
			if (end > v[out - 1].at + v[out - 1].len)
				v[out - 1].len = end - v[out - 1].at;
			continue;
		}
		v[out++] = v[i];
	}
	d->data.n = out;
	for (size_t i = 0; i < out; i++)
		*total += v[i].len;
}

static int store_data(struct dump *d, struct btk_md_writer *w, uint64_t *done, uint64_t total)
{
	uint8_t *buf = malloc(BTK_MD_ITEM_MAX_V0);
	int ret = 0;

	if (!buf)
		return btk_err(ENOMEM, "dump data buffer");
	for (size_t i = 0; i < d->data.n && !ret; i++) {
		uint64_t at = d->data.data[i].at, len = d->data.data[i].len;
		while (len && !ret) {
			size_t part = len < BTK_MD_ITEM_MAX_V0 ? (size_t)len : BTK_MD_ITEM_MAX_V0;
			if (btk_read_logical(d->fs, at, buf, part)) {
				on_error(d, at, -1, 0, btk_errmsg());
				break;
			}
			ret = btk_md_add(w, at, buf, part, true);
			d->st->data_bytes += part;
			at += part, len -= part;
			*done += part;
			if (d->o->progress)
				d->o->progress(d->o->ctx, *done, total);
		}
		d->st->data_ranges++;
	}
	free(buf);
	return ret;
}

static void dump_free(struct dump *d)
{
	btk_u64set_free(&d->seen);
	btk_vec_free(&d->log_blocks);
	btk_vec_free(&d->blocks);
	btk_vec_free(&d->listed);
	btk_vec_free(&d->data);
	btk_vec_free(&d->roots);
	if (d->o->sanitize)
		btk_sanitizer_free(&d->san);
}

int btk_image_dump(struct btk_fs *fs, int out_fd, const struct btk_dump_opts *opts,
		   struct btk_dump_stats *st)
{
	struct dump d = {.fs = fs, .o = opts, .st = st};
	struct btk_md_writer *w = NULL;
	struct btk_md_wstats ws;
	uint64_t done = 0, total;
	int ret;

	memset(st, 0, sizeof(*st));
	if (opts->data && opts->sanitize)
		return btk_err(EINVAL, "a sanitised dump cannot carry file data");
	if (opts->sanitize && btk_sanitizer_init(&d.san))
		return btk_err(EIO, "no random key for sanitising names");
	/* blocks as they are: leaves whose items are not packed too (tree.h's safety-only
	 * mode still wants every item inside its leaf) */
	enum btk_read_mode mode = btk_tree_read_mode(fs, BTK_READ_SAFETY_ONLY);
	if ((ret = walk_all(&d)) || (ret = add_listed(&d)))
		goto out;
	btk_vec_sort(&d.blocks, btk_u64_order); /* no qsort on an empty (NULL) vector */
	total = (uint64_t)(d.blocks.n + d.log_blocks.n) * fs->nodesize;
	merge_data(&d, &total);
	if ((ret = btk_md_writer_open(out_fd, opts->data ? 1 : 0, opts->level, opts->threads, &w)))
		goto out;
	ret = btk_md_add(w, BTK_SUPER_OFFSET, &fs->sb, BTK_SUPER_SIZE, false);
	if (!ret)
		ret = store_blocks(&d, w, &d.blocks, &done, total);
	if (!ret)
		ret = store_blocks(&d, w, &d.log_blocks, &done, total);
	if (!ret)
		ret = store_data(&d, w, &done, total);
	if (!ret && opts->sanitize && d.san.oom)
		ret = btk_err(ENOMEM, "sanitised names: out of memory");
	int fret = btk_md_finish(w, &ws);
	if (!ret)
		ret = fret;
	st->names_kept = d.san.kept;
	st->items = ws.items, st->clusters = ws.clusters;
	st->bytes_in = ws.bytes_in, st->bytes_out = ws.bytes_out;
out:
	btk_tree_read_mode(fs, mode);
	dump_free(&d);
	return ret;
}
