/* decode_extent.c — extent and metadata items with their inline refs, keyed back references,
 * checksum items. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "decode/decode_int.h"
#include "format/extent_refs.h"

/* One inline ref (its size already checked). */
static void inline_ref(struct dcur *c, uint32_t cur, const struct btk_extent_ref *r)
{
	const char *name = btk_key_type_name(r->type);

	dc_begin(c, NULL, false);
	dc_str(c, "type", (const uint8_t *)name, strlen(name));
	switch (r->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		dc_u64f(c, "root", r->root, BTK_FMT_OBJID);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		dc_u64(c, "parent", r->parent);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		DC_TABLE(c, cur + 1, dc_data_ref_fields);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		dc_u64(c, "parent", r->parent);
		dc_u64(c, "count", r->count);
		break;
	}
	dc_end(c);
	dc_brk(c);
}

static void inline_refs(struct dcur *c, uint32_t cur)
{
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	int ret = 0;

	dc_begin(c, "inline_refs", true);
	btk_inline_iter_init(&it, c->p, c->size, cur);
	while (!c->failed && (ret = btk_inline_next(&it, &r)) == 1)
		inline_ref(c, it.at, &r);
	if (!c->failed && ret == -ENOENT) {
		dc_fail(c, "bad inline ref type %u at offset %u", c->p[it.at], it.at);
		return;
	}
	if (!c->failed && ret < 0 && !dc_need(c, it.at, it.len, "inline ref"))
		return;
	dc_end(c);
}

#define EI struct btrfs_extent_item
static const struct fdesc extent_fields[] = {
    FD_NUM("refs", EI, refs, 0),
    FD_NUM("gen", EI, generation, 0),
    {"flags", FD_OFF(EI, flags), FD_SZ(EI, flags), T_FLAGS, BTK_FMT_DEC, 1, dc_extent_flags},
};

void dc_extent_item(struct dcur *c, bool metadata)
{
	struct btk_key k = {0, metadata ? BTRFS_METADATA_ITEM_KEY : BTRFS_EXTENT_ITEM_KEY, 0};
	struct btk_extent_head h;
	int ret;

	if (!dc_need(c, 0, sizeof(EI), metadata ? "metadata item" : "extent item"))
		return;
	ret = btk_extent_head_parse(&k, c->p, c->size, &h);
	DC_TABLE(c, 0, extent_fields);
	if (metadata) {
		dc_begin(c, "tree_block", false);
		dc_u64(c, "level", c->key ? c->key->offset : 0);
		dc_end(c);
		dc_brk(c);
	} else if (ret == -ENODATA) {
		dc_need(c, sizeof(EI), sizeof(struct btrfs_tree_block_info), "tree block info");
		return;
	} else if (h.has_info) {
		dc_begin(c, "tree_block", false);
		dc_key(c, "key", &h.info_key);
		dc_u64(c, "level", (uint64_t)h.level);
		dc_end(c);
		dc_brk(c);
	}
	inline_refs(c, h.refs_at);
}

void dc_csum(struct dcur *c)
{
	uint32_t cs = (uint32_t)c->env->csum_size, n;
	uint64_t start = c->key ? c->key->offset : 0, len;

	dc_u64(c, "start", start);
	if (!cs || !c->env->sectorsize) {
		dc_u64(c, "num_bytes", c->size);
		return;
	}
	if (c->size % cs) {
		dc_fail(c, "csum item size %u is not a multiple of the csum size %u", c->size, cs);
		return;
	}
	n = c->size / cs;
	len = (uint64_t)n * c->env->sectorsize;
	dc_u64(c, "end", start + len);
	dc_u64(c, "length", len);
	dc_u64(c, "num_csums", n);
	dc_brk(c);
	dc_begin(c, "csums", true);
	for (uint32_t i = 0; i < n; i++)
		dc_hex(c, NULL, c->p + (size_t)i * cs, cs);
	dc_end(c);
}
