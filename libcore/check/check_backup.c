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

bool chk_root_tree(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint64_t root = btk_le64(sb->root), gen = btk_le64(sb->generation);
	char why[256], list[512] = "";
	size_t used = 0;

	if (reads(c->fs, root, sb->root_level, gen, why, sizeof(why)))
		return true;
	for (int i = 0; i < BTK_NUM_BACKUP_ROOTS; i++) {
		const struct btk_root_backup *b = &sb->super_roots[i];
		uint64_t br = btk_le64(b->tree_root), bg = btk_le64(b->tree_root_gen);
		if (!br || b->tree_root_level >= BTK_MAX_LEVEL ||
		    !reads(c->fs, br, b->tree_root_level, bg, NULL, 0))
			continue;
		int k = snprintf(list + used, sizeof(list) - used,
				 "%sslot %d (generation %llu, tree root %llu)", used ? ", " : "", i,
				 (unsigned long long)bg, (unsigned long long)br);
		if (k < 0 || (size_t)k >= sizeof(list) - used)
			break;
		used += (size_t)k;
	}
	chk_report(c, BTK_P_ROOT_TREE_UNREADABLE, BTRFS_ROOT_TREE_OBJECTID, root, NULL,
		   "a readable root tree", why,
		   "root tree block %llu (level %u, generation %llu) unreadable: nothing else can "
		   "be checked; backup roots that read: %s",
		   (unsigned long long)root, sb->root_level, (unsigned long long)gen,
		   used ? list : "none");
	if (used)
		chk_report(c, BTK_P_ROOT_TREE_BACKUP, BTRFS_ROOT_TREE_OBJECTID, root, NULL, "", "",
			   "check with the newest backup root: btk-fsck -b");
	return false;
}
