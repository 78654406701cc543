/* check_trees.c — one walk over every tree: block sanity, the references each block makes
 * (to its children, to data extents), and dispatch of leaves to the per-tree checkers.
 *
 * A block shared by several trees (snapshots) has its references counted once, at its first
 * visit. A subtree of a subvolume that an earlier subvolume's walk already checked is not
 * read again (check_fs.c keeps its key range so that nothing in it is missed as absent),
 * except when quotas are on: qgroup numbers need every block each subvolume reaches.
 * Half-deleted snapshots are walked from their drop progress on (walk_dropping).
 */
#include "check/check_priv.h"
#include "format/file_extent.h"
#include "format/extent_refs.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int classify(uint64_t id)
{
	switch (id) {
	case BTRFS_ROOT_TREE_OBJECTID:
		return CHK_T_ROOT;
	case BTRFS_EXTENT_TREE_OBJECTID:
		return CHK_T_EXTENT;
	case BTRFS_CHUNK_TREE_OBJECTID:
		return CHK_T_CHUNK;
	case BTRFS_DEV_TREE_OBJECTID:
		return CHK_T_DEV;
	case BTRFS_CSUM_TREE_OBJECTID:
		return CHK_T_CSUM;
	case BTRFS_FREE_SPACE_TREE_OBJECTID:
		return CHK_T_FST;
	case BTRFS_BLOCK_GROUP_TREE_OBJECTID:
		return CHK_T_BG;
	case BTRFS_TREE_RELOC_OBJECTID:
		return CHK_T_RELOC;
	case BTRFS_TREE_LOG_OBJECTID:
		return CHK_T_LOG;
	case BTRFS_UUID_TREE_OBJECTID:
		return CHK_T_UUID;
	case BTRFS_QUOTA_TREE_OBJECTID:
		return CHK_T_QUOTA;
	}
	return chk_is_fs_tree(id) ? CHK_T_FS : CHK_T_OTHER;
}

static void push_ref(struct chk *c, const struct chk_ref *r)
{
	chk_rec_ref(c, r);
	chk_found_ref(c, r);
}

/* Unused bytes of a block, for the summary. */
static uint64_t block_waste(const struct chk *c, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b), body = c->fs->nodesize - sizeof(struct btk_header);

	if (btk_block_level(b) > 0)
		return body - (uint64_t)n * sizeof(struct btk_key_ptr);
	uint64_t used = (uint64_t)n * sizeof(struct btk_item);
	for (uint32_t i = 0; i < n; i++)
		used += btk_leaf_size(b, (int)i);
	return used > body ? 0 : body - used;
}

/* Leaf item data must be packed from the block end down, each item right below the previous
 * one (the kernel's tree-checker rule); a gap or overlap means shifted offsets. */
static void leaf_packing(struct chk *c, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);
	uint64_t want = c->fs->nodesize - sizeof(struct btk_header);

	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = btk_leaf_item(b, (int)i);
		uint64_t off = btk_le32(it->offset), end = off + btk_le32(it->size);
		if (end != want) {
			struct btk_key k;
			btk_leaf_key(b, (int)i, &k);
			chk_rep(c, CHK_M_TB_NOT_PACKED, c->tree, b->bytenr, &k, CHK_U(i),
				CHK_U(want), CHK_U(end));
			return;
		}
		want = off;
	}
}

/* Header flags as the kernel writes them: WRITTEN, maybe RELOC (a relocation tree's block,
 * which stays so in the tree it is merged into), nothing else below the backref revision,
 * which is 1 (0 only before mixed back references). */
static void block_flags(struct chk *c, const struct btk_block *b)
{
	uint64_t fl = btk_block_flags(b), rev = fl >> BTK_BACKREF_REV_SHIFT;
	uint64_t low = fl & ((1ULL << BTK_BACKREF_REV_SHIFT) - 1);
	bool mixed = btk_le64(c->fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF;
	char why[CHK_TEXT_MAX];

	if (low & ~(BTK_HEADER_FLAG_WRITTEN | BTK_HEADER_FLAG_RELOC))
		chk_part(why, sizeof(why), CHK_PART_FLAGS_UNKNOWN);
	else if (!(low & BTK_HEADER_FLAG_WRITTEN))
		chk_part(why, sizeof(why), CHK_PART_FLAGS_NOT_WRITTEN);
	else if (rev > BTK_MIXED_BACKREF_REV || (mixed && rev != BTK_MIXED_BACKREF_REV))
		chk_part(why, sizeof(why), CHK_PART_FLAGS_REV, CHK_U(rev));
	else
		return;
	chk_rep(c, CHK_M_TB_FLAGS, c->tree, b->bytenr, NULL, CHK_U(fl), CHK_S(why));
}

static void block_sanity(struct chk *c, const struct btk_block *b)
{
	uint64_t owner = btk_block_owner(b), gen = btk_block_generation(b);
	const struct btk_chunk *ch = btk_chunk_find(c->fs, b->bytenr);

	if (b->bytenr % c->fs->sectorsize)
		chk_rep(c, CHK_M_TB_ALIGN, c->tree, b->bytenr, NULL, CHK_U(c->fs->sectorsize),
			CHK_U(b->bytenr));
	else if (ch && btk_crosses_stripe(ch->logical, b->bytenr, c->fs->nodesize))
		chk_rep(c, CHK_M_TB_STRIPE, c->tree, b->bytenr, NULL, CHK_U(b->bytenr),
			CHK_U((b->bytenr + c->fs->nodesize)));
	if (btk_block_level(b) == 0)
		leaf_packing(c, b);
	if (gen == 0 || gen > c->max_gen)
		chk_rep(c, CHK_M_TB_GENERATION, c->tree, b->bytenr, NULL, CHK_U(c->max_gen),
			CHK_U(gen));
	bool ok_owner = c->tree_class == CHK_T_FS
			    ? chk_is_fs_tree(owner) || owner == BTRFS_TREE_RELOC_OBJECTID
			    : owner == c->tree;
	if (c->tree_class == CHK_T_RELOC)
		ok_owner = owner == BTRFS_TREE_RELOC_OBJECTID || chk_is_fs_tree(owner);
	if (!ok_owner)
		chk_rep(c, CHK_M_TB_OWNER, c->tree, b->bytenr, NULL, CHK_U(c->tree), CHK_U(owner));
	else if (c->tree_class == CHK_T_FS && owner != c->tree &&
		 owner != BTRFS_TREE_RELOC_OBJECTID) {
		struct chk_owner *o = chk_push(c, &c->owners);
		if (o) {
			*o = (struct chk_owner){b->bytenr, owner, btk_block_level(b)};
			chk_rec_owner(c, o);
		}
	}
	block_flags(c, b);
	if (c->has_chunk_uuid && memcmp(btk_hdr(b)->chunk_tree_uuid, c->chunk_uuid, BTK_UUID_SIZE))
		chk_rep(c, CHK_M_TB_CHUNK_UUID, c->tree, b->bytenr, NULL, CHK_UUID(c->chunk_uuid),
			CHK_UUID(btk_hdr(b)->chunk_tree_uuid));
}

/* What the block's FULL_BACKREF flag must be where the kernel leaves no choice (btrfs check
 * judges the same): a block a relocation wrote (header RELOC flag) has it, as the kernel gives
 * it to every block of a relocation tree and the header flag stays when the relocation merges
 * the block into the subvolume; a block its owner's tree reaches, newer than the tree's last
 * snapshot and not written by a relocation, has not: the kernel's copy-on-write takes such a
 * block as unshared without reading its record (a root block too). */
static void full_backref_rule(struct chk *c, const struct btk_block *b)
{
	struct chk_fullwant w = {.bytenr = b->bytenr,
				 .gen = btk_block_generation(b),
				 .level = btk_block_level(b),
				 .full = btk_block_flags(b) & BTK_HEADER_FLAG_RELOC};

	if (!w.full) {
		w.last_snapshot = c->tree_item ? c->tree_item->last_snapshot : 0;
		if (c->tree_class == CHK_T_RELOC || btk_block_owner(b) != c->tree ||
		    w.gen <= w.last_snapshot)
			return;
	}
	chk_full_backref(c, &w);
}

/* In a half-deleted tree, child i is already freed when its whole key range lies before the
 * drop progress key (the next sibling's key is <= it). */
static bool child_dropped(const struct chk *c, const struct btk_block *b, uint32_t i)
{
	struct btk_key next;

	if (i + 1 >= btk_block_nritems(b))
		return false;
	btk_node_key(b, (int)i + 1, &next);
	return btk_key_cmp(&next, c->drop) <= 0;
}

/* References a block makes: to its children, or from a leaf to data extents. Resolved later
 * against the block's own FULL_BACKREF flag (check_extents.c). */
static void block_refs(struct chk *c, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);
	uint64_t owner = btk_block_owner(b);
	int level = btk_block_level(b);

	if (level > 0) {
		for (uint32_t i = 0; i < n && !c->oom; i++) {
			if (c->drop && child_dropped(c, b, i))
				continue;
			struct chk_ref r = {.bytenr = btk_node_blockptr(b, (int)i),
					    .root = owner,
					    .parent = b->bytenr,
					    .off = (uint64_t)(level - 1),
					    .count = 1,
					    .type = BTRFS_TREE_BLOCK_REF_KEY,
					    .unresolved = 1};
			push_ref(c, &r);
		}
		return;
	}
	/* fs and reloc trees hold files; the root tree holds v1 space cache inodes */
	if (c->tree_class != CHK_T_FS && c->tree_class != CHK_T_RELOC &&
	    c->tree_class != CHK_T_ROOT)
		return;
	for (uint32_t i = 0; i < n && !c->oom; i++) {
		struct btk_leaf_dref d;
		/* a short or odd item is reported by the fs checker */
		if (!btk_leaf_data_ref(b, (int)i, &d))
			continue;
		struct chk_ref r = {
		    .bytenr = d.bytenr,
		    .root = owner,
		    .parent = b->bytenr,
		    .ino = d.ino,
		    .off = d.off,
		    .len = d.len,
		    .count = 1,
		    .type = BTRFS_EXTENT_DATA_REF_KEY,
		    .unresolved = 1,
		};
		c->sum->data_bytes_referenced += d.num_bytes;
		c->sum->data_bytes_allocated += r.len;
		push_ref(c, &r);
	}
}

/* the per-leaf check of each tree class that has one (fs trees and block groups aside) */
static void (*const leaf_checks[])(struct chk *c, const struct btk_block *b) = {
    [CHK_T_LOG] = chk_log_leaf,	  [CHK_T_UUID] = chk_uuid_leaf,	    [CHK_T_QUOTA] = chk_quota_leaf,
    [CHK_T_ROOT] = chk_root_leaf, [CHK_T_EXTENT] = chk_extent_leaf, [CHK_T_CHUNK] = chk_chunk_leaf,
    [CHK_T_DEV] = chk_dev_leaf,	  [CHK_T_CSUM] = chk_csum_leaf,	    [CHK_T_FST] = chk_fst_leaf,
};

static void leaf_dispatch(struct chk *c, const struct btk_block *b, bool first)
{
	if (c->tree_class == CHK_T_FS) {
		c->leaf_first = first;
		if (c->fst)
			chk_fs_leaf(c, b);
		return;
	}
	if (!first)
		return;
	if (c->tree_class == CHK_T_BG) {
		chk_for_items (c, b, BTRFS_BLOCK_GROUP_ITEM_KEY, it)
			chk_bg_item(c, &it.k, it.p, it.sz, b->bytenr);
		return;
	}
	if ((size_t)c->tree_class < sizeof(leaf_checks) / sizeof(leaf_checks[0]) &&
	    leaf_checks[c->tree_class])
		leaf_checks[c->tree_class](c, b);
}

static int on_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct chk *c = ctx;
	int first = chk_set_add(&c->visited, b->bytenr);

	(void)fs;
	(void)depth;
	if (first < 0) {
		c->oom = true;
		return btk_err(ENOMEM, "out of memory");
	}
	/* log blocks are not counted: btrfs check's totals leave them out too */
	if (first && c->tree_class != CHK_T_LOG) {
		c->sum->nr_tree_blocks++;
		c->sum->total_tree_bytes += c->fs->nodesize;
		if (c->tree_class == CHK_T_FS)
			c->sum->total_fs_tree_bytes += c->fs->nodesize;
		if (c->tree_class == CHK_T_EXTENT)
			c->sum->total_extent_tree_bytes += c->fs->nodesize;
		c->sum->btree_space_waste += block_waste(c, b);
		chk_progress_block(c);
	}
	if (first) {
		if (c->tree_class == CHK_T_FS)
			chk_rec_block(c, b->bytenr);
		chk_block_copies(c, b);
		block_sanity(c, b);
		if (c->tree_class != CHK_T_LOG) {
			block_refs(c, b);
			full_backref_rule(c, b);
		}
	}
	if (c->fst)
		chk_qgroup_block(c, b); /* a full walk of a subvolume: what it reaches */
	if (btk_block_level(b) == 0)
		leaf_dispatch(c, b, first);
	else if (!first && (c->tree_class != CHK_T_FS || !c->fst))
		return BTK_WALK_SKIP; /* seen already, and no inode checks need its leaves */
	else if (!first && !c->quota_tree) {
		/* shared with a subvolume checked already (a snapshot): quota accounting aside,
		 * nothing below needs reading again */
		chk_fs_skip(c, b);
		return BTK_WALK_SKIP;
	}
	return c->oom ? -ENOMEM : 0;
}

static int on_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct chk *c = ctx;

	if (err == -ENOMEM) {
		c->oom = true;
		return err;
	}
	enum chk_message_id id = CHK_M_TB_UNREADABLE;
	if (err == -EUCLEAN)
		switch (btk_block_last_fault()) {
		case BTK_BF_LEVEL:
			id = CHK_M_TB_UNREADABLE_LEVEL;
			break;
		case BTK_BF_FIRST_KEY:
			id = CHK_M_TB_UNREADABLE_FIRST_KEY;
			break;
		case BTK_BF_GENERATION:
			id = CHK_M_TB_UNREADABLE_TRANSID;
			break;
		case BTK_BF_OWNER:
			id = CHK_M_TB_UNREADABLE_OWNER;
			break;
		default:
			break;
		}
	chk_rep(c, id, c->tree, bytenr, NULL, CHK_I(level), CHK_S(msg));
	/* what the lost block held cannot be compared: avoid a cascade of consequences */
	if (c->tree_class == CHK_T_EXTENT || c->tree_class == CHK_T_BG)
		c->extent_gap = true;
	else if (c->tree_class != CHK_T_LOG)
		c->walk_gap = true;
	if (c->tree_class == CHK_T_CHUNK)
		c->chunk_gap = true;
	if (c->fst)
		chk_fs_leaf(c, NULL); /* a gap: the fs checker must not judge across it */
	return 0;
}

/* Index of the first root item with key (id, offset) or above; c->roots in key order. */
static size_t root_lower_bound(const struct chk *c, uint64_t id, uint64_t offset)
{
	size_t lo = 0, hi = c->roots.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct chk_rootitem *m = btk_vec_at(&c->roots, mid);
		if (m->id < id || (m->id == id && m->offset < offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The root item of (id, offset), or with any_offset the first of id; NULL when none. Every
 * tree's walk looks its item up: a binary search, unless a damaged root tree gave its items
 * out of order. */
static const struct chk_rootitem *find_root(const struct chk *c, uint64_t id, uint64_t offset,
					    bool any_offset)
{
	const struct chk_rootitem *ri = NULL;

	if (c->roots_unsorted) {
		for (size_t i = 0; i < c->roots.n; i++) {
			ri = btk_vec_at(&c->roots, i);
			if (ri->id == id && (any_offset || ri->offset == offset))
				return ri;
		}
		return NULL;
	}
	size_t i = root_lower_bound(c, id, any_offset ? 0 : offset);
	if (i < c->roots.n)
		ri = btk_vec_at(&c->roots, i);
	return ri && ri->id == id && (any_offset || ri->offset == offset) ? ri : NULL;
}

static const struct chk_rootitem *root_item(const struct chk *c, const struct btk_root *r)
{
	return find_root(c, r->objectid, r->key_offset, false);
}

/* Depth-first walk of a half-deleted tree that does not read freed children. Each level's
 * expected level, generation and first key come from the parent, as in btk_tree_walk. */
static int walk_dropping(struct chk *c, const struct btk_root *r)
{
	struct {
		struct btk_block *b;
		uint32_t next;
	} st[BTK_MAX_LEVEL];
	struct btk_block_check chk = {.level = r->level, .generation = r->generation};
	struct btk_block *b;
	int depth = 0, ret = btk_block_read(c->fs, r->bytenr, &chk, &b);

	if (ret)
		return on_error(c, r->bytenr, r->level, ret, btk_errmsg());
	ret = on_block(c, c->fs, b, 0);
	if (ret || btk_block_level(b) == 0) {
		btk_block_put(b);
		return ret == BTK_WALK_SKIP ? 0 : ret;
	}
	st[0].b = b;
	st[0].next = 0;
	while (depth >= 0 && !ret) {
		struct btk_block *p = st[depth].b;
		uint32_t i = st[depth].next++;
		if (i >= btk_block_nritems(p)) {
			btk_block_put(p);
			depth--;
			continue;
		}
		if (child_dropped(c, p, i))
			continue;
		struct btk_key k;
		struct btk_block_check cc;
		btk_child_check(p, (int)i, &k, &cc);
		ret = btk_block_read(c->fs, btk_node_blockptr(p, (int)i), &cc, &b);
		if (ret) {
			ret =
			    on_error(c, btk_node_blockptr(p, (int)i), cc.level, ret, btk_errmsg());
			continue;
		}
		ret = on_block(c, c->fs, b, depth + 1);
		if (ret || btk_block_level(b) == 0 || depth + 1 >= BTK_MAX_LEVEL) {
			btk_block_put(b);
			ret = ret == BTK_WALK_SKIP ? 0 : ret;
			continue;
		}
		st[++depth].b = b;
		st[depth].next = 0;
	}
	while (depth >= 0)
		btk_block_put(st[depth--].b);
	return ret;
}

static int walk_root(void *ctx, const struct btk_root *r)
{
	static const struct btk_walk_ops ops = {.block = on_block, .on_error = on_error};
	struct chk *c = ctx;
	int ret;

	c->tree = r->objectid;
	c->tree_class = classify(r->objectid);
	c->tree_item = root_item(c, r);
	c->quota_tree = find_root(c, BTRFS_QUOTA_TREE_OBJECTID, 0, true) != NULL;
	c->sum->nr_roots++;
	chk_rec_other_tree(c);
	if (c->tree_class == CHK_T_FS && (ret = chk_rec_replay(c, r)))
		return ret < 0 ? ret : 0; /* taken from the record of an earlier check */
	bool seen_root = chk_set_has(&c->visited, r->bytenr);
	bool checked =
	    c->tree_class == CHK_T_FS && !seen_root && !(c->tree_item && c->tree_item->dropping);
	if (c->tree_class == CHK_T_FS)
		chk_rec_tree_begin(c, r, checked);
	if (c->tree_class != CHK_T_LOG) {
		struct chk_ref ref = {.bytenr = r->bytenr,
				      .root = r->objectid,
				      .off = (uint64_t)r->level,
				      .count = 1,
				      .type = BTRFS_TREE_BLOCK_REF_KEY};
		/* a reloc tree's root block is FULL_BACKREF and refers to itself as parent */
		if (c->tree_class == CHK_T_RELOC) {
			ref.type = BTRFS_SHARED_BLOCK_REF_KEY;
			ref.parent = r->bytenr;
			ref.root = 0;
		}
		push_ref(c, &ref);
	}
	/* a root block already walked as another tree's root: its checks are done (and a crafted
	 * root tree listing one tree many times must not cost a full walk each time) */
	if (checked) {
		ret = chk_fs_begin(c, r);
		if (ret)
			return ret;
		c->sum->nr_subvols++;
	}
	c->drop = NULL;
	if (c->tree_item && c->tree_item->dropping && c->tree_item->drop_key.objectid) {
		c->drop = &c->tree_item->drop_key;
		ret = walk_dropping(c, r);
		c->drop = NULL;
	} else {
		ret = btk_tree_walk(c->fs, r, &ops, c);
	}
	if (c->fst)
		chk_fs_end(c);
	chk_rec_tree_end(c);
	if (c->tree_class == CHK_T_EXTENT)
		chk_extents_walked(c);
	if (c->oom)
		return btk_err(ENOMEM, "out of memory");
	return ret == -ENOMEM ? ret : 0;
}

/* The chunk tree uuid every tree block's header repeats: the chunk root's (read already when
 * the filesystem was opened; unknown when it does not read now). */
static void chunk_tree_uuid(struct chk *c)
{
	struct btk_block_check want = {.level = c->fs->sb.chunk_root_level,
				       .generation = btk_le64(c->fs->sb.chunk_root_generation)};
	struct btk_block *b;

	if (btk_block_read(c->fs, btk_le64(c->fs->sb.chunk_root), &want, &b))
		return;
	memcpy(c->chunk_uuid, btk_hdr(b)->chunk_tree_uuid, BTK_UUID_SIZE);
	c->has_chunk_uuid = true;
	btk_block_put(b);
}

int chk_walk_all(struct chk *c)
{
	chunk_tree_uuid(c);
	int ret = btk_for_each_root(c->fs, walk_root, c);

	/* the log root tree lists one log tree per subvolume with fsync'ed changes */
	for (size_t i = 0; !ret && i < c->log_roots.n; i++) {
		struct btk_root r = *(struct btk_root *)btk_vec_at(&c->log_roots, i);
		c->log_ino = 0;
		ret = walk_root(c, &r);
	}
	chk_copies_finish(c, true);

	if (ret && ret != -ENOMEM && ret != -EAGAIN) {
		/* the root tree itself could not be iterated: report and go on with what we have */
		chk_rep(c, CHK_M_TB_ROOTS, BTRFS_ROOT_TREE_OBJECTID, 0, NULL, CHK_S(btk_errmsg()));
		ret = 0;
	}
	return ret;
}
