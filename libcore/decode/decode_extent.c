/* decode_extent.c — extent and metadata items with their inline refs, keyed back references,
 * checksum items. */
#include <inttypes.h>
#include <stdio.h>

#include "decode/decode_int.h"

#ifndef BTRFS_EXTENT_OWNER_REF_KEY
#define BTRFS_EXTENT_OWNER_REF_KEY 172
#endif

static const char *extent_flags_name(uint64_t v, char *buf, size_t len)
{
	buf[0] = 0;
	if (v & BTRFS_EXTENT_FLAG_DATA)
		snprintf(buf, len, "DATA");
	if (v & BTRFS_EXTENT_FLAG_TREE_BLOCK)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sTREE_BLOCK", buf[0] ? "|" : "");
	if (v & BTRFS_BLOCK_FLAG_FULL_BACKREF)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sFULL_BACKREF", buf[0] ? "|" : "");
	return buf;
}

#define EDR struct btrfs_extent_data_ref
static const struct fdesc data_ref_fields[] = {
    {"root", offsetof(EDR, root), 8, T_U, BTK_FMT_OBJID, 0, NULL},
    {"objectid", offsetof(EDR, objectid), 8, T_U, 0, 0, NULL},
    {"offset", offsetof(EDR, offset), 8, T_U, 0, 0, NULL},
    {"count", offsetof(EDR, count), 4, T_U, 0, 0, NULL},
};

/* Size of an inline ref of that type (type byte included), 0 if the type is not one. */
static uint32_t inline_ref_size(uint8_t type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		return 9;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return 1 + sizeof(EDR);
	case BTRFS_SHARED_DATA_REF_KEY:
		return 9 + sizeof(struct btrfs_shared_data_ref);
	default:
		return 0;
	}
}

/* One inline ref at cur (its size already checked). */
static void inline_ref(struct dcur *c, uint32_t cur, uint8_t type)
{
	uint64_t off = btk_le64(c->p + cur + 1);

	dc_begin(c, NULL, false);
	dc_str(c, "type", (const uint8_t *)btk_key_type_name(type),
	       strlen(btk_key_type_name(type)));
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		dc_u64f(c, "root", off, BTK_FMT_OBJID);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		dc_u64(c, "parent", off);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		DC_TABLE(c, cur + 1, data_ref_fields);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		dc_u64(c, "parent", off);
		dc_u64(c, "count", btk_le32(c->p + cur + 9));
		break;
	}
	dc_end(c);
	dc_brk(c);
}

static void inline_refs(struct dcur *c, uint32_t cur)
{
	dc_begin(c, "inline_refs", true);
	while (cur < c->size && !c->failed) {
		uint8_t type = c->p[cur];
		uint32_t len = inline_ref_size(type);

		if (!len) {
			dc_fail(c, "bad inline ref type %u at offset %u", type, cur);
			return;
		}
		if (!dc_need(c, cur, len, "inline ref"))
			return;
		inline_ref(c, cur, type);
		cur += len;
	}
	dc_end(c);
}

#define EI struct btrfs_extent_item
static const struct fdesc extent_fields[] = {
    {"refs", offsetof(EI, refs), 8, T_U, 0, 0, NULL},
    {"gen", offsetof(EI, generation), 8, T_U, 0, 0, NULL},
    {"flags", offsetof(EI, flags), 8, T_FLAGS, BTK_FMT_DEC, 1, extent_flags_name},
};

void dc_extent_item(struct dcur *c, bool metadata)
{
	uint32_t cur = sizeof(EI);
	uint64_t flags;
	struct btk_key k;

	if (!dc_need(c, 0, sizeof(EI), metadata ? "metadata item" : "extent item"))
		return;
	flags = btk_le64(c->p + offsetof(EI, flags));
	DC_TABLE(c, 0, extent_fields);
	if (metadata) {
		dc_begin(c, "tree_block", false);
		dc_u64(c, "level", c->key ? c->key->offset : 0);
		dc_end(c);
		dc_brk(c);
	} else if (flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		if (!dc_need(c, cur, sizeof(struct btrfs_tree_block_info), "tree block info"))
			return;
		btk_disk_to_key((const struct btk_disk_key *)(c->p + cur), &k);
		dc_begin(c, "tree_block", false);
		dc_key(c, "key", &k);
		dc_u64(c, "level", c->p[cur + sizeof(struct btk_disk_key)]);
		dc_end(c);
		dc_brk(c);
		cur += sizeof(struct btrfs_tree_block_info);
	}
	inline_refs(c, cur);
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
