/* check_chunks.c — chunks, block groups, dev extents and device items against each other. */
#include "check/check_priv.h"
#include "base/error.h"
#include "format/dev_items.h"

#include <stdlib.h>
#include <string.h>

/* The superblock's system chunk array entry of the chunk at logical (*len bytes), NULL when
 * it has none. */
static const uint8_t *sys_array_entry(const struct btk_super *sb, uint64_t logical, uint32_t *len)
{
	uint32_t size = btk_le32(sb->sys_chunk_array_size), off = 0;
	const uint32_t head = (uint32_t)offsetof(struct btrfs_chunk, stripe);

	if (size > BTK_SYS_ARRAY_SIZE)
		return NULL;
	while (off + sizeof(struct btk_disk_key) + head <= size) {
		struct btk_key k;
		btk_disk_to_key((const struct btk_disk_key *)(sb->sys_chunk_array + off), &k);
		off += (uint32_t)sizeof(struct btk_disk_key);
		const uint8_t *ch = sb->sys_chunk_array + off;
		uint32_t n = BTK_GET(struct btrfs_chunk, ch, num_stripes);
		uint32_t l = head + n * (uint32_t)sizeof(struct btrfs_stripe);
		if (!n || off + l > size)
			return NULL;
		if (k.type == BTRFS_CHUNK_ITEM_KEY && k.offset == logical) {
			*len = l;
			return ch;
		}
		off += l;
	}
	return NULL;
}

/* A system chunk of the chunk tree is what the superblock's array says (the kernel maps the
 * chunk tree through the array alone, btrfs check builds its devices from it). */
static void sys_chunk_in_array(struct chk *c, const struct btk_block *b, const struct btk_key *k,
			       const uint8_t *p, uint32_t sz)
{
	uint32_t len = 0;
	const uint8_t *a;

	if (c->fs->sys_array_scanned || sz < sizeof(struct btrfs_chunk) ||
	    !(BTK_GET(struct btrfs_chunk, p, type) & BTRFS_BLOCK_GROUP_SYSTEM))
		return;
	if (!(a = sys_array_entry(&c->fs->sb, k->offset, &len))) {
		chk_rep(c, CHK_M_SYS_ARRAY_MISSING, 3, b->bytenr, k, CHK_U(k->offset));
		return;
	}
	for (uint32_t i = 0; i < sz || i < len; i++)
		if (i >= sz || i >= len || a[i] != p[i]) {
			chk_rep(c, CHK_M_SYS_ARRAY_DIFFERS, 3, b->bytenr, k, CHK_U(k->offset),
				CHK_U(i));
			return;
		}
}

void chk_chunk_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, 0, it) {
		if (it.k.type == BTRFS_CHUNK_ITEM_KEY) {
			sys_chunk_in_array(c, b, &it.k, it.p, it.sz);
			struct btk_chunk *ch = NULL;
			if (btk_chunk_parse(it.p, it.sz, it.k.offset, c->fs->sectorsize, &ch))
				chk_rep(c, CHK_M_CHUNK_INVALID, 3, b->bytenr, &it.k,
					CHK_S(btk_errmsg()));
			else if (ch->sector_size != c->fs->sectorsize)
				chk_rep(c, CHK_M_CHUNK_SECTOR_SIZE, 3, b->bytenr, &it.k,
					CHK_U(it.k.offset), CHK_U(c->fs->sectorsize),
					CHK_U(ch->sector_size));
			free(ch);
			continue;
		}
		if (it.k.type != BTRFS_DEV_ITEM_KEY)
			continue;
		struct btk_dev_item_ent di;
		if (btk_dev_item_parse(it.p, it.sz, &di)) {
			chk_rep(c, CHK_M_DEV_ITEM_SIZE, 3, b->bytenr, &it.k,
				CHK_U(BTK_DEV_ITEM_SIZE), CHK_U(it.sz));
			continue;
		}
		struct chk_devitem *d = chk_push(c, &c->devitems);
		if (!d)
			return;
		d->devid = di.devid;
		d->total_bytes = di.total_bytes;
		d->bytes_used = di.bytes_used;
		memcpy(d->uuid, di.uuid, BTK_UUID_SIZE);
		memcpy(d->fsid, di.fsid, BTK_FSID_SIZE);
		if (d->devid != it.k.offset)
			chk_rep(c, CHK_M_DEV_ITEM_DEVID, 3, b->bytenr, &it.k, CHK_U(it.k.offset),
				CHK_U(d->devid));
	}
}

void chk_dev_leaf(struct chk *c, const struct btk_block *b)
{
	chk_for_items (c, b, BTRFS_DEV_EXTENT_KEY, it) {
		struct btk_dev_extent_ent de;
		if (btk_dev_extent_parse(it.p, it.sz, &de)) {
			chk_rep(c, CHK_M_DEXT_TOO_SMALL, 4, b->bytenr, &it.k);
			continue;
		}
		struct chk_dext *d = chk_push(c, &c->dexts);
		if (!d)
			return;
		d->devid = it.k.objectid;
		d->physical = it.k.offset;
		d->len = de.length;
		d->chunk_offset = de.chunk_offset;
	}
}

void chk_bg_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		 uint64_t bytenr)
{
	if (sz < sizeof(struct btrfs_block_group_item)) {
		chk_rep(c, CHK_M_BG_TOO_SMALL, 0, bytenr, k);
		return;
	}
	struct chk_bg *g = chk_push(c, &c->bgs);
	if (!g)
		return;
	g->start = k->objectid;
	g->len = k->offset;
	g->used = BTK_GET(struct btrfs_block_group_item, p, used);
	g->flags = BTK_GET(struct btrfs_block_group_item, p, flags);
	uint64_t cid = BTK_GET(struct btrfs_block_group_item, p, chunk_objectid);
	if (cid != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		chk_rep(c, CHK_M_BG_CHUNK_OBJECTID, 0, bytenr, k, CHK_U(g->start), CHK_U(g->len),
			CHK_U(cid));
}

static int bg_cmp(const void *pa, const void *pb)
{
	const struct chk_bg *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int dext_cmp(const void *pa, const void *pb)
{
	const struct chk_dext *a = pa, *b = pb;
	return btk_cmp_u64(a->devid, b->devid) ?: btk_cmp_u64(a->physical, b->physical);
}

static struct chk_dext *dext_find(struct chk *c, uint64_t devid, uint64_t physical)
{
	struct chk_dext key = {.devid = devid, .physical = physical};
	return btk_vec_bsearch(&c->dexts, &key, dext_cmp);
}

static const struct chk_bg *bg_find(struct chk *c, uint64_t start)
{
	struct chk_bg key = {.start = start};
	return btk_vec_bsearch(&c->bgs, &key, bg_cmp);
}

/* The record of device devid in vector v (records with a devid), or NULL: a few devices, so
 * a scan. */
#define devid_find(v, id)                                                                          \
	({                                                                                         \
		const __typeof__((v)->data[0]) *found_ = NULL;                                     \
		for (size_t i_ = 0; i_ < (v)->n && !found_; i_++)                                  \
			if ((v)->data[i_].devid == (id))                                           \
				found_ = &(v)->data[i_];                                           \
		found_;                                                                            \
	})

static const struct chk_devsb *devsb_find(const struct chk *c, uint64_t devid)
{
	return devid_find(&c->devsbs, devid);
}

static const struct chk_devitem *devitem_find(const struct chk *c, uint64_t devid)
{
	return devid_find(&c->devitems, devid);
}

static void chunk_vs_rest(struct chk *c, const struct btk_chunk *ch, uint8_t *matched)
{
	const struct chk_bg *bg = bg_find(c, ch->logical);
	uint64_t ssz = btk_chunk_stripe_len(ch);

	if (!bg)
		chk_rep(c, CHK_M_CHUNK_NO_BG, 3, ch->logical, NULL, CHK_U(ch->logical),
			CHK_U(ch->length));
	else if (bg->len != ch->length || bg->flags != ch->type)
		chk_rep(c, CHK_M_CHUNK_BG_DIFFERS, 3, ch->logical, NULL, CHK_U(ch->logical),
			CHK_U(ch->length), CHK_U(ch->type), CHK_U(bg->len), CHK_U(bg->flags));
	for (int s = 0; s < ch->num_stripes; s++) {
		const struct btk_stripe *st = &ch->stripes[s];
		/* the kernel finds a stripe's device by devid and uuid: the device's own, or
		 * for a missing one what its device item says */
		const struct chk_devitem *di = devitem_find(c, st->devid);
		const struct chk_devsb *own = devsb_find(c, st->devid);
		const uint8_t *want = own ? own->uuid : di ? di->uuid : NULL;
		if (!di && c->devitems.n)
			chk_rep(c, CHK_M_CHUNK_DEV_NONE, 3, ch->logical, NULL, CHK_U(ch->logical),
				CHK_I(s), CHK_U(st->devid));
		else if (want && memcmp(want, st->dev_uuid, BTK_UUID_SIZE))
			chk_rep(c, CHK_M_CHUNK_DEV_UUID, 3, ch->logical, NULL, CHK_U(ch->logical),
				CHK_I(s), CHK_U(st->devid), CHK_UUID(want), CHK_UUID(st->dev_uuid));
		struct chk_dext *d = dext_find(c, st->devid, st->offset);
		if (!d) {
			chk_rep(c, CHK_M_DEXT_MISSING, 4, st->offset, NULL, CHK_U(ch->logical),
				CHK_I(s), CHK_U(st->devid), CHK_U(st->offset));
			continue;
		}
		matched[d - (struct chk_dext *)c->dexts.data] = 1;
		if (d->chunk_offset != ch->logical || d->len != ssz)
			chk_rep(c, CHK_M_DEXT_DIFFERS, 4, st->offset, NULL, CHK_U(st->devid),
				CHK_U(st->offset), CHK_U(ch->logical), CHK_U(ssz),
				CHK_U(d->chunk_offset), CHK_U(d->len));
	}
}

/* Dev extents per device: no overlap, inside the device, sum = the device's bytes used. */
static void dev_extents(struct chk *c, const uint8_t *matched)
{
	size_t i = 0;

	while (i < c->dexts.n) {
		const struct chk_dext *first = btk_vec_at(&c->dexts, i);
		const struct chk_devitem *di = devitem_find(c, first->devid);
		uint64_t sum = 0, prev_end = 0, devid = first->devid;
		for (; i < c->dexts.n; i++) {
			const struct chk_dext *d = btk_vec_at(&c->dexts, i);
			if (d->devid != devid)
				break;
			sum += d->len;
			if (!matched[i])
				chk_rep(c, CHK_M_DEXT_NO_CHUNK, 4, d->physical, NULL, CHK_U(devid),
					CHK_U(d->physical), CHK_U(d->len));
			if (d->physical < prev_end)
				chk_rep(c, CHK_M_DEXT_OVERLAP, 4, d->physical, NULL, CHK_U(devid),
					CHK_U(prev_end), CHK_U(d->physical));
			if (d->physical + d->len > prev_end)
				prev_end = d->physical + d->len;
			if (di && (d->physical + d->len > di->total_bytes ||
				   d->physical + d->len < d->physical))
				chk_rep(c, CHK_M_DEXT_BEYOND, 4, d->physical, NULL, CHK_U(devid),
					CHK_U(d->physical), CHK_U(d->len), CHK_U(di->total_bytes),
					CHK_U((d->physical + d->len)));
		}
		if (!di) {
			if (!c->chunk_gap) /* else an unreadable chunk leaf may hold it */
				chk_rep(c, CHK_M_DEV_NO_ITEM, 3, 0, NULL, CHK_U(devid));
		} else if (di->bytes_used != sum)
			chk_rep(c, CHK_M_DEV_BYTES_USED, 3, 0, NULL, CHK_U(devid), CHK_U(sum),
				CHK_U(di->bytes_used));
	}
}

/* A device item names its device by uuid and its filesystem by fsid: the present device with
 * that devid must say the same of itself in its superblock (a seed device's item carries the
 * seed's fsid, which its own superblock holds too). */
static void device_identity(struct chk *c, const struct chk_devitem *di)
{
	const struct chk_devsb *own = devsb_find(c, di->devid);
	struct btk_key k = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, di->devid};
	if (own && memcmp(own->uuid, di->uuid, BTK_UUID_SIZE)) {
		struct btk_fs_dev *fd = btk_fs_dev_find(c->fs, di->devid);
		chk_rep(c, CHK_M_DEV_ITEM_UUID, 3, 0, &k, CHK_U(di->devid),
			CHK_S(fd && fd->dev ? fd->dev->path : "?"), CHK_UUID(own->uuid),
			CHK_UUID(di->uuid));
	}
	if (memcmp(di->fsid, c->fs->meta_uuid, BTK_FSID_SIZE) &&
	    (!own || memcmp(own->fsid, di->fsid, BTK_FSID_SIZE)))
		chk_rep(c, CHK_M_DEV_ITEM_FSID, 3, 0, &k, CHK_U(di->devid),
			CHK_UUID(own ? own->fsid : c->fs->meta_uuid), CHK_UUID(di->fsid));
}

static void devices(struct chk *c)
{
	for (size_t i = 0; i < c->devitems.n; i++) {
		const struct chk_devitem *di = btk_vec_at(&c->devitems, i);
		device_identity(c, di);
		struct btk_fs_dev *fd = btk_fs_dev_find(c->fs, di->devid);
		bool has_dexts = false;
		for (size_t j = 0; j < c->dexts.n && !has_dexts; j++)
			has_dexts =
			    ((const struct chk_dext *)btk_vec_at(&c->dexts, j))->devid == di->devid;
		if (!has_dexts && di->bytes_used)
			chk_rep(c, CHK_M_DEV_BYTES_USED_NONE, 3, 0, NULL, CHK_U(di->devid),
				CHK_U(di->bytes_used));
		if (fd && fd->dev && fd->dev->size < di->total_bytes)
			chk_rep(c, CHK_M_DEV_SMALLER, 3, 0, NULL, CHK_U(di->devid),
				CHK_S(fd->dev->path), CHK_U(di->total_bytes), CHK_U(fd->dev->size));
	}
}

/* The map is sorted by logical address; the opener kept overlapping chunks for us. */
static void chunk_overlaps(struct chk *c)
{
	for (int i = 1; i < c->fs->nchunks; i++) {
		const struct btk_chunk *a = c->fs->chunks[i - 1], *b = c->fs->chunks[i];
		if (a->logical + a->length <= b->logical)
			continue;
		struct btk_key k = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				    a->logical};
		chk_rep(c, CHK_M_CHUNK_OVERLAP, BTRFS_CHUNK_TREE_OBJECTID, a->logical, &k,
			CHK_U(a->logical), CHK_U(a->length), CHK_U(b->logical),
			CHK_U((a->logical + a->length)));
	}
}

void chk_chunks_final(struct chk *c)
{
	chunk_overlaps(c);
	uint8_t *matched = calloc(c->dexts.n + 1, 1);

	if (!matched) {
		c->oom = true;
		return;
	}
	btk_vec_sort(&c->bgs, bg_cmp);
	btk_vec_sort(&c->dexts, dext_cmp);
	for (int i = 0; i < c->fs->nchunks; i++)
		chunk_vs_rest(c, c->fs->chunks[i], matched);
	for (size_t i = 0; i < c->bgs.n; i++) {
		const struct chk_bg *bg = btk_vec_at(&c->bgs, i);
		const struct btk_chunk *ch = btk_chunk_find(c->fs, bg->start);
		if (!ch || ch->logical != bg->start)
			chk_rep(c, CHK_M_BG_NO_CHUNK, 2, bg->start, NULL, CHK_U(bg->start),
				CHK_U(bg->len));
	}
	dev_extents(c, matched);
	devices(c);
	free(matched);
}
