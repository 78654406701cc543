/* check_chunks.c — chunks, block groups, dev extents and device items against each other. */
#include "check/check_priv.h"
#include "format/dev_items.h"

#include <stdlib.h>

void chk_chunk_leaf(struct chk *c, const struct btk_block *b)
{
	for (uint32_t i = 0; i < btk_block_nritems(b) && !c->oom; i++) {
		struct btk_key k;
		const uint8_t *p = btk_leaf_data(b, (int)i);
		uint32_t sz = btk_leaf_size(b, (int)i);
		btk_leaf_key(b, (int)i, &k);
		if (k.type == BTRFS_CHUNK_ITEM_KEY) {
			struct btk_chunk *ch = NULL;
			if (btk_chunk_parse(p, sz, k.offset, c->fs->sectorsize, &ch))
				chk_report(c, BTK_P_CHUNK_INVALID, 3, b->bytenr, &k, "", "",
					   "invalid chunk item");
			free(ch);
			continue;
		}
		if (k.type != BTRFS_DEV_ITEM_KEY)
			continue;
		if (sz < sizeof(struct btrfs_dev_item)) {
			chk_report(c, BTK_P_DEV_ITEM_SIZE, 3, b->bytenr, &k,
				   chk_fmt("%zu bytes", sizeof(struct btrfs_dev_item)),
				   chk_fmt("%u", sz), "device item too small");
			continue;
		}
		struct chk_devitem *d = btk_vec_push(&c->devitems);
		if (!d) {
			c->oom = true;
			return;
		}
		d->devid = BTK_GET(struct btrfs_dev_item, p, devid);
		d->total_bytes = BTK_GET(struct btrfs_dev_item, p, total_bytes);
		d->bytes_used = BTK_GET(struct btrfs_dev_item, p, bytes_used);
		if (d->devid != k.offset)
			chk_report(c, BTK_P_DEV_ITEM_DEVID, 3, b->bytenr, &k,
				   chk_fmt("%llu", (unsigned long long)k.offset),
				   chk_fmt("%llu", (unsigned long long)d->devid),
				   "device item devid differs from its key");
	}
}

void chk_dev_leaf(struct chk *c, const struct btk_block *b)
{
	for (uint32_t i = 0; i < btk_block_nritems(b) && !c->oom; i++) {
		struct btk_key k;
		btk_leaf_key(b, (int)i, &k);
		if (k.type != BTRFS_DEV_EXTENT_KEY)
			continue;
		const uint8_t *p = btk_leaf_data(b, (int)i);
		struct btk_dev_extent_ent de;
		if (btk_dev_extent_parse(p, btk_leaf_size(b, (int)i), &de)) {
			chk_report(c, BTK_P_DEXT_TOO_SMALL, 4, b->bytenr, &k, "", "",
				   "dev extent item too small");
			continue;
		}
		struct chk_dext *d = btk_vec_push(&c->dexts);
		if (!d) {
			c->oom = true;
			return;
		}
		d->devid = k.objectid;
		d->physical = k.offset;
		d->len = de.length;
		d->chunk_offset = de.chunk_offset;
	}
}

void chk_bg_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		 uint64_t bytenr)
{
	if (sz < sizeof(struct btrfs_block_group_item)) {
		chk_report(c, BTK_P_BG_TOO_SMALL, 0, bytenr, k, "", "",
			   "block group item too small");
		return;
	}
	struct chk_bg *g = btk_vec_push(&c->bgs);
	if (!g) {
		c->oom = true;
		return;
	}
	g->start = k->objectid;
	g->len = k->offset;
	g->used = BTK_GET(struct btrfs_block_group_item, p, used);
	g->flags = BTK_GET(struct btrfs_block_group_item, p, flags);
}

static int bg_cmp(const void *pa, const void *pb)
{
	const struct chk_bg *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int dext_cmp(const void *pa, const void *pb)
{
	const struct chk_dext *a = pa, *b = pb;
	if (a->devid != b->devid)
		return a->devid < b->devid ? -1 : 1;
	return a->physical < b->physical ? -1 : a->physical > b->physical;
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

static void chunk_vs_rest(struct chk *c, const struct btk_chunk *ch, uint8_t *matched)
{
	const struct chk_bg *bg = bg_find(c, ch->logical);
	uint64_t ssz = btk_chunk_stripe_len(ch);

	if (!bg)
		chk_report(c, BTK_P_CHUNK_NO_BG, 3, ch->logical, NULL, "a block group item", "none",
			   "chunk [%llu, +%llu) has no block group",
			   (unsigned long long)ch->logical, (unsigned long long)ch->length);
	else if (bg->len != ch->length || bg->flags != ch->type)
		chk_report(c, BTK_P_CHUNK_BG_DIFFERS, 3, ch->logical, NULL,
			   chk_fmt("length %llu flags 0x%llx (chunk)",
				   (unsigned long long)ch->length, (unsigned long long)ch->type),
			   chk_fmt("length %llu flags 0x%llx", (unsigned long long)bg->len,
				   (unsigned long long)bg->flags),
			   "block group %llu differs from its chunk",
			   (unsigned long long)ch->logical);
	for (int s = 0; s < ch->num_stripes; s++) {
		const struct btk_stripe *st = &ch->stripes[s];
		struct chk_dext *d = dext_find(c, st->devid, st->offset);
		if (!d) {
			chk_report(
			    c, BTK_P_DEXT_MISSING, 4, st->offset, NULL, "a dev extent", "none",
			    "chunk %llu stripe %d (devid %llu physical %llu) has no dev extent",
			    (unsigned long long)ch->logical, s, (unsigned long long)st->devid,
			    (unsigned long long)st->offset);
			continue;
		}
		matched[d - (struct chk_dext *)c->dexts.data] = 1;
		if (d->chunk_offset != ch->logical || d->len != ssz)
			chk_report(
			    c, BTK_P_DEXT_DIFFERS, 4, st->offset, NULL,
			    chk_fmt("chunk %llu length %llu", (unsigned long long)ch->logical,
				    (unsigned long long)ssz),
			    chk_fmt("chunk %llu length %llu", (unsigned long long)d->chunk_offset,
				    (unsigned long long)d->len),
			    "dev extent (devid %llu physical %llu) differs from its chunk",
			    (unsigned long long)st->devid, (unsigned long long)st->offset);
	}
}

static const struct chk_devitem *devitem_find(const struct chk *c, uint64_t devid)
{
	for (size_t i = 0; i < c->devitems.n; i++) {
		const struct chk_devitem *d = btk_vec_at(&c->devitems, i);
		if (d->devid == devid)
			return d;
	}
	return NULL;
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
				chk_report(
				    c, BTK_P_DEXT_NO_CHUNK, 4, d->physical, NULL, "a chunk stripe",
				    "none",
				    "dev extent devid %llu physical %llu len %llu has no chunk",
				    (unsigned long long)devid, (unsigned long long)d->physical,
				    (unsigned long long)d->len);
			if (d->physical < prev_end)
				chk_report(c, BTK_P_DEXT_OVERLAP, 4, d->physical, NULL,
					   chk_fmt(">= %llu", (unsigned long long)prev_end),
					   chk_fmt("%llu", (unsigned long long)d->physical),
					   "dev extents overlap on devid %llu",
					   (unsigned long long)devid);
			if (d->physical + d->len > prev_end)
				prev_end = d->physical + d->len;
			if (di && (d->physical + d->len > di->total_bytes ||
				   d->physical + d->len < d->physical))
				chk_report(
				    c, BTK_P_DEXT_BEYOND, 4, d->physical, NULL,
				    chk_fmt("end <= %llu (device size)",
					    (unsigned long long)di->total_bytes),
				    chk_fmt("end %llu", (unsigned long long)(d->physical + d->len)),
				    "dev extent devid %llu physical %llu len %llu is beyond the "
				    "device end",
				    (unsigned long long)devid, (unsigned long long)d->physical,
				    (unsigned long long)d->len);
		}
		if (!di)
			chk_report(c, BTK_P_DEV_NO_ITEM, 3, 0, NULL, "a device item", "none",
				   "dev extents on devid %llu, which has no device item",
				   (unsigned long long)devid);
		else if (di->bytes_used != sum)
			chk_report(c, BTK_P_DEV_BYTES_USED, 3, 0, NULL,
				   chk_fmt("%llu (sum of dev extents)", (unsigned long long)sum),
				   chk_fmt("%llu", (unsigned long long)di->bytes_used),
				   "device %llu bytes used wrong", (unsigned long long)devid);
	}
}

static void devices(struct chk *c)
{
	for (size_t i = 0; i < c->devitems.n; i++) {
		const struct chk_devitem *di = btk_vec_at(&c->devitems, i);
		struct btk_fs_dev *fd = btk_fs_dev_find(c->fs, di->devid);
		bool has_dexts = false;
		for (size_t j = 0; j < c->dexts.n && !has_dexts; j++)
			has_dexts =
			    ((const struct chk_dext *)btk_vec_at(&c->dexts, j))->devid == di->devid;
		if (!has_dexts && di->bytes_used)
			chk_report(c, BTK_P_DEV_BYTES_USED, 3, 0, NULL, "0 (no dev extents)",
				   chk_fmt("%llu", (unsigned long long)di->bytes_used),
				   "device %llu bytes used wrong", (unsigned long long)di->devid);
		if (fd && fd->dev && fd->dev->size < di->total_bytes)
			chk_report(c, BTK_P_DEV_SMALLER, 3, 0, NULL,
				   chk_fmt(">= %llu", (unsigned long long)di->total_bytes),
				   chk_fmt("%llu", (unsigned long long)fd->dev->size),
				   "device %llu (%s) is smaller than its device item says",
				   (unsigned long long)di->devid, fd->dev->path);
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
		chk_report(c, BTK_P_CHUNK_OVERLAP, BTRFS_CHUNK_TREE_OBJECTID, a->logical, &k,
			   chk_fmt("end <= %llu (next chunk)", (unsigned long long)b->logical),
			   chk_fmt("end %llu", (unsigned long long)(a->logical + a->length)),
			   "chunk [%llu, +%llu) overlaps the chunk at %llu",
			   (unsigned long long)a->logical, (unsigned long long)a->length,
			   (unsigned long long)b->logical);
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
			chk_report(c, BTK_P_BG_NO_CHUNK, 2, bg->start, NULL, "a chunk", "none",
				   "block group [%llu, +%llu) has no chunk",
				   (unsigned long long)bg->start, (unsigned long long)bg->len);
	}
	dev_extents(c, matched);
	devices(c);
	free(matched);
}
