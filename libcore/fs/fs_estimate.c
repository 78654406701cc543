/* fs_estimate.c — metadata needed for a content, from the sizes of the items it becomes. */
#include "fs/fs_estimate.h"
#include "fs/populate.h"
#include "format/format.h"

#include <string.h>
#include <sys/stat.h>

#define ITEM	  sizeof(struct btk_item)
#define DIR_ITEM  (ITEM + sizeof(struct btrfs_dir_item))
#define EXTREF	  (ITEM + sizeof(struct btrfs_inode_extref)) /* larger than an inode ref */
#define FILE_EXT  (ITEM + sizeof(struct btrfs_file_extent_item))
#define FE_INLINE (ITEM + offsetof(struct btrfs_file_extent_item, disk_bytenr))
/* an extent item with one inline data ref; every further ref a keyed EXTENT_DATA_REF item */
#define EXT_ITEM                                                                                   \
	(ITEM + sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_extent_inline_ref) +        \
	 sizeof(struct btrfs_extent_data_ref))
#define DATA_REF (ITEM + sizeof(struct btrfs_extent_data_ref))
#define BG_ITEMS                                                                                   \
	(3 * ITEM + sizeof(struct btrfs_block_group_item) + sizeof(struct btrfs_dev_extent) +      \
	 sizeof(struct btrfs_chunk))
#define TREE_BLOCK                                                                                 \
	(ITEM + sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_extent_inline_ref))

uint32_t btk_leaf_max_item(uint32_t nodesize)
{
	return nodesize - (uint32_t)sizeof(struct btk_header) - (uint32_t)ITEM;
}

uint32_t btk_xattr_max(uint32_t nodesize)
{
	return btk_leaf_max_item(nodesize) - (uint32_t)sizeof(struct btrfs_dir_item);
}

uint32_t btk_inline_max_for(uint32_t nodesize)
{
	return btk_leaf_max_item(nodesize) -
	       (uint32_t)offsetof(struct btrfs_file_extent_item, disk_bytenr);
}

/* Leaves for `bytes` of items at two thirds full, and the nodes above them. */
static uint64_t blocks_for(uint64_t bytes, uint32_t nodesize)
{
	uint64_t room = (uint64_t)(nodesize - sizeof(struct btk_header)) * 2 / 3;
	uint64_t ptrs = room / sizeof(struct btk_key_ptr), level = (bytes + room - 1) / room;
	uint64_t total = level;

	while (level > 1) {
		level = (level + ptrs - 1) / ptrs;
		total += level;
	}
	return total;
}

uint64_t btk_meta_estimate(const struct btk_meta_counts *c, uint32_t nodesize, uint32_t csum_size)
{
	uint64_t per_csum_item = btk_leaf_max_item(nodesize) / (csum_size ? csum_size : 4);
	uint64_t fs = c->inodes * (ITEM + sizeof(struct btrfs_inode_item)) +
		      c->names * (2 * DIR_ITEM + EXTREF) + 3 * c->name_bytes +
		      c->file_extents * FILE_EXT + c->inline_items * FE_INLINE + c->inline_bytes +
		      c->xattrs * DIR_ITEM + c->xattr_bytes;
	uint64_t ext =
	    c->data_extents * EXT_ITEM + c->file_extents * DATA_REF + c->block_groups * BG_ITEMS;
	uint64_t sums = c->csum_blocks * csum_size +
			(c->csum_blocks / per_csum_item + c->data_extents + 1) * ITEM;
	uint64_t blocks =
	    blocks_for(fs, nodesize) + blocks_for(ext, nodesize) + blocks_for(sums, nodesize);

	/* every tree block has its own extent item; the small trees (root, chunk, device,
	 * uuid, free space, data reloc) and the kernel's first writes after mounting */
	blocks += blocks_for(blocks * TREE_BLOCK, nodesize);
	return (blocks + 8 + 64) * nodesize;
}

void btk_src_need(const struct btk_src_tree *s, uint32_t sectorsize, bool compress,
		  struct btk_meta_counts *m, uint64_t *data)
{
	uint64_t ss = sectorsize;

	memset(m, 0, sizeof(*m));
	m->block_groups = 1;
	*data = 0;
	m->inodes = s->ninodes;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		m->names++;
		m->name_bytes += s->nodes[i].name_len;
	}
	for (uint32_t i = 0; i < s->ninodes; i++) {
		const struct btk_src_inode *in = &s->inodes[i];
		uint64_t sz = in->size, b = S_ISREG(in->mode) ? in->blocks * 512 : 0;
		if (S_ISLNK(in->mode)) {
			m->inline_items++, m->inline_bytes += sz;
		} else if (S_ISREG(in->mode) && sz && sz <= BTK_MAX_INLINE && sz < ss) {
			m->inline_items++, m->inline_bytes += sz;
		} else if (S_ISREG(in->mode)) {
			uint64_t d = (b < sz ? b : sz) + ss - 1;
			d -= d % ss;
			/* compressed, each piece of 128 KiB takes one sector at the very least
			 * (and a file of one sector may go inline): what cannot fit even then */
			*data += !compress ? d
				 : d <= ss
				     ? 0
				     : (d + BTK_MAX_COMPRESSED_IN - 1) / BTK_MAX_COMPRESSED_IN * ss;
			m->file_extents +=
			    d / BTK_MAX_EXTENT_SIZE + 2; /* holes between pieces too */
			m->data_extents += d / BTK_MAX_EXTENT_SIZE + 1;
			m->csum_blocks += d / ss;
		}
	}
	m->xattrs = s->ninodes; /* ACLs and attributes: a guess of one each */
	m->xattr_bytes = 64ULL * s->ninodes;
}
