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
 * write records what quotas would need (no btk writer turns quotas on). */
void btk_qgroups_count(struct btk_fs *fs, struct btk_wfs *w, struct btk_qgroup_acct *st);

/* What a rescan found. */
struct btk_qgroup_rescan {
	uint64_t qgroups;      /* qgroups counted */
	uint64_t changed;      /* of them, with other numbers than they had */
	uint64_t extents;      /* extents counted */
	bool was_inconsistent; /* the status said a rescan was needed */
	bool was_rescanning;   /* or that one was under way */
};

/* The kernel's rescan, offline, in transaction t (before it changes any subvolume tree):
 * every qgroup's referenced and exclusive bytes counted afresh from every extent of the
 * extent tree and the subvolumes reaching it (btk_extent_roots), with the relations as they
 * are; the limits stay. The status item then says quotas are on and consistent, no rescan
 * under way. The write handle must keep qgroups (BTK_WRITE_QGROUPS_KEPT) or its commit marks
 * them inconsistent again. -ENOENT when quotas are off; -EOPNOTSUPP for simple quotas or
 * unknown status flags; an extent whose subvolumes cannot be found fails it. */
int btk_qgroups_rescan(struct btk_trans *t, struct btk_qgroup_rescan *res);

#endif
