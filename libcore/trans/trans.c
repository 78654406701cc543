/* trans.c — transactions: start, commit (settle queued changes, write blocks, flush, write
 * superblocks), abort; write-path state of an opened filesystem.
 */
#include "trans/ctree_int.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "volumes/super.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int check_writable(struct btk_fs *fs)
{
	uint64_t inc = btk_le64(fs->sb.incompat_flags), ro = btk_le64(fs->sb.compat_ro_flags);
	const uint64_t known_inc =
	    BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF | BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL |
	    BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS | BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO |
	    BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD | BTRFS_FEATURE_INCOMPAT_BIG_METADATA |
	    BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF | BTRFS_FEATURE_INCOMPAT_RAID56 |
	    BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA | BTRFS_FEATURE_INCOMPAT_NO_HOLES |
	    BTRFS_FEATURE_INCOMPAT_METADATA_UUID | BTRFS_FEATURE_INCOMPAT_RAID1C34;
	const uint64_t known_ro = BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
				  BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID |
				  BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;

	if (!(inc & BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF))
		return btk_err(EOPNOTSUPP, "old backref format (no mixed-backref): not writable");
	if (inc & ~known_inc)
		return btk_err(EOPNOTSUPP, "unknown incompat features %#llx: not writable",
			       (unsigned long long)(inc & ~known_inc));
	if (ro & ~known_ro)
		return btk_err(EOPNOTSUPP, "unknown compat_ro features %#llx: not writable",
			       (unsigned long long)(ro & ~known_ro));
	if ((ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE) &&
	    !(ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID))
		return btk_err(EOPNOTSUPP, "free-space tree not marked valid: not writable");
	if (btk_le64(fs->sb.log_root))
		return btk_err(EOPNOTSUPP,
			       "the filesystem has a log tree: replay it with btk-fsck --rescue "
			       "replay-log (or mount it once)");
	for (int i = 0; i < fs->ndevs; i++)
		if (!fs->devs[i].dev)
			return btk_err(ENODEV, "devid %llu is missing: not writable",
				       (unsigned long long)fs->devs[i].devid);
	return 0;
}

/* New write-path state of fs: the features from its superblock, the next transaction id.
 * NULL when out of memory (message set). */
static struct btk_wfs *wfs_new(struct btk_fs *fs, uint64_t transid)
{
	uint64_t inc = btk_le64(fs->sb.incompat_flags), ro = btk_le64(fs->sb.compat_ro_flags);
	struct btk_wfs *w = calloc(1, sizeof(*w));

	if (!w) {
		btk_err(ENOMEM, "out of memory");
		return NULL;
	}
	w->fs = fs;
	w->transid = transid;
	w->skinny = inc & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA;
	w->mixed = inc & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS;
	w->no_holes = inc & BTRFS_FEATURE_INCOMPAT_NO_HOLES;
	w->squota = inc & BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA;
	w->fst = ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
	w->bgtree = ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	return w;
}

int btk_write_new(struct btk_fs *fs, const uint8_t chunk_uuid[BTK_UUID_SIZE], const uint8_t *seed,
		  struct btk_wfs **out)
{
	*out = NULL;
	btk_err_clear();
	if (!fs->writable)
		return btk_err(EROFS, "filesystem opened read-only");
	if (!(*out = wfs_new(fs, 1)))
		return -ENOMEM;
	(*out)->uuid_seed = seed;
	memcpy((*out)->chunk_uuid, chunk_uuid, BTK_UUID_SIZE);
	return 0;
}

int btk_write_open(struct btk_fs *fs, unsigned flags, struct btk_wfs **out)
{
	struct btk_wfs *w;
	struct btk_block *b;
	int ret;

	*out = NULL;
	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	if (!fs->writable)
		return btk_err(EROFS, "filesystem opened read-only");
	if ((ret = check_writable(fs)))
		return ret;
	if (!(w = wfs_new(fs, btk_le64(fs->sb.generation) + 1)))
		return -ENOMEM;
	w->damaged_usage = flags & BTK_WRITE_DAMAGED_USAGE;
	w->qgroups_kept = flags & BTK_WRITE_QGROUPS_KEPT;
	w->extent_rebuild = flags & BTK_WRITE_EXTENT_REBUILD;
	/* every tree block carries the chunk tree's uuid: a chunk tree being rebuilt is not read */
	if (flags & BTK_WRITE_CHUNK_REBUILD)
		ret = btk_wblock_read(fs, btk_le64(fs->sb.root), fs->sb.root_level, &b);
	else
		ret = btk_wblock_read(fs, btk_le64(fs->sb.chunk_root), fs->sb.chunk_root_level, &b);
	if (!ret) {
		memcpy(w->chunk_uuid, btk_hdr(b)->chunk_tree_uuid, BTK_UUID_SIZE);
		btk_block_put(b);
		ret = btk_bg_load(w);
	}
	if (ret)
		btk_write_close(w);
	else
		*out = w;
	return ret;
}

void btk_write_close(struct btk_wfs *w)
{
	if (!w)
		return;
	btk_free_each(w->roots, w->nroots);
	for (int i = 0; i < w->nbgs; i++) {
		btk_rs_free(&w->bgs[i].free);
		btk_rs_free(&w->bgs[i].pinned);
		btk_rs_free(&w->bgs[i].super);
	}
	free(w->bgs);
	btk_rs_free(&w->snap_shared);
	btk_u64set_free(&w->unrecorded);
	free(w->chg);
	free(w->snaps);
	free(w->drops);
	btk_rs_free(&w->relocated);
	btk_rs_free(&w->recow);
	free(w->refs);
	free(w->new_chunks);
	free(w->holds);
	free(w);
}

int btk_write_raise_transid(struct btk_wfs *w, uint64_t transid)
{
	if (w->running)
		return btk_err(EBUSY, "a transaction is running");
	if (transid > w->transid)
		w->transid = transid;
	return 0;
}

int btk_trans_start(struct btk_wfs *w, struct btk_trans **out)
{
	struct btk_trans *t;

	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	if (w->broken)
		return btk_err(EIO, "an earlier transaction failed; reopen the filesystem");
	if (w->running)
		return btk_err(EBUSY, "a transaction is already running");
	t = calloc(1, sizeof(*t));
	if (!t)
		return btk_err(ENOMEM, "out of memory");
	t->fs = w->fs;
	t->w = w;
	t->transid = w->transid;
	t->mods_at_start = w->mods;
	w->nchg = w->nsnaps = w->ndrops = 0;
	w->running = true;
	*out = t;
	return 0;
}

struct btk_fs *btk_trans_fs(const struct btk_trans *t)
{
	return t->fs;
}

uint64_t btk_trans_id(const struct btk_trans *t)
{
	return t->transid;
}

void btk_trans_abort(struct btk_trans *t)
{
	if (!t)
		return;
	t->w->broken = true;
	t->w->running = false;
	free(t);
}

int btk_trans_end(struct btk_trans *t, int ret)
{
	if (!t || ret) {
		btk_trans_abort(t);
		return ret;
	}
	return btk_trans_commit(t);
}

/* ---- commit: settle ---- */

static void fill_root_item(struct btk_trans *t, struct btk_wroot *wr)
{
	struct btk_root_item ri;

	wroot_item(wr, &ri);
	ri.generation = ri.generation_v2 = t->transid; /* v2 only where the item holds it */
	ri.bytenr = wr->bytenr;
	ri.level = (uint8_t)wr->level;
	wroot_item_set(wr, &ri);
}

static int update_root_items(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	int ret = 0;

	for (int i = 0; i < w->nroots && !ret; i++) {
		struct btk_wroot *wr = w->roots[i];
		if (!wr->in_root_tree || (!wr->item_new && !wr->item_dirty))
			continue;
		fill_root_item(t, wr);
		if (wr->item_new) {
			wr->item_new = wr->item_dirty = false;
			ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &wr->item_key, wr->item,
					      wr->item_size);
		} else {
			wr->item_dirty = false;
			ret = btk_item_update(t, BTRFS_ROOT_TREE_OBJECTID, &wr->item_key, wr->item,
					      wr->item_size);
		}
	}
	return ret;
}

/* btk does not account qgroups: when quotas are on, mark them inconsistent so that the
 * kernel (btrfs quota rescan) and btrfs check know the numbers need a rescan. A write handle
 * whose transactions keep every qgroup's numbers (BTK_WRITE_QGROUPS_KEPT) instead moves the
 * status item's generation to this commit's, as the kernel's commit does (the kernel marks
 * quotas inconsistent at mount when the two differ). */
static int qgroup_status(struct btk_trans *t, bool kept)
{
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	uint8_t item[sizeof(struct btrfs_qgroup_status_item)];
	struct btk_path p;
	uint32_t size;
	const uint8_t *d;
	int ret;

	if (!btk_wroot_get(t->w, BTRFS_QUOTA_TREE_OBJECTID)) {
		btk_err_clear();
		return 0; /* no quota tree */
	}
	ret = btk_tree_search_cur(t->w, BTRFS_QUOTA_TREE_OBJECTID, &k, &p);
	if (ret) {
		btk_wpath_release(&p);
		return ret < 0 ? ret : 0;
	}
	d = btk_item_ptr(&p, &size);
	if (size >= sizeof(item) && kept) {
		if (BTK_GET(struct btrfs_qgroup_status_item, d, generation) != t->transid) {
			memcpy(item, d, sizeof(item));
			btk_wpath_release(&p);
			BTK_PUT(struct btrfs_qgroup_status_item, item, generation, t->transid);
			return btk_item_update(t, BTRFS_QUOTA_TREE_OBJECTID, &k, item,
					       sizeof(item));
		}
		btk_wpath_release(&p);
		return 0;
	}
	if (size < sizeof(item) || (BTK_GET(struct btrfs_qgroup_status_item, d, flags) &
				    BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT)) {
		btk_wpath_release(&p);
		return 0;
	}
	memcpy(item, d, sizeof(item));
	btk_wpath_release(&p);
	BTK_PUT(struct btrfs_qgroup_status_item, item, flags,
		BTK_GET(struct btrfs_qgroup_status_item, item, flags) |
		    BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT);
	return btk_item_update(t, BTRFS_QUOTA_TREE_OBJECTID, &k, item, sizeof(item));
}

static int qgroups_inconsistent(struct btk_trans *t)
{
	if (t->w->settled_fn && !t->w->qgroups_kept)
		return 0; /* the settled hook accounts them, or marks them itself */
	return qgroup_status(t, t->w->qgroups_kept);
}

int btk_qgroups_mark_inconsistent(struct btk_trans *t)
{
	return qgroup_status(t, false);
}

void btk_write_on_settled(struct btk_wfs *w, btk_trans_settled_fn fn, void *ctx)
{
	w->settled_fn = fn;
	w->settled_ctx = ctx;
}

void btk_trans_changes(const struct btk_trans *t, struct btk_trans_changes *out)
{
	const struct btk_wfs *w = t->w;

	*out =
	    (struct btk_trans_changes){w->chg, w->nchg, w->snaps, w->nsnaps, w->drops, w->ndrops};
}

/* A v1 space cache (no free-space tree) no longer matches the block groups. The superblock's
 * cache_generation of -1 (at commit) makes the kernel rebuild every cache at its next mount,
 * but btrfs check reads each cache whose header generation still equals its inode's: so each
 * header's generation becomes 0, which both of them take as "stale, not to be loaded". Once
 * per cache: a header already at 0 is left alone. */
static int v1_caches_stale(struct btk_trans *t)
{
	struct btk_key k = {BTRFS_FREE_SPACE_OBJECTID, 0, 0};
	uint8_t item[sizeof(struct btrfs_free_space_header)];
	uint32_t size;
	int ret;

	if (t->w->fst || !btk_le64(t->fs->sb.cache_generation))
		return 0;
	for (;;) {
		ret = btk_item_next(t, BTRFS_ROOT_TREE_OBJECTID, &k, item, sizeof(item), &size);
		if (ret)
			return ret < 0 ? ret : 0;
		if (k.objectid != BTRFS_FREE_SPACE_OBJECTID || k.type != 0)
			return 0;
		if (size == sizeof(item) &&
		    BTK_GET(struct btrfs_free_space_header, item, generation)) {
			BTK_PUT(struct btrfs_free_space_header, item, generation, 0);
			if ((ret = btk_item_update(t, BTRFS_ROOT_TREE_OBJECTID, &k, item,
						   sizeof(item))))
				return ret;
		}
		if (k.offset == UINT64_MAX)
			return 0;
		k.offset++;
	}
}

/* The steps of a commit round, in order; each may change what an earlier one wrote, so
 * rounds repeat until one changes nothing. */
static int (*const settle_steps[])(struct btk_trans *t) = {
    btk_chunk_write_items, btk_chunk_update_dev_items, update_root_items,
    btk_run_refs,	   btk_write_bg_items,	       btk_fst_update,
};

static int settle(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	int ret = qgroups_inconsistent(t);

	if (!ret)
		ret = v1_caches_stale(t);

	for (int round = 0; !ret; round++) {
		uint64_t before = w->mods;
		if (round > 100)
			return btk_err(ELOOP, "commit did not settle after 100 rounds");
		for (size_t i = 0; i < sizeof(settle_steps) / sizeof(settle_steps[0]) && !ret; i++)
			ret = settle_steps[i](t);
		if (!ret && w->mods == before)
			break;
	}
	for (int i = 0; i < w->nbgs; i++)
		w->bgs[i].dirty = false;
	return ret;
}

/* ---- commit: write ---- */

static int write_block(void *ctx, struct btk_block *b)
{
	struct btk_trans *t = ctx;
	struct btk_fs *fs = t->fs;
	struct btk_header *h = (struct btk_header *)b->data;
	uint8_t csum[BTK_CSUM_MAX];
	struct btk_phys ph[16];
	int n = 0, ret;

	btk_put64(h->flags, btk_le64(h->flags) | BTK_HEADER_FLAG_WRITTEN);
	ret = btk_csum(fs->csum_type, b->data + BTK_CSUM_MAX, b->len - BTK_CSUM_MAX, csum);
	if (ret)
		return ret;
	memcpy(h->csum, csum, BTK_CSUM_MAX);
	{
		const struct btk_chunk *c = btk_chunk_find(fs, b->bytenr);
		if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
			ret = btk_raid56_write(fs, b->bytenr, b->data, b->len);
			if (!ret)
				b->dirty = false;
			return ret;
		}
	}
	ret = btk_map_logical(fs, b->bytenr, ph, 16, &n, NULL);
	if (ret)
		return ret;
	for (int i = 0; i < n && !ret; i++) {
		if (!ph[i].dev)
			return btk_err(ENODEV, "tree block %llu: devid %llu is missing",
				       (unsigned long long)b->bytenr,
				       (unsigned long long)ph[i].devid);
		ret = btk_dev_write(ph[i].dev, b->data, b->len, ph[i].physical);
	}
	if (!ret)
		b->dirty = false;
	return ret;
}

static int flush_all(struct btk_fs *fs)
{
	int ret = 0;

	for (int i = 0; i < fs->ndevs && !ret; i++)
		if (fs->devs[i].dev)
			ret = btk_dev_flush(fs->devs[i].dev);
	return ret;
}

static int root_info(struct btk_trans *t, uint64_t id, uint64_t *bytenr, uint64_t *gen,
		     uint8_t *level)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, id);
	struct btk_block *b;
	int ret;

	*bytenr = *gen = 0;
	*level = 0;
	if (!wr) {
		btk_err_clear();
		return 0;
	}
	ret = btk_wblock_read(t->fs, wr->bytenr, wr->level, &b);
	if (ret)
		return ret;
	*bytenr = wr->bytenr;
	*gen = btk_block_generation(b);
	*level = (uint8_t)wr->level;
	btk_block_put(b);
	return 0;
}

int btk_trans_view(struct btk_trans *t, bool current)
{
	struct btk_super *sb = &t->fs->sb;
	uint64_t by, gen;
	uint8_t lv;
	int ret;

	if (!t->in_hook)
		return btk_err(EINVAL,
			       "a view of the transaction's trees outside its settled hook");
	if (!current) {
		btk_put64(sb->root, t->view_root);
		btk_put64(sb->generation, t->view_gen);
		sb->root_level = t->view_level;
		btk_put64(sb->chunk_root, t->view_chunk);
		sb->chunk_root_level = t->view_chunk_level;
		return 0;
	}
	if ((ret = root_info(t, BTRFS_CHUNK_TREE_OBJECTID, &by, &gen, &lv)))
		return ret;
	btk_put64(sb->chunk_root, by);
	sb->chunk_root_level = lv;
	if ((ret = root_info(t, BTRFS_ROOT_TREE_OBJECTID, &by, &gen, &lv)))
		return ret;
	btk_put64(sb->root, by);
	btk_put64(sb->generation, gen);
	sb->root_level = lv;
	return 0;
}

/* Runs the settled hook, in the committed view before and after, and settles what it
 * changed. */
static int run_settled_hook(struct btk_trans *t)
{
	struct btk_super *sb = &t->fs->sb;
	int ret;

	t->view_root = btk_le64(sb->root);
	t->view_gen = btk_le64(sb->generation);
	t->view_level = sb->root_level;
	t->view_chunk = btk_le64(sb->chunk_root);
	t->view_chunk_level = sb->chunk_root_level;
	t->in_hook = true;
	ret = t->w->settled_fn(t->w->settled_ctx, t);
	btk_trans_view(t, false);
	t->in_hook = false;
	return ret ? ret : settle(t);
}

static int fill_backup(struct btk_trans *t, struct btk_super *sb)
{
	struct btk_root_backup *bk = &sb->super_roots[t->transid % BTK_NUM_BACKUP_ROOTS];
	uint64_t by, gen;
	uint8_t lv;
	int ret;

	memset(bk, 0, sizeof(*bk));
#define BK(id, f)                                                                                  \
	do {                                                                                       \
		if ((ret = root_info(t, id, &by, &gen, &lv)))                                      \
			return ret;                                                                \
		btk_put64(bk->f, by);                                                              \
		btk_put64(bk->f##_gen, gen);                                                       \
		bk->f##_level = lv;                                                                \
	} while (0)
	BK(BTRFS_ROOT_TREE_OBJECTID, tree_root);
	BK(BTRFS_CHUNK_TREE_OBJECTID, chunk_root);
	BK(BTRFS_EXTENT_TREE_OBJECTID, extent_root);
	BK(BTRFS_FS_TREE_OBJECTID, fs_root);
	BK(BTRFS_DEV_TREE_OBJECTID, dev_root);
	BK(BTRFS_CSUM_TREE_OBJECTID, csum_root);
#undef BK
	btk_put64(bk->total_bytes, btk_le64(sb->total_bytes));
	btk_put64(bk->bytes_used, btk_le64(sb->bytes_used));
	btk_put64(bk->num_devices, btk_le64(sb->num_devices));
	return 0;
}

/* Updates the in-memory superblock for this commit (everything but the dev item). */
static int prepare_super(struct btk_trans *t)
{
	struct btk_fs *fs = t->fs;
	struct btk_super *sb = &fs->sb;
	struct btk_wroot *rt = btk_wroot_get(t->w, BTRFS_ROOT_TREE_OBJECTID);
	struct btk_wroot *ct = btk_wroot_get(t->w, BTRFS_CHUNK_TREE_OBJECTID);
	uint64_t used = 0, total = 0, by, gen;
	uint8_t lv;
	int ret;

	if (!rt || !ct)
		return btk_err(ENOENT, "commit: the root or chunk tree is not open");
	for (int i = 0; i < t->w->nbgs; i++)
		used += t->w->bgs[i].used;
	for (int i = 0; i < fs->ndevs; i++)
		total += fs->devs[i].total_bytes;
	btk_put64(sb->generation, t->transid);
	btk_put64(sb->root, rt->bytenr);
	sb->root_level = (uint8_t)rt->level;
	btk_put64(sb->chunk_root, ct->bytenr);
	sb->chunk_root_level = (uint8_t)ct->level;
	if ((ret = root_info(t, BTRFS_CHUNK_TREE_OBJECTID, &by, &gen, &lv)))
		return ret;
	btk_put64(sb->chunk_root_generation, gen);
	btk_put64(sb->bytes_used, used);
	btk_put64(sb->total_bytes, total);
	btk_put64(sb->num_devices, (uint64_t)fs->ndevs);
	btk_put64(sb->flags, btk_le64(sb->flags) | BTK_HEADER_FLAG_WRITTEN);
	/* a v1 space cache no longer matches the block groups: have the kernel rebuild it */
	if (!t->w->fst)
		btk_put64(sb->cache_generation, UINT64_MAX);
	if ((ret = btk_chunk_build_sys_array(fs)))
		return ret;
	return fill_backup(t, sb);
}

static int dev_item_of(struct btk_trans *t, uint64_t devid, uint8_t *out)
{
	struct btk_key key = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid};
	struct btk_path p;
	uint32_t size = 0;
	int ret = btk_tree_search_cur(t->w, BTRFS_CHUNK_TREE_OBJECTID, &key, &p);

	if (ret == 0) {
		const uint8_t *d = btk_item_ptr(&p, &size);
		if (size == sizeof(struct btrfs_dev_item))
			memcpy(out, d, size);
	}
	btk_wpath_release(&p);
	if (ret < 0)
		return ret;
	if (ret || size != sizeof(struct btrfs_dev_item))
		return btk_err(EUCLEAN, "no valid device item for devid %llu",
			       (unsigned long long)devid);
	return 0;
}

/* The primary superblock of the first device with the bytes the caller erases below it, in
 * one write (btk_trans_erase_with_super). */
static int write_primary_erasing(struct btk_wfs *w, struct btk_dev *dev, const struct btk_super *sb)
{
	uint64_t at = btk_super_offset(0), len = at + BTK_SUPER_SIZE - w->erase_off;
	uint8_t *buf = malloc(len);
	int ret;

	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	ret = btk_dev_read(dev, buf, at - w->erase_off, w->erase_off);
	if (!ret) {
		memset(buf, 0, w->erase_len);
		memcpy(buf + (at - w->erase_off), sb, BTK_SUPER_SIZE);
		ret = btk_dev_write(dev, buf, len, w->erase_off);
	}
	free(buf);
	if (!ret)
		w->erase_off = w->erase_len = 0;
	return ret;
}

int btk_trans_super_copy(struct btk_trans *t, int dev, int mirror, struct btk_super *out)
{
	struct btk_fs *fs = t->fs;
	int ret;

	if (dev < 0 || dev >= fs->ndevs || mirror < 0 || mirror >= BTK_SUPER_MIRRORS)
		return btk_err(EINVAL, "no superblock copy %d of device %d", mirror, dev);
	*out = fs->sb;
	if ((ret = dev_item_of(t, fs->devs[dev].devid, out->dev_item)))
		return ret;
	btk_put64(out->bytenr, btk_super_offset(mirror));
	btk_super_csum_fill(out);
	return 0;
}

static int write_supers(struct btk_trans *t)
{
	struct btk_fs *fs = t->fs;
	struct btk_super *copy = malloc(sizeof(*copy));
	int ret = 0;

	if (!copy)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		for (int m = 0; !ret && m < BTK_SUPER_MIRRORS; m++) {
			uint64_t off = btk_super_offset(m);
			if (off + BTK_SUPER_SIZE > d->total_bytes)
				break;
			if ((ret = btk_trans_super_copy(t, i, m, copy)))
				break;
			if (!i && !m && t->w->erase_len)
				ret = write_primary_erasing(t->w, d->dev, copy);
			else
				ret = btk_dev_write(d->dev, copy, BTK_SUPER_SIZE, off);
		}
		if (!ret && i == 0)
			memcpy(fs->sb.dev_item, copy->dev_item, sizeof(copy->dev_item));
	}
	free(copy);
	return ret;
}

int btk_trans_writeback(struct btk_trans *t, uint64_t limit)
{
	int ret;

	if (t->w->dirtied < limit)
		return 0;
	/* queued reference changes become extent-tree blocks that can go out too */
	if ((ret = btk_run_refs(t)))
		return ret;
	t->w->dirtied = 0;
	return btk_cache_for_each_dirty(t->fs->cache, write_block, t);
}

static volatile sig_atomic_t commits;

unsigned long btk_trans_commits(void)
{
	return (unsigned long)commits;
}

/* The superblocks and their flush, with the signals of an interruption held: a handler runs
 * before the first superblock is written or after the flush, when commits counts this one. */
static int write_supers_held(struct btk_trans *t)
{
	sigset_t hold, old;
	int ret;

	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hold, &old);
	ret = write_supers(t);
	if (!ret)
		ret = flush_all(t->fs);
	if (!ret)
		commits = commits + 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

int btk_trans_commit(struct btk_trans *t)
{
	return btk_trans_commit_verify(t, NULL, NULL);
}

int btk_trans_commit_verify(struct btk_trans *t, btk_trans_verify_fn verify, void *ctx)
{
	struct btk_wfs *w = t->w;
	struct btk_fs *fs = t->fs;
	int ret;

	/* Nothing changed: writing superblocks of a new generation over trees of the old one
	 * would break the filesystem (the root tree's generation must match), so do nothing. */
	if (w->mods == t->mods_at_start && !w->nrefs && !w->nnew_chunks) {
		w->running = false;
		free(t);
		return 0;
	}
	ret = settle(t);
	if (!ret && w->settled_fn)
		ret = run_settled_hook(t);
	if (!ret)
		ret = prepare_super(t);
	if (!ret)
		ret = btk_cache_for_each_dirty(fs->cache, write_block, t);
	/* every block must be stable before any superblock points at it */
	if (!ret)
		ret = flush_all(fs);
	/* the new trees are on disk, reachable from no superblock yet: the caller may look */
	if (!ret && verify)
		ret = verify(ctx, t);
	if (!ret)
		ret = write_supers_held(t);
	if (ret) {
		w->broken = true;
		w->running = false;
		free(t);
		return ret;
	}
	btk_bg_unpin_all(w);
	w->nholds = 0;	      /* held device ranges are the committed filesystem's no more */
	w->snap_shared.n = 0; /* committed: sharing is now visible through generations */
	w->relocated.n = 0;
	fs->generation = t->transid;
	w->transid = t->transid + 1;
	w->running = false;
	free(t);
	return 0;
}

/* ---- small public helpers ---- */

int btk_tree_new(struct btk_trans *t, uint64_t objectid)
{
	return btk_tree_create(t, objectid, NULL);
}

struct btrfs_root_item *btk_tree_root_item(struct btk_trans *t, uint64_t objectid)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, objectid);

	if (!wr || !wr->in_root_tree)
		return NULL;
	wr->item_dirty = true;
	return (struct btrfs_root_item *)wr->item;
}

void btk_write_stats(const struct btk_wfs *w, struct btk_wstats *st)
{

	memset(st, 0, sizeof(*st));
	if (!w)
		return;
	st->bgs = (uint64_t)w->nbgs;
	for (int i = 0; i < w->nbgs; i++) {
		st->bg_used += w->bgs[i].used;
		for (size_t j = 0; j < w->bgs[i].pinned.n; j++)
			st->pinned_bytes += w->bgs[i].pinned.r[j].len;
		for (size_t j = 0; j < w->bgs[i].free.n; j++)
			st->free_bytes += w->bgs[i].free.r[j].len;
	}
}
