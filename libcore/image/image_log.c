/* image_log.c — a log tree carried through the one-device fixup. The fixup is a transaction:
 * it commits a new generation, while the kernel reads a log whose blocks are exactly one
 * generation newer than the superblock, and it must not allocate over the log's blocks (the
 * extent tree does not list them). So the log's blocks are listed first, kept out of the
 * fixup's allocations, and afterwards stamped with the new generation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/root_item.h"
#include "image/image_int.h"

#define LOG_MAX_BLOCKS (1u << 14) /* a log holds what was fsynced since the last commit */

struct log_walk {
	struct btk_fs *fs;
	uint8_t *buf;
	uint64_t *v;
	size_t n, cap;
};

static int log_push(struct log_walk *lw, uint64_t bytenr)
{
	for (size_t i = 0; i < lw->n; i++) /* a loop in a damaged log: walked once */
		if (lw->v[i] == bytenr)
			return btk_err(EUCLEAN, "log tree block %llu is referenced twice",
				       (unsigned long long)bytenr);
	if (lw->n == LOG_MAX_BLOCKS)
		return btk_err(EFBIG, "log tree of more than %u blocks", LOG_MAX_BLOCKS);
	uint64_t *e = btk_array_push(lw->v, lw->n, lw->cap);
	if (!e)
		return btk_err(ENOMEM, "log block list");
	*e = bytenr;
	return 0;
}

/* Reads the block at bytenr into lw->buf and checks what the walk relies on. */
static int log_read(struct log_walk *lw, uint64_t bytenr, int level)
{
	uint32_t ns = lw->fs->nodesize;
	const struct btk_header *h = (const struct btk_header *)lw->buf;
	int ret = btk_read_logical(lw->fs, bytenr, lw->buf, ns);

	if (ret)
		return ret;
	uint32_t n = btk_le32(h->nritems);
	uint64_t room = level ? (ns - sizeof(*h)) / sizeof(struct btk_key_ptr)
			      : (ns - sizeof(*h)) / sizeof(struct btk_item);
	if (btk_le64(h->bytenr) != bytenr || h->level != level || n > room ||
	    btk_le64(h->owner) != BTRFS_TREE_LOG_OBJECTID)
		return btk_err(EUCLEAN, "log tree block %llu: not the block its parent names",
			       (unsigned long long)bytenr);
	return 0;
}

/* Walks one tree of the log; root_tree: the log root tree, whose leaves name the others.
 * Recursion is bounded by the level, which falls by one each step. */
static int log_tree(struct log_walk *lw, uint64_t bytenr, int level, bool root_tree)
{
	uint32_t ns = lw->fs->nodesize, hdr = sizeof(struct btk_header);
	int ret;

	if (level < 0 || level >= BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "log tree block %llu: level %d", (unsigned long long)bytenr,
			       level);
	if ((ret = log_push(lw, bytenr)) || (ret = log_read(lw, bytenr, level)))
		return ret;
	uint32_t n = btk_le32(((struct btk_header *)lw->buf)->nritems);
	uint8_t *copy = malloc(ns); /* the children overwrite lw->buf */
	if (!copy)
		return btk_err(ENOMEM, "log tree block");
	memcpy(copy, lw->buf, ns);
	for (uint32_t i = 0; i < n && !ret; i++) {
		if (level) {
			const struct btk_key_ptr *kp = (const struct btk_key_ptr *)(copy + hdr) + i;
			ret = log_tree(lw, btk_le64(kp->blockptr), level - 1, root_tree);
			continue;
		}
		const struct btk_item *it = (const struct btk_item *)(copy + hdr) + i;
		uint64_t off = hdr + (uint64_t)btk_le32(it->offset), size = btk_le32(it->size);
		struct btk_root_item ri;
		if (!root_tree || it->key.type != BTRFS_ROOT_ITEM_KEY || off + size > ns ||
		    btk_root_item_parse(copy + off, (uint32_t)size, &ri))
			continue;
		ret = log_tree(lw, ri.bytenr, ri.level, false);
	}
	free(copy);
	return ret;
}

int btk_image_log_blocks(struct btk_fs *fs, uint64_t root, int level, uint64_t **out, size_t *n)
{
	struct log_walk lw = {.fs = fs};
	int ret;

	*out = NULL, *n = 0;
	if (!(lw.buf = malloc(fs->nodesize)))
		return btk_err(ENOMEM, "log tree block");
	ret = log_tree(&lw, root, level, true);
	free(lw.buf);
	if (ret) {
		free(lw.v);
		return ret;
	}
	*out = lw.v, *n = lw.n;
	return 0;
}

/* One block of the log with every generation it holds for its own tree set to gen. */
static void log_stamp(const struct btk_fs *fs, uint8_t *b, uint64_t gen)
{
	struct btk_header *h = (struct btk_header *)b;
	uint32_t ns = fs->nodesize, hdr = sizeof(*h), n = btk_le32(h->nritems);
	uint8_t csum[BTK_CSUM_MAX];

	btk_put64(h->generation, gen);
	for (uint32_t i = 0; i < n; i++) {
		if (h->level) {
			btk_put64(((struct btk_key_ptr *)(b + hdr) + i)->generation, gen);
			continue;
		}
		struct btk_item *it = (struct btk_item *)(b + hdr) + i;
		uint64_t off = hdr + (uint64_t)btk_le32(it->offset), size = btk_le32(it->size);
		struct btk_root_item ri;
		if (it->key.type != BTRFS_ROOT_ITEM_KEY || off + size > ns ||
		    btk_root_item_parse(b + off, (uint32_t)size, &ri))
			continue;
		if (ri.v2)
			ri.generation_v2 = gen;
		ri.generation = gen;
		btk_root_item_write(b + off, (uint32_t)size, &ri);
	}
	btk_csum(fs->csum_type, b + BTK_CSUM_MAX, ns - BTK_CSUM_MAX, csum);
	memcpy(b, csum, (size_t)fs->csum_size);
}

int btk_image_log_stamp(struct btk_fs *fs, const uint64_t *blocks, size_t n, uint64_t gen)
{
	uint8_t *b = malloc(fs->nodesize);
	int ret = 0;

	if (!b)
		return btk_err(ENOMEM, "log tree block");
	for (size_t i = 0; i < n && !ret; i++) {
		if ((ret = btk_read_logical(fs, blocks[i], b, fs->nodesize)))
			break;
		log_stamp(fs, b, gen);
		ret = btk_write_logical(fs, blocks[i], b, fs->nodesize);
	}
	free(b);
	return ret;
}
