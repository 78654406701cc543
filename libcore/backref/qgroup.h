/* qgroup.h (layer 7) — exact qgroup accounting of every commit, as the kernel's.
 *
 * For each extent one of whose references from a subvolume tree changed in the transaction,
 * the subvolumes reaching it before (the committed trees) and after (the transaction's
 * settled trees) come from the back references (btk_extent_roots); they move each qgroup's
 * referenced and exclusive bytes, and those of the higher-level qgroups above it, by the
 * kernel's rules. A snapshot starts as the kernel's does (the snapshot refers to everything its
 * source refers to, each holding its own root block alone, its limits copied from the
 * source's); the shared subtrees of a dropped tree are counted whole, and a dropped tree's
 * qgroup goes once it holds nothing, as the kernel's cleaner removes it. Every counted qgroup's
 * item and the status item take the commit's generation.
 *
 * What it cannot count exactly marks quotas inconsistent (a rescan is needed), as the write
 * path does without it: quotas already inconsistent or with a rescan pending, simple quotas
 * or unknown status flags, several snapshots in one commit, a snapshot with a drop, a snapshot
 * of a tree new in the commit, a source whose qgroup has a parent (the kernel marks that too),
 * a reference that cannot be followed.
 */
#ifndef BTK_QGROUP_H
#define BTK_QGROUP_H

#include <stdbool.h>
#include "trans/trans.h"

/* What the commits of a write handle did with quotas; the last one's. */
struct btk_qgroup_acct {
	bool on;	   /* the filesystem has quotas */
	bool inconsistent; /* they are marked inconsistent now (a rescan is needed) */
	bool marked;	   /* this commit marked them (they were consistent) */
	char why[200];	   /* why it marked them */
};

/* Accounts qgroups in every commit of w (a write handle of fs) from now on; st (which must
 * outlive w's commits) is filled at each commit. Without a quota tree nothing is hooked: no
 * write records what quotas would need. */
void btk_qgroups_count(struct btk_fs *fs, struct btk_wfs *w, struct btk_qgroup_acct *st);

/* A rescan (what `btrfs quota enable` and `btrfs quota rescan` do), as a settled hook
 * (btk_write_on_settled; ctx a struct btk_qgroup_acct or NULL): every subvolume tree without a
 * level-0 qgroup gets one, and every qgroup's referenced and exclusive bytes are counted anew
 * from the tree blocks and data extents its subvolumes reach in the trees this transaction
 * leaves (higher levels through their relations); the status item says on and consistent, no
 * rescan under way, with this commit's generation. Simple quotas (the status's SIMPLE_MODE):
 * an extent written from its enable_gen on counts only for its owner (a data extent's
 * EXTENT_OWNER_REF, a tree block's header owner) and that owner's parents. Without a quota
 * status item it does nothing. -EOPNOTSUPP for unknown status flags; -EUCLEAN, -EIO,
 * -ENOMEM. */
int btk_qgroups_rescan(void *ctx, struct btk_trans *t);

#endif
