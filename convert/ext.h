/* ext.h — the ext2/3/4 side of btk-convert: opening it with libext2fs, the refusals, and the
 * byte ranges it uses. */
#ifndef CONVERT_EXT_H
#define CONVERT_EXT_H

#include <ext2fs/ext2fs.h>
#include <stdbool.h>
#include <stdint.h>

struct ext_range {
	uint64_t start, len; /* bytes */
};

struct ext_src {
	ext2_filsys e;
	const char *path;
	uint32_t blocksize;
	uint64_t size;		/* blocks_count * blocksize */
	struct ext_range *used; /* blocks the block bitmap marks used, sorted, merged */
	size_t nused;
	uint64_t used_bytes;
	uint64_t inodes;    /* inodes in use (s_inodes_count - s_free_inodes_count) */
	char features[256]; /* "has_journal extent 64bit ..." for reports */
	char saved[16];	    /* the image's subvolume: "ext2_saved", or "ext2_saved.N" when the
			     * ext root has an entry of that name (rollback finds it by id) */
};

/* Opens path read-only and checks that it can be converted; 0, or -errno with a one-line
 * reason through btk_err() (what is in the way and what to do). force lets an unclean or
 * error-marked filesystem through. */
int ext_open(const char *path, bool force, struct ext_src *src);
void ext_close(struct ext_src *src);

/* The ranges btrfs keeps for itself on a device of `size` bytes: the first MiB and the 64 KiB
 * at each superblock mirror (64 MiB, 256 GiB). Returns how many (at most 3). */
int ext_btrfs_reserved(uint64_t size, struct ext_range out[3]);

/* Bytes ext uses inside those ranges: what the conversion copies aside. */
uint64_t ext_reserved_used(const struct ext_src *src);

#endif
