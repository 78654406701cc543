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

const char *btk_inode_flags_str(uint64_t flags, char *buf, size_t len)
{
	static const struct dc_bitname names[] = {
	    {1ULL << 0, "NODATASUM"},
	    {1ULL << 1, "NODATACOW"},
	    {1ULL << 2, "READONLY"},
	    {1ULL << 3, "NOCOMPRESS"},
	    {1ULL << 4, "PREALLOC"},
	    {1ULL << 5, "SYNC"},
	    {1ULL << 6, "IMMUTABLE"},
	    {1ULL << 7, "APPEND"},
	    {1ULL << 8, "NODUMP"},
	    {1ULL << 9, "NOATIME"},
	    {1ULL << 10, "DIRSYNC"},
	    {1ULL << 11, "COMPRESS"},
	    {BTK_INODE_ROOT_ITEM_INIT, "ROOT_ITEM_INIT"},
	    {0, NULL},
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
    {BTK_HEADER_FLAG_WRITTEN, "WRITTEN"},
    {BTK_HEADER_FLAG_RELOC, "RELOC"},
    {BTK_SUPER_FLAG_ERROR, "ERROR"},
    {BTK_SUPER_FLAG_SEEDING, "SEEDING"},
    {BTK_SUPER_FLAG_METADUMP, "METADUMP"},
    {BTK_SUPER_FLAG_METADUMP_V2, "METADUMP_V2"},
    {BTK_SUPER_FLAG_CHANGING_FSID, "CHANGING_FSID"},
    {BTK_SUPER_FLAG_CHANGING_FSID_V2, "CHANGING_FSID_V2"},
    {0, NULL},
};
static const struct dc_bitname compat_ro_bits[] = {
    {1ULL << 0, "FREE_SPACE_TREE"},
    {1ULL << 1, "FREE_SPACE_TREE_VALID"},
    {1ULL << 2, "VERITY"},
    {1ULL << 3, "BLOCK_GROUP_TREE"},
    {0, NULL},
};
static const struct dc_bitname incompat_bits[] = {
    {1ULL << 0, "MIXED_BACKREF"},
    {1ULL << 1, "DEFAULT_SUBVOL"},
    {1ULL << 2, "MIXED_GROUPS"},
    {1ULL << 3, "COMPRESS_LZO"},
    {1ULL << 4, "COMPRESS_ZSTD"},
    {1ULL << 5, "BIG_METADATA"},
    {1ULL << 6, "EXTENDED_IREF"},
    {1ULL << 7, "RAID56"},
    {1ULL << 8, "SKINNY_METADATA"},
    {1ULL << 9, "NO_HOLES"},
    {1ULL << 10, "METADATA_UUID"},
    {1ULL << 11, "RAID1C34"},
    {1ULL << 12, "ZONED"},
    {1ULL << 13, "EXTENT_TREE_V2"},
    {1ULL << 14, "RAID_STRIPE_TREE"},
    {1ULL << 16, "SIMPLE_QUOTA"},
    {0, NULL},
};

const char *dc_super_flags(uint64_t v, char *buf, size_t len)
{
	return bit_names(super_bits, v, true, "", buf, len);
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
