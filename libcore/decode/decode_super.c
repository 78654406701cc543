/* decode_super.c — superblock and tree-block header decoding, with the names that
 * `btrfs inspect-internal dump-super -f` uses. */
#include <errno.h>
#include <stdio.h>

#include "base/csum.h"
#include "decode/decode_int.h"

#define SB     struct btk_super
#define OFF(f) ((uint16_t)offsetof(SB, f))
#define U(l, f, w)                                                                                 \
	{                                                                                          \
		l, OFF(f), w, T_U, BTK_FMT_DEC, 0, NULL                                            \
	}

static const char *csum_name(uint64_t v, char *buf, size_t len)
{
	if (v < 4 && btk_csum_name((int)v))
		return btk_csum_name((int)v);
	snprintf(buf, len, "INVALID");
	return buf;
}

/* An unknown type's checksum shows as the whole field, as dump-super does. */
static size_t csum_size(uint16_t type)
{
	int n = btk_csum_size(type);

	return n > 0 ? (size_t)n : FD_SZ(SB, csum);
}

static const struct fdesc super_a[] = {
    U("bytenr", bytenr, 8),
    {"flags", OFF(flags), 8, T_FLAGS, BTK_FMT_HEX, 0, dc_super_flags},
};
static const struct fdesc super_b[] = {
    U("generation", generation, 8),
    U("root", root, 8),
    U("sys_array_size", sys_chunk_array_size, 4),
    U("chunk_root_generation", chunk_root_generation, 8),
    U("root_level", root_level, 1),
    U("chunk_root", chunk_root, 8),
    U("chunk_root_level", chunk_root_level, 1),
    U("log_root", log_root, 8),
    U("log_root_transid", log_root_transid, 8),
    U("log_root_level", log_root_level, 1),
    U("total_bytes", total_bytes, 8),
    U("bytes_used", bytes_used, 8),
    U("sectorsize", sectorsize, 4),
    U("nodesize", nodesize, 4),
    U("leafsize", leafsize, 4),
    U("stripesize", stripesize, 4),
    U("root_dir", root_dir_objectid, 8),
    U("num_devices", num_devices, 8),
    {"compat_flags", OFF(compat_flags), 8, T_U, BTK_FMT_HEX, 0, NULL},
    {"compat_ro_flags", OFF(compat_ro_flags), 8, T_FLAGS, BTK_FMT_HEX, 0, dc_compat_ro_flags},
    {"incompat_flags", OFF(incompat_flags), 8, T_FLAGS, BTK_FMT_HEX, 0, dc_incompat_flags},
    U("cache_generation", cache_generation, 8),
    U("uuid_tree_generation", uuid_tree_generation, 8),
    U("nr_global_roots", nr_global_roots, 8),
};

#define RB(f) ((uint16_t)offsetof(struct btk_root_backup, f))
#define BK(l, f, w)                                                                                \
	{                                                                                          \
		l, RB(f), w, T_U, BTK_FMT_DEC, 1, NULL                                             \
	}
static const struct fdesc backup_fields[] = {
    BK("backup_tree_root", tree_root, 8),
    BK("backup_tree_root_gen", tree_root_gen, 8),
    BK("backup_tree_root_level", tree_root_level, 1),
    BK("backup_chunk_root", chunk_root, 8),
    BK("backup_chunk_root_gen", chunk_root_gen, 8),
    BK("backup_chunk_root_level", chunk_root_level, 1),
    BK("backup_extent_root", extent_root, 8),
    BK("backup_extent_root_gen", extent_root_gen, 8),
    BK("backup_extent_root_level", extent_root_level, 1),
    BK("backup_fs_root", fs_root, 8),
    BK("backup_fs_root_gen", fs_root_gen, 8),
    BK("backup_fs_root_level", fs_root_level, 1),
    BK("backup_dev_root", dev_root, 8),
    BK("backup_dev_root_gen", dev_root_gen, 8),
    BK("backup_dev_root_level", dev_root_level, 1),
    BK("backup_csum_root", csum_root, 8),
    BK("backup_csum_root_gen", csum_root_gen, 8),
    BK("backup_csum_root_level", csum_root_level, 1),
    BK("backup_total_bytes", total_bytes, 8),
    BK("backup_bytes_used", bytes_used, 8),
    BK("backup_num_devices", num_devices, 8),
};

static void sys_array(struct dcur *c, const SB *sb)
{
	uint32_t size = btk_le32(sb->sys_chunk_array_size), cur, base = OFF(sys_chunk_array);
	struct btk_key k;

	if (size > BTK_SYS_ARRAY_SIZE) {
		dc_fail(c, "sys_array_size %u exceeds %u", size, BTK_SYS_ARRAY_SIZE);
		return;
	}
	/* Bounds checks below are against the array's declared end. */
	c->size = base + size;
	dc_begin(c, "sys_chunk_array", true);
	for (cur = base; cur < c->size && !c->failed;) {
		if (!dc_need(c, cur, sizeof(struct btk_disk_key), "sys array key"))
			return;
		btk_disk_to_key((const struct btk_disk_key *)(c->p + cur), &k);
		if (k.type != BTRFS_CHUNK_ITEM_KEY) {
			dc_fail(c, "unexpected item type %u in sys_array at offset %u", k.type,
				cur - base);
			return;
		}
		cur += sizeof(struct btk_disk_key);
		dc_begin(c, NULL, false);
		dc_key(c, "key", &k);
		dc_brk(c);
		dc_chunk(c, cur);
		dc_end(c);
		if (c->failed)
			return;
		cur += offsetof(struct btrfs_chunk, stripe) +
		       (uint32_t)dc_num(c, cur + offsetof(struct btrfs_chunk, num_stripes), 2) *
			   sizeof(struct btrfs_stripe);
	}
	dc_end(c);
	c->size = sizeof(SB);
}

static void backups(struct dcur *c, const SB *sb)
{
	dc_begin(c, "backup_roots", true);
	for (int i = 0; i < BTK_NUM_BACKUP_ROOTS; i++) {
		const struct btk_root_backup *b = &sb->super_roots[i];

		if (!btk_le64(b->tree_root) && !btk_le64(b->tree_root_gen))
			continue;
		dc_begin(c, NULL, false);
		dc_u64(c, "index", (uint64_t)i);
		dc_brk(c);
		dc_table(c, OFF(super_roots) + i * sizeof(*b), backup_fields,
			 sizeof(backup_fields) / sizeof(backup_fields[0]));
		dc_end(c);
	}
	dc_end(c);
}

int btk_decode_super(const struct btk_super *sb, const struct btk_sink *sink)
{
	struct dcur c;
	uint16_t ct = btk_le16(sb->csum_type);
	char buf[64];
	size_t lablen = strnlen(sb->label, BTK_LABEL_SIZE);
	bool mu = btk_le64(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID;

	dc_init(&c, sink, (const uint8_t *)sb, sizeof(*sb), NULL, NULL);
	dc_text(&c, BTK_F_ENUM, "csum_type", ct, csum_name(ct, buf, sizeof(buf)));
	dc_u64(&c, "csum_size", csum_size(ct));
	dc_hex(&c, "csum", sb->csum, csum_size(ct));
	DC_TABLE(&c, 0, super_a);
	dc_str(&c, "magic", sb->magic, sizeof(sb->magic));
	dc_uuid(&c, "fsid", sb->fsid);
	dc_uuid(&c, "metadata_uuid", mu ? sb->metadata_uuid : sb->fsid);
	dc_str(&c, "label", (const uint8_t *)sb->label, lablen);
	DC_TABLE(&c, 0, super_b);
	dc_begin(&c, "dev_item", false);
	dc_table(&c, OFF(dev_item), btk_dev_item_fields, btk_dev_item_nfields);
	dc_end(&c);
	sys_array(&c, sb);
	backups(&c, sb);
	return c.failed ? -EUCLEAN : 0;
}

void btk_decode_header(const struct btk_header *h, int csize, const struct btk_sink *sink)
{
	struct dcur c;
	uint64_t flags = btk_le64(h->flags);
	uint64_t low = flags & ((1ULL << BTK_BACKREF_REV_SHIFT) - 1);
	char buf[64];

	dc_init(&c, sink, (const uint8_t *)h, sizeof(*h), NULL, NULL);
	dc_u64(&c, "bytenr", btk_le64(h->bytenr));
	dc_u64(&c, "level", h->level);
	dc_u64(&c, "nritems", btk_le32(h->nritems));
	dc_u64(&c, "generation", btk_le64(h->generation));
	dc_u64f(&c, "owner", btk_le64(h->owner), BTK_FMT_OBJID);
	dc_brk(&c);
	dc_text(&c, BTK_F_FLAGS, "flags", low, dc_header_flags(low, buf, sizeof(buf)));
	dc_u64(&c, "backref_rev", flags >> BTK_BACKREF_REV_SHIFT);
	dc_hex(&c, "csum", h->csum, csize > 0 && csize <= 32 ? (size_t)csize : 32);
	dc_brk(&c);
	dc_uuid(&c, "fsid", h->fsid);
	dc_brk(&c);
	dc_uuid(&c, "chunk_tree_uuid", h->chunk_tree_uuid);
}
