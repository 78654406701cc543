/* reloc_fsid.c — a full change of the fsid (btrfstune -u) as one copy-on-write transaction.
 *
 * Every tree block carries the fsid in its header. Instead of rewriting them in place, every
 * block of the committed trees is moved as relocation moves it (a copy made by the
 * transaction, sharing between snapshots kept, the parents re-pointed), and every copy gets
 * the new fsid (trans: btk_trans_fsid_rewrite_begin); the device items and the superblock get
 * it too. The old blocks stay untouched until the commit's superblocks name the copies: a
 * power cut before the primary superblock leaves the old filesystem, after it the new one.
 * The price: room for a second copy of the metadata (new chunks where the free metadata space
 * does not suffice); without it the transaction is dropped with -ENOSPC.
 */
#include "base/error.h"
#include "relocate/relocate.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>
#include <string.h>

int btk_fsid_rewrite(struct btk_trans *t, const uint8_t fsid[BTK_FSID_SIZE],
		     btk_resize_progress_fn progress, void *ctx, uint64_t *blocks)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct rl_stats st = {0};
	int ret;

	*blocks = 0;
	/* already the fsid of the superblock and of every block: nothing to change */
	if (!memcmp(fsid, fs->sb.fsid, BTK_FSID_SIZE) &&
	    !memcmp(fsid, fs->meta_uuid, BTK_FSID_SIZE))
		return 0;
	if ((ret = btk_trans_fsid_rewrite_begin(t, fsid)))
		return ret;
	ret = rl_move_tree_blocks(t, progress, ctx, &st);
	if (!ret)
		ret = btk_trans_fsid_rewrite_done(t, blocks);
	if (ret) {
		btk_trans_fsid_rewrite_cancel(t);
		if (ret == -ENOSPC)
			ret = btk_err(ENOSPC,
				      "no room for a second copy of the metadata (%llu "
				      "tree blocks moved so far)",
				      (unsigned long long)st.tree_blocks);
	}
	return ret;
}
