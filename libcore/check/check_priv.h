/* check_priv.h (layer 9) — internals of the checker (check*.c only).
 *
 * The checker makes one pass over every tree and keeps what must be compared across trees in
 * typed growable arrays (base/vec.h), sorted and merged at the end. Only
 * per-tree state of the fs-tree checker (names, inodes) is freed as each tree ends.
 */
#ifndef BTK_CHECK_PRIV_H
#define BTK_CHECK_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "check/check.h"
#include "base/u64set.h"
#include "base/vec.h"
#include "tree/tree.h"

/* The set of tree blocks visited: struct btk_u64set (base/u64set.h) by its old name. */
#define chk_set btk_u64set
/* Adds x; 1 if new, 0 if present, -ENOMEM. */
static inline int chk_set_add(struct chk_set *s, uint64_t x)
{
	return btk_u64set_add(s, x);
}
static inline bool chk_set_has(const struct chk_set *s, uint64_t x)
{
	return btk_u64set_has(s, x);
}
static inline void chk_set_free(struct chk_set *s)
{
	btk_u64set_free(s);
}

/* A back reference: declared by the extent tree, or found by walking. */
struct chk_ref {
	uint64_t bytenr; /* extent start */
	uint64_t root;	 /* TREE_BLOCK_REF / EXTENT_DATA_REF: root; unresolved: parent's owner */
	uint64_t parent; /* SHARED_*: parent block; unresolved: parent block */
	uint64_t ino;	 /* EXTENT_DATA_REF objectid */
	uint64_t off;	 /* EXTENT_DATA_REF offset; found tree refs: the child's level */
	union {
		uint64_t len;	/* found data refs: disk_num_bytes of the file extent */
		uint64_t found; /* declared refs: the count of found refs matched with it */
	};
	uint32_t count;
	uint8_t type;	    /* BTRFS_*_REF_KEY */
	uint8_t unresolved; /* found ref still to resolve against the parent's FULL_BACKREF */
};

/* An extent item. */
struct chk_extent {
	uint64_t bytenr, len, refs, flags; /* the generation is checked when read */
	uint64_t declsum;		   /* sum of the counts of its inline and keyed refs */
	int8_t level;			   /* tree blocks: level from the item; -1 for data */
	bool has_users;			   /* some found reference points at it */
	uint8_t key_type;
};

struct chk_bg {
	uint64_t start, len, used, flags;
	uint64_t found_used;
};

struct chk_dext {
	uint64_t devid, physical, len, chunk_offset;
};

struct chk_devitem {
	uint64_t devid, total_bytes, bytes_used;
	uint8_t uuid[BTK_UUID_SIZE], fsid[BTK_FSID_SIZE];
};

/* What a present device's own superblock says it is (check_super.c). */
struct chk_devsb {
	uint64_t devid;
	uint8_t uuid[BTK_UUID_SIZE], fsid[BTK_FSID_SIZE];
};

struct chk_range {
	uint64_t start, len;
};

struct chk_rootitem {
	uint64_t id, offset, bytenr, gen, flags, dirid, last_snapshot;
	uint32_t refs;
	uint8_t level;
	bool dropping;			     /* drop_progress set: half-deleted */
	struct btk_key drop_key;	     /* blocks wholly before it are already freed */
	uint8_t uuid[16], received_uuid[16]; /* zero when the item is too old to have them */
	uint8_t drop_level;
};

/* ROOT_REF (parent -> child) or ROOT_BACKREF (child -> parent), or a dir entry in a parent
 * tree naming a subvolume (kind 2: dir item, 3: dir index). */
struct chk_rootref {
	uint64_t parent, child, dirid, seq, hash;
	uint8_t kind; /* 0 ROOT_REF, 1 ROOT_BACKREF, 2 DIR_ITEM, 3 DIR_INDEX */
};

/* One subvolume id listed under a uuid in the uuid tree. */
struct chk_uuid {
	uint8_t uuid[16];
	uint64_t subvol;
	uint8_t type; /* BTRFS_UUID_KEY_SUBVOL or _RECEIVED_SUBVOL */
};

/* A qgroup's info item and the counts found for it. */
struct chk_qinfo {
	uint64_t id, rfer, excl, found_rfer, found_excl;
};

/* A subvolume tree block whose header names another tree as its owner than the one walked: the
 * owner must hold a back reference to it unless it is FULL_BACKREF (check_extents.c). */
struct chk_owner {
	uint64_t bytenr, owner;
	int level;
};

/* What a tree block's FULL_BACKREF flag must be, as the walk found the block (check_trees.c's
 * full_backref_rule): judged against its extent item (chk_full_backref). */
struct chk_fullwant {
	uint64_t bytenr, gen;
	uint64_t last_snapshot; /* !full: the last snapshot of the owner's tree */
	int level;
	bool full;
};

/* A key range of a subvolume tree not walked again because another subvolume shares it. */
struct chk_skip {
	uint64_t tree;
	struct btk_key lo, hi;
};

/* A FREE_SPACE_INFO item (check_fst.c), or a block group whose v1 cache was loaded
 * (check_v1cache.c: count and flags zero). */
struct chk_fst_info {
	uint64_t start, len, count, flags;
};

/* v1 space cache: a free space header, an inode of a cache file, a file extent of one. */
struct chk_v1hdr {
	uint64_t bg, ino, gen, entries, bitmaps;
};
struct chk_v1ino {
	uint64_t ino, gen, size;
};
struct chk_v1ext {
	uint64_t ino, foff, disk, doff, len, prealloc;
};

/* A tree block whose later copies are still to be compared with it (check_copies.c). */
struct chk_copy {
	uint64_t bytenr, gen, tree;
	uint8_t csum[8]; /* start of the good copy's stored checksum */
	int8_t level;
	uint8_t first; /* first 0-based copy still to verify */
};

BTK_VEC(chk_copies, struct chk_copy);
struct chk_copy_batch;
BTK_VEC(chk_refs, struct chk_ref);
BTK_VEC(chk_extents, struct chk_extent);
BTK_VEC(chk_bgs, struct chk_bg);
BTK_VEC(chk_dexts, struct chk_dext);
BTK_VEC(chk_devitems, struct chk_devitem);
BTK_VEC(chk_devsbs, struct chk_devsb);
BTK_VEC(chk_ranges, struct chk_range);
BTK_VEC(chk_fst_infos, struct chk_fst_info);
BTK_VEC(chk_rootitems, struct chk_rootitem);
BTK_VEC(chk_rootrefs, struct chk_rootref);
BTK_VEC(chk_u64s, uint64_t);
BTK_VEC(chk_log_roots, struct btk_root);
BTK_VEC(chk_uuids, struct chk_uuid);
BTK_VEC(chk_qinfos, struct chk_qinfo);
BTK_VEC(chk_skips, struct chk_skip);
BTK_VEC(chk_owners, struct chk_owner);
BTK_VEC(chk_fullwants, struct chk_fullwant);
BTK_VEC(chk_v1hdrs, struct chk_v1hdr);
BTK_VEC(chk_v1inos, struct chk_v1ino);
BTK_VEC(chk_v1exts, struct chk_v1ext);

/* A name's 64-bit FNV-1a hash (seeded with its length): the key under which the fs trees'
 * dir entries and the root tree's root refs are matched. */
static inline uint64_t chk_name_hash64(const uint8_t *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ len;

	for (size_t i = 0; i < len; i++)
		h = (h ^ name[i]) * 0x100000001b3ULL;
	return h;
}

struct chk_fstree; /* per fs tree state, check_fs.c */
struct chk_dv;	   /* data verification threads, check_dverify.c */
struct btk_backref;

struct chk {
	struct btk_fs *fs;
	const struct btk_check_opts *opts;
	struct btk_check_summary *sum;
	uint64_t max_gen;	 /* highest valid generation (super generation, +1 with a log) */
	uint64_t reported;	 /* problems passed to the callback */
	uint64_t progress_total; /* tree blocks the block groups promise (progress only) */
	bool oom;		 /* an allocation failed: abort with -ENOMEM */
	bool extent_gap; /* part of the extent tree was unreadable: do not compare with it */
	bool walk_gap;	 /* part of another tree was unreadable: users may be missing */
	bool chunk_gap;	 /* part of the chunk tree was unreadable: items may be missing */
	bool no_holes, skinny, has_fst;
	/* the tree being walked */
	uint64_t tree;
	int tree_class; /* CHK_T_* */
	const struct chk_rootitem *tree_item;
	bool leaf_first;	    /* the leaf being checked is seen for the first time */
	const struct btk_key *drop; /* walking a half-deleted tree: its drop progress */
	struct chk_set visited;
	/* records */
	struct chk_refs found;	    /* struct chk_ref: those not matched at once (chk_found_ref) */
	struct chk_refs declared;   /* struct chk_ref */
	bool declared_sorted;	    /* declared is complete and sorted: found refs count in it */
	struct chk_extents extents; /* struct chk_extent, in key order */
	struct chk_bgs bgs;	    /* struct chk_bg */
	struct chk_dexts dexts;	    /* struct chk_dext, in key order */
	struct chk_devitems devitems;  /* struct chk_devitem */
	struct chk_devsbs devsbs;      /* struct chk_devsb: one per present device */
	struct chk_ranges csums;       /* struct chk_range: merged csum coverage */
	struct chk_ranges csum_need;   /* struct chk_range: data that needs checksums */
	struct chk_ranges csum_forbid; /* struct chk_range: prealloc space: no checksums */
	struct chk_ranges
	    csum_nodsum;	    /* struct chk_range: data of NODATASUM inodes: no checksums */
	struct chk_ranges fst_free; /* struct chk_range: free space per the free space tree */
	struct chk_fst_infos fst_info; /* struct chk_fst_info: see check_fst.c */
	struct chk_rootitems roots;    /* struct chk_rootitem, in key order */
	bool roots_unsorted;	       /* a damaged root tree gave its items out of order */
	struct chk_rootrefs rootrefs;  /* struct chk_rootref */
	struct chk_u64s root_orphans;  /* uint64_t root ids with an orphan item in the root tree */
	struct chk_ranges qrefs;  /* struct chk_range {extent, subvolume} reached while walking */
	struct chk_qinfos qinfos; /* struct chk_qinfo */
	struct chk_ranges qrels;  /* struct chk_range {child, parent} qgroup relations */
	uint64_t qstatus, qstatus_gen; /* qgroup status flags and generation */
	bool qstatus_seen;
	bool quota_tree;	  /* the quota tree exists: record what subvolumes reach */
	struct chk_skips skips;	  /* struct chk_skip, from every fs tree */
	struct chk_owners owners; /* struct chk_owner: fs tree blocks owned by another tree */
	/* struct chk_fullwant: blocks walked before the extent tree, judged at the end */
	struct chk_fullwants fullwants;
	uint8_t chunk_uuid[BTK_UUID_SIZE]; /* the chunk root's chunk tree uuid */
	bool has_chunk_uuid;
	struct chk_uuids uuids; /* struct chk_uuid: entries of the uuid tree */
	uint64_t csum_prev_end;
	struct chk_log_roots log_roots; /* struct btk_root: per-subvolume log trees */
	struct chk_ranges log_need;	/* struct chk_range: logged data that needs checksums */
	struct chk_ranges log_csums;	/* struct chk_range: checksums in the log trees */
	/* disk_bytenr of every data extent a log tree's file extents use: until the log is
	 * replayed they are users of those extents, which the extent tree does not list */
	struct btk_u64set log_users;
	uint64_t log_ino, log_ino_flags; /* inode item last seen in a log tree */
	bool fst_barrier;		 /* next free range starts a new block group */
	bool fs_v1;			 /* comparing a v1 space cache, not the free space tree */
	struct chk_v1hdrs v1hdr;
	struct chk_v1inos v1ino;
	struct chk_v1exts v1ext;       /* v1 space cache: headers, inodes, file extents */
	uint64_t ext_prev_end;	       /* extent tree item order: end of the previous extent item */
	struct chk_extent *cur_extent; /* extent item whose keyed refs follow (index in extents) */
	long cur_extent_idx;
	struct chk_fstree *fst;	  /* fs tree being checked, or NULL */
	struct btk_backref *br;	  /* back reference session for data error owners, or NULL */
	uint8_t *copy_buf;	  /* nodesize bytes: a mirror being compared (check_copies.c) */
	struct chk_copies copies; /* blocks whose other copies are still to read */
	struct chk_copy_batch *copy_batch; /* copies being read by a thread, or NULL */
	struct chk_dv *dv;		   /* data_csum: verification under way, or NULL */
	int replay_state; /* opts->replay: 0 not decided yet, 1 taken, -1 not usable */
};

/* p, after marking c out of memory when p is NULL (a failed allocation aborts the check). */
static inline void *chk_oom_if_null(struct chk *c, void *p)
{
	if (!p)
		c->oom = true;
	return p;
}
/* btk_vec_push(v) that marks c out of memory when it fails; a T * or NULL. */
#define chk_push(c, v) ((__typeof__((v)->data))chk_oom_if_null((c), btk_vec_push(v)))

/* One item of a leaf as the leaf checks see it: key, data, size and slot. */
struct chk_item {
	struct btk_key k;
	const uint8_t *p;
	uint32_t sz;
	int slot;
};
/* Steps it to the next item of leaf b whose key type is type (0: any type); false past the
 * last item or once the check ran out of memory. */
static inline bool chk_next_item(const struct chk *c, const struct btk_block *b, uint8_t type,
				 struct chk_item *it)
{
	while (!c->oom && (uint32_t)++it->slot < btk_block_nritems(b)) {
		btk_leaf_key(b, it->slot, &it->k);
		if (type && it->k.type != type)
			continue;
		it->p = btk_leaf_data(b, it->slot);
		it->sz = btk_leaf_size(b, it->slot);
		return true;
	}
	return false;
}
/* for (each item it of leaf b, of key type type or of any type when 0) while c has memory. */
#define chk_for_items(c, b, type, it)                                                              \
	for (struct chk_item it = {.slot = -1}; chk_next_item((c), (b), (type), &it);)

enum {
	CHK_T_OTHER,
	CHK_T_ROOT,
	CHK_T_EXTENT,
	CHK_T_CHUNK,
	CHK_T_DEV,
	CHK_T_FS,
	CHK_T_CSUM,
	CHK_T_FST,
	CHK_T_BG,
	CHK_T_RELOC,
	CHK_T_LOG,
	CHK_T_UUID,
	CHK_T_QUOTA
};

/* ---- reporting (check_report.c) ----
 * A check reports a message of problems.def (a BTK_MESSAGE row: its problem, and templates of
 * what / expected / found) with the values its templates name: "{N}" is the N-th value. */
enum chk_message_id {
#define BTK_MESSAGE(id, problem, what, expected, found) CHK_M_##id,
#include "check/problems.def"
	CHK_M_COUNT
};

struct chk_message {
	enum btk_check_problem_id problem;
	const char *what;     /* NULL: the problem's message */
	const char *expected; /* NULL or "": none */
	const char *found;
};
/* The row of id, or NULL when out of range. */
const struct chk_message *chk_message(enum chk_message_id id);

enum chk_val_type { CHK_VT_U, CHK_VT_I, CHK_VT_S, CHK_VT_UUID };
/* A value a message names: an unsigned or signed number, a string (NUL-terminated, or of len
 * bytes) or a uuid (16 bytes, printed 8-4-4-4-12 in lower case hex); what it points to must
 * stay valid during the call. */
struct chk_val {
	enum chk_val_type type;
	union {
		uint64_t u;
		int64_t i;
		const char *s;
	};
	size_t len; /* CHK_VT_S: SIZE_MAX when NUL-terminated */
};
#define CHK_U(x)     ((struct chk_val){.type = CHK_VT_U, .u = (x)})
#define CHK_I(x)     ((struct chk_val){.type = CHK_VT_I, .i = (x)})
#define CHK_S(x)     ((struct chk_val){.type = CHK_VT_S, .s = (x), .len = SIZE_MAX})
#define CHK_SN(p, n) ((struct chk_val){.type = CHK_VT_S, .s = (const char *)(p), .len = (n)})
#define CHK_UUID(p)  ((struct chk_val){.type = CHK_VT_UUID, .s = (const char *)(p), .len = 16})

/* Fragments of a value (an item of a list, a reason): BTK_PART rows of problems.def. */
enum chk_part_id {
#define BTK_PART(id, problem, text) CHK_PART_##id,
#include "check/problems.def"
	CHK_PART_COUNT
};
/* The template of part id ("" when out of range). */
const char *chk_part_text(enum chk_part_id id);

/* The longest text a report renders (what, expected, found each), NUL included. */
#define CHK_TEXT_MAX 512

/* Renders template tmpl ("{m}" = msg) with vals into buf (cap bytes, NUL-terminated, cut at
 * cap - 1); returns the length written. A placeholder past n renders "{?}". */
size_t chk_render(char *buf, size_t cap, const char *tmpl, const char *msg,
		  const struct chk_val *vals, size_t n);
/* Counts the problem of message id and, unless past max_reports, passes it to the caller's
 * callback with its texts rendered from vals. key may be NULL. */
void chk_report(struct chk *c, enum chk_message_id id, uint64_t tree, uint64_t bytenr,
		const struct btk_key *key, const struct chk_val *vals, size_t n);
/* Counts the problem p of message id, records it (opts->record) and passes it to the caller's
 * callback unless past max_reports. */
void chk_report_problem(struct chk *c, enum chk_message_id id, const struct btk_check_problem *p);
/* Counts n more problems of message id without reporting them (one report stood for them). */
void chk_count_more(struct chk *c, enum chk_message_id id, uint64_t n);
/* chk_rep(c, id, tree, bytenr, key, CHK_U(x), CHK_S(s), ...): chk_report with its values. */
#define chk_rep(c, id, tree, bytenr, key, ...)                                                     \
	chk_report(c, id, tree, bytenr, key, (const struct chk_val[]){{0}, __VA_ARGS__} + 1,       \
		   sizeof((const struct chk_val[]){{0}, __VA_ARGS__}) / sizeof(struct chk_val) -   \
		       1)
/* chk_part(buf, cap, id, CHK_U(x), ...): renders part id into the caller's buf; its length. */
#define chk_part(buf, cap, id, ...)                                                                \
	chk_render(                                                                                \
	    buf, cap, chk_part_text(id), NULL, (const struct chk_val[]){{0}, __VA_ARGS__} + 1,     \
	    sizeof((const struct chk_val[]){{0}, __VA_ARGS__}) / sizeof(struct chk_val) - 1)
/* check_progress.c: the phase and, for "trees", tree blocks done and the estimated total */
void chk_progress(struct chk *c, const char *phase, uint64_t done, uint64_t total);
void chk_progress_start_trees(struct chk *c);
void chk_progress_block(struct chk *c);

static inline bool chk_is_fs_tree(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID || id == BTRFS_DATA_RELOC_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

/* check_record.c: the record of the subvolume trees' walks (check.h) */
void chk_rec_begin(struct chk *c);
/* complete: the check ran to its end */
void chk_rec_finish(struct chk *c, bool complete);
void chk_rec_tree_begin(struct chk *c, const struct btk_root *root, bool checked);
void chk_rec_tree_end(struct chk *c);
void chk_rec_other_tree(struct chk *c);
void chk_rec_ref(struct chk *c, const struct chk_ref *ref);
void chk_rec_range(struct chk *c, const struct chk_ranges *v, uint64_t start, uint64_t len);
void chk_rec_rootref(struct chk *c, const struct chk_rootref *rr);
void chk_rec_owner(struct chk *c, const struct chk_owner *o);
void chk_rec_fullwant(struct chk *c, const struct chk_fullwant *w);
void chk_rec_block(struct chk *c, uint64_t bytenr);
void chk_rec_problem(struct chk *c, enum chk_message_id mid, const struct btk_check_problem *p);
/* Takes subvolume tree root's part from opts->replay: 1 when it did (no walk needed), 0 when
 * the tree is to be walked, -EAGAIN when the record does not match after all. */
int chk_rec_replay(struct chk *c, const struct btk_root *root);

/* check_super.c */
void chk_supers(struct chk *c);
void chk_super_totals(struct chk *c);
/* check_backup.c: false (after one report naming the backup roots that read) when the root
 * tree does not read */
bool chk_root_tree(struct chk *c);
/* check_dataerr.c: a data sector at logical+off failed its checksum on mirror `mirror` of
 * the n in ph: reported with both checksums, the good mirrors and the owning files */
void chk_data_mismatch(struct chk *c, uint64_t logical, const struct btk_phys *ph, int n,
		       int mirror, uint64_t off, const uint8_t *want, const uint8_t *found);
/* The same for `count` sectors of the data extent [ext, +ext_len) on one mirror, the first
 * of them at logical+off: one report, counted as count errors (opts->data_summary; one
 * sector is reported as chk_data_mismatch does). */
void chk_data_mismatch_run(struct chk *c, uint64_t ext, uint64_t ext_len, uint64_t count,
			   uint64_t logical, const struct btk_phys *ph, int n, int mirror,
			   uint64_t off, const uint8_t *want, const uint8_t *found);
/* check_copies.c: every mirror of a tree block read the first time it is seen */
#define BTK_CHK_MAX_COPIES 8
void chk_block_copies(struct chk *c, const struct btk_block *b);
/* starts reading and comparing the copies still pending on a thread of their own, after
 * reporting what the batch before found (at most a batch is kept and one under way) */
void chk_copies_flush(struct chk *c);
/* waits for every pending copy to be compared; with report, reports what was found */
void chk_copies_finish(struct chk *c, bool report);
/* check_dverify.c: queue [logical, +len) with its checksums (copied) for verification of
 * every copy; finish waits for the workers and, with report, reports what they found */
void chk_dv_add(struct chk *c, uint64_t logical, uint64_t len, const uint8_t *sums);
void chk_dv_finish(struct chk *c, bool report);
/* check_chunks.c */
void chk_chunk_leaf(struct chk *c, const struct btk_block *b);
void chk_dev_leaf(struct chk *c, const struct btk_block *b);
void chk_bg_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		 uint64_t bytenr);
void chk_chunks_final(struct chk *c);
/* check_extents.c */
void chk_extent_leaf(struct chk *c, const struct btk_block *b);
void chk_extents_final(struct chk *c);
/* The extent tree has been walked: its references are sorted, so that a reference found from
 * now on is counted in the declared one it matches instead of being kept. */
void chk_extents_walked(struct chk *c);
/* A reference some block makes (found by walking). */
void chk_found_ref(struct chk *c, const struct chk_ref *r);
/* What a block's FULL_BACKREF flag must be (found by walking): judged at once when the extent
 * tree is known, else at the end. */
void chk_full_backref(struct chk *c, const struct chk_fullwant *w);
const struct chk_extent *chk_extent_find(const struct chk *c, uint64_t bytenr);
/* check_trees.c */
int chk_walk_all(struct chk *c);
/* check_roots.c */
void chk_root_leaf(struct chk *c, const struct btk_block *b);
/* Records a reference between trees (kind as struct chk_rootref) for chk_roots_final to match
 * up; the name is kept as its hash. Marks c out of memory when the push fails. */
void chk_rootref_push(struct chk *c, uint64_t parent, uint64_t child, uint64_t dirid, uint64_t seq,
		      const uint8_t *name, size_t len, uint8_t kind);
void chk_roots_final(struct chk *c);
void chk_uuid_leaf(struct chk *c, const struct btk_block *b);
/* check_qgroup.c */
void chk_qgroup_block(struct chk *c, const struct btk_block *b);
void chk_quota_leaf(struct chk *c, const struct btk_block *b);
void chk_qgroup_final(struct chk *c);
/* check_fs.c */
int chk_fs_begin(struct chk *c, const struct btk_root *root);
void chk_fs_leaf(struct chk *c, const struct btk_block *b);
void chk_fs_end(struct chk *c);
/* The walk skips a node of the current fs tree that another subvolume's walk checked. */
void chk_fs_skip(struct chk *c, const struct btk_block *node);
/* check_csum.c */
/* Appends [start, start + len) to v, extending v's last range instead when merge and it ends at
 * start; marks c out of memory on failure. */
void chk_range_append(struct chk *c, struct chk_ranges *v, uint64_t start, uint64_t len,
		      bool merge);
void chk_csum_leaf(struct chk *c, const struct btk_block *b);
void chk_csum_final(struct chk *c);
void chk_log_leaf(struct chk *c, const struct btk_block *b);
/* check_fst.c */
void chk_fst_leaf(struct chk *c, const struct btk_block *b);
void chk_fst_final(struct chk *c);
void chk_fst_push_free(struct chk *c, uint64_t start, uint64_t len);
void chk_free_space_compare(struct chk *c);
/* check_v1cache.c */
void chk_v1_root_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz);
void chk_v1_final(struct chk *c);

#endif
