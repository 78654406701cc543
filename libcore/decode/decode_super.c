/* decode_super.c — superblock and tree-block header decoding, with the names that
 * `btrfs inspect-internal dump-super -f` uses. */
#include <errno.h>
#include <stdio.h>

#include "base/csum.h"
#include "decode/decode_int.h"

#define SB	struct btk_super
#define OFF(f)	((uint16_t)offsetof(SB, f))
#define U(l, f) FD_NUM(l, SB, f, 0)

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
    U("bytenr", bytenr),
    {"flags", OFF(flags), FD_SZ(SB, flags), T_FLAGS, BTK_FMT_HEX, 0, dc_super_flags},
};
static const struct fdesc super_b[] = {
    U("generation", generation),
    U("root", root),
    U("sys_array_size", sys_chunk_array_size),
    U("chunk_root_generation", chunk_root_generation),
    U("root_level", root_level),
    U("chunk_root", chunk_root),
    U("chunk_root_level", chunk_root_level),
    U("log_root", log_root),
    U("log_root_transid", log_root_transid),
    U("log_root_level", log_root_level),
    U("total_bytes", total_bytes),
    U("bytes_used", bytes_used),
    U("sectorsize", sectorsize),
    U("nodesize", nodesize),
    U("leafsize", leafsize),
    U("stripesize", stripesize),
    U("root_dir", root_dir_objectid),
    U("num_devices", num_devices),
    {"compat_flags", OFF(compat_flags), FD_SZ(SB, compat_flags), T_U, BTK_FMT_HEX, 0, NULL},
    {"compat_ro_flags", OFF(compat_ro_flags), FD_SZ(SB, compat_ro_flags), T_FLAGS, BTK_FMT_HEX, 0,
     dc_compat_ro_flags},
    {"incompat_flags", OFF(incompat_flags), FD_SZ(SB, incompat_flags), T_FLAGS, BTK_FMT_HEX, 0,
     dc_incompat_flags},
    U("cache_generation", cache_generation),
    U("uuid_tree_generation", uuid_tree_generation),
    U("nr_global_roots", nr_global_roots),
};

#define BK(l, f) FD_NUM(l, struct btk_root_backup, f, 1)
static const struct fdesc backup_fields[] = {
    BK("backup_tree_root", tree_root),
    BK("backup_tree_root_gen", tree_root_gen),
    BK("backup_tree_root_level", tree_root_level),
    BK("backup_chunk_root", chunk_root),
    BK("backup_chunk_root_gen", chunk_root_gen),
    BK("backup_chunk_root_level", chunk_root_level),
    BK("backup_extent_root", extent_root),
    BK("backup_extent_root_gen", extent_root_gen),
    BK("backup_extent_root_level", extent_root_level),
    BK("backup_fs_root", fs_root),
    BK("backup_fs_root_gen", fs_root_gen),
    BK("backup_fs_root_level", fs_root_level),
    BK("backup_dev_root", dev_root),
    BK("backup_dev_root_gen", dev_root_gen),
    BK("backup_dev_root_level", dev_root_level),
    BK("backup_csum_root", csum_root),
    BK("backup_csum_root_gen", csum_root_gen),
    BK("backup_csum_root_level", csum_root_level),
    BK("backup_total_bytes", total_bytes),
    BK("backup_bytes_used", bytes_used),
    BK("backup_num_devices", num_devices),
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
