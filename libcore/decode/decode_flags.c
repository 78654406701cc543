/* decode_flags.c — the names of flag bits (superblock features, inode, root, extent, block
 * group, free space and quota flags), spelled as `btrfs inspect-internal dump-tree` and
 * dump-super print them: one table a field, one function that names the bits. */
#include <stdio.h>
#include <string.h>

#include "decode/decode_int.h"
#include "format/extent_refs.h"

struct dc_bitname {
	uint64_t bit;
	const char *name;
};

/* Appends name to buf with a '|' separator. */
static void add_name(char *buf, size_t len, const char *name)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? "|" : "", name);
}

static const char *bit_names(const struct dc_bitname *t, uint64_t v, bool unknown, const char *none,
			     char *buf, size_t len)
{
	char u[40];

	buf[0] = 0;
	for (; t->name; t++)
		if (v & t->bit) {
			add_name(buf, len, t->name);
			v &= ~t->bit;
		}
	if (v && unknown) {
		snprintf(u, sizeof(u), "unknown flag: 0x%llx", (unsigned long long)v);
		add_name(buf, len, u);
	}
	if (!buf[0])
		snprintf(buf, len, "%s", none);
	return buf;
}

/* The name of each bit is its constant's name (format.h): one token says both. */
#define INODE_BIT(n)                                                                               \
	{                                                                                          \
		BTK_INODE_##n, #n                                                                  \
	}
#define SUPER_BIT(n)                                                                               \
	{                                                                                          \
		BTK_SUPER_FLAG_##n, #n                                                             \
	}
#define HEADER_BIT(n)                                                                              \
	{                                                                                          \
		BTK_HEADER_FLAG_##n, #n                                                            \
	}
#define FEATURE(w, n)                                                                              \
	{                                                                                          \
		BTRFS_FEATURE_##w##_##n, #n                                                        \
	}

const char *btk_inode_flags_str(uint64_t flags, char *buf, size_t len)
{
	static const struct dc_bitname names[] = {
	    INODE_BIT(NODATASUM),      INODE_BIT(NODATACOW),
	    INODE_BIT(READONLY),       INODE_BIT(NOCOMPRESS),
	    INODE_BIT(PREALLOC),       INODE_BIT(SYNC),
	    INODE_BIT(IMMUTABLE),      INODE_BIT(APPEND),
	    INODE_BIT(NODUMP),	       INODE_BIT(NOATIME),
	    INODE_BIT(DIRSYNC),	       INODE_BIT(COMPRESS),
	    INODE_BIT(ROOT_ITEM_INIT), {0, NULL},
	};

	return bit_names(names, flags, false, "none", buf, len);
}

const char *btk_bg_flags_str(uint64_t flags, char *buf, size_t len)
{
	char up[16];
	const char *p;
	unsigned i;

	buf[0] = 0;
	if (flags & BTRFS_BLOCK_GROUP_DATA)
		add_name(buf, len, "DATA");
	if (flags & BTRFS_BLOCK_GROUP_METADATA)
		add_name(buf, len, "METADATA");
	if (flags & BTRFS_BLOCK_GROUP_SYSTEM)
		add_name(buf, len, "SYSTEM");
	p = btk_profile_name(flags);
	if (!strcmp(p, "unknown")) {
		snprintf(up, sizeof(up), "UNKNOWN.0x%llx",
			 (unsigned long long)(flags & BTRFS_BLOCK_GROUP_PROFILE_MASK));
		add_name(buf, len, up);
	} else if (strcmp(p, "single")) {
		for (i = 0; p[i] && i < sizeof(up) - 1; i++)
			up[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
		up[i] = 0;
		add_name(buf, len, up);
	}
	return buf;
}

const char *dc_bg_flags(uint64_t v, char *buf, size_t len)
{
	return btk_bg_flags_str(v, buf, len);
}

const char *dc_inode_flags(uint64_t v, char *buf, size_t len)
{
	return btk_inode_flags_str(v, buf, len);
}

static const struct dc_bitname super_bits[] = {
    HEADER_BIT(WRITTEN),      HEADER_BIT(RELOC),	   SUPER_BIT(ERROR),
    SUPER_BIT(SEEDING),	      SUPER_BIT(METADUMP),	   SUPER_BIT(METADUMP_V2),
    SUPER_BIT(CHANGING_FSID), SUPER_BIT(CHANGING_FSID_V2), {0, NULL},
};
static const struct dc_bitname compat_ro_bits[] = {
    FEATURE(COMPAT_RO, FREE_SPACE_TREE),
    FEATURE(COMPAT_RO, FREE_SPACE_TREE_VALID),
    FEATURE(COMPAT_RO, VERITY),
    FEATURE(COMPAT_RO, BLOCK_GROUP_TREE),
    {0, NULL},
};
static const struct dc_bitname incompat_bits[] = {
    FEATURE(INCOMPAT, MIXED_BACKREF),
    FEATURE(INCOMPAT, DEFAULT_SUBVOL),
    FEATURE(INCOMPAT, MIXED_GROUPS),
    FEATURE(INCOMPAT, COMPRESS_LZO),
    FEATURE(INCOMPAT, COMPRESS_ZSTD),
    FEATURE(INCOMPAT, BIG_METADATA),
    FEATURE(INCOMPAT, EXTENDED_IREF),
    FEATURE(INCOMPAT, RAID56),
    FEATURE(INCOMPAT, SKINNY_METADATA),
    FEATURE(INCOMPAT, NO_HOLES),
    FEATURE(INCOMPAT, METADATA_UUID),
    FEATURE(INCOMPAT, RAID1C34),
    FEATURE(INCOMPAT, ZONED),
    FEATURE(INCOMPAT, EXTENT_TREE_V2),
    FEATURE(INCOMPAT, RAID_STRIPE_TREE),
    FEATURE(INCOMPAT, SIMPLE_QUOTA),
    {0, NULL},
};

const char *dc_super_flags(uint64_t v, char *buf, size_t len)
{
	return bit_names(super_bits, v, true, "", buf, len);
}

const char *dc_header_flags(uint64_t v, char *buf, size_t len)
{
	static const struct dc_bitname t[] = {HEADER_BIT(WRITTEN), HEADER_BIT(RELOC), {0, NULL}};

	return bit_names(t, v, false, "", buf, len);
}

const char *dc_compat_ro_flags(uint64_t v, char *buf, size_t len)
{
	return bit_names(compat_ro_bits, v, true, "", buf, len);
}

const char *dc_incompat_flags(uint64_t v, char *buf, size_t len)
{
	return bit_names(incompat_bits, v, true, "", buf, len);
}

const char *dc_root_flags(uint64_t v, char *buf, size_t len)
{
	static const struct dc_bitname t[] = {{BTRFS_ROOT_SUBVOL_RDONLY, "RDONLY"}, {0, NULL}};

	return bit_names(t, v, false, "none", buf, len);
}

const char *dc_fsi_flags(uint64_t v, char *buf, size_t len)
{
	static const struct dc_bitname t[] = {{BTRFS_FREE_SPACE_USING_BITMAPS, "USING_BITMAPS"},
					      {0, NULL}};

	return bit_names(t, v, false, "none", buf, len);
}

const char *dc_qgroup_flags(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", (v & BTRFS_QGROUP_STATUS_FLAG_ON) ? "ON" : "OFF",
		 (v & BTRFS_QGROUP_STATUS_FLAG_RESCAN) ? "|SCANNING" : "",
		 (v & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT) ? "|INCONSISTENT" : "");
	return buf;
}

const char *dc_extent_flags(uint64_t v, char *buf, size_t len)
{
	static const struct dc_bitname t[] = {{BTRFS_EXTENT_FLAG_DATA, "DATA"},
					      {BTRFS_EXTENT_FLAG_TREE_BLOCK, "TREE_BLOCK"},
					      {BTRFS_BLOCK_FLAG_FULL_BACKREF, "FULL_BACKREF"},
					      {0, NULL}};

	return bit_names(t, v, false, "", buf, len);
}
