/* runs.h — where an ext file's blocks are: runs of contiguous blocks, from its extent tree or
 * block map (libext2fs). */
#ifndef CONVERT_RUNS_H
#define CONVERT_RUNS_H

#include <ext2fs/ext2fs.h>
#include <stdbool.h>
#include <stdint.h>

struct run {
	uint64_t lblk, pblk, len; /* blocks */
	bool uninit;		  /* an ext4 unwritten extent */
};

struct runs {
	struct run *r;
	size_t n, cap;
};

/* Appends the runs of inode eino (read into *in) to *rs, in file order; and, when meta is not
 * NULL, the blocks that map them (extent tree nodes, indirect blocks) to *meta, as runs of
 * lblk 0. 0 or -errno with a message. The caller frees rs->r (and meta->r). */
int ext_runs(ext2_filsys e, ext2_ino_t eino, struct ext2_inode *in, struct runs *rs,
	     struct runs *meta);

/* How many of an inline_data file's size bytes its inode stores (the rest reads as zeroes: a
 * sparse file mke2fs -d made); 0 or -errno with a message. */
int ext_inline_len(ext2_filsys e, ext2_ino_t eino, uint64_t size, uint64_t *len);

#endif
