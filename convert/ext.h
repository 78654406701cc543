/* ext.h — the ext2/3/4 side of btk-convert: opening it with libext2fs, the refusals, and the
 * byte ranges it uses. */
#ifndef CONVERT_EXT_H
#define CONVERT_EXT_H

#include "runs.h"
#include "base/vec.h"
#include "create/inplace.h"

#include <ext2fs/ext2fs.h>
#include <stdbool.h>
#include <stdint.h>

/* an inode whose link count is not the number of names that reach it (links.c) */
struct ext_link_fix {
	uint32_t ino, count, names;
};
BTK_VEC(ext_link_fixes, struct ext_link_fix);

struct ext_src {
	ext2_filsys e;
	const char *path;
	uint32_t blocksize;
	uint64_t size; /* blocks_count * blocksize */
	/* the blocks ext uses, sorted, merged: what its block bitmap marks used and what its
	 * metadata and inodes use (ext_used_finish) */
	struct btk_byte_range *used;
	size_t nused;
	uint64_t used_bytes;
	/* blocks ext uses that its block bitmap marks free: how many, the first, and the inode
	 * using it (0: ext's own metadata) */
	uint64_t unmarked, first_unmarked;
	uint32_t first_unmarked_ino;
	uint64_t inodes;	   /* inodes in use (s_inodes_count - s_free_inodes_count) */
	char features[256];	   /* "has_journal extent 64bit ..." for reports */
	struct btk_inplace layout; /* where the btrfs goes around the used blocks */
	/* links.c: per inode, what is left of a file's link count, or a mark (directories, the
	 * inodes below); from ext_count until ext_links_check */
	uint16_t *links;
	struct ext_link_fixes fixes; /* sorted by ino: the counts the conversion mends (-f) */
	char saved[16]; /* the image's subvolume: "ext2_saved", or "ext2_saved.N" when the
			 * ext root has an entry of that name (rollback finds it by id) */
};

/* Opens path read-only and checks that it can be converted; 0, or -errno with a one-line
 * reason through btk_err() (what is in the way and what to do). force lets an unclean or
 * error-marked filesystem through. */
int ext_open(const char *path, bool force, struct ext_src *src);
/* The same for an ext filesystem in the size bytes at byte off of file (a partition of a disk
 * image; size 0: to the end); path names it in messages ("disk.img@p1"). Only that range is
 * checked for use: a loop device of another partition of the same image is no obstacle. */
int ext_open_at(const char *path, const char *file, uint64_t off, uint64_t size, bool force,
		struct ext_src *src);
void ext_close(struct ext_src *src);

/* The used set, whatever the block bitmap says: ext_open adds ext's own metadata (superblocks,
 * group descriptors, reserved GDT blocks, bitmaps, inode tables, the MMP block) to the bitmap
 * it read; ext_count adds every in-use inode's blocks with ext_used_inode; ext_used_finish then
 * lists s->used from it and lays s->layout over them. A block outside the filesystem is
 * refused (EUCLEAN, naming the inode and e2fsck -f). */
/* Reads the runs of inode ino into *rs (nothing for inline data and fast symlinks; the caller
 * frees rs->r) and adds them, the blocks mapping them and its xattr block to the used set. */
int ext_used_inode(struct ext_src *s, ext2_ino_t ino, struct ext2_inode *in, struct runs *rs);
int ext_used_finish(struct ext_src *s);

#endif
