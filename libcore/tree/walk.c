/* walk.c — whole-tree walks and the list of every tree of a filesystem. */
#include "tree/tree.h"
#include "base/error.h"
#include "base/u64set.h"

#include <errno.h>
#include <stdlib.h>

static int cmp_phys(const void *a, const void *b)
{
	const struct btk_phys *x = a, *y = b;

	return btk_cmp_u64((uintptr_t)x->dev, (uintptr_t)y->dev)
		   ?: btk_cmp_u64(x->physical, y->physical);
}

/* Asks the kernel to start reading every child of a level-1 node, in as few calls as the
 * layout allows (children written together lie together): leaves are then read from the page
 * cache in one sweep instead of one synchronous read each. */
static void prefetch_children(struct btk_fs *fs, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b), m = 0;
	struct btk_phys *v = malloc(n * sizeof(*v));

	if (!v)
		return;
	for (uint32_t i = 0; i < n; i++) {
		int cnt;
		if (!btk_map_logical(fs, btk_node_blockptr(b, (int)i), &v[m], 1, &cnt, NULL) &&
		    cnt && v[m].dev)
			m++;
	}
	qsort(v, m, sizeof(*v), cmp_phys);
	for (uint32_t i = 0; i < m;) {
		uint32_t j = i + 1;
		uint64_t end = v[i].physical + fs->nodesize;
		while (j < m && v[j].dev == v[i].dev && v[j].physical <= end + fs->nodesize &&
		       v[j].physical >= v[i].physical) {
			if (v[j].physical + fs->nodesize > end)
				end = v[j].physical + fs->nodesize;
			j++;
		}
		btk_dev_prefetch(v[i].dev, v[i].physical, end - v[i].physical);
		i = j;
	}
	free(v);
}

static int visit(const struct btk_walk_ops *ops, void *ctx, struct btk_fs *fs,
		 const struct btk_block *b, const struct btk_block_check *chk, int depth)
{
	if (ops->checked)
		return ops->checked(ctx, fs, b, chk, depth);
	return ops->block ? ops->block(ctx, fs, b, depth) : 0;
}

struct frame {
	struct btk_block *b;
	int next;
};

static int child_error(const struct btk_walk_ops *ops, void *ctx, uint64_t bytenr, int level,
		       int err)
{
	if (!ops->on_error)
		return err;
	return ops->on_error(ctx, bytenr, level, err, btk_errmsg());
}

int btk_tree_walk(struct btk_fs *fs, const struct btk_root *root, const struct btk_walk_ops *ops,
		  void *ctx)
{
	struct btk_block_check chk = {.level = root->level, .generation = root->generation};
	struct frame st[BTK_MAX_LEVEL];
	/* legitimate trees never reach a block twice; remembering the blocks bounds the walk on
	 * crafted images that try */
	struct btk_u64set seen = {0};
	struct btk_block *b;
	int depth = 0, ret;

	ret = btk_block_read(fs, root->bytenr, &chk, &b);
	if (ret)
		return child_error(ops, ctx, root->bytenr, root->level, ret);
	btk_u64set_add(&seen, b->bytenr);
	ret = visit(ops, ctx, fs, b, &chk, 0);
	if (ret == BTK_WALK_SKIP || btk_block_level(b) == 0 || ret) {
		btk_block_put(b);
		btk_u64set_free(&seen);
		return ret == BTK_WALK_SKIP ? 0 : ret;
	}
	st[0] = (struct frame){b, 0};
	if (btk_block_level(b) == 1)
		prefetch_children(fs, b);
	while (depth >= 0 && !ret) {
		struct frame *f = &st[depth];
		if (f->next >= (int)btk_block_nritems(f->b)) {
			btk_block_put(f->b);
			depth--;
			continue;
		}
		int slot = f->next++;
		uint64_t ptr = btk_node_blockptr(f->b, slot);
		struct btk_key k;
		struct btk_block_check cc;
		btk_child_check(f->b, slot, &k, &cc);
		int added = btk_u64set_add(&seen, ptr);
		if (added <= 0) {
			ret = added < 0 ? added
					: child_error(ops, ctx, ptr, cc.level,
						      btk_err(EUCLEAN,
							      "tree %llu: block %llu reached twice",
							      (unsigned long long)root->objectid,
							      (unsigned long long)ptr));
			continue;
		}
		ret = btk_block_read(fs, ptr, &cc, &b);
		if (ret) {
			ret = child_error(ops, ctx, ptr, cc.level, ret);
			continue;
		}
		ret = visit(ops, ctx, fs, b, &cc, depth + 1);
		if (ret == BTK_WALK_SKIP || btk_block_level(b) == 0 || ret) {
			btk_block_put(b);
			if (ret == BTK_WALK_SKIP)
				ret = 0;
			continue;
		}
		if (btk_block_level(b) == 1)
			prefetch_children(fs, b);
		st[++depth] = (struct frame){b, 0};
	}
	while (depth >= 0)
		btk_block_put(st[depth--].b);
	btk_u64set_free(&seen);
	return ret;
}

int btk_for_each_root(struct btk_fs *fs, int (*fn)(void *ctx, const struct btk_root *root),
		      void *ctx)
{
	struct btk_root r, rt;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	int ret;

	if ((ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)) || (ret = fn(ctx, &rt)))
		return ret;
	if ((ret = btk_root_find(fs, BTRFS_CHUNK_TREE_OBJECTID, &r)) || (ret = fn(ctx, &r)))
		return ret;
	btk_items_start(&it, fs, &rt, &(struct btk_key){0, BTRFS_ROOT_ITEM_KEY, 0});
	while (btk_items_next(&it)) {
		if (k->type != BTRFS_ROOT_ITEM_KEY)
			continue;
		if (btk_root_from_item(k->objectid, k->offset, it.data, it.size, &r)) {
			btk_warn("root item (%llu ROOT_ITEM %llu) too short: %u bytes",
				 (unsigned long long)k->objectid, (unsigned long long)k->offset,
				 it.size);
			continue;
		}
		if ((ret = fn(ctx, &r)))
			break;
	}
	if ((ret = btk_items_end(&it, ret)))
		return ret;
	if (btk_root_find(fs, BTRFS_TREE_LOG_OBJECTID, &r) == 0)
		return fn(ctx, &r);
	btk_err_clear();
	return 0;
}
