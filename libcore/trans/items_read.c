/* items_read.c — reading items as the running transaction sees them (its own changes
 * included), without copying anything for writing. */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <string.h>

/* Copies the item the path points at out to the caller. */
static void take(const struct btk_path *p, struct btk_key *key, void *buf, uint32_t cap,
		 uint32_t *size)
{
	uint32_t sz = btk_leaf_size(p->nodes[0], p->slots[0]);

	btk_leaf_key(p->nodes[0], p->slots[0], key);
	if (buf && cap)
		memcpy(buf, btk_leaf_data(p->nodes[0], p->slots[0]), sz < cap ? sz : cap);
	if (size)
		*size = sz;
}

int btk_item_next(struct btk_trans *t, uint64_t tree, struct btk_key *key, void *buf, uint32_t cap,
		  uint32_t *size)
{
	struct btk_path p;
	int ret = btk_tree_search_cur(t->w, tree, key, &p);

	if (ret == 1 && p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		p.slots[0]--; /* btk_wpath_next steps past it to the next leaf */
		ret = btk_wpath_next(t->fs, &p);
	} else if (ret == 1) {
		ret = 0;
	}
	if (ret == 0)
		take(&p, key, buf, cap, size);
	btk_wpath_release(&p);
	return ret;
}

int btk_item_prev(struct btk_trans *t, uint64_t tree, struct btk_key *key, void *buf, uint32_t cap,
		  uint32_t *size)
{
	struct btk_path p;
	int ret = btk_tree_search_cur(t->w, tree, key, &p);

	if (ret == 1)
		ret = btk_wpath_prev(t->fs, &p);
	if (ret == 0)
		take(&p, key, buf, cap, size);
	btk_wpath_release(&p);
	return ret;
}
