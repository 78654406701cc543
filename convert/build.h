/* build.h — laying a btrfs over an ext filesystem: the mkfs hooks of btk-convert. */
#ifndef CONVERT_BUILD_H
#define CONVERT_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include "ext.h"
#include "trans/trans.h"

#define CONV_IMAGE_SUBVOL  256ULL  /* ext2_saved */
#define CONV_IMAGE_INO	   257ULL  /* ext2_saved/image */
#define CONV_EXT_SUPER	   1024ULL /* ext's primary superblock, what blkid finds */
#define CONV_EXT_SUPER_LEN 1024ULL
#define CONV_INO_OFFSET	   254ULL /* btrfs inode = ext inode + 254: ext's root 2 becomes 256 */
/* Memory: the tree blocks a conversion keeps cached, and the dirty ones it lets pile up before
 * writing them (into ext's free space, so early writes are safe), small enough that the peak
 * stays below btrfs-convert's on the bench (issue 13). */
#define CONV_CACHE_MB  4
#define CONV_WRITEBACK (2ULL << 20)

struct conv_opts {
	bool no_datasum, no_inline, no_xattr;
	void (*progress)(void *ctx, uint64_t inodes, uint64_t total);
	void *progress_ctx;
};

struct conv_rec {
	uint64_t orig, bytenr, len; /* ext bytes at orig live in the data extent at bytenr */
};

struct conv {
	struct ext_src *src;
	const struct conv_opts *o;
	struct btk_trans *t;
	struct btk_fs *fs;
	struct conv_rec *recs; /* sorted by orig: every block ext uses */
	size_t nrecs, caprecs;
	uint8_t *buf, *sums;
	uint8_t *ftype;	 /* per ext inode: btrfs file type once created (0: not yet) */
	uint32_t *queue; /* directories still to read */
	size_t qhead, qlen, qcap;
	uint64_t root_next_index;
	uint64_t new_data; /* bytes of new data extents the count found (inline_data files) */
	/* results */
	uint64_t inodes, names, extents, copied_bytes, inline_files;
};

int conv_place(void *ctx, struct btk_trans *t);
int conv_fill(void *ctx, struct btk_trans *t);
void conv_free(struct conv *c);

#endif
