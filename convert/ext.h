/* ext.h — the ext2/3/4 side of btk-convert: opening it with libext2fs, the refusals, and the
 * byte ranges it uses. */
#ifndef CONVERT_EXT_H
#define CONVERT_EXT_H

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
	uint64_t size;		     /* blocks_count * blocksize */
	struct btk_byte_range *used; /* blocks the block bitmap marks used, sorted, merged */
	size_t nused;
	uint64_t used_bytes;
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
void ext_close(struct ext_src *src);

#endif
