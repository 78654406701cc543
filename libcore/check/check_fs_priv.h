/* check_fs_priv.h (layer 9) — state of the fs-tree checker, shared by check_fs.c (items and inodes)
 * and check_names.c (names, which cross inodes). Only those two include it.
 */
#ifndef BTK_CHECK_FS_PRIV_H
#define BTK_CHECK_FS_PRIV_H

#include "check/check_priv.h"
#include "format/inode_item.h"

#include <sys/stat.h>

#define SRC_DIR_ITEM  1
#define SRC_DIR_INDEX 2
#define SRC_REF	      4

struct key_range {
	struct btk_key lo, hi; /* [lo, hi) */
};
BTK_VEC(key_ranges, struct key_range);

/* One name, merged from its dir item, dir index and inode ref. */
struct chk_name {
	uint64_t dir, child;
	uint64_t hash; /* high 32 bits: btrfs name hash (the DIR_ITEM key offset); low: FNV-1a */
	uint64_t idx_dir, idx_ref;
	uint8_t src, ftype; /* SRC_* seen; dir entry file type (CHK_FT_*) */
	uint8_t dup_index;  /* a second DIR_INDEX of this name and inode (another index) */
	uint8_t matched;    /* the other side was found (check_names.c) */
};
BTK_VEC(chk_names, struct chk_name);
/* chk_name.ftype besides the on-disk types: unknown (an invalid type, reported with its item,
 * or no dir side seen yet), and the dir item's and the dir index's types disagree */
#define CHK_FT_UNKNOWN BTRFS_FT_UNKNOWN
#define CHK_FT_DIFFERS 0xff

/* One side of a name waiting for the inode that holds the other side: 35 bytes. A dir side
 * (src DIR_ITEM/DIR_INDEX, idx from the dir index) waits for its child, an inode ref (src REF,
 * idx from the ref) for its directory. */
struct name_part {
	uint64_t dir, child, hash, idx;
	uint8_t src, ftype, dup_index;
} __attribute__((packed));
BTK_VEC(name_parts, struct name_part);

/* Parts waiting, by the inode they wait for. Most arrive in that order: they go to a queue of
 * delta-coded bytes (about 13 bytes a part: the inode waited for, the other inode and the index
 * differ little from the previous part's, and the 8-byte name hash is kept whole); the others
 * go to a binary heap of whole parts. */
BTK_VEC(chk_bytes, uint8_t);
struct name_code {
	uint64_t key, other, idx; /* of the part coded last (tail) or decoded last (front) */
};
struct name_wait {
	struct chk_bytes q; /* nondecreasing keys from head on */
	size_t head;
	struct name_code tail, front;
	struct name_parts heap;
};

/* The dir entries (or the inode refs) of the inode being read, by (dir, child, hash). */
struct name_dtab {
	struct chk_name *slots;
	size_t n, cap;
	size_t *used; /* filled slots, in insertion order */
};

/* Inode modes of the tree, in inode order: runs of consecutive inode numbers over one array of
 * 16-bit modes (type and permissions: 2 bytes per inode). Inodes out of order (a damaged tree)
 * and modes with higher bits set go to `extra`. */
struct ino_run {
	uint64_t start;
	uint32_t count, at;
};
BTK_VEC(ino_runs, struct ino_run);
BTK_VEC(chk_u16s, uint16_t);
struct chk_ino {
	uint64_t ino;
	uint32_t mode;
};
BTK_VEC(chk_inos, struct chk_ino);
struct ino_table {
	struct ino_runs runs;
	struct chk_u16s modes;
	struct chk_inos extra;
	bool extra_sorted;
};

struct ino_state {
	uint64_t ino;
	bool has_item, orphan;
	uint32_t mode, nlink;
	uint64_t size, nbytes, flags, leaf;
	uint64_t names, dirsize, found_bytes, ext_end;
	bool has_ext;
	bool partial;		       /* some of its items lie in a skipped range */
	bool has_inline, inline_plain; /* an inline extent at 0; not compressed */
	bool inline_nul;	       /* its last byte is a NUL */
	uint64_t inline_ram;	       /* its bytes of file data */
};

struct chk_fstree {
	uint64_t tree;
	struct chk_u64s orphans; /* sorted */
	/* names: sides of the inode being read, sides waiting for a later inode, and names found
	 * inconsistent (judged at the tree's end, when every skipped range is known) */
	struct name_dtab dtab;
	struct name_dtab rtab;	 /* inode refs of the inode being read */
	struct name_parts later; /* sides of the inode being read that go to wait */
	struct name_wait wait;
	struct chk_names bad;
	/* the names met in the dir indexes of directory seen_dir (they lie together in key order):
	 * keyed (seen_dir, 0, name hash), idx_dir the index, idx_ref the inode it names */
	struct name_dtab seen;
	uint64_t seen_dir;
	struct chk_ino last_dir; /* the directory looked up last (names come in runs) */
	struct ino_table inodes;
	bool gap; /* part of the tree was unreadable */
	bool active;
	struct ino_state cur;
	/* Subtrees shared with a subvolume checked before are not walked again; their key
	 * ranges are kept so that what lies in them is taken as seen (it was checked there). */
	struct key_ranges skips; /* in key order */
	bool skip_open;		 /* a range starts at skip_lo and ends at the next item seen */
	bool after_skip;	 /* the next new inode may have items in the skipped range */
	struct btk_key skip_lo;
};

/* check_names.c: a table of names by (dir, child, hash) (struct name_dtab) */
struct chk_name *chk_tab_find(const struct name_dtab *d, uint64_t dir, uint64_t child,
			      uint64_t hash);
/* The slot of (dir, child, hash), a new zeroed one (src 0: the caller sets it) when absent;
 * NULL when out of memory (c->oom set). */
struct chk_name *chk_tab_get(struct chk *c, struct name_dtab *d, uint64_t dir, uint64_t child,
			     uint64_t hash);
void chk_tab_clear(struct name_dtab *d);
void chk_tab_free(struct name_dtab *d);
/* check_fs.c */
/* chk_rep for the fs tree being checked: value {0} of the message is the tree ("root {0}: ..."),
 * the values passed follow it. */
#define chk_fs_rep(c, id, leaf, k, ...)                                                            \
	chk_rep(c, id, (c)->fst->tree, leaf, k, CHK_U((c)->fst->tree), ##__VA_ARGS__)
/* True if some skipped range meets the keys (objectid, type, lo..hi). */
bool chk_fs_skipped(const struct chk_fstree *t, uint64_t objectid, uint8_t type, uint64_t lo,
		    uint64_t hi);
bool chk_has_u64(const struct chk_u64s *v, uint64_t x);

/* check_names.c */
/* A dir item or dir index entry of the inode being read (dir) naming inode child. */
void chk_name_entry(struct chk *c, uint64_t dir, uint64_t child, uint64_t index,
		    const uint8_t *name, size_t len, uint8_t src, uint8_t ftype);
/* An inode ref or extref of the inode being read (child) in directory dir. */
void chk_name_ref(struct chk *c, uint64_t dir, uint64_t child, uint64_t index, const uint8_t *name,
		  size_t len);
/* The items of inode ino have ended: its names are matched with the sides waiting for it. */
void chk_names_inode_end(struct chk *c, uint64_t ino);
/* The tree has ended: what still waits is incomplete; reports the names found wrong (report
 * false: only frees). */
void chk_names_final(struct chk *c, bool report);
/* The inode table: an inode item seen; its mode by number. */
void chk_ino_add(struct chk *c, uint64_t ino, uint32_t mode);
bool chk_ino_mode(struct chk_fstree *t, uint64_t ino, uint32_t *mode);

#endif
