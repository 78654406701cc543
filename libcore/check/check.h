/* check.h (layer 9) — deep read-only consistency check of an opened filesystem (btk-fsck's engine).
 *
 * btk_check_run() compares every claim on disk with its counterpart: superblock copies with
 * the device items, chunks with dev extents and block groups, every tree block reachable from
 * every root with its parent pointer, the extent tree's items and back references with the
 * references found by walking every tree, block group used bytes with the extents, the free
 * space tree with the complement of the extents, and in fs trees inodes, names, file extents
 * and checksum coverage. Each problem goes to the caller's callback as it is found; nothing is
 * printed. Memory stays compact: sorted arrays of fixed-size records, no per-item allocation.
 */
#ifndef BTK_CHECK_H
#define BTK_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include "format/format.h"
#include "base/u64set.h"
#include "volumes/volumes.h"

/* What a problem is about, for grouping and JSON. Stable names via btk_check_kind_name(). */
enum btk_check_kind {
	BTK_CHK_SUPER,	     /* superblock copies and their totals */
	BTK_CHK_CHUNK,	     /* chunk items and their block groups */
	BTK_CHK_DEV_EXTENT,  /* dev extents against chunks and devices */
	BTK_CHK_DEVICE,	     /* device items: sizes and bytes used */
	BTK_CHK_BLOCK_GROUP, /* block group items: used bytes, chunk match */
	BTK_CHK_TREE_BLOCK,  /* unreadable or inconsistent tree block */
	BTK_CHK_EXTENT,	     /* extent items: overlaps, chunk type, generation, users */
	BTK_CHK_BACKREF,     /* extent back references against the references found */
	BTK_CHK_FREE_SPACE,  /* free space tree against the extents */
	BTK_CHK_ROOT,	     /* root items, root refs and backrefs, orphaned roots */
	BTK_CHK_INODE,	     /* inode items: nlink, nbytes, size, flags, generation */
	BTK_CHK_NAME,	     /* dir items, dir indexes, inode refs and their agreement */
	BTK_CHK_FILE_EXTENT, /* file extent items: overlaps, holes, inline rules */
	BTK_CHK_CSUM,	     /* checksum tree: overlaps, coverage, orphan checksums */
	BTK_CHK_DATA_CSUM,   /* data block whose checksum does not match (--check-data-csum) */
	BTK_CHK_KIND_COUNT
};

/* Every problem the checker can report, from check/problems.def: BTK_P_<ID>. */
enum btk_check_problem_id {
#define BTK_PROBLEM(id, code, name, kind, sev, repair, msg) BTK_P_##id,
#include "check/problems.def"
#undef BTK_PROBLEM
	BTK_P_COUNT
};

enum btk_check_severity {
	BTK_SEV_ERR, /* an error: the filesystem is not clean */
	BTK_SEV_WARN /* worth saying, but not an error */
};

/* One row of problems.def. The code (printed E%04u) and name are stable. */
struct btk_check_problem_info {
	uint16_t code;
	const char *name; /* e.g. "extent-refs" */
	enum btk_check_kind kind;
	enum btk_check_severity severity;
	bool repairable;     /* a repair could fix it from what is left on disk */
	const char *message; /* one-line description */
};

/* The row of id, or NULL when id is out of range. Static storage. */
const struct btk_check_problem_info *btk_check_problem_info(enum btk_check_problem_id id);

/* One problem. Strings point into storage valid only during the callback. */
struct btk_check_problem {
	enum btk_check_problem_id id;
	const struct btk_check_problem_info *info; /* the row of id: code, name, severity */
	enum btk_check_kind kind;		   /* info->kind */
	uint64_t tree;				   /* tree objectid, 0 when not about a tree */
	uint64_t bytenr; /* logical (or physical, see what) address, 0 when none */
	bool has_key;
	struct btk_key key;   /* item key, when has_key */
	const char *what;     /* what is wrong, e.g. "nlink does not match the names found" */
	const char *expected; /* what the counterpart says it should be ("" when n/a) */
	const char *found;    /* what is on disk ("" when n/a) */
	/* the numbers of the message, in the order of its template's {N} (a string's slot is
	 * 0), so that a repair needs no text: nvals of them, at most BTK_CHECK_VALS */
	unsigned nvals;
	uint64_t vals[8];
};
#define BTK_CHECK_VALS 8

typedef void (*btk_check_report_fn)(void *ctx, const struct btk_check_problem *p);
/* Progress: the phase's name ("superblocks", "trees", "chunks", "extents", "roots", "quotas",
 * "csums", "free space", then "done") and how far it is: for "trees", tree blocks walked and
 * the total the block group items promise (an estimate: done never exceeds it, and total is 0
 * when the items cannot be read); 0 and 0 for the other phases, which only have a name. */
typedef void (*btk_check_progress_fn)(void *ctx, const char *phase, uint64_t done, uint64_t total);

/* Tree blocks whose copies checks of the same devices compared (btk_check_opts.copies): good
 * ones (every copy equal to the one read) and bad ones. A block in good and not in bad whose
 * generation is below `below` is not compared again: the caller (a repair's re-check) knows
 * that nothing but a transaction with an id of at least `below` wrote the devices since,
 * and copy-on-write stamps every block it writes with it. (Relocation, trans/block_move.c,
 * keeps older generations in the copies it writes: a caller that relocates must not pass
 * `below`; repair does not relocate.) */
struct btk_check_copies {
	struct btk_u64set good, bad;
	uint64_t below; /* 0: every block is compared */
};

/* What the walks of the subvolume trees gave a check (check_record.c): a check with
 * btk_check_opts.record fills one; a later check of the same devices with .replay takes a
 * subvolume tree's part from it instead of walking the tree when every subvolume tree's root
 * item names the root block, generation and level recorded (copy-on-write never changes a
 * block in place), and nothing the record rests on was found damaged. A check with both
 * fills record with what it took and what it walked. btk_check_run returns -EAGAIN when a
 * record it began to take turns out not to match (the caller checks again without it). */
struct btk_check_record;
struct btk_check_record *btk_check_record_new(void); /* NULL: out of memory */
void btk_check_record_free(struct btk_check_record *r);
/* Whether a check took (part of) its result from r. */
bool btk_check_record_used(const struct btk_check_record *r);
/* A reference the recorded check's walk found: a tree's root block, a tree block's child
 * (level: the child's), a leaf's data extent (ino, off: its EXTENT_DATA_REF objectid and
 * offset; len its disk_num_bytes). parent is the block holding it (0 for a root); whether
 * it is keyed or shared is the parent's FULL_BACKREF flag's to say. A block several trees
 * share made its references once. */
struct btk_check_use {
	uint64_t bytenr, root, parent, ino, off, len;
	uint32_t count;
	int level; /* -1 for data */
	bool data;
};
/* Calls fn for every reference the check that filled r found in every tree (the users of
 * every extent of the state it checked): 1 when it did (fn returning non-zero stops it with
 * that), 0 when r cannot say (it is not usable: a tree that did not read, relocation or log
 * trees, half-deleted trees...). */
int btk_check_record_uses(const struct btk_check_record *r,
			  int (*fn)(void *ctx, const struct btk_check_use *u), void *ctx);

struct btk_check_opts {
	bool data_csum;			 /* read and verify every data block, every copy */
	struct btk_check_record *record; /* NULL, or filled by this check */
	struct btk_check_record *replay; /* NULL, or a record to take unchanged trees from */
	struct btk_check_copies *copies; /* NULL, or what earlier checks compared (added to) */
	btk_check_report_fn report;	 /* may be NULL (problems are only counted) */
	btk_check_progress_fn progress;	 /* may be NULL */
	void *ctx;			 /* passed to both callbacks */
	uint64_t max_reports; /* stop reporting (still counting) past this; 0 = no limit */
	/* data_csum: one report per data extent and mirror for the sectors that fail their
	 * checksums (how many, the first, its owners), not one per sector; every sector still
	 * counts as an error */
	bool data_summary;
};

/* Totals like btrfs check prints them, plus error counts. */
struct btk_check_summary {
	uint64_t errors;   /* problems of severity BTK_SEV_ERR found */
	uint64_t warnings; /* problems of severity BTK_SEV_WARN found */
	uint64_t errors_by_kind[BTK_CHK_KIND_COUNT];
	uint64_t bytes_used;	      /* sum of extent item sizes (data and metadata) */
	uint64_t total_csum_bytes;    /* bytes of checksums in csum items (btrfs check counts so) */
	uint64_t total_tree_bytes;    /* bytes of distinct tree blocks found */
	uint64_t total_fs_tree_bytes; /* ... of which in subvolume trees */
	uint64_t total_extent_tree_bytes;
	uint64_t btree_space_waste;	/* unused bytes in the distinct tree blocks */
	uint64_t data_bytes_allocated;	/* sum of disk bytes of file extent items (btrfs check's) */
	uint64_t data_bytes_referenced; /* sum of bytes referenced by file extent items */
	uint64_t nr_roots;		/* trees walked */
	uint64_t nr_subvols;		/* fs trees checked (subvolumes, snapshots) */
	uint64_t nr_inodes;	 /* inodes checked (a subtree snapshots share is checked once) */
	uint64_t nr_tree_blocks; /* distinct tree blocks */
	uint64_t nr_extents;	 /* extent items */
	uint64_t data_blocks_checked;  /* sectors verified by data_csum, counting every copy */
	uint64_t space_caches_checked; /* v1 space caches loaded and compared */
};

/* Runs every check on fs. Returns 0 when the check ran (problems, if any, are in
 * summary->errors; an unreadable tree block is one of them), or -ENOMEM when it could not
 * finish (btk_errmsg says so). summary is filled in either case. */
int btk_check_run(struct btk_fs *fs, const struct btk_check_opts *opts,
		  struct btk_check_summary *summary);

/* "super", "chunk", "dev-extent", ... Static strings. */
const char *btk_check_kind_name(enum btk_check_kind kind);

#endif
