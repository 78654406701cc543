/* tree.c — validated tree-block reads with mirror fallback; search and iteration. */
#include "tree/tree.h"
#include "tree/cache.h"
#include "format/root_item.h"
#include "base/csum.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define HDR sizeof(struct btk_header)

#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), -EUCLEAN)

/* Reads the key of entry i (an item or a pointer: what) into *prev, after checking that it
 * sorts after the one *prev holds (entry i - 1). */
static int key_in_order(const struct btk_disk_key *dk, uint32_t i, const char *what,
			struct btk_key *prev, char *why, size_t whylen)
{
	struct btk_key k;

	btk_disk_to_key(dk, &k);
	if (i && btk_key_cmp(prev, &k) >= 0)
		return BAD("%s %u: key (%llu %u %llu) not after the previous key", what, i,
			   (unsigned long long)k.objectid, k.type, (unsigned long long)k.offset);
	*prev = k;
	return 0;
}

static int check_leaf(const uint8_t *data, uint32_t len, uint32_t n, bool lax, char *why,
		      size_t whylen)
{
	const struct btk_item *it = (const struct btk_item *)(data + HDR);
	uint32_t space = len - HDR, floor = n * sizeof(struct btk_item), end = space;
	struct btk_key prev = {0};
	int ret;

	if (n > space / sizeof(struct btk_item))
		return BAD("leaf claims %u items, more than fit", n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = btk_le32(it[i].offset), sz = btk_le32(it[i].size);

		if (off < floor || off > space || sz > space - off)
			return BAD("item %u: data [%u, +%u) outside the leaf data area", i, off,
				   sz);
		/* The kernel packs item data back to back from the leaf end; anything else is
		 * damage (a shifted offset would otherwise decode garbage). The safety-only mode
		 * leaves that to its caller: every item is still inside the leaf. */
		if (!lax && off + sz != end)
			return BAD("item %u: data ends at %u, expected %u", i, off + sz, end);
		end = off;
		if ((ret = key_in_order(&it[i].key, i, "item", &prev, why, whylen)))
			return ret;
	}
	return 0;
}

static int check_node(const struct btk_fs *fs, const uint8_t *data, uint32_t len, uint32_t n,
		      bool lax, char *why, size_t whylen)
{
	const struct btk_key_ptr *kp = (const struct btk_key_ptr *)(data + HDR);
	struct btk_key prev = {0};
	int ret;

	if (n == 0 || n > (len - HDR) / sizeof(struct btk_key_ptr))
		return BAD("node has an invalid item count %u", n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ptr = btk_le64(kp[i].blockptr);

		if (!ptr || (ptr % fs->sectorsize && !lax))
			return BAD("pointer %u: invalid child bytenr %llu", i,
				   (unsigned long long)ptr);
		if ((ret = key_in_order(&kp[i].key, i, "pointer", &prev, why, whylen)))
			return ret;
	}
	return 0;
}

int btk_block_check_raw(const struct btk_fs *fs, uint64_t bytenr, const uint8_t *data, char *why,
			size_t whylen)
{
	const struct btk_header *h = (const struct btk_header *)data;
	uint8_t sum[BTK_CSUM_MAX];
	uint32_t len = fs->nodesize, n = btk_le32(h->nritems);
	enum btk_read_mode mode = btk_cache_read_mode(fs->cache);
	bool lax = mode != BTK_READ_KERNEL;
	static const uint8_t zero[BTK_CSUM_MAX];

	btk_csum(fs->csum_type, data + BTK_CSUM_MAX, len - BTK_CSUM_MAX, sum);
	if (memcmp(sum, h->csum, (size_t)fs->csum_size) &&
	    (mode != BTK_READ_WIPED_CSUM || memcmp(h->csum, zero, BTK_CSUM_MAX)))
		return BAD("checksum mismatch");
	if (btk_le64(h->bytenr) != bytenr)
		return BAD("header bytenr %llu, expected %llu",
			   (unsigned long long)btk_le64(h->bytenr), (unsigned long long)bytenr);
	if (!btk_fs_fsid_known(fs, h->fsid))
		return BAD("fsid does not match the filesystem");
	if (h->level >= BTK_MAX_LEVEL)
		return BAD("level %u too high", h->level);
	return h->level ? check_node(fs, data, len, n, lax, why, whylen)
			: check_leaf(data, len, n, lax, why, whylen);
}

static __thread enum btk_block_fault last_fault;

enum btk_block_fault btk_block_last_fault(void)
{
	return last_fault;
}

#define FAULT(kind, ...) (last_fault = (kind), BAD(__VA_ARGS__))

static int check_expect(const struct btk_block *b, const struct btk_block_check *chk, char *why,
			size_t whylen)
{
	struct btk_key k;

	if (!chk)
		return 0;
	if (chk->level >= 0 && btk_block_level(b) != chk->level)
		return FAULT(BTK_BF_LEVEL, "level %d, expected %d", btk_block_level(b), chk->level);
	if ((chk->generation || chk->from_pointer) && btk_block_generation(b) != chk->generation)
		return FAULT(BTK_BF_GENERATION,
			     "generation %llu, expected %llu (parent transid mismatch)",
			     (unsigned long long)btk_block_generation(b),
			     (unsigned long long)chk->generation);
	if (chk->owner && btk_block_owner(b) != chk->owner)
		return FAULT(BTK_BF_OWNER, "owner %llu, expected %llu",
			     (unsigned long long)btk_block_owner(b),
			     (unsigned long long)chk->owner);
	if (chk->first_key && btk_block_nritems(b)) {
		btk_block_key(b, 0, &k);
		if (btk_key_cmp(&k, chk->first_key))
			return FAULT(
			    BTK_BF_FIRST_KEY,
			    "first key (%llu %u %llu), parent says (%llu %u %llu)",
			    (unsigned long long)k.objectid, k.type, (unsigned long long)k.offset,
			    (unsigned long long)chk->first_key->objectid, chk->first_key->type,
			    (unsigned long long)chk->first_key->offset);
	}
	return 0;
}

int btk_block_copy_check(const struct btk_fs *fs, uint64_t bytenr, const uint8_t *data,
			 const struct btk_block_check *chk, char *why, size_t whylen)
{
	struct btk_block b = {.bytenr = bytenr, .len = fs->nodesize, .data = (uint8_t *)data};

	return btk_block_check_raw(fs, bytenr, data, why, whylen)
		   ?: check_expect(&b, chk, why, whylen);
}

static int found_cached(struct btk_block *b, const struct btk_block_check *chk,
			struct btk_block **out)
{
	char why[200];

	if (check_expect(b, chk, why, sizeof(why))) {
		int ret =
		    btk_err(EUCLEAN, "tree block %llu: %s", (unsigned long long)b->bytenr, why);
		btk_block_put(b);
		return ret;
	}
	*out = b;
	return 0;
}

/* Read at an older root, the block at bytenr is not the one expected: a valid tree block
 * written after it (after the generation the parent pointer expects, else the root's) that
 * lies at or over bytenr (tree blocks are sector aligned: a newer one may overlap it) says it
 * was overwritten since, and by what; why is rewritten so. */
static void overwritten(struct btk_fs *fs, uint64_t bytenr, const struct btk_block_check *chk,
			char *why, size_t whylen)
{
	uint8_t *buf = malloc(fs->nodesize);
	char bad[200];
	uint64_t span = fs->nodesize - fs->sectorsize;
	uint64_t since = chk && chk->generation ? chk->generation : fs->generation;

	if (!buf)
		return;
	for (uint64_t at = bytenr > span ? bytenr - span : 0; at <= bytenr + span;
	     at += fs->sectorsize) {
		const struct btk_header *h = (const struct btk_header *)buf;
		if (btk_read_copy(fs, at, buf, fs->nodesize, 0) ||
		    btk_block_check_raw(fs, at, buf, bad, sizeof(bad)) ||
		    btk_le64(h->generation) <= since)
			continue;
		snprintf(why, whylen,
			 "overwritten since generation %llu: block %llu of tree %llu, written at "
			 "generation %llu, lies %s now",
			 (unsigned long long)since, (unsigned long long)at,
			 (unsigned long long)btk_le64(h->owner),
			 (unsigned long long)btk_le64(h->generation),
			 at == bytenr ? "there" : "over it");
		break;
	}
	free(buf);
}

int btk_block_read(struct btk_fs *fs, uint64_t bytenr, const struct btk_block_check *chk,
		   struct btk_block **out)
{
	struct btk_block *b;
	char why[200] = "no copy";
	int ret = 0, mirror;

	last_fault = BTK_BF_CONTENT;
	if (!bytenr || bytenr % fs->sectorsize)
		return btk_err(EUCLEAN, "tree block %llu: not aligned to sectorsize %u",
			       (unsigned long long)bytenr, fs->sectorsize);
	b = btk_cache_lookup(fs->cache, bytenr);
	if (b)
		return found_cached(b, chk, out);
	b = btk_cache_alloc_raw(fs->cache, bytenr, fs->nodesize);
	if (!b)
		return btk_err(ENOMEM, "out of memory reading tree block %llu",
			       (unsigned long long)bytenr);
	int bad_copy = 0; /* the last copy (1 first) that read bad, not merely missing */
	for (mirror = 0; mirror < BTK_MAX_COPIES; mirror++) {
		ret = btk_read_copy(fs, bytenr, b->data, fs->nodesize, mirror);
		if (ret == -ERANGE || ret == -ENOENT) {
			if (!mirror)
				last_fault = BTK_BF_IO;
			break;
		}
		if (ret) {
			last_fault = BTK_BF_IO;
			if (ret != -ENODEV) {
				snprintf(why, sizeof(why), "%s", btk_errmsg());
				bad_copy = mirror + 1;
			} else if (!bad_copy) {
				snprintf(why, sizeof(why), "%s", btk_errmsg());
			}
			continue;
		}
		last_fault = BTK_BF_CONTENT;
		if (btk_block_check_raw(fs, bytenr, b->data, why, sizeof(why)) ||
		    check_expect(b, chk, why, sizeof(why))) {
			bad_copy = mirror + 1;
			continue;
		}
		b->mirror = mirror;
		if (bad_copy) /* why is the last bad copy's; missing devices were told at the open
			       */
			btk_warn("tree block %llu: copy %d is bad (%s), copy %d used",
				 (unsigned long long)bytenr, bad_copy, why, mirror + 1);
		*out = b;
		return 0;
	}
	/* RAID6 with two data stripes of the row bad (no single rebuild reads): from P and Q,
	 * each other data stripe in turn taken as lost too */
	for (int k = 0; bad_copy; k++) {
		char why2[200];
		int r = btk_raid6_rebuild_pair(fs, bytenr, b->data, fs->nodesize, k);
		if (r == -EINVAL || r == -ERANGE) { /* not RAID6, or no other data stripe left */
			btk_err_clear();
			break;
		}
		if (r || btk_block_check_raw(fs, bytenr, b->data, why2, sizeof(why2)) ||
		    check_expect(b, chk, why2, sizeof(why2)))
			continue;
		btk_err_clear();
		b->mirror = 2; /* a rebuild: copy 3's place */
		last_fault = BTK_BF_CONTENT;
		btk_warn("tree block %llu: no copy reads (%s); rebuilt from P and Q, another data "
			 "stripe of its row taken as bad too",
			 (unsigned long long)bytenr, why);
		*out = b;
		return 0;
	}
	btk_cache_forget(fs->cache, bytenr);
	btk_block_put(b);
	if (ret == -ENOENT && mirror == 0)
		return btk_err(ENOENT, "tree block %llu: no chunk maps this address",
			       (unsigned long long)bytenr);
	if (last_fault != BTK_BF_IO && btk_cache_older(fs->cache))
		overwritten(fs, bytenr, chk, why, sizeof(why));
	return btk_err(EUCLEAN, "tree block %llu: %s", (unsigned long long)bytenr, why);
}

uint64_t btk_block_used(const struct btk_block *b)
{
	uint32_t nr = btk_block_nritems(b);
	uint64_t used;

	if (btk_block_level(b))
		return (uint64_t)nr * sizeof(struct btk_key_ptr);
	used = (uint64_t)nr * sizeof(struct btk_item);
	for (uint32_t i = 0; i < nr; i++)
		used += btk_leaf_size(b, (int)i);
	return used;
}

int btk_block_free_space(const struct btk_block *b, uint32_t nodesize)
{
	uint32_t nr = btk_block_nritems(b), space = btk_block_space(nodesize);
	uint32_t lowest = space;

	if (btk_block_level(b))
		return (int)((uint32_t)(space / sizeof(struct btk_key_ptr)) - nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t off = btk_leaf_offset(b, (int)i);
		lowest = off < lowest ? off : lowest;
	}
	return (int)lowest - (int)(nr * sizeof(struct btk_item));
}

/* ---- roots ---- */

int btk_root_from_item(uint64_t objectid, uint64_t key_offset, const uint8_t *data, uint32_t size,
		       struct btk_root *r)
{
	struct btk_root_item ri;

	memset(r, 0, sizeof(*r));
	r->objectid = objectid;
	r->key_offset = key_offset;
	if (btk_root_item_parse(data, size, &ri))
		return btk_err(EUCLEAN, "root item of tree %llu (%u bytes) is malformed",
			       (unsigned long long)objectid, size);
	r->bytenr = ri.bytenr;
	r->generation = ri.generation;
	r->level = ri.level;
	return 0;
}

static void super_root(const struct btk_fs *fs, uint64_t id, struct btk_root *r)
{
	memset(r, 0, sizeof(*r));
	r->objectid = id;
	if (id == BTRFS_ROOT_TREE_OBJECTID) {
		r->bytenr = btk_le64(fs->sb.root);
		r->level = fs->sb.root_level;
		r->generation = btk_le64(fs->sb.generation);
	} else if (id == BTRFS_CHUNK_TREE_OBJECTID) {
		r->bytenr = btk_le64(fs->sb.chunk_root);
		r->level = fs->sb.chunk_root_level;
		r->generation = btk_le64(fs->sb.chunk_root_generation);
	} else {
		r->bytenr = btk_le64(fs->sb.log_root);
		r->level = fs->sb.log_root_level;
		r->generation = btk_le64(fs->sb.generation) + 1;
	}
}

int btk_root_find(struct btk_fs *fs, uint64_t objectid, struct btk_root *out)
{
	struct btk_root rt;

	if (objectid == BTRFS_ROOT_TREE_OBJECTID || objectid == BTRFS_CHUNK_TREE_OBJECTID ||
	    objectid == BTRFS_TREE_LOG_OBJECTID) {
		super_root(fs, objectid, out);
		if (!out->bytenr)
			return btk_err(ENOENT, "no log tree");
		return 0;
	}
	if (btk_cache_get_root(fs->cache, objectid, out))
		return 0;
	super_root(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	return btk_root_find_in(fs, &rt, objectid, out);
}

int btk_root_find_in(struct btk_fs *fs, const struct btk_root *rt, uint64_t objectid,
		     struct btk_root *out)
{
	struct btk_path p;
	struct btk_key k = {objectid, BTRFS_ROOT_ITEM_KEY, (uint64_t)-1};
	const uint8_t *data;
	uint32_t size;
	int ret;

	btk_path_init(&p);
	ret = btk_search(fs, rt, &k, &p);
	if (ret >= 0)
		ret = btk_prev(fs, &p);
	if (ret == 0) {
		btk_path_key(&p, &k);
		if (k.objectid != objectid || k.type != BTRFS_ROOT_ITEM_KEY)
			ret = 1;
	}
	if (ret == 0) {
		data = btk_path_data(&p, &size);
		if (btk_root_from_item(objectid, k.offset, data, size, out) ||
		    out->level >= BTK_MAX_LEVEL)
			ret = btk_err(EUCLEAN, "root item of tree %llu is damaged",
				      (unsigned long long)objectid);
	}
	btk_path_release(&p);
	if (ret == 1)
		return btk_err(ENOENT, "tree %llu not found in the root tree",
			       (unsigned long long)objectid);
	return ret;
}

/* ---- search and iteration ---- */

void btk_path_release(struct btk_path *p)
{
	for (int i = 0; i < BTK_MAX_LEVEL; i++) {
		btk_block_put(p->nodes[i]);
		p->nodes[i] = NULL;
		p->slots[i] = 0;
	}
}

static void set_node(struct btk_path *p, int level, struct btk_block *b, int slot)
{
	btk_block_put(p->nodes[level]);
	p->nodes[level] = b;
	p->slots[level] = slot;
}

/* Reads child `slot` of the node at `level` of the path, checked against its pointer. */
static int read_child(struct btk_fs *fs, const struct btk_block *parent, int slot,
		      struct btk_block **out)
{
	struct btk_key k;
	struct btk_block_check chk;

	btk_child_check(parent, slot, &k, &chk);
	return btk_block_read(fs, btk_node_blockptr(parent, slot), &chk, out);
}

void btk_child_check(const struct btk_block *parent, int slot, struct btk_key *key,
		     struct btk_block_check *out)
{
	btk_node_key(parent, slot, key);
	*out = (struct btk_block_check){.level = btk_block_level(parent) - 1,
					.generation = btk_node_gen(parent, slot),
					.first_key = key,
					.from_pointer = true};
}

int btk_block_search(const struct btk_block *b, const struct btk_key *key, int *exact)
{
	int lo = 0, hi = (int)btk_block_nritems(b), leaf = btk_block_level(b) == 0;
	struct btk_key k;

	*exact = 0;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c;
		if (leaf)
			btk_leaf_key(b, mid, &k);
		else
			btk_node_key(b, mid, &k);
		c = btk_key_cmp(&k, key);
		if (c == 0) {
			*exact = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int btk_search(struct btk_fs *fs, const struct btk_root *root, const struct btk_key *key,
	       struct btk_path *p)
{
	struct btk_block_check chk = {.level = root->level, .generation = root->generation};
	struct btk_block *b;
	int ret, exact, slot;

	btk_path_release(p);
	ret = btk_block_read(fs, root->bytenr, &chk, &b);
	if (ret)
		return ret;
	for (;;) {
		int level = btk_block_level(b);

		slot = btk_block_search(b, key, &exact);
		if (level == 0) {
			set_node(p, 0, b, slot);
			return exact ? 0 : 1;
		}
		if (!exact && slot > 0)
			slot--;
		set_node(p, level, b, slot);
		ret = read_child(fs, b, slot, &b);
		if (ret)
			return ret;
	}
}

/* Moves the path to the first item of the next non-empty leaf. 0, 1 at the end, or error. */
static int next_leaf(struct btk_fs *fs, struct btk_path *p)
{
	int level = 1;
	struct btk_block *b;

	for (;;) {
		while (level < BTK_MAX_LEVEL &&
		       (!p->nodes[level] ||
			p->slots[level] + 1 >= (int)btk_block_nritems(p->nodes[level])))
			level++;
		if (level >= BTK_MAX_LEVEL)
			return 1;
		p->slots[level]++;
		bool skipped = false;
		while (level > 0) {
			int ret = read_child(fs, p->nodes[level], p->slots[level], &b);
			if (ret && ret != -ENOMEM && btk_cache_skip_one(fs->cache)) {
				skipped = true; /* salvage: on with the next slot of this node */
				break;
			}
			if (ret)
				return ret;
			set_node(p, --level, b, 0);
		}
		if (skipped)
			continue;
		if (btk_block_nritems(p->nodes[0]))
			return 0;
		level = 1; /* an empty leaf below a node is damage; step over it */
	}
}

static int prev_leaf(struct btk_fs *fs, struct btk_path *p)
{
	int level = 1;
	struct btk_block *b;

	for (;;) {
		while (level < BTK_MAX_LEVEL && (!p->nodes[level] || p->slots[level] == 0))
			level++;
		if (level >= BTK_MAX_LEVEL)
			return 1;
		p->slots[level]--;
		while (level > 0) {
			int ret = read_child(fs, p->nodes[level], p->slots[level], &b);
			if (ret)
				return ret;
			level--;
			set_node(p, level, b, (int)btk_block_nritems(b) - 1);
		}
		if (btk_block_nritems(p->nodes[0]))
			return 0;
		level = 1;
	}
}

int btk_next(struct btk_fs *fs, struct btk_path *p)
{
	if (!p->nodes[0])
		return 1;
	if (p->slots[0] + 1 < (int)btk_block_nritems(p->nodes[0])) {
		p->slots[0]++;
		return 0;
	}
	return next_leaf(fs, p);
}

int btk_prev(struct btk_fs *fs, struct btk_path *p)
{
	if (!p->nodes[0])
		return 1;
	if (p->slots[0] > 0) {
		if (p->slots[0] > (int)btk_block_nritems(p->nodes[0]))
			p->slots[0] = (int)btk_block_nritems(p->nodes[0]);
		p->slots[0]--;
		return p->slots[0] >= 0 ? 0 : prev_leaf(fs, p);
	}
	return prev_leaf(fs, p);
}

int btk_search_ge(struct btk_fs *fs, const struct btk_root *root, const struct btk_key *key,
		  struct btk_path *p)
{
	int ret = btk_search(fs, root, key, p);

	/* salvage: the block where key would be does not read; the next one that does */
	if (ret < 0 && ret != -ENOMEM && p->nodes[1] && btk_cache_skip_one(fs->cache))
		return next_leaf(fs, p);
	if (ret <= 0)
		return ret;
	if (p->slots[0] < (int)btk_block_nritems(p->nodes[0]))
		return 0;
	return next_leaf(fs, p);
}

void btk_items_start(struct btk_items *it, struct btk_fs *fs, const struct btk_root *root,
		     const struct btk_key *from)
{
	*it = (struct btk_items){.fs = fs, .root = *root};
	if (from)
		it->key = *from;
}

bool btk_items_next(struct btk_items *it)
{
	if (it->ret)
		return false;
	it->ret = it->started ? btk_next(it->fs, &it->path)
			      : btk_search_ge(it->fs, &it->root, &it->key, &it->path);
	it->started = true;
	if (it->ret)
		return false;
	it->data = btk_path_item(&it->path, &it->key, &it->size);
	return true;
}

int btk_items_end(struct btk_items *it, int ret)
{
	btk_path_release(&it->path);
	return ret ? ret : it->ret < 0 ? it->ret : 0;
}
