/* repair.h (layer 10) — btk-fsck --repair: fixes by problem code, verified before commit.
 *
 * Every problem code of check/problems.def has a row in repair/fixes.def: its fix, or why it
 * is not repairable. A repair round checks the filesystem once, plans a fix for each problem
 * that has one, applies them all in one copy-on-write transaction, and before any superblock
 * is written checks the new state again (a second, read-only view of the devices whose
 * superblocks are the ones the commit would write). It commits only when that check finds no
 * problem that was not there before and strictly fewer problems; otherwise nothing reaches a
 * superblock (the old filesystem stays whole) and each problem code's fixes are tried alone,
 * so that one bad fix does not hold back the others. Rounds repeat, bounded, while a round
 * commits and problems are left (one fix can uncover the next).
 */
#ifndef BTK_REPAIR_H
#define BTK_REPAIR_H

#include <stdbool.h>
#include <stdint.h>
#include "check/check.h"
#include "volumes/volumes.h"

/* The row of a problem: how a repair fixes it (fixable) or why it cannot ("not repairable:
 * ..."); safe fixes only rewrite derived data (counts, totals, caches) and may run in preen
 * mode (fsck -p). NULL for an id out of range. */
struct btk_repair_info {
	bool fixable, safe;
	const char *how;
};
const struct btk_repair_info *btk_repair_info(enum btk_check_problem_id id);

/* A fix that was committed. */
struct btk_repair_fix {
	const struct btk_check_problem_info *info;
	uint64_t tree, bytenr;
	bool has_key;
	struct btk_key key;
	int round; /* 1-based */
	char before[96], after[96];
};

typedef void (*btk_repair_fix_fn)(void *ctx, const struct btk_repair_fix *f);
/* Round events for a front end's messages (text, copied by the callee if kept). */
typedef void (*btk_repair_note_fn)(void *ctx, const char *text);

struct btk_repair_opts {
	bool preen;			/* only the fixes marked safe */
	int max_rounds;			/* 0: 4 */
	btk_repair_fix_fn on_fix;	/* each committed fix (may be NULL) */
	btk_check_report_fn on_left;	/* each problem left at the end (may be NULL) */
	btk_repair_note_fn on_note;	/* a refused round and why (may be NULL) */
	btk_check_progress_fn progress; /* may be NULL */
	void *ctx;
	/* bad copies healed (the rescue step heal) only when the first check reports what a heal
	 * rewrites: a tree block problem (a bad copy, no copy that reads) or the root tree lost;
	 * a heal is a walk over every copy, as long as the check itself.
	 * Returns > 0 when it rewrote something (the first check then runs again: the repair
	 * plans from the healed state), 0 when not, < 0 when it could not run (the repair goes
	 * on). NULL: no heal (the caller ran it before). */
	int (*heal)(void *heal_ctx);
	void *heal_ctx;
	/* a debugging aid: each re-check that took unchanged subvolume trees from the check
	 * before is followed by a full one, and the repair stops with an error when the two
	 * disagree (BTK_RECHECK_COMPARE=1 for btk-fsck) */
	bool recheck_compare;
};

struct btk_repair_result {
	uint64_t errors_before; /* errors of the first check */
	uint64_t errors_after;	/* errors of the last check (the state on disk at the end) */
	uint64_t fixes;		/* fixes committed */
	int rounds, commits;
	bool refused;	/* a planned fix was refused by the re-check and left out */
	bool unchecked; /* the last state could not be checked (root tree unreadable) */
	/* re-checks of new states, and of those the ones that took the subvolume trees from
	 * the check before (the transaction left them as they were) */
	int rechecks, rechecks_recorded;
	char failed[512]; /* the last refusal: which fix, what the re-check found */
};

/* Repairs the filesystem on paths[0..n-1], opened with oo (oo->write is set here; oo->dev
 * carries the fault switch and undo). Returns 0 when the repair ran (res says what it did and
 * what is left) or a negative errno when the filesystem could not be opened, checked or
 * written (btk_errmsg says why; nothing uncommitted reached a superblock). */
int btk_repair_run(const char *const *paths, int n, const struct btk_open_opts *oo,
		   const struct btk_repair_opts *ro, struct btk_repair_result *res);

#endif
