/* decode_items.c — inodes, names (inode refs, extrefs, dir items, root refs), file extents,
 * root items and chunks. Field offsets come from <linux/btrfs_tree.h>. */
#include <stdio.h>

#include "decode/decode_int.h"
#include "format/root_item.h"

#define II struct btrfs_inode_item
static const struct fdesc inode_fields[] = {
    FD_NUM("generation", II, generation, 0),
    FD_NUM("transid", II, transid, 0),
    FD_NUM("size", II, size, 0),
    FD_NUM("nbytes", II, nbytes, 1),
    FD_NUM("block_group", II, block_group, 0),
    {"mode", FD_OFF(II, mode), FD_SZ(II, mode), T_U, BTK_FMT_OCT, 0, NULL},
    FD_NUM("links", II, nlink, 0),
    FD_NUM("uid", II, uid, 0),
    FD_NUM("gid", II, gid, 0),
    FD_NUM("rdev", II, rdev, 1),
    FD_NUM("sequence", II, sequence, 0),
    {"flags", FD_OFF(II, flags), FD_SZ(II, flags), T_FLAGS, BTK_FMT_HEX, 1, dc_inode_flags},
    {"atime", FD_OFF(II, atime), FD_SZ(II, atime), T_TIME, 0, 1, NULL},
    {"ctime", FD_OFF(II, ctime), FD_SZ(II, ctime), T_TIME, 0, 1, NULL},
    {"mtime", FD_OFF(II, mtime), FD_SZ(II, mtime), T_TIME, 0, 1, NULL},
    {"otime", FD_OFF(II, otime), FD_SZ(II, otime), T_TIME, 0, 0, NULL},
};

void dc_inode_item(struct dcur *c, uint32_t base)
{
	if (!dc_need(c, base, sizeof(II), "inode item"))
		return;
	DC_TABLE(c, base, inode_fields);
}

/* Emits a name of len bytes at off, failing if it runs past the item. */
static bool dc_name(struct dcur *c, const char *label, uint32_t off, uint32_t len)
{
	if (!dc_need(c, off, len, label))
		return false;
	dc_str(c, label, c->p + off, len);
	return true;
}

static const char *dir_type_name(uint64_t v, char *buf, size_t len)
{
	static const char *const names[] = {NULL,   "FILE", "DIR",     "CHRDEV", "BLKDEV",
					    "FIFO", "SOCK", "SYMLINK", "XATTR"};

	if (v < sizeof(names) / sizeof(names[0]) && names[v])
		return names[v];
	snprintf(buf, len, "DIR_ITEM.%u", (unsigned)v);
	return buf;
}

#define DI struct btrfs_dir_item
static const struct fdesc dir_fields[] = {
    {"location", FD_OFF(DI, location), FD_SZ(DI, location), T_KEY, 0, 0, NULL},
    {"type", FD_OFF(DI, type), FD_SZ(DI, type), T_ENUM, BTK_FMT_NAME, 1, dir_type_name},
    FD_NUM("transid", DI, transid, 0),
    FD_NUM("data_len", DI, data_len, 0),
    FD_NUM("name_len", DI, name_len, 1),
};
#define IR struct btrfs_inode_ref
static const struct fdesc iref_fields[] = {
    FD_NUM("index", IR, index, 0),
    FD_NUM("namelen", IR, name_len, 0),
};
#define IX struct btrfs_inode_extref
static const struct fdesc extref_fields[] = {
    FD_NUM("index", IX, index, 0),
    FD_NUM("parent", IX, parent_objectid, 0),
    FD_NUM("namelen", IX, name_len, 0),
};

/* An item that is a packed run of entries, each a fixed header followed by its name and (dir
 * and xattr items) its data. */
struct named_run {
	const char *array, *what;
	uint32_t head;		    /* the header's size */
	uint16_t name_len;	    /* where the header holds the name's length (2 bytes) */
	uint16_t data_len;	    /* and the data's; 0: no data (a dir item's is not at 0) */
	const struct fdesc *fields; /* the header's fields, in output order */
	size_t nfields;
};

#define RUN(arr, w, S, data_len, f)                                                                \
	{                                                                                          \
		arr, w, sizeof(S), FD_OFF(S, name_len), data_len, f, sizeof(f) / sizeof((f)[0])    \
	}

void dc_named_run(struct dcur *c, uint8_t type)
{
	static const struct named_run iref = RUN("refs", "inode ref", IR, 0, iref_fields);
	static const struct named_run extref = RUN("refs", "inode extref", IX, 0, extref_fields);
	static const struct named_run dir =
	    RUN("entries", "dir item", DI, FD_OFF(DI, data_len), dir_fields);
	const struct named_run *k = type == BTRFS_INODE_REF_KEY	     ? &iref
				    : type == BTRFS_INODE_EXTREF_KEY ? &extref
								     : &dir;
	uint32_t cur = 0;

	dc_begin(c, k->array, true);
	while (cur < c->size && !c->failed) {
		if (!dc_need(c, cur, k->head, k->what))
			return;
		uint32_t nl = (uint32_t)dc_num(c, cur + k->name_len, 2);
		uint32_t dl = k->data_len ? (uint32_t)dc_num(c, cur + k->data_len, 2) : 0;

		dc_begin(c, NULL, false);
		dc_table(c, cur, k->fields, k->nfields);
		if (!dc_name(c, "name", cur + k->head, nl))
			return;
		if (dl) {
			dc_brk(c);
			if (!dc_name(c, "data", cur + k->head + nl, dl))
				return;
		}
		dc_end(c);
		cur += k->head + nl + dl;
	}
	dc_end(c);
}

static const char *fe_type_name(uint64_t v, char *buf, size_t len)
{
	(void)buf;
	(void)len;
	switch (v) {
	case BTRFS_FILE_EXTENT_INLINE:
		return "inline";
	case BTRFS_FILE_EXTENT_REG:
		return "regular";
	case BTRFS_FILE_EXTENT_PREALLOC:
		return "prealloc";
	default:
		return "unknown";
	}
}

static const char *compress_name(uint64_t v, char *buf, size_t len)
{
	if (v < BTK_COMPRESS_TYPES)
		return btk_compression_name((unsigned)v);
	snprintf(buf, len, "UNKNOWN.%u", (unsigned)v);
	return buf;
}

#define FE struct btrfs_file_extent_item
static const struct fdesc fe_head[] = {
    FD_NUM("generation", FE, generation, 0),
    {"type", FD_OFF(FE, type), FD_SZ(FE, type), T_ENUM, 0, 1, fe_type_name},
};
static const struct fdesc fe_tail[] = {
    {"compression", FD_OFF(FE, compression), FD_SZ(FE, compression), T_ENUM, 0, 0, compress_name},
    FD_NUM("encryption", FE, encryption, 0),
    FD_NUM("other_encoding", FE, other_encoding, 0),
};
static const struct fdesc fe_reg[] = {
    FD_NUM("disk_bytenr", FE, disk_bytenr, 0), FD_NUM("disk_num_bytes", FE, disk_num_bytes, 1),
    FD_NUM("offset", FE, offset, 0),	       FD_NUM("num_bytes", FE, num_bytes, 0),
    FD_NUM("ram_bytes", FE, ram_bytes, 1),
};

void dc_file_extent(struct dcur *c)
{
	const uint32_t inline_start = FD_OFF(FE, disk_bytenr);
	uint8_t type;

	if (!dc_need(c, 0, inline_start, "file extent"))
		return;
	type = c->p[FD_OFF(FE, type)];
	DC_TABLE(c, 0, fe_head);
	if (type == BTRFS_FILE_EXTENT_INLINE) {
		/* The data follows the header; compressed inline data is ram_bytes long once
		 * decompressed, data_size is what is stored. */
		dc_u64(c, "data_size", c->size - inline_start);
		dc_u64(c, "ram_bytes", dc_num(c, FD_OFF(FE, ram_bytes), 8));
		DC_TABLE(c, 0, fe_tail);
		return;
	}
	if (!dc_need(c, 0, sizeof(FE), "file extent"))
		return;
	DC_TABLE(c, 0, fe_reg);
	DC_TABLE(c, 0, fe_tail);
}

#define RI struct btrfs_root_item
static const struct fdesc root_fields[] = {
    FD_NUM("generation", RI, generation, 0),
    FD_NUM("root_dirid", RI, root_dirid, 0),
    FD_NUM("bytenr", RI, bytenr, 0),
    FD_NUM("byte_limit", RI, byte_limit, 0),
    FD_NUM("bytes_used", RI, bytes_used, 1),
    FD_NUM("last_snapshot", RI, last_snapshot, 0),
    {"flags", FD_OFF(RI, flags), FD_SZ(RI, flags), T_FLAGS, BTK_FMT_HEX, 0, dc_root_flags},
    FD_NUM("refs", RI, refs, 1),
    {"drop_progress", FD_OFF(RI, drop_progress), FD_SZ(RI, drop_progress), T_KEY, 0, 0, NULL},
    FD_NUM("drop_level", RI, drop_level, 1),
    FD_NUM("level", RI, level, 0),
};
static const struct fdesc root_v2[] = {
    {"uuid", FD_OFF(RI, uuid), FD_SZ(RI, uuid), T_UUID, 0, 1, NULL},
    {"parent_uuid", FD_OFF(RI, parent_uuid), FD_SZ(RI, parent_uuid), T_UUID, 0, 1, NULL},
    {"received_uuid", FD_OFF(RI, received_uuid), FD_SZ(RI, received_uuid), T_UUID, 0, 1, NULL},
    FD_NUM("ctransid", RI, ctransid, 0),
    FD_NUM("otransid", RI, otransid, 0),
    FD_NUM("stransid", RI, stransid, 0),
    FD_NUM("rtransid", RI, rtransid, 1),
    {"ctime", FD_OFF(RI, ctime), FD_SZ(RI, ctime), T_TIME, 0, 1, NULL},
    {"otime", FD_OFF(RI, otime), FD_SZ(RI, otime), T_TIME, 0, 1, NULL},
    {"stime", FD_OFF(RI, stime), FD_SZ(RI, stime), T_TIME, 0, 1, NULL},
    {"rtime", FD_OFF(RI, rtime), FD_SZ(RI, rtime), T_TIME, 0, 0, NULL},
};

void dc_root_item(struct dcur *c)
{
	struct btk_root_item ri;

	if (!dc_need(c, 0, BTK_ROOT_ITEM_V0_SIZE, "root item"))
		return;
	btk_root_item_parse(c->p, c->size, &ri);
	DC_TABLE(c, 0, root_fields);
	if (c->size < BTK_ROOT_ITEM_V0_SIZE + 8)
		return;
	dc_u64(c, "generation_v2", ri.generation_v2);
	dc_brk(c);
	/* As dump-tree: the v2 fields only when generation_v2 says they are valid. */
	if (ri.v2)
		DC_TABLE(c, 0, root_v2);
}

#define RR struct btrfs_root_ref
static const struct fdesc root_ref_fields[] = {
    FD_NUM("dirid", RR, dirid, 0),
    FD_NUM("sequence", RR, sequence, 0),
    FD_NUM("name_len", RR, name_len, 0),
};

void dc_root_ref(struct dcur *c)
{
	if (!dc_need(c, 0, sizeof(RR), "root ref"))
		return;
	DC_TABLE(c, 0, root_ref_fields);
	dc_name(c, "name", sizeof(RR), (uint32_t)dc_num(c, FD_OFF(RR, name_len), 2));
}

#define CH struct btrfs_chunk
static const struct fdesc chunk_fields[] = {
    FD_NUM("length", CH, length, 0),
    FD_NUM("owner", CH, owner, 0),
    FD_NUM("stripe_len", CH, stripe_len, 0),
    {"type", FD_OFF(CH, type), FD_SZ(CH, type), T_FLAGS, BTK_FMT_HEX, 1, dc_bg_flags},
    FD_NUM("io_align", CH, io_align, 0),
    FD_NUM("io_width", CH, io_width, 0),
    FD_NUM("sector_size", CH, sector_size, 1),
    FD_NUM("num_stripes", CH, num_stripes, 0),
    FD_NUM("sub_stripes", CH, sub_stripes, 0),
};
#define ST struct btrfs_stripe
static const struct fdesc stripe_fields[] = {
    FD_NUM("devid", ST, devid, 0),
    FD_NUM("offset", ST, offset, 1),
    {"dev_uuid", FD_OFF(ST, dev_uuid), FD_SZ(ST, dev_uuid), T_UUID, 0, 0, NULL},
};

void dc_chunk(struct dcur *c, uint32_t base)
{
	const uint32_t head = base + FD_OFF(CH, stripe);
	uint32_t n;

	if (!dc_need(c, base, sizeof(CH), "chunk item"))
		return;
	n = (uint32_t)dc_num(c, base + FD_OFF(CH, num_stripes), 2);
	DC_TABLE(c, base, chunk_fields);
	if (n == 0) {
		dc_fail(c, "chunk item has no stripes");
		return;
	}
	if (!dc_need(c, head, (uint64_t)n * sizeof(ST), "chunk stripes"))
		return;
	dc_begin(c, "stripes", true);
	for (uint32_t i = 0; i < n && !c->failed; i++) {
		dc_begin(c, NULL, false);
		dc_u64(c, "stripe", i); /* dump-tree's "stripe N" */
		DC_TABLE(c, head + i * sizeof(ST), stripe_fields);
		dc_end(c);
	}
	dc_end(c);
}
