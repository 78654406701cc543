/* count.h — a pass over the ext inode table before anything is written: what the btrfs
 * metadata will hold (for the free-space check and --dry-run), and the refusal of what btrfs
 * cannot hold (long xattrs, symlink targets too long for a node). */
#ifndef CONVERT_COUNT_H
#define CONVERT_COUNT_H

#include "ext.h"
#include "fs/fs_estimate.h"

struct ext_count_opts {
	uint32_t nodesize;
	bool no_inline, no_xattr, no_datasum;
};

struct ext_need {
	struct btk_meta_counts m;
	uint64_t new_data; /* bytes of new data extents (inline_data files stored as extents) */
};

/* Fills *n from every inode in use; 0, or -errno with a one-line reason (EFBIG/E2BIG: an
 * item btrfs cannot hold, naming the ext inode and what to do). */
int ext_count(struct ext_src *s, const struct ext_count_opts *o, struct ext_need *n);

#endif
