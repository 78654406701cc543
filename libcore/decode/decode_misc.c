/* decode_misc.c — the fixed-size and small item types: block groups, devices, dev extents,
 * free space, keyed refs, uuid items, qgroups, dev stats, balance, dev replace, strings. */
#include <stdio.h>

#include "decode/decode_int.h"

struct fixed {
	uint8_t type;
	const char *what;
	uint32_t size; /* minimum item size */
	const struct fdesc *fields;
	size_t n;
};

#define FSH struct btrfs_free_space_header
static const struct fdesc fs_header[] = {
    {"location", FD_OFF(FSH, location), FD_SZ(FSH, location), T_KEY, 0, 1, NULL},
    FD_NUM("cache_generation", FSH, generation, 0),
    FD_NUM("entries", FSH, num_entries, 0),
    FD_NUM("bitmaps", FSH, num_bitmaps, 0),
};

#define EDR struct btrfs_extent_data_ref
const struct fdesc dc_data_ref_fields[DC_DATA_REF_NFIELDS] = {
    {"root", FD_OFF(EDR, root), FD_SZ(EDR, root), T_U, BTK_FMT_OBJID, 0, NULL},
    FD_NUM("objectid", EDR, objectid, 0),
    FD_NUM("offset", EDR, offset, 0),
    FD_NUM("count", EDR, count, 0),
};
static const struct fdesc shared_ref[] = {
    FD_NUM("count", struct btrfs_shared_data_ref, count, 0),
};

#define BG struct btrfs_block_group_item
static const struct fdesc bg_fields[] = {
    FD_NUM("used", BG, used, 0),
    {"chunk_objectid", FD_OFF(BG, chunk_objectid), FD_SZ(BG, chunk_objectid), T_U, BTK_FMT_OBJID, 0,
     NULL},
    {"flags", FD_OFF(BG, flags), FD_SZ(BG, flags), T_FLAGS, BTK_FMT_HEX, 0, dc_bg_flags},
};

#define FSI struct btrfs_free_space_info
static const struct fdesc fsi_fields[] = {
    FD_NUM("extent_count", FSI, extent_count, 0),
    {"flags", FD_OFF(FSI, flags), FD_SZ(FSI, flags), T_FLAGS, BTK_FMT_HEX, 0, dc_fsi_flags},
};

#define DE struct btrfs_dev_extent
static const struct fdesc dev_extent[] = {
    {"chunk_tree", FD_OFF(DE, chunk_tree), FD_SZ(DE, chunk_tree), T_U, BTK_FMT_DEC, 1, NULL},
    FD_NUM("chunk_objectid", DE, chunk_objectid, 0),
    FD_NUM("chunk_offset", DE, chunk_offset, 0),
    FD_NUM("length", DE, length, 1),
    {"chunk_tree_uuid", FD_OFF(DE, chunk_tree_uuid), FD_SZ(DE, chunk_tree_uuid), T_UUID, 0, 0,
     NULL},
};

#define DI struct btrfs_dev_item
/* Shared with the superblock decoder. */
const struct fdesc btk_dev_item_fields[] = {
    FD_NUM("devid", DI, devid, 0),
    FD_NUM("total_bytes", DI, total_bytes, 0),
    FD_NUM("bytes_used", DI, bytes_used, 1),
    FD_NUM("io_align", DI, io_align, 0),
    FD_NUM("io_width", DI, io_width, 0),
    FD_NUM("sector_size", DI, sector_size, 0),
    FD_NUM("type", DI, type, 1),
    FD_NUM("generation", DI, generation, 0),
    FD_NUM("start_offset", DI, start_offset, 0),
    FD_NUM("dev_group", DI, dev_group, 1),
    FD_NUM("seek_speed", DI, seek_speed, 0),
    FD_NUM("bandwidth", DI, bandwidth, 1),
    {"uuid", FD_OFF(DI, uuid), FD_SZ(DI, uuid), T_UUID, 0, 1, NULL},
    {"fsid", FD_OFF(DI, fsid), FD_SZ(DI, fsid), T_UUID, 0, 0, NULL},
};
const size_t btk_dev_item_nfields = sizeof(btk_dev_item_fields) / sizeof(btk_dev_item_fields[0]);

#define QS struct btrfs_qgroup_status_item
static const struct fdesc qg_status[] = {
    FD_NUM("version", QS, version, 0),
    FD_NUM("generation", QS, generation, 0),
    {"flags", FD_OFF(QS, flags), FD_SZ(QS, flags), T_FLAGS, BTK_FMT_HEX, 0, dc_qgroup_flags},
    FD_NUM("scan", QS, rescan, 0),
};
#define QI struct btrfs_qgroup_info_item
static const struct fdesc qg_info[] = {
    FD_NUM("generation", QI, generation, 1),	       FD_NUM("referenced", QI, rfer, 0),
    FD_NUM("referenced_compressed", QI, rfer_cmpr, 1), FD_NUM("exclusive", QI, excl, 0),
    FD_NUM("exclusive_compressed", QI, excl_cmpr, 0),
};
#define QL struct btrfs_qgroup_limit_item
static const struct fdesc qg_limit[] = {
    {"flags", FD_OFF(QL, flags), FD_SZ(QL, flags), T_U, BTK_FMT_HEX, 1, NULL},
    {"max_referenced", FD_OFF(QL, max_rfer), FD_SZ(QL, max_rfer), T_S, 0, 0, NULL},
    {"max_exclusive", FD_OFF(QL, max_excl), FD_SZ(QL, max_excl), T_S, 0, 1, NULL},
    {"rsv_referenced", FD_OFF(QL, rsv_rfer), FD_SZ(QL, rsv_rfer), T_S, 0, 0, NULL},
    {"rsv_exclusive", FD_OFF(QL, rsv_excl), FD_SZ(QL, rsv_excl), T_S, 0, 0, NULL},
};

#define DR struct btrfs_dev_replace_item
static const struct fdesc dev_replace[] = {
    FD_NUM("src_devid", DR, src_devid, 0),
    FD_NUM("cursor_left", DR, cursor_left, 0),
    FD_NUM("cursor_right", DR, cursor_right, 1),
    FD_NUM("cont_reading_from_srcdev_mode", DR, cont_reading_from_srcdev_mode, 0),
    FD_NUM("replace_state", DR, replace_state, 1),
    FD_NUM("time_started", DR, time_started, 0),
    FD_NUM("time_stopped", DR, time_stopped, 1),
    FD_NUM("num_write_errors", DR, num_write_errors, 0),
    FD_NUM("num_uncorrectable_read_errors", DR, num_uncorrectable_read_errors, 0),
};

static const struct fdesc dir_log[] = {
    FD_NUM("end", struct btrfs_dir_log_item, end, 0),
};

#define VD struct btrfs_verity_descriptor_item
static const struct fdesc verity_desc[] = {
    FD_NUM("size", VD, size, 0),
    FD_NUM("encryption", VD, encryption, 0),
};

#define FX(t, w, sz, f)                                                                            \
	{                                                                                          \
		t, w, sz, f, sizeof(f) / sizeof((f)[0])                                            \
	}
static const struct fixed fixed_items[] = {
    FX(0, "free space header", sizeof(FSH), fs_header),
    FX(BTRFS_DIR_LOG_ITEM_KEY, "dir log item", sizeof(struct btrfs_dir_log_item), dir_log),
    FX(BTRFS_DIR_LOG_INDEX_KEY, "dir log item", sizeof(struct btrfs_dir_log_item), dir_log),
    FX(BTRFS_EXTENT_DATA_REF_KEY, "extent data ref", sizeof(EDR), dc_data_ref_fields),
    FX(BTRFS_SHARED_DATA_REF_KEY, "shared data ref", sizeof(struct btrfs_shared_data_ref),
       shared_ref),
    FX(BTRFS_BLOCK_GROUP_ITEM_KEY, "block group item", sizeof(BG), bg_fields),
    FX(BTRFS_FREE_SPACE_INFO_KEY, "free space info", sizeof(FSI), fsi_fields),
    FX(BTRFS_DEV_EXTENT_KEY, "dev extent", sizeof(DE), dev_extent),
    FX(BTRFS_DEV_ITEM_KEY, "dev item", sizeof(DI), btk_dev_item_fields),
    FX(BTRFS_QGROUP_STATUS_KEY, "qgroup status", sizeof(QS), qg_status),
    FX(BTRFS_QGROUP_INFO_KEY, "qgroup info", sizeof(QI), qg_info),
    FX(BTRFS_QGROUP_LIMIT_KEY, "qgroup limit", sizeof(QL), qg_limit),
    FX(BTRFS_DEV_REPLACE_KEY, "dev replace item", sizeof(DR), dev_replace),
};

static void uuid_item(struct dcur *c)
{
	if (c->size % 8) {
		dc_fail(c, "uuid item with illegal size %u", c->size);
		return;
	}
	dc_begin(c, "subvol_ids", true);
	for (uint32_t i = 0; i < c->size; i += 8)
		dc_u64(c, NULL, btk_le64(c->p + i));
	dc_end(c);
}

static void dev_stats(struct dcur *c)
{
	static const char *const names[] = {"write_errs", "read_errs", "flush_errs",
					    "corruption_errs", "generation"};
	uint32_t n = c->size / 8, i;

	if (c->size % 8) {
		dc_fail(c, "dev stats item with illegal size %u", c->size);
		return;
	}
	for (i = 0; i < n && i < 5; i++)
		dc_u64(c, names[i], btk_le64(c->p + 8 * i));
	if (n > 5) {
		dc_begin(c, "unknown", true);
		for (; i < n; i++)
			dc_u64(c, NULL, btk_le64(c->p + 8 * i));
		dc_end(c);
	}
}

#define BA struct btrfs_disk_balance_args
static const struct fdesc balance_args[] = {
    FD_NUM("profiles", BA, profiles, 0),       FD_NUM("devid", BA, devid, 0),
    FD_NUM("target", BA, target, 0),	       FD_NUM("flags", BA, flags, 1),
    FD_NUM("usage_min", BA, usage_min, 0),     FD_NUM("usage_max", BA, usage_max, 0),
    FD_NUM("pstart", BA, pstart, 0),	       FD_NUM("pend", BA, pend, 1),
    FD_NUM("vstart", BA, vstart, 0),	       FD_NUM("vend", BA, vend, 0),
    FD_NUM("limit_min", BA, limit_min, 0),     FD_NUM("limit_max", BA, limit_max, 1),
    FD_NUM("stripes_min", BA, stripes_min, 0), FD_NUM("stripes_max", BA, stripes_max, 0),
};

static void balance_item(struct dcur *c)
{
	typedef struct btrfs_balance_item B;
	static const struct {
		const char *name;
		uint16_t off;
	} parts[] = {
	    {"data", FD_OFF(B, data)}, {"metadata", FD_OFF(B, meta)}, {"system", FD_OFF(B, sys)}};

	if (!dc_need(c, 0, sizeof(B), "balance item"))
		return;
	dc_u64(c, "flags", btk_le64(c->p));
	dc_brk(c);
	for (int i = 0; i < 3; i++) {
		dc_begin(c, parts[i].name, false);
		dc_brk(c); /* dump-tree prints the section name on its own line */
		DC_TABLE(c, parts[i].off, balance_args);
		dc_end(c);
		dc_brk(c);
	}
}

static uint32_t popcount_bytes(const uint8_t *p, uint32_t n)
{
	uint32_t bits = 0;

	for (uint32_t i = 0; i < n; i++)
		bits += (uint32_t)__builtin_popcount(p[i]);
	return bits;
}

static bool decode_fixed(struct dcur *c, uint8_t type)
{
	for (size_t i = 0; i < sizeof(fixed_items) / sizeof(fixed_items[0]); i++) {
		const struct fixed *f = &fixed_items[i];

		if (f->type != type)
			continue;
		if (dc_need(c, 0, f->size, f->what))
			dc_table(c, 0, f->fields, f->n);
		/* qgroup status grew an enable_gen field (simple quotas) */
		if (type == BTRFS_QGROUP_STATUS_KEY && c->size >= sizeof(QS) + 8)
			dc_u64(c, "enable_gen", btk_le64(c->p + sizeof(QS)));
		return true;
	}
	return false;
}

void dc_misc(struct dcur *c, uint8_t type)
{
	uint64_t objectid = c->key ? c->key->objectid : 0;
	uint64_t offset = c->key ? c->key->offset : 0;

	if (decode_fixed(c, type))
		return;
	switch (type) {
	case BTRFS_ORPHAN_ITEM_KEY:
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_FREE_SPACE_EXTENT_KEY:
	case BTRFS_QGROUP_RELATION_KEY:
		break;
	case BTRFS_FREE_SPACE_BITMAP_KEY:
		dc_u64(c, "bits_set", popcount_bytes(c->p, c->size));
		dc_hex(c, "bitmap", c->p, c->size);
		return;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		uuid_item(c);
		return;
	case BTRFS_STRING_ITEM_KEY:
		dc_str(c, "item_data", c->p, c->size);
		return;
	case BTRFS_PERSISTENT_ITEM_KEY:
		if (objectid == BTRFS_DEV_STATS_OBJECTID) {
			dev_stats(c);
			return;
		}
		break;
	case BTRFS_TEMPORARY_ITEM_KEY:
		if (objectid == BTRFS_BALANCE_OBJECTID) {
			balance_item(c);
			return;
		}
		break;
	case BTRFS_VERITY_DESC_ITEM_KEY:
		if (offset == 0) {
			if (dc_need(c, 0, sizeof(VD), "verity descriptor"))
				DC_TABLE(c, 0, verity_desc);
			return;
		}
		break;
	}
	/* Unknown types and items that should be empty but are not: show the bytes. */
	if (c->size)
		dc_hex(c, "hex", c->p, c->size);
}
