/* check_roots.c — the root tree: root items, root refs and backrefs, orphaned roots. */
#include "check/check_priv.h"
#include "format/dir_item.h"
#include "format/inode_item.h"
#include "format/root_item.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void root_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		      uint64_t leaf)
{
	struct btk_root_item ri;

	if (btk_root_item_parse(p, sz, &ri)) {
		chk_rep(c, CHK_M_ROOT_ITEM_SIZE, 1, leaf, k, CHK_U(sz));
		return;
	}
	const struct chk_rootitem *prev = c->roots.n ? btk_vec_at(&c->roots, c->roots.n - 1) : NULL;
	if (prev &&
	    (prev->id > k->objectid || (prev->id == k->objectid && prev->offset >= k->offset)))
		c->roots_unsorted = true;
	struct chk_rootitem *r = chk_push(c, &c->roots);
	if (!r)
		return;
	r->id = k->objectid;
	r->offset = k->offset;
	r->bytenr = ri.bytenr;
	r->gen = ri.generation;
	r->flags = ri.flags;
	r->refs = ri.refs;
	r->dirid = ri.root_dirid;
	r->last_snapshot = ri.last_snapshot;
	r->level = ri.level;
	r->dropping = ri.drop_progress.objectid != 0 || ri.drop_level != 0;
	if (r->dropping && !btk_root_can_drop(k->objectid)) {
		/* only a subvolume or relocation tree is ever deleted: every item of this one
		 * counts */
		chk_rep(c, CHK_M_ROOT_DROP, 1, leaf, k, CHK_U(r->id),
			CHK_U(ri.drop_progress.objectid), CHK_U(ri.drop_level));
		r->dropping = false;
	}
	r->drop_key = r->dropping ? ri.drop_progress : (struct btk_key){0, 0, 0};
	r->drop_level = r->dropping ? ri.drop_level : 0;
	memcpy(r->uuid, ri.uuid, BTK_UUID_SIZE);
	memcpy(r->received_uuid, ri.received_uuid, BTK_UUID_SIZE);
	if (r->gen == 0 || r->gen > c->max_gen)
		chk_rep(c, CHK_M_ROOT_GENERATION, 1, leaf, k, CHK_U(r->id), CHK_U(c->max_gen),
			CHK_U(r->gen));
	if (r->level >= BTK_MAX_LEVEL)
		chk_rep(c, CHK_M_ROOT_LEVEL, 1, leaf, k, CHK_U(r->id), CHK_I(BTK_MAX_LEVEL),
			CHK_U(r->level));
}

void chk_rootref_push(struct chk *c, uint64_t parent, uint64_t child, uint64_t dirid, uint64_t seq,
		      const uint8_t *name, size_t len, uint8_t kind)
{
	struct chk_rootref *r = chk_push(c, &c->rootrefs);

	if (!r)
		return;
	*r = (struct chk_rootref){parent, child, dirid, seq, chk_name_hash64(name, len), kind};
	chk_rec_rootref(c, r); /* a subvolume tree's dir entry (check_record.c) */
}

static void root_ref(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		     uint64_t leaf)
{
	struct btk_root_ref_ent e;

	if (btk_root_ref_parse(p, sz, &e)) {
		chk_rep(c, CHK_M_ROOT_REF_SIZE, 1, leaf, k, CHK_U(sz));
		return;
	}
	bool fwd = k->type == BTRFS_ROOT_REF_KEY;
	chk_rootref_push(c, fwd ? k->objectid : k->offset, fwd ? k->offset : k->objectid, e.dirid,
			 e.sequence, (const uint8_t *)e.name, e.name_len, fwd ? 0 : 1);
}

void chk_root_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, 0, it) {
		struct btk_inode_info ii;
		if (it.k.type == BTRFS_ROOT_ITEM_KEY) {
			root_item(c, &it.k, it.p, it.sz, b->bytenr);
		} else if (it.k.type == BTRFS_ROOT_REF_KEY || it.k.type == BTRFS_ROOT_BACKREF_KEY) {
			root_ref(c, &it.k, it.p, it.sz, b->bytenr);
		} else if (it.k.type == BTRFS_INODE_ITEM_KEY &&
			   it.k.objectid >= BTRFS_FIRST_FREE_OBJECTID &&
			   !btk_inode_item_parse(it.p, it.sz, &ii)) {
			/* v1 space cache inodes: regular files, mode 0600, as the kernel makes them
			 */
			if (ii.mode != (S_IFREG | 0600))
				chk_rep(c, CHK_M_CACHE_MODE, 1, b->bytenr, &it.k, CHK_U(ii.mode));
		}
		chk_v1_root_item(c, &it.k, it.p,
				 it.sz); /* v1 space cache headers, inodes, extents */
		if (it.k.type == BTRFS_ORPHAN_ITEM_KEY && it.k.objectid == BTRFS_ORPHAN_OBJECTID) {
			uint64_t *o = chk_push(c, &c->root_orphans);
			if (o)
				*o = it.k.offset;
		}
	}
}

static int rr_cmp(const void *pa, const void *pb)
{
	const struct chk_rootref *a = pa, *b = pb;
	return btk_cmp_u64(a->parent, b->parent) ?: btk_cmp_u64(a->child, b->child)
		   ?: ((int)a->kind - (int)b->kind);
}

/* The final passes look root items, back references and uuid entries up many times (per
 * subvolume: thousands of snapshots made them quadratic): sorted views built once. A view
 * that could not be allocated is NULL, and its lookups scan as before. */
struct id_pos {
	uint64_t id;
	size_t pos; /* in c->roots: equal ids keep their order, the first is found first */
};

struct views {
	struct id_pos *roots;
	const struct chk_uuid **uuids; /* subvolume entries, by (subvolume, uuid) */
	size_t nuuids;
	struct btk_u64set linked; /* children of a ROOT_BACKREF */
	bool have_linked;
};

static uint64_t id_pos_key(const void *p)
{
	return ((const struct id_pos *)p)->id;
}

static int id_pos_cmp(const void *a, const void *b)
{
	const struct id_pos *x = a, *y = b;

	return btk_cmp_u64(x->id, y->id) ?: btk_cmp_u64(x->pos, y->pos);
}

static int uuid_entry_cmp(const void *a, const void *b)
{
	const struct chk_uuid *x = *(const struct chk_uuid *const *)a;
	const struct chk_uuid *y = *(const struct chk_uuid *const *)b;

	return btk_cmp_u64(x->subvol, y->subvol) ?: (memcmp(x->uuid, y->uuid, BTK_UUID_SIZE));
}

static void views_build(struct chk *c, struct views *v)
{
	memset(v, 0, sizeof(*v));
	v->roots = c->roots.n ? malloc(c->roots.n * sizeof(*v->roots)) : NULL;
	if (v->roots) {
		for (size_t i = 0; i < c->roots.n; i++)
			v->roots[i] = (struct id_pos){btk_vec_at(&c->roots, i)->id, i};
		qsort(v->roots, c->roots.n, sizeof(*v->roots), id_pos_cmp);
	}
	v->uuids = c->uuids.n ? malloc(c->uuids.n * sizeof(*v->uuids)) : NULL;
	for (size_t i = 0; v->uuids && i < c->uuids.n; i++)
		if (btk_vec_at(&c->uuids, i)->type == BTRFS_UUID_KEY_SUBVOL)
			v->uuids[v->nuuids++] = btk_vec_at(&c->uuids, i);
	if (v->uuids)
		qsort(v->uuids, v->nuuids, sizeof(*v->uuids), uuid_entry_cmp);
	v->have_linked = true;
	for (size_t i = 0; i < c->rootrefs.n && v->have_linked; i++) {
		const struct chk_rootref *rr = btk_vec_at(&c->rootrefs, i);
		if (rr->kind == 1 && btk_u64set_add(&v->linked, rr->child) < 0)
			v->have_linked = false;
	}
}

static void views_free(struct views *v)
{
	free(v->roots);
	free(v->uuids);
	btk_u64set_free(&v->linked);
}

static const struct chk_rootitem *root_find(const struct chk *c, const struct views *v, uint64_t id)
{
	if (!v->roots) {
		for (size_t i = 0; i < c->roots.n; i++) {
			const struct chk_rootitem *r = btk_vec_at(&c->roots, i);
			if (r->id == id)
				return r;
		}
		return NULL;
	}
	/* the first of the root items of id: one past the last below it */
	long below =
	    id ? btk_vec_floor_(v->roots, c->roots.n, sizeof(*v->roots), id - 1, id_pos_key) : -1;
	size_t lo = (size_t)(below + 1);
	return lo < c->roots.n && v->roots[lo].id == id ? btk_vec_at(&c->roots, v->roots[lo].pos)
							: NULL;
}

static bool root_linked(const struct chk *c, const struct views *v, uint64_t id)
{
	if (v->have_linked)
		return btk_u64set_has(&v->linked, id);
	for (size_t j = 0; j < c->rootrefs.n; j++) {
		const struct chk_rootref *rr = btk_vec_at(&c->rootrefs, j);
		if (rr->child == id && rr->kind == 1)
			return true;
	}
	return false;
}

/* Whether the uuid tree has the subvolume entry (uuid -> id). */
static bool uuid_listed(const struct chk *c, const struct views *v, uint64_t id,
			const uint8_t *uuid)
{
	if (!v->uuids) {
		for (size_t j = 0; j < c->uuids.n; j++) {
			const struct chk_uuid *u = btk_vec_at(&c->uuids, j);
			if (u->subvol == id && u->type == BTRFS_UUID_KEY_SUBVOL &&
			    !memcmp(u->uuid, uuid, BTK_UUID_SIZE))
				return true;
		}
		return false;
	}
	struct chk_uuid want = {.subvol = id};
	const struct chk_uuid *key = &want;
	memcpy(want.uuid, uuid, BTK_UUID_SIZE);
	return v->nuuids &&
	       bsearch(&key, v->uuids, v->nuuids, sizeof(*v->uuids), uuid_entry_cmp) != NULL;
}

/* One (parent, child) pair: the ROOT_REF, the ROOT_BACKREF and the dir entries in the parent. */
static void ref_group(struct chk *c, const struct views *v, const struct chk_rootref *g, size_t n)
{
	const struct chk_rootref *by[4] = {0};
	struct btk_key k = {g->parent, BTRFS_ROOT_REF_KEY, g->child};

	for (size_t i = 0; i < n; i++)
		by[g[i].kind] = &g[i];
	if (!by[0] && !by[1])
		return; /* a snapshot's copy of a dir entry to a nested subvolume: legal */
	if (!by[0] || !by[1]) {
		chk_rep(c, by[0] ? CHK_M_ROOT_BACKREF_MISSING : CHK_M_ROOT_REF_MISSING, 1, 0, &k,
			CHK_U(g->child), CHK_U(g->parent));
		return;
	}
	if (by[0]->dirid != by[1]->dirid || by[0]->seq != by[1]->seq || by[0]->hash != by[1]->hash)
		chk_rep(c, CHK_M_ROOT_BACKREF, 1, 0, &k, CHK_U(g->child), CHK_U(by[0]->dirid),
			CHK_U(by[0]->seq), CHK_U(by[1]->dirid), CHK_U(by[1]->seq));
	if (!root_find(c, v, g->child))
		chk_rep(c, CHK_M_ROOT_REF_DANGLING, 1, 0, &k, CHK_U(g->child));
	const struct chk_rootitem *pr = root_find(c, v, g->parent);
	if (!pr || pr->dropping)
		return; /* the parent's dir entries were not collected */
	/* a parent may hold other entries leading to the child: placeholders its snapshot kept
	 * (a subvolume moved into a snapshot of its old parent); one entry of each kind must be
	 * the one the ROOT_REF names */
	for (int kind = 2; kind <= 3; kind++) {
		const struct chk_rootref *d = by[kind];
		for (size_t i = 0; i < n; i++)
			if (g[i].kind == kind && g[i].dirid == by[0]->dirid &&
			    g[i].hash == by[0]->hash && (kind == 2 || g[i].seq == by[0]->seq))
				d = &g[i];
		if (!d || d->dirid != by[0]->dirid || d->hash != by[0]->hash ||
		    (kind == 3 && d->seq != by[0]->seq))
			chk_rep(
			    c,
			    kind == 2
				? (d ? CHK_M_ROOT_DIR_ITEM_DIFFERS : CHK_M_ROOT_DIR_ITEM_MISSING)
				: (d ? CHK_M_ROOT_DIR_INDEX_DIFFERS : CHK_M_ROOT_DIR_INDEX_MISSING),
			    g->parent, 0, &k, CHK_U(g->child), CHK_U(g->parent),
			    CHK_U(by[0]->dirid));
	}
}

static void uuids_final(struct chk *c, const struct views *v);

void chk_roots_final(struct chk *c)
{
	struct views v;
	size_t i = 0;

	views_build(c, &v);
	uuids_final(c, &v);
	btk_vec_sort(&c->rootrefs, rr_cmp);
	while (i < c->rootrefs.n) {
		const struct chk_rootref *g = btk_vec_at(&c->rootrefs, i);
		size_t j = i + 1;
		while (j < c->rootrefs.n) {
			const struct chk_rootref *h = btk_vec_at(&c->rootrefs, j);
			if (h->parent != g->parent || h->child != g->child)
				break;
			j++;
		}
		ref_group(c, &v, g, j - i);
		i = j;
	}
	btk_vec_sort(&c->root_orphans, btk_u64_order);
	for (i = 0; i < c->roots.n; i++) {
		const struct chk_rootitem *r = btk_vec_at(&c->roots, i);
		struct btk_key k = {r->id, BTRFS_ROOT_ITEM_KEY, r->offset};
		/* every subvolume's top directory is inode 256 (the data reloc tree's too, but old
		 * tools left its root_dirid 0) */
		if ((r->id == BTRFS_FS_TREE_OBJECTID || r->id >= BTRFS_FIRST_FREE_OBJECTID) &&
		    r->id <= BTRFS_LAST_FREE_OBJECTID && r->dirid != BTRFS_FIRST_FREE_OBJECTID)
			chk_rep(c, CHK_M_ROOT_DIRID, 1, 0, &k, CHK_U(r->id), CHK_U(r->dirid));
		if (r->id == BTRFS_FS_TREE_OBJECTID && r->refs == 0)
			chk_rep(c, CHK_M_ROOT_REFS, 1, 0, &k, CHK_U(r->id));
		if (r->id < BTRFS_FIRST_FREE_OBJECTID || r->id > BTRFS_LAST_FREE_OBJECTID)
			continue;
		/* refs 0 is a deleted subvolume, which has no link left: one still linked (its
		 * root ref and dir entry in place) is a live subvolume whose count went wrong, and
		 * an orphan item would have the kernel drop it */
		if (r->refs == 0 && root_linked(c, &v, r->id)) {
			chk_rep(c, CHK_M_ROOT_REFS, 1, 0, &k, CHK_U(r->id));
			continue;
		}
		if (r->refs == 0 &&
		    (!c->root_orphans.n || !bsearch(&r->id, c->root_orphans.data, c->root_orphans.n,
						    sizeof(uint64_t), btk_u64_order)))
			chk_rep(c, CHK_M_ROOT_NO_ORPHAN, 1, 0, &k, CHK_U(r->id));
		if (r->refs == 0)
			continue;
		if (!root_linked(c, &v, r->id))
			chk_rep(c, CHK_M_ROOT_UNLINKED, 1, 0, &k, CHK_U(r->id));
	}
	views_free(&v);
}

void chk_uuid_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, 0, it) {
		/* old mkfs versions gave the uuid tree an inode item and ref: harmless */
		if (it.k.type != BTRFS_UUID_KEY_SUBVOL &&
		    it.k.type != BTRFS_UUID_KEY_RECEIVED_SUBVOL)
			continue;
		if (it.sz % 8) {
			chk_rep(c, CHK_M_UUID_SIZE, BTRFS_UUID_TREE_OBJECTID, b->bytenr, &it.k,
				CHK_U(it.sz));
			continue;
		}
		for (uint32_t o = 0; o < it.sz; o += 8) {
			struct chk_uuid *u = chk_push(c, &c->uuids);
			if (!u)
				return;
			btk_put64(u->uuid, it.k.objectid);
			btk_put64(u->uuid + 8, it.k.offset);
			u->subvol = btk_le64(it.p + o);
			u->type = it.k.type;
		}
	}
}

/* Every uuid tree entry names a live subvolume with that uuid (or received uuid); when the
 * uuid tree is current, every subvolume with a uuid has its entry. */
static void uuids_final(struct chk *c, const struct views *v)
{
	static const uint8_t zero[BTK_UUID_SIZE];
	bool current = btk_le64(c->fs->sb.uuid_tree_generation) == c->fs->generation;

	for (size_t i = 0; i < c->uuids.n; i++) {
		const struct chk_uuid *u = btk_vec_at(&c->uuids, i);
		const struct chk_rootitem *r = root_find(c, v, u->subvol);
		const uint8_t *want = !r				 ? NULL
				      : u->type == BTRFS_UUID_KEY_SUBVOL ? r->uuid
									 : r->received_uuid;
		if (r && r->refs == 0)
			continue; /* deleted: the kernel removes its entries when it drops it */
		if (want && !memcmp(want, u->uuid, BTK_UUID_SIZE))
			continue;
		if (r)
			chk_rep(c, CHK_M_UUID_STALE, BTRFS_UUID_TREE_OBJECTID, 0, NULL,
				CHK_U(u->subvol), CHK_UUID(u->uuid), CHK_UUID(want));
		else
			chk_rep(c, CHK_M_UUID_STALE_NO_SUBVOL, BTRFS_UUID_TREE_OBJECTID, 0, NULL,
				CHK_U(u->subvol), CHK_UUID(u->uuid));
	}
	if (!current || !c->uuids.n)
		return;
	for (size_t i = 0; i < c->roots.n; i++) {
		const struct chk_rootitem *r = btk_vec_at(&c->roots, i);
		if (r->id < BTRFS_FIRST_FREE_OBJECTID || r->id > BTRFS_LAST_FREE_OBJECTID ||
		    r->refs == 0 || !memcmp(r->uuid, zero, BTK_UUID_SIZE))
			continue;
		if (!uuid_listed(c, v, r->id, r->uuid))
			chk_rep(c, CHK_M_UUID_MISSING, BTRFS_UUID_TREE_OBJECTID, 0, NULL,
				CHK_U(r->id), CHK_UUID(r->uuid));
	}
}
