/* links.h — ext's link counts against the names a walk from the root directory finds, before
 * anything is written: btrfs keeps one reference per name and its checkers compare the link
 * count with them, so a count that e2fsck would correct must not be copied. */
#ifndef CONVERT_LINKS_H
#define CONVERT_LINKS_H

#include "ext.h"

struct ext_links_result {
	uint32_t fixed;		   /* inodes whose link count differed from their names */
	uint32_t unnamed;	   /* of them, inodes in use that no name reaches (not converted) */
	struct ext_link_fix first; /* the lowest-numbered of them */
};

/* Whether a directory entry (from ext2fs_dir_iterate2) is a name: not ".", "..", or empty. */
bool ext_dirent_is_name(int entry, const struct ext2_dir_entry *d);

/* Called by ext_count before its scan, and for every inode the inode bitmap marks used (any
 * link count, 0 too) from the ext root on. */
int ext_links_start(struct ext_src *s);
void ext_links_note(struct ext_src *s, ext2_ino_t ino, const struct ext2_inode *in);

/* Walks every directory reachable from the root and compares each inode's link count with the
 * names that reach it. Refuses, with one line naming the inode and e2fsck -f: a count that
 * differs (unless force: then s->fixes holds the names counted, which the conversion gives
 * instead, and *r says how many); and, force or not, what no count mends: a directory with a
 * second name, an entry naming an inode not in use. 0 or -errno (message set). */
int ext_links_check(struct ext_src *s, bool force, struct ext_links_result *r);

/* "N names", "1 name" or "no name reaches it", in buf. */
const char *ext_links_names(uint32_t names, char buf[32]);

/* The link count btrfs gives ext inode ino (not a directory) whose ext count is `count`. */
uint32_t ext_links_nlink(const struct ext_src *s, ext2_ino_t ino, uint32_t count);

#endif
