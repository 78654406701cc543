/* check_backup.c — an unreadable root tree, said once, with the backup roots that would do.
 *
 * Without the root tree no other tree can be found, and every comparison that follows would
 * report its counterpart missing (chunks without dev extents, block groups without items...).
 * So the checker stops after one problem that names the root tree block and lists the
 * superblock's backup root slots whose tree root does read: `btk-fsck -b` checks with the
 * newest of them.
 */
#include "check/check_priv.h"
#include "base/error.h"
#include "volumes/super.h"

#include <stdio.h>
#include <string.h>

/* Does the block at bytenr read and validate at this level and generation? */
static bool reads(struct btk_fs *fs, uint64_t bytenr, int level, uint64_t gen, char *why,
		  size_t len)
{
	struct btk_block_check chk = {.level = level, .generation = gen};
	struct btk_block *b;

	if (btk_block_read(fs, bytenr, &chk, &b)) {
		if (why)
			snprintf(why, len, "%s", btk_errmsg());
		return false;
	}
	btk_block_put(b);
	return true;
}

/* A check of a backup or older root (-b, --tree-root): the root tree the superblock on disk
 * names is what mounts. When that one does not read, the check says so as an error, whatever
 * the chosen root's check finds. */
static void current_root(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	const struct btk_super *disk = NULL;
	char why[256];

	for (int i = 0; i < c->fs->ndevs && !disk; i++) {
		const struct btk_fs_dev *d = &c->fs->devs[i];
		int m = d->dev ? btk_super_read_all(d->dev, copies) : -1;
		if (m < 0)
			continue;
		if (d->super_mirror >= 0 && d->super_mirror < BTK_SUPER_MIRRORS &&
		    copies[d->super_mirror].valid)
			m = d->super_mirror;
		disk = &copies[m].sb;
	}
	if (!disk || !memcmp(disk->root, sb->root, 8))
		return;
	uint64_t root = btk_le64(disk->root), gen = btk_le64(disk->generation);
	if (disk->root_level < BTK_MAX_LEVEL &&
	    reads(c->fs, root, disk->root_level, gen, why, sizeof(why)))
		return;
	if (disk->root_level >= BTK_MAX_LEVEL)
		snprintf(why, sizeof(why), "level %u out of range", disk->root_level);
	chk_rep(c, CHK_M_CURRENT_ROOT_DAMAGED, BTRFS_ROOT_TREE_OBJECTID, root, NULL, CHK_U(root),
		CHK_U(disk->root_level), CHK_U(gen), CHK_U(btk_le64(sb->generation)),
		CHK_U(btk_le64(sb->root)), CHK_S(why));
}

bool chk_root_tree(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint64_t root = btk_le64(sb->root), gen = btk_le64(sb->generation);
	char why[256], list[512] = "";
	size_t used = 0;

	if (reads(c->fs, root, sb->root_level, gen, why, sizeof(why))) {
		current_root(c);
		return true;
	}
	for (int i = 0; i < BTK_NUM_BACKUP_ROOTS; i++) {
		const struct btk_root_backup *b = &sb->super_roots[i];
		uint64_t br = btk_le64(b->tree_root), bg = btk_le64(b->tree_root_gen);
		if (!br || b->tree_root_level >= BTK_MAX_LEVEL ||
		    !reads(c->fs, br, b->tree_root_level, bg, NULL, 0))
			continue;
		if (used && used + 2 < sizeof(list))
			used += chk_part(list + used, sizeof(list) - used, CHK_PART_LIST_SEP);
		used += chk_part(list + used, sizeof(list) - used, CHK_PART_BACKUP_SLOT, CHK_I(i),
				 CHK_U(bg), CHK_U(br));
	}
	bool unmapped = !btk_chunk_find(c->fs, root);
	if (unmapped && !used)
		chk_part(list, sizeof(list), CHK_PART_LIST_NONE);
	chk_rep(c,
		unmapped ? CHK_M_ROOT_TREE_UNMAPPED
		: used	 ? CHK_M_ROOT_TREE_UNREADABLE
			 : CHK_M_ROOT_TREE_UNREADABLE_NO_BACKUP,
		BTRFS_ROOT_TREE_OBJECTID, root, NULL, CHK_U(root), CHK_U(sb->root_level),
		CHK_U(gen), CHK_S(why), CHK_S(list));
	if (used)
		chk_rep(c, CHK_M_ROOT_TREE_BACKUP, BTRFS_ROOT_TREE_OBJECTID, root, NULL);
	return false;
}
