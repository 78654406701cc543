/* extents.c (layer 10) — extent records and back references made to agree with the trees
 * that point at them (the back references exist for those users, so the users are the truth):
 * a record the trees need is added with a reference from each user, a record nothing uses is
 * dropped (or, when its back reference names a file extent or root item that lost it, that
 * user is pointed back at it), and a record's references are set to the users found.
 *
 * The users are collected by one walk of every tree per transaction (rp_extents_walk), of the
 * committed state, before the round changes anything (these fixes are of phase 0): only the
 * extents the check named are kept, or all of them for a whole rebuild. A tree that did not
 * read whole or is half deleted leaves the users in doubt: then nothing is dropped or changed.
 */
#include "repair/repair_int.h"
#include "base/error.h"
#include "base/u64set.h"
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "format/root_item.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One user of an extent, as the trees make it (check.h's struct btk_check_use; once resolved,
 * keyed: root set, parent 0; shared: parent set, root 0). */
#define rp_ref btk_check_use
BTK_VEC(rp_refs, struct rp_ref);

/* The file extent items of (root, ino) whose data reference offset is off that lost their
 * disk_bytenr: they point at `from`, which does not name them (no record there, or one
 * without their reference), while the record at `to`, of their length, keeps a keyed
 * reference (root, ino, off) that no user fills. They are pointed back at `to`. */
struct rp_move {
	uint64_t root, ino, off, len, from, to;
	uint32_t count;
	bool done;
	bool unrecorded; /* `from` has no record: copies of a leaf queue no reference to it */
};
BTK_VEC(rp_moves, struct rp_move);

struct rp_extents {
	struct btk_u64set want; /* the extents whose users are collected (all: empty and all) */
	bool all;
	struct rp_refs refs; /* sorted by bytenr, resolved (keyed or shared) */
	bool gap;	     /* users may be missing: nothing is dropped or changed */
	bool walked;
	struct btk_u64set done;	   /* extents set right in this transaction */
	struct btk_u64set repoint; /* roots pointed at a newer block in this transaction */
	struct rp_moves moves;	   /* file extents pointed back in this round (refs: moved) */
	/* the walk */
	struct btk_fs *fs;
	struct btk_trans *t;
	struct btk_u64set visited;
	bool files; /* the tree walked holds file extents */
};

static uint64_t val(const struct rp_prob *p, unsigned i)
{
	return i < p->nvals ? p->vals[i] : 0;
}

void rp_extents_free(struct rp_extents *e)
{
	if (!e)
		return;
	btk_u64set_free(&e->want);
	btk_u64set_free(&e->done);
	btk_u64set_free(&e->repoint);
	btk_u64set_free(&e->visited);
	btk_vec_free(&e->refs);
	btk_vec_free(&e->moves);
	free(e);
}

static bool wanted(const struct rp_extents *e, uint64_t bytenr)
{
	return e->all || btk_u64set_has(&e->want, bytenr);
}

static int push(struct rp_extents *e, const struct rp_ref *r)
{
	struct rp_ref *n = btk_vec_push(&e->refs);

	if (!n)
		return btk_err(ENOMEM, "out of memory");
	*n = *r;
	return 0;
}

static int on_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct rp_extents *e = ctx;
	uint32_t n = btk_block_nritems(b);
	uint64_t owner = btk_block_owner(b);
	int level = btk_block_level(b), ret = btk_u64set_add(&e->visited, b->bytenr);

	(void)fs, (void)depth;
	if (ret < 0)
		return btk_err(ENOMEM, "out of memory");
	if (!ret) /* a block several trees share makes its references once */
		return level ? BTK_WALK_SKIP : 0;
	for (uint32_t i = 0; level && i < n; i++) {
		struct rp_ref r = {.bytenr = btk_node_blockptr(b, (int)i),
				   .root = owner,
				   .parent = b->bytenr,
				   .level = (int8_t)(level - 1),
				   .count = 1};
		if (wanted(e, r.bytenr) && (ret = push(e, &r)))
			return ret;
	}
	for (uint32_t i = 0; !level && e->files && i < n; i++) {
		struct btk_leaf_dref d;
		if (!btk_leaf_data_ref(b, (int)i, &d) || !wanted(e, d.bytenr))
			continue;
		struct rp_ref r = {.bytenr = d.bytenr,
				   .root = owner,
				   .parent = b->bytenr,
				   .ino = d.ino,
				   .off = d.off,
				   .len = d.len,
				   .count = 1,
				   .level = -1,
				   .data = true};
		if ((ret = push(e, &r)))
			return ret;
	}
	return 0;
}

static int on_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct rp_extents *e = ctx;

	(void)bytenr, (void)level, (void)msg;
	if (err == -ENOMEM)
		return err;
	e->gap = true;
	btk_err_clear();
	return 0;
}

static bool fs_tree(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID || id == BTRFS_DATA_RELOC_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

static int walk_root(void *ctx, const struct btk_root *r)
{
	static const struct btk_walk_ops ops = {.block = on_block, .on_error = on_error};
	struct rp_extents *e = ctx;
	int ret;

	if (r->objectid == BTRFS_TREE_LOG_OBJECTID)
		return 0; /* log blocks have no extent records until the log is replayed */
	if (r->objectid == BTRFS_TREE_RELOC_OBJECTID) {
		e->gap = true; /* a balance in progress: its references are not modelled here */
		return 0;
	}
	if (btk_root_can_drop(r->objectid)) {
		/* a half-deleted tree: its freed part still counts in places; not modelled */
		struct btk_key k = {r->objectid, BTRFS_ROOT_ITEM_KEY, r->key_offset};
		uint8_t item[sizeof(struct btrfs_root_item)];
		struct btk_root_item ri;
		uint32_t size = 0;
		ret = btk_item_next(e->t, BTRFS_ROOT_TREE_OBJECTID, &k, item, sizeof(item), &size);
		if (ret < 0)
			return ret;
		if (!ret && k.objectid == r->objectid && k.type == BTRFS_ROOT_ITEM_KEY &&
		    !btk_root_item_parse(item, size < sizeof(item) ? size : sizeof(item), &ri) &&
		    ri.drop_progress.objectid) {
			e->gap = true;
			return 0;
		}
	}
	struct rp_ref root = {
	    .bytenr = r->bytenr, .root = r->objectid, .level = (int8_t)r->level, .count = 1};
	if (wanted(e, r->bytenr) && (ret = push(e, &root)))
		return ret;
	e->files = r->objectid == BTRFS_ROOT_TREE_OBJECTID || fs_tree(r->objectid);
	ret = btk_tree_walk(e->fs, r, &ops, e);
	return ret == -ENOMEM ? ret : 0;
}

/* ---- extent records as the transaction sees them ---- */

struct rp_rec {
	struct btk_key key;
	struct btk_extent_head h;
	uint8_t item[4096];
	uint32_t size;
	struct btk_extent_ref refs[64]; /* inline and keyed */
	unsigned nrefs;
	bool overflow; /* more references than refs[] holds */
};

/* The record starting at bytenr: 0, 1 when there is none, negative errno. */
static int rec_read(struct btk_trans *t, uint64_t bytenr, struct rp_rec *r)
{
	struct btk_key k = {bytenr, BTRFS_EXTENT_ITEM_KEY, 0};
	int ret =
	    btk_item_next(t, BTRFS_EXTENT_TREE_OBJECTID, &k, r->item, sizeof(r->item), &r->size);

	if (ret)
		return ret;
	if (k.objectid != bytenr ||
	    (k.type != BTRFS_EXTENT_ITEM_KEY && k.type != BTRFS_METADATA_ITEM_KEY))
		return 1;
	if (r->size > sizeof(r->item))
		return btk_err(EOVERFLOW, "extent record %llu of %u bytes",
			       (unsigned long long)bytenr, r->size);
	r->key = k;
	r->nrefs = 0;
	r->overflow = false;
	ret = btk_extent_head_parse(&k, r->item, r->size, &r->h);
	if (ret)
		return btk_err(EUCLEAN, "extent record %llu does not parse",
			       (unsigned long long)bytenr);
	struct btk_inline_iter it;
	struct btk_extent_ref er;
	btk_inline_iter_init(&it, r->item, r->size, r->h.refs_at);
	while ((ret = btk_inline_next(&it, &er)) == 1) {
		if (er.type == BTRFS_EXTENT_OWNER_REF_KEY)
			continue;
		if (r->nrefs == sizeof(r->refs) / sizeof(r->refs[0])) {
			r->overflow = true;
			break;
		}
		r->refs[r->nrefs++] = er;
	}
	if (ret < 0)
		return btk_err(EUCLEAN, "extent record %llu: inline references do not parse",
			       (unsigned long long)bytenr);
	/* keyed references: (bytenr, TREE_BLOCK_REF .. SHARED_DATA_REF, root | parent | hash) */
	k = (struct btk_key){bytenr, BTRFS_TREE_BLOCK_REF_KEY, 0};
	for (;;) {
		uint8_t d[64];
		uint32_t sz = 0;
		ret = btk_item_next(t, BTRFS_EXTENT_TREE_OBJECTID, &k, d, sizeof(d), &sz);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != bytenr || k.type > BTRFS_SHARED_DATA_REF_KEY)
			break;
		if (btk_keyed_ref_parse(&k, d, sz < sizeof(d) ? sz : sizeof(d), &er) == 0) {
			if (r->nrefs == sizeof(r->refs) / sizeof(r->refs[0])) {
				r->overflow = true;
				break;
			}
			r->refs[r->nrefs++] = er;
		}
		if (k.offset == UINT64_MAX) {
			k.type++;
			k.offset = 0;
		} else {
			k.offset++;
		}
	}
	return 0;
}

/* Whether the record at bytenr carries FULL_BACKREF (its children refer to it as parent). */
static int full_backref(struct btk_trans *t, uint64_t bytenr, bool *full)
{
	struct rp_rec *r = malloc(sizeof(*r));
	int ret;

	if (!r)
		return btk_err(ENOMEM, "out of memory");
	ret = rec_read(t, bytenr, r);
	*full = !ret && (r->h.flags & BTRFS_BLOCK_FLAG_FULL_BACKREF);
	free(r);
	if (ret > 0 || ret == -EUCLEAN || ret == -EOVERFLOW) {
		btk_err_clear();
		return 0;
	}
	return ret;
}

/* Users in the order of their identity: extent, kind, root, parent, inode, offset. */
static int ref_cmp(const void *pa, const void *pb)
{
	const struct rp_ref *a = pa, *b = pb;

	return btk_cmp_u64(a->bytenr, b->bytenr) ?: btk_cmp_u64(a->data, b->data)
		   ?: btk_cmp_u64(a->root, b->root) ?: btk_cmp_u64(a->parent, b->parent)
		   ?: btk_cmp_u64(a->ino, b->ino) ?: btk_cmp_u64(a->off, b->off);
}

/* The users in ref_cmp's order, equal ones merged into one with their count. */
static void sort_refs(struct rp_extents *e)
{
	size_t o = 0;

	if (e->refs.n)
		qsort(e->refs.data, e->refs.n, sizeof(*e->refs.data), ref_cmp);
	for (size_t i = 0; i < e->refs.n; i++) {
		if (o && !ref_cmp(&e->refs.data[o - 1], &e->refs.data[i]))
			e->refs.data[o - 1].count += e->refs.data[i].count;
		else
			e->refs.data[o++] = e->refs.data[i];
	}
	e->refs.n = o;
}

/* A user the check the round plans from found (its record): kept when its extent is wanted. */
static int recorded_use(void *ctx, const struct btk_check_use *u)
{
	struct rp_extents *e = ctx;

	return wanted(e, u->bytenr) ? push(e, u) : 0;
}

/* Walks every tree once (the committed state: call it before the round changes anything),
 * collecting the users of the wanted extents, each as a keyed or a shared reference by its
 * parent's FULL_BACKREF flag; equal references are merged into one with their count. The
 * check the round plans from found the same users when it kept a record of them: taken from
 * it instead of walking again. */
static int walk(struct rp_ctx *x, struct rp_extents *e)
{
	int ret;

	e->t = x->t;
	e->fs = btk_trans_fs(x->t);
	ret = btk_check_record_uses(x->rec, recorded_use, e);
	if (ret < 0)
		return ret;
	ret = ret ? 0 : btk_for_each_root(e->fs, walk_root, e);
	btk_u64set_free(&e->visited);
	if (ret) {
		if (ret == -ENOMEM)
			return ret;
		e->gap = true; /* the root tree did not iterate whole */
		btk_err_clear();
	}
	for (size_t i = 0; i < e->refs.n; i++) {
		struct rp_ref *r = &e->refs.data[i];
		bool full = false;
		if (!r->parent)
			continue;
		if ((ret = full_backref(x->t, r->parent, &full)))
			return ret;
		if (full)
			r->root = 0;
		else
			r->parent = 0;
		if (r->data && full)
			r->ino = r->off = 0;
	}
	sort_refs(e);
	e->walked = true;
	return 0;
}

static uint64_t ref_bytenr(const void *r)
{
	return ((const struct rp_ref *)r)->bytenr;
}

/* The users of bytenr: *first, *n. */
static void users(const struct rp_extents *e, uint64_t bytenr, const struct rp_ref **first,
		  size_t *n)
{
	size_t lo = btk_array_lower_bound(e->refs.data, e->refs.n, bytenr, ref_bytenr);

	*first = e->refs.data + lo;
	for (*n = 0; lo + *n < e->refs.n && e->refs.data[lo + *n].bytenr == bytenr; (*n)++)
		;
}

/* Problems whose fix changes extent records: their extents are the walk's. */
static bool extent_problem(enum btk_check_problem_id id)
{
	switch (id) {
	case BTK_P_EXT_MISSING:
	case BTK_P_EXT_NO_USERS:
	case BTK_P_REF_MISSING:
	case BTK_P_REF_NO_USER:
	case BTK_P_REF_WRONG_COUNT:
	case BTK_P_REF_COUNT:
		return true;
	default:
		return false;
	}
}

int rp_extents_phase(enum btk_check_problem_id id)
{
	return extent_problem(id) ? 0 : 1;
}

static bool has(const struct rp_probs *all, enum btk_check_problem_id id, uint64_t bytenr)
{
	for (size_t i = 0; i < all->n; i++)
		if (all->data[i].id == id && val(&all->data[i], 0) == bytenr)
			return true;
	return false;
}

static int plan_moves(struct rp_ctx *x, struct rp_extents *e);
static int do_moves(struct rp_ctx *x, struct rp_extents *e, uint64_t bytenr, char *before,
		    char *after, size_t cap);

/* The round's extent state: the walk, the file extents to point back (their users moved to
 * the extents they belong to), and the space of every tree block about to get a record
 * taken out of the free space before anything is allocated. */
static int prepare(struct rp_ctx *x, struct rp_extents **out)
{
	struct rp_extents *e = x->ext;
	int ret;

	if (e && e->walked) {
		*out = e;
		return 0;
	}
	if (!e && !(e = x->ext = calloc(1, sizeof(*e))))
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < x->all->n; i++)
		if (extent_problem(x->all->data[i].id) &&
		    btk_u64set_add(&e->want, val(&x->all->data[i], 0)) < 0)
			return btk_err(ENOMEM, "out of memory");
	if ((ret = walk(x, e)) || (ret = plan_moves(x, e)))
		return ret;
	uint32_t ns = btk_trans_fs(x->t)->nodesize;
	for (size_t i = 0; i < x->all->n; i++) {
		const struct rp_prob *p = &x->all->data[i];
		const struct rp_ref *u;
		size_t n;
		if (p->id != BTK_P_EXT_MISSING)
			continue;
		users(e, val(p, 0), &u, &n);
		if (n && !u->data && (ret = btk_extent_claim(x->t, u->bytenr, ns)))
			return ret;
	}
	*out = e;
	return 0;
}

/* Whether the children of the tree block at bytenr refer to it as their parent (it was
 * FULL_BACKREF): its first child's record, or its first data extent's, says so. *gen: the
 * block's generation (0 when it does not read). */
static int children_shared(struct btk_trans *t, uint64_t bytenr, int level, bool *full,
			   uint64_t *gen)
{
	struct btk_block_check chk = {.level = level};
	struct btk_block *b;
	uint64_t child = 0;
	uint8_t want = level ? BTRFS_SHARED_BLOCK_REF_KEY : BTRFS_SHARED_DATA_REF_KEY;
	int ret = btk_block_read(btk_trans_fs(t), bytenr, &chk, &b);

	*full = false;
	*gen = 0;
	if (ret) {
		btk_err_clear();
		return 0;
	}
	*gen = btk_block_generation(b);
	for (uint32_t i = 0; i < btk_block_nritems(b) && !child; i++) {
		struct btk_key k;
		struct btk_file_extent fe;
		if (level) {
			child = btk_node_blockptr(b, (int)i);
			break;
		}
		btk_leaf_key(b, (int)i, &k);
		if (k.type == BTRFS_EXTENT_DATA_KEY &&
		    btk_file_extent_item_parse(btk_leaf_data(b, (int)i), btk_leaf_size(b, (int)i),
					       k.offset, &fe) == BTK_FE_WHOLE &&
		    fe.type != BTRFS_FILE_EXTENT_INLINE)
			child = fe.disk_bytenr;
	}
	btk_block_put(b);
	if (!child)
		return 0;
	struct rp_rec *r = malloc(sizeof(*r));
	if (!r)
		return btk_err(ENOMEM, "out of memory");
	ret = rec_read(t, child, r);
	for (unsigned i = 0; !ret && i < r->nrefs; i++)
		if (r->refs[i].type == want && r->refs[i].parent == bytenr)
			*full = true;
	free(r);
	if (ret > 0 || ret == -EUCLEAN || ret == -EOVERFLOW) {
		btk_err_clear();
		ret = 0;
	}
	return ret;
}

/* A root item that names an older root block than the one the extent tree records for its
 * tree (the item was not written with its last commit): the newer block, when it is a root
 * block of that tree (owner, level), newer than the item and not newer than the filesystem,
 * and nothing uses its record. *bytenr 0: none. */
static int newer_root(struct rp_ctx *x, uint64_t tree, uint64_t old, int level, uint64_t *bytenr)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	struct btk_root r;
	int ret;

	*bytenr = 0;
	if ((ret = btk_root_find(fs, tree, &r))) {
		btk_err_clear();
		return 0;
	}
	if (r.bytenr != old || r.level != level)
		return 0;
	for (size_t i = 0; i < x->all->n; i++) {
		const struct rp_prob *p = &x->all->data[i];
		uint64_t cand = val(p, 0);
		if (p->id != BTK_P_EXT_NO_USERS || cand == old)
			continue;
		struct rp_rec *rec = malloc(sizeof(*rec));
		if (!rec)
			return btk_err(ENOMEM, "out of memory");
		ret = rec_read(x->t, cand, rec);
		bool fits = !ret && rec->nrefs == 1 && !rec->overflow &&
			    rec->refs[0].type == BTRFS_TREE_BLOCK_REF_KEY &&
			    rec->refs[0].root == tree && rec->h.level == level;
		free(rec);
		if (ret < 0 && ret != -EUCLEAN && ret != -EOVERFLOW)
			return ret;
		btk_err_clear();
		if (!fits)
			continue;
		struct btk_block_check chk = {.level = level, .owner = tree};
		struct btk_block *b;
		if (btk_block_read(fs, cand, &chk, &b)) {
			btk_err_clear();
			continue;
		}
		uint64_t gen = btk_block_generation(b);
		btk_block_put(b);
		if (gen > r.generation && gen <= btk_le64(fs->sb.generation)) {
			*bytenr = cand;
			return 0;
		}
	}
	return 0;
}

/* Points tree's root at bytenr (once per round) and copies it, so that block and root item
 * get this transaction's generation. */
static int repoint_root(struct rp_ctx *x, struct rp_extents *e, uint64_t tree, uint64_t bytenr,
			int level)
{
	struct btk_key k = {0, 0, 0};
	struct btk_path path;
	int ret = btk_u64set_add(&e->repoint, tree);

	if (ret <= 0)
		return ret < 0 ? btk_err(ENOMEM, "out of memory") : 1;
	if ((ret = btk_tree_set_root(x->t, tree, bytenr, level)))
		return ret;
	ret = btk_tree_search_write(x->t, tree, &k, 0, &path);
	btk_wpath_release(&path);
	return ret < 0 ? ret : 0;
}

static bool aligned(const struct btk_fs *fs, uint64_t x)
{
	return !(x % fs->sectorsize);
}

/* E0710: an extent that trees use has no record. */
int rp_fix_ext_missing(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		       size_t cap)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	uint64_t bytenr = val(p, 0), newb = 0;
	struct rp_extents *e;
	const struct rp_ref *u;
	size_t n;
	int ret;

	if ((ret = prepare(x, &e)) || (ret = do_moves(x, e, bytenr, before, after, cap)) <= 0)
		return ret; /* its file extents pointed back at their extents */
	users(e, bytenr, &u, &n);
	if (!n || e->gap)
		return 1; /* its users are not (all) known: left */
	snprintf(before, cap, "no extent record");
	if (!u->data) {
		bool full;
		uint64_t gen;
		if (n == 1 && !u->parent && (ret = newer_root(x, u->root, bytenr, u->level, &newb)))
			return ret;
		if (n == 1 && !u->parent && newb) {
			snprintf(after, cap,
				 "tree %llu's root item points at %llu (its newer root)",
				 (unsigned long long)u->root, (unsigned long long)newb);
			return repoint_root(x, e, u->root, newb, u->level);
		}
		if (!aligned(fs, bytenr))
			return 1;
		if ((ret = children_shared(x->t, bytenr, u->level, &full, &gen)))
			return ret;
		if (!gen || gen >= btk_trans_id(x->t))
			return 1; /* not a readable block of an earlier transaction: left */
		for (size_t i = 0; i < n; i++)
			if ((ret = btk_tree_block_ref(x->t, bytenr, u[i].level, u[i].root,
						      u[i].parent, 1, full, gen)))
				return ret;
		/* the record is made now: a copy of the block later in the round then drops it
		 * (its space pinned) instead of cancelling the reference unrecorded */
		if ((ret = btk_trans_settle(x->t)))
			return ret;
		snprintf(after, cap, "tree block record, level %d, %zu reference(s)%s", u->level, n,
			 full ? ", full back references" : "");
		return 0;
	}
	/* data: every user names the same length, and the extent lies whole in a data chunk */
	const struct btk_chunk *c = btk_chunk_find(fs, bytenr);
	const struct rp_ref *k = NULL;
	uint64_t len = u->len;
	for (size_t i = 0; i < n; i++) {
		if (!u[i].data || u[i].len != len)
			return 1;
		if (!k && !u[i].parent)
			k = &u[i];
	}
	if (!k || !len || !aligned(fs, bytenr) || !aligned(fs, len) || !c ||
	    !(c->type & BTRFS_BLOCK_GROUP_DATA) || bytenr + len > c->logical + c->length)
		return 1; /* a file extent pointing at no valid extent: not made into one */
	if ((ret = btk_data_extent_fixed(x->t, bytenr, len, k->root, k->ino, k->off)))
		return ret;
	for (size_t i = 0; i < n && !ret; i++) {
		int delta = (int)u[i].count - (&u[i] == k);
		if (delta)
			ret = btk_data_ref(x->t, bytenr, len, u[i].root, u[i].parent, u[i].ino,
					   u[i].off, delta);
	}
	snprintf(after, cap, "data record [%llu, +%llu), %zu reference(s)",
		 (unsigned long long)bytenr, (unsigned long long)len, n);
	return ret;
}

/* E0718: an extent record nothing uses. */
int rp_fix_ext_unused(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		      size_t cap)
{
	uint64_t bytenr = val(p, 0);
	struct rp_extents *e;
	const struct rp_ref *u;
	struct rp_rec *r;
	size_t n;
	int ret;

	if ((ret = prepare(x, &e)) || (ret = do_moves(x, e, bytenr, before, after, cap)) <= 0)
		return ret; /* the file extents that lost it pointed back */
	users(e, bytenr, &u, &n);
	if (e->gap || n)
		return 1;
	if (!(r = malloc(sizeof(*r))))
		return btk_err(ENOMEM, "out of memory");
	ret = rec_read(x->t, bytenr, r);
	if (ret)
		goto out; /* gone already (1), or unreadable */
	bool data = r->h.flags & BTRFS_EXTENT_FLAG_DATA;
	uint64_t len = btk_extent_key_len(&r->key, btk_trans_fs(x->t)->nodesize);
	/* a root item that lost its pointer to it is pointed back */
	for (unsigned i = 0; i < r->nrefs; i++) {
		const struct btk_extent_ref *er = &r->refs[i];
		if (!data && r->nrefs == 1 && er->type == BTRFS_TREE_BLOCK_REF_KEY) {
			struct btk_root root;
			uint64_t nb = 0;
			if (btk_root_find(btk_trans_fs(x->t), er->root, &root)) {
				btk_err_clear();
				continue;
			}
			if ((ret = newer_root(x, er->root, root.bytenr, root.level, &nb)))
				goto out;
			if (nb == bytenr) {
				snprintf(before, cap, "tree %llu's root item names %llu",
					 (unsigned long long)er->root,
					 (unsigned long long)root.bytenr);
				snprintf(after, cap, "root %llu (this record's, newer)",
					 (unsigned long long)bytenr);
				ret = repoint_root(x, e, er->root, bytenr, root.level);
				goto out;
			}
		}
	}
	unsigned keyed;
	snprintf(before, cap, "%s record [%llu, +%llu), %u reference(s)",
		 data ? "data" : "tree block", (unsigned long long)bytenr, (unsigned long long)len,
		 r->nrefs);
	ret = btk_extent_record_drop(x->t, &r->key, data, &keyed);
	snprintf(after, cap, "removed (nothing uses it)");
out:
	free(r);
	return ret;
}

/* Whether a declared reference is the user u. */
static bool same_ref(const struct btk_extent_ref *er, const struct rp_ref *u)
{
	switch (er->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		return !u->data && !u->parent && er->root == u->root;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		return !u->data && u->parent && er->parent == u->parent;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return u->data && !u->parent && er->root == u->root && er->objectid == u->ino &&
		       er->offset == u->off;
	case BTRFS_SHARED_DATA_REF_KEY:
		return u->data && u->parent && er->parent == u->parent;
	}
	return false;
}

static uint32_t ref_count(const struct btk_extent_ref *er)
{
	return er->type == BTRFS_EXTENT_DATA_REF_KEY || er->type == BTRFS_SHARED_DATA_REF_KEY
		   ? er->count
		   : 1;
}

/* ---- file extents that lost their disk_bytenr ---- */

/* Whether the data user u is not accounted for where it points (*lost): an unaligned
 * address or no record there (*norec), a record of another kind or length, or one without
 * u's reference. */
static int unaccounted(struct rp_ctx *x, const struct rp_ref *u, struct rp_rec *at, bool *lost,
		       bool *norec)
{
	int ret;

	*lost = *norec = true;
	if (!aligned(btk_trans_fs(x->t), u->bytenr))
		return 0;
	ret = rec_read(x->t, u->bytenr, at);
	*norec = ret > 0;
	if (ret > 0 || ret == -EUCLEAN || ret == -EOVERFLOW) {
		btk_err_clear();
		*lost = ret > 0;
		return 0;
	}
	if (ret)
		return ret;
	if (at->overflow || !(at->h.flags & BTRFS_EXTENT_FLAG_DATA) ||
	    btk_extent_key_len(&at->key, 0) != u->len)
		return *lost = !at->overflow, 0;
	for (unsigned i = 0; i < at->nrefs && *lost; i++)
		*lost = !same_ref(&at->refs[i], u);
	return 0;
}

/* The move that points the users named by er (of extent `to`, len bytes, spare of its count
 * unfilled) back at it: a keyed user with er's identity and length that its own address
 * does not account for. 0 with *m filled (m->count 0: none), or a negative errno. */
static int find_move(struct rp_ctx *x, const struct rp_extents *e, const struct btk_extent_ref *er,
		     uint64_t to, uint64_t len, int64_t spare, struct rp_rec *at, struct rp_move *m)
{
	m->count = 0;
	for (size_t i = 0; i < e->refs.n; i++) {
		const struct rp_ref *u = &e->refs.data[i];
		bool lost, norec;
		int ret;
		if (!u->data || u->parent || u->bytenr == to || u->root != er->root ||
		    u->ino != er->objectid || u->off != er->offset || u->len != len ||
		    u->count > spare)
			continue;
		if ((ret = unaccounted(x, u, at, &lost, &norec)))
			return ret;
		if (!lost)
			continue;
		if (m->count) { /* two candidates: which one lost it is not known */
			m->count = 0;
			return 0;
		}
		*m = (struct rp_move){.root = u->root,
				      .ino = u->ino,
				      .off = u->off,
				      .len = len,
				      .from = u->bytenr,
				      .to = to,
				      .count = u->count,
				      .unrecorded = norec};
	}
	return 0;
}

/* Whether two moves are of the same file extents. */
static bool same_users(const struct rp_move *a, const struct rp_move *b)
{
	return a->root == b->root && a->ino == b->ino && a->off == b->off && a->from == b->from;
}

/* The spare references of the data records the check found without (enough) users, each
 * filled by the file extent it names when that one points where nothing accounts for it;
 * a file extent two records claim is left. The users move to their records. */
static int plan_moves(struct rp_ctx *x, struct rp_extents *e)
{
	struct btk_u64set seen = {0};
	struct rp_rec *r = malloc(sizeof(*r)), *at = malloc(sizeof(*at));
	int ret = r && at ? 0 : btk_err(ENOMEM, "out of memory");

	for (size_t i = 0; !ret && !e->gap && !e->all && i < x->all->n; i++) {
		const struct rp_prob *p = &x->all->data[i];
		uint64_t to = val(p, 0);
		const struct rp_ref *u;
		size_t n;
		if (p->id != BTK_P_REF_NO_USER && p->id != BTK_P_REF_WRONG_COUNT &&
		    p->id != BTK_P_EXT_NO_USERS)
			continue;
		if ((ret = btk_u64set_add(&seen, to)) <= 0) {
			ret = ret < 0 ? btk_err(ENOMEM, "out of memory") : 0;
			continue;
		}
		ret = rec_read(x->t, to, r);
		if (ret > 0 || ret == -EUCLEAN || ret == -EOVERFLOW) {
			btk_err_clear();
			ret = 0;
			continue;
		}
		if (ret || r->overflow || !(r->h.flags & BTRFS_EXTENT_FLAG_DATA))
			continue;
		users(e, to, &u, &n);
		for (unsigned j = 0; !ret && j < r->nrefs; j++) {
			const struct btk_extent_ref *er = &r->refs[j];
			int64_t spare = er->count;
			struct rp_move m;
			if (er->type != BTRFS_EXTENT_DATA_REF_KEY)
				continue;
			for (size_t k = 0; k < n; k++)
				if (same_ref(er, &u[k]))
					spare -= u[k].count;
			if (spare <= 0)
				continue;
			ret =
			    find_move(x, e, er, to, btk_extent_key_len(&r->key, 0), spare, at, &m);
			struct rp_move *nm = !ret && m.count ? btk_vec_push(&e->moves) : NULL;
			if (!ret && m.count && !nm)
				ret = btk_err(ENOMEM, "out of memory");
			if (nm)
				*nm = m;
		}
	}
	btk_u64set_free(&seen);
	free(r);
	free(at);
	if (ret)
		return ret;
	/* drop the file extents two records claim; move the others' users */
	size_t o = 0;
	for (size_t i = 0; i < e->moves.n; i++) {
		bool twice = false;
		for (size_t j = 0; j < e->moves.n && !twice; j++)
			twice = j != i && same_users(&e->moves.data[i], &e->moves.data[j]);
		if (!twice)
			e->moves.data[o++] = e->moves.data[i];
	}
	e->moves.n = o;
	for (size_t j = 0; j < e->moves.n; j++)
		if (e->moves.data[j].unrecorded &&
		    (ret = btk_trans_data_unrecorded(x->t, e->moves.data[j].from)))
			return ret;
	for (size_t i = 0; i < e->refs.n; i++) {
		struct rp_ref *u = &e->refs.data[i];
		for (size_t j = 0; j < e->moves.n; j++) {
			const struct rp_move *m = &e->moves.data[j];
			if (u->data && !u->parent && u->bytenr == m->from && u->root == m->root &&
			    u->ino == m->ino && u->off == m->off)
				u->bytenr = m->to;
		}
	}
	sort_refs(e);
	return 0;
}

/* Points the file extent items of move m at m->to: 0, or a negative errno (-EUCLEAN when
 * fewer items than the walk counted are found). */
static int move_items(struct rp_ctx *x, const struct rp_move *m)
{
	struct btk_key k = {m->ino, BTRFS_EXTENT_DATA_KEY, btk_data_ref_search_from(m->off)};
	uint8_t d[sizeof(struct btrfs_file_extent_item)];
	uint32_t left = m->count;
	int ret;

	while (left) {
		struct btk_file_extent fe;
		struct btk_path path;
		uint32_t size = 0;
		ret = btk_item_next(x->t, m->root, &k, d, sizeof(d), &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != m->ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		if (size == sizeof(d) &&
		    btk_file_extent_item_parse(d, size, k.offset, &fe) == BTK_FE_WHOLE &&
		    fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr == m->from &&
		    fe.disk_num_bytes == m->len &&
		    btk_data_ref_offset(k.offset, fe.extent_offset) == m->off) {
			ret = btk_tree_search_write(x->t, m->root, &k, 0, &path);
			if (!ret)
				BTK_PUT(struct btrfs_file_extent_item, btk_item_ptr(&path, NULL),
					disk_bytenr, m->to);
			btk_wpath_release(&path);
			if (ret)
				return ret < 0 ? ret : btk_err(ENOENT, "file extent item gone");
			left--;
		}
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	if (left)
		return btk_err(EUCLEAN,
			       "tree %llu inode %llu: %u file extent item(s) at disk bytenr %llu "
			       "not found",
			       (unsigned long long)m->root, (unsigned long long)m->ino, left,
			       (unsigned long long)m->from);
	return 0;
}

/* The moves of the round from or to bytenr that are not made yet, made (by whichever fix of
 * their extents runs first): 0 with the texts filled, 1 when there were none. */
static int do_moves(struct rp_ctx *x, struct rp_extents *e, uint64_t bytenr, char *before,
		    char *after, size_t cap)
{
	unsigned done = 0;

	for (size_t i = 0; i < e->moves.n; i++) {
		struct rp_move *m = &e->moves.data[i];
		int ret;
		if (m->done || (m->from != bytenr && m->to != bytenr))
			continue;
		if ((ret = move_items(x, m)))
			return ret;
		m->done = true;
		if (done++)
			continue;
		snprintf(before, cap, "tree %llu inode %llu: %u file extent(s) at disk bytenr %llu",
			 (unsigned long long)m->root, (unsigned long long)m->ino, m->count,
			 (unsigned long long)m->from);
		snprintf(after, cap, "disk bytenr %llu (the extent whose reference names them)",
			 (unsigned long long)m->to);
	}
	if (done > 1)
		snprintf(after + strlen(after), cap - strlen(after), ", and %u more", done - 1);
	return done ? 0 : 1;
}

bool rp_extents_moved_from(const struct rp_ctx *x, uint64_t bytenr)
{
	for (size_t i = 0; x->ext && i < x->ext->moves.n; i++)
		if (x->ext->moves.data[i].from == bytenr)
			return true;
	return false;
}

/* The inode item of (root, ino): its nbytes lowered by len (the bytes of a file extent
 * made a hole). */
static int nbytes_lower(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t len)
{
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_path path;
	uint32_t size = 0;
	int ret = btk_tree_search_write(t, root, &k, 0, &path);

	if (!ret) {
		uint8_t *ii = btk_item_ptr(&path, &size);
		uint64_t nb = size >= sizeof(struct btrfs_inode_item)
				  ? BTK_GET(struct btrfs_inode_item, ii, nbytes)
				  : 0;
		if (nb >= len)
			BTK_PUT(struct btrfs_inode_item, ii, nbytes, nb - len);
	}
	btk_wpath_release(&path);
	return ret < 0 ? ret : 0; /* no inode item: its own problem, fixed by another fix */
}

/* Move m, made in its tree (the owner of the leaf), made in tree too, which shares that leaf:
 * its copy of the file extent item at k points at m->to, with a reference from tree. */
static int repoint_shared(struct rp_ctx *x, struct rp_extents *e, struct rp_move *m, uint64_t tree,
			  const struct btk_key *k, char *before, char *after, size_t cap)
{
	char ob[96], oa[96];
	struct btk_path path;
	int ret = do_moves(x, e, m->from, ob, oa, sizeof(ob));

	if (ret < 0)
		return ret;
	if ((ret = btk_tree_search_write(x->t, tree, k, 0, &path)) == 0)
		BTK_PUT(struct btrfs_file_extent_item, btk_item_ptr(&path, NULL), disk_bytenr,
			m->to);
	btk_wpath_release(&path);
	if (ret)
		return ret < 0 ? ret : btk_err(ENOENT, "file extent item gone");
	if ((ret = btk_data_ref(x->t, m->to, m->len, tree, 0, m->ino, m->off, 1)))
		return ret;
	snprintf(before, cap, "tree %llu inode %llu: disk bytenr %llu (tree %llu's leaf)",
		 (unsigned long long)tree, (unsigned long long)m->ino, (unsigned long long)m->from,
		 (unsigned long long)m->root);
	snprintf(after, cap, "disk bytenr %llu (the extent whose reference names it)",
		 (unsigned long long)m->to);
	return 0;
}

/* E1308: a regular file extent whose disk_bytenr is unaligned lost its address. It is
 * pointed back at the extent whose back reference names it (planned with the extent fixes,
 * which may have made it already: 1), or, when no extent does, becomes a hole: its data is
 * lost, the inode's nbytes follows. */
int rp_fix_fe_bytenr(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		     size_t cap)
{
	struct btk_key k = p->key;
	uint8_t d[sizeof(struct btrfs_file_extent_item)];
	struct btk_file_extent fe;
	struct rp_extents *e;
	struct btk_path path;
	uint32_t size = 0;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_EXTENT_DATA_KEY)
		return btk_err(EINVAL, "file extent report without its key");
	if ((ret = prepare(x, &e)))
		return ret;
	ret = btk_item_next(x->t, p->tree, &k, d, sizeof(d), &size);
	if (ret < 0)
		return ret;
	if (ret || btk_key_cmp(&k, &p->key) || size != sizeof(d) ||
	    btk_file_extent_item_parse(d, size, k.offset, &fe) != BTK_FE_WHOLE ||
	    fe.type == BTRFS_FILE_EXTENT_INLINE || aligned(btk_trans_fs(x->t), fe.disk_bytenr))
		return 1; /* gone, or pointed back already */
	uint64_t off = btk_data_ref_offset(k.offset, fe.extent_offset);
	for (size_t i = 0; i < e->moves.n; i++) {
		struct rp_move *m = &e->moves.data[i];
		if (m->from != fe.disk_bytenr || m->ino != k.objectid || m->off != off ||
		    m->len != fe.disk_num_bytes)
			continue;
		if (m->root == p->tree)
			return do_moves(x, e, m->from, before, after, cap);
		/* the owner's leaf, which this tree shares: its copy here pointed back too */
		for (size_t j = 0; j < x->all->n; j++) {
			const struct rp_prob *q = &x->all->data[j];
			if (q->id == p->id && q->tree == m->root && q->bytenr == p->bytenr &&
			    q->has_key && !btk_key_cmp(&q->key, &p->key))
				return repoint_shared(x, e, m, p->tree, &k, before, after, cap);
		}
	}
	if (rp_extents_moved_from(x, fe.disk_bytenr))
		return 1; /* another file extent lost the same address: not made a hole */
	if ((ret = btk_trans_data_unrecorded(x->t, fe.disk_bytenr)))
		return ret;
	if ((ret = btk_tree_search_write(x->t, p->tree, &k, 0, &path)) == 0) {
		uint8_t *it = btk_item_ptr(&path, NULL);
#define FPUT(f, v) BTK_PUT(struct btrfs_file_extent_item, it, f, v)
		FPUT(type, BTRFS_FILE_EXTENT_REG);
		FPUT(disk_bytenr, 0);
		FPUT(disk_num_bytes, 0);
		FPUT(offset, 0);
		FPUT(ram_bytes, fe.num_bytes);
		FPUT(compression, 0);
		FPUT(encryption, 0);
		FPUT(other_encoding, 0);
#undef FPUT
	}
	btk_wpath_release(&path);
	if (ret)
		return ret < 0 ? ret : btk_err(ENOENT, "file extent item gone");
	if ((ret = nbytes_lower(x->t, p->tree, k.objectid, fe.num_bytes)))
		return ret;
	snprintf(before, cap, "disk bytenr %llu, %llu bytes of data",
		 (unsigned long long)fe.disk_bytenr, (unsigned long long)fe.num_bytes);
	snprintf(after, cap, "a hole: those bytes are lost (no extent's back reference names it)");
	return 0;
}

/* Queues the change of one reference of record r. */
static int ref_delta(struct rp_ctx *x, const struct rp_rec *r, bool data, uint64_t root,
		     uint64_t parent, uint64_t ino, uint64_t off, int level, int delta)
{
	if (data)
		return btk_data_ref(x->t, r->key.objectid, r->key.offset, root, parent, ino, off,
				    delta);
	return btk_tree_block_ref(x->t, r->key.objectid, level, root, parent, delta, false, 0);
}

/* E0804, E0805, E0806, E0807: a record's references made those of its users. */
int rp_fix_ext_refs(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		    size_t cap)
{
	uint64_t bytenr = val(p, 0), sum = 0;
	struct rp_extents *e;
	const struct rp_ref *u;
	struct rp_rec *r;
	size_t n;
	int ret, added = 0, dropped = 0, unmoved;

	if ((ret = prepare(x, &e)))
		return ret;
	/* file extents that lost it (or point here lost) pointed back: the texts say so */
	if ((unmoved = do_moves(x, e, bytenr, before, after, cap)) < 0)
		return unmoved;
	if (has(x->all, BTK_P_EXT_NO_USERS, bytenr) || has(x->all, BTK_P_EXT_MISSING, bytenr))
		return unmoved; /* the record itself is added or dropped */
	users(e, bytenr, &u, &n);
	if (e->gap || !n)
		return unmoved;
	if ((ret = btk_u64set_add(&e->done, bytenr)) <= 0)
		return ret < 0 ? btk_err(ENOMEM, "out of memory") : unmoved;
	if (!(r = malloc(sizeof(*r))))
		return btk_err(ENOMEM, "out of memory");
	ret = rec_read(x->t, bytenr, r);
	if (ret || r->overflow) {
		ret = ret < 0 ? ret : unmoved;
		goto out;
	}
	bool data = r->h.flags & BTRFS_EXTENT_FLAG_DATA;
	int level = r->h.level;
	for (size_t i = 0; i < n; i++)
		if (u[i].data != data || (!data && u[i].level != level)) {
			ret = unmoved; /* users of another kind or level: left */
			goto out;
		}
	for (unsigned i = 0; i < r->nrefs; i++)
		sum += ref_count(&r->refs[i]);
	if (unmoved)
		snprintf(before, cap, "%u reference(s), count %llu", r->nrefs,
			 (unsigned long long)r->h.refs);
	if (sum != r->h.refs) { /* the count the references make */
		BTK_PUT(struct btrfs_extent_item, r->item, refs, sum);
		if ((ret = btk_item_update(x->t, BTRFS_EXTENT_TREE_OBJECTID, &r->key, r->item,
					   r->size)))
			goto out;
	}
	/* references added first, so that the count never reaches zero on the way */
	for (int pass = 0; pass < 2 && !ret; pass++) {
		for (size_t i = 0; i < n && !ret; i++) {
			int64_t have = 0, d;
			for (unsigned j = 0; j < r->nrefs; j++)
				if (same_ref(&r->refs[j], &u[i]))
					have += ref_count(&r->refs[j]);
			d = (data ? (int64_t)u[i].count : 1) - have;
			if ((pass == 0 && d > 0) || (pass == 1 && d < 0)) {
				ret = ref_delta(x, r, data, u[i].root, u[i].parent, u[i].ino,
						u[i].off, level, (int)d);
				*(d > 0 ? &added : &dropped) += 1;
			}
		}
		for (unsigned j = 0; pass == 1 && j < r->nrefs && !ret; j++) {
			const struct btk_extent_ref *er = &r->refs[j];
			bool used = false;
			for (size_t i = 0; i < n && !used; i++)
				used = same_ref(er, &u[i]);
			if (used)
				continue;
			bool keyed = er->type == BTRFS_TREE_BLOCK_REF_KEY ||
				     er->type == BTRFS_EXTENT_DATA_REF_KEY;
			ret = ref_delta(x, r, data, keyed ? er->root : 0, keyed ? 0 : er->parent,
					er->objectid, er->offset, level, -(int)ref_count(er));
			dropped++;
		}
	}
	if (unmoved)
		snprintf(after, cap,
			 "%zu reference(s) as the trees use it (%d added or raised, %d dropped "
			 "or lowered)",
			 n, added, dropped);
	if (!ret && sum == r->h.refs && !added && !dropped)
		ret = unmoved; /* the references were right once the users came back */
out:
	free(r);
	return ret;
}
