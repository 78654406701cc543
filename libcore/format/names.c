/* names.c — symbolic names of key types, object ids and profiles, spelled as the kernel's
 * constants (without BTRFS_ / _KEY / _OBJECTID) and as `btrfs inspect-internal dump-tree`
 * prints them, so that dumps of both tools can be compared by eye and by script. */
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "format/format.h"
#include "format/raid.h"

struct id_name {
	uint64_t id;
	const char *name;
};

static const struct id_name key_types[] = {
    {BTRFS_INODE_ITEM_KEY, "INODE_ITEM"},
    {BTRFS_INODE_REF_KEY, "INODE_REF"},
    {BTRFS_INODE_EXTREF_KEY, "INODE_EXTREF"},
    {BTRFS_XATTR_ITEM_KEY, "XATTR_ITEM"},
    {BTRFS_VERITY_DESC_ITEM_KEY, "VERITY_DESC_ITEM"},
    {BTRFS_VERITY_MERKLE_ITEM_KEY, "VERITY_MERKLE_ITEM"},
    {BTRFS_ORPHAN_ITEM_KEY, "ORPHAN_ITEM"},
    {BTRFS_DIR_LOG_ITEM_KEY, "DIR_LOG_ITEM"},
    {BTRFS_DIR_LOG_INDEX_KEY, "DIR_LOG_INDEX"},
    {BTRFS_DIR_ITEM_KEY, "DIR_ITEM"},
    {BTRFS_DIR_INDEX_KEY, "DIR_INDEX"},
    {BTRFS_EXTENT_DATA_KEY, "EXTENT_DATA"},
    {120, "CSUM_ITEM"}, /* obsolete, still named by dump-tree */
    {BTRFS_EXTENT_CSUM_KEY, "EXTENT_CSUM"},
    {BTRFS_ROOT_ITEM_KEY, "ROOT_ITEM"},
    {BTRFS_ROOT_BACKREF_KEY, "ROOT_BACKREF"},
    {BTRFS_ROOT_REF_KEY, "ROOT_REF"},
    {BTRFS_EXTENT_ITEM_KEY, "EXTENT_ITEM"},
    {BTRFS_METADATA_ITEM_KEY, "METADATA_ITEM"},
    {172, "EXTENT_OWNER_REF"}, /* simple quotas (not in older uapi headers) */
    {BTRFS_TREE_BLOCK_REF_KEY, "TREE_BLOCK_REF"},
    {BTRFS_EXTENT_DATA_REF_KEY, "EXTENT_DATA_REF"},
    {BTRFS_EXTENT_REF_V0_KEY, "EXTENT_REF_V0"},
    {BTRFS_SHARED_BLOCK_REF_KEY, "SHARED_BLOCK_REF"},
    {BTRFS_SHARED_DATA_REF_KEY, "SHARED_DATA_REF"},
    {BTRFS_BLOCK_GROUP_ITEM_KEY, "BLOCK_GROUP_ITEM"},
    {BTRFS_FREE_SPACE_INFO_KEY, "FREE_SPACE_INFO"},
    {BTRFS_FREE_SPACE_EXTENT_KEY, "FREE_SPACE_EXTENT"},
    {BTRFS_FREE_SPACE_BITMAP_KEY, "FREE_SPACE_BITMAP"},
    {BTRFS_DEV_EXTENT_KEY, "DEV_EXTENT"},
    {BTRFS_DEV_ITEM_KEY, "DEV_ITEM"},
    {BTRFS_CHUNK_ITEM_KEY, "CHUNK_ITEM"},
    {BTRFS_QGROUP_STATUS_KEY, "QGROUP_STATUS"},
    {BTRFS_QGROUP_INFO_KEY, "QGROUP_INFO"},
    {BTRFS_QGROUP_LIMIT_KEY, "QGROUP_LIMIT"},
    {BTRFS_QGROUP_RELATION_KEY, "QGROUP_RELATION"},
    /* 248 is also BALANCE_ITEM and 249 DEV_STATS: dump-tree names the generic keys */
    {BTRFS_TEMPORARY_ITEM_KEY, "TEMPORARY_ITEM"},
    {BTRFS_PERSISTENT_ITEM_KEY, "PERSISTENT_ITEM"},
    {BTRFS_DEV_REPLACE_KEY, "DEV_REPLACE"},
    {BTRFS_UUID_KEY_SUBVOL, "UUID_KEY_SUBVOL"},
    {BTRFS_UUID_KEY_RECEIVED_SUBVOL, "UUID_KEY_RECEIVED_SUBVOL"},
    {BTRFS_STRING_ITEM_KEY, "STRING_ITEM"},
};

static const struct id_name objectids[] = {
    {BTRFS_ROOT_TREE_OBJECTID, "ROOT_TREE"},
    {BTRFS_EXTENT_TREE_OBJECTID, "EXTENT_TREE"},
    {BTRFS_CHUNK_TREE_OBJECTID, "CHUNK_TREE"},
    {BTRFS_DEV_TREE_OBJECTID, "DEV_TREE"},
    {BTRFS_FS_TREE_OBJECTID, "FS_TREE"},
    {BTRFS_ROOT_TREE_DIR_OBJECTID, "ROOT_TREE_DIR"},
    {BTRFS_CSUM_TREE_OBJECTID, "CSUM_TREE"},
    {BTRFS_QUOTA_TREE_OBJECTID, "QUOTA_TREE"},
    {BTRFS_UUID_TREE_OBJECTID, "UUID_TREE"},
    {BTRFS_FREE_SPACE_TREE_OBJECTID, "FREE_SPACE_TREE"},
    {BTRFS_BLOCK_GROUP_TREE_OBJECTID, "BLOCK_GROUP_TREE"},
    {BTRFS_BALANCE_OBJECTID, "BALANCE"},
    {BTRFS_ORPHAN_OBJECTID, "ORPHAN"},
    {BTRFS_TREE_LOG_OBJECTID, "TREE_LOG"},
    {BTRFS_TREE_LOG_FIXUP_OBJECTID, "LOG_FIXUP"},
    {BTRFS_TREE_RELOC_OBJECTID, "TREE_RELOC"},
    {BTRFS_DATA_RELOC_TREE_OBJECTID, "DATA_RELOC_TREE"},
    {BTRFS_EXTENT_CSUM_OBJECTID, "EXTENT_CSUM"},
    {BTRFS_FREE_SPACE_OBJECTID, "FREE_SPACE"},
    {BTRFS_FREE_INO_OBJECTID, "FREE_INO"},
    {BTRFS_MULTIPLE_OBJECTIDS, "MULTIPLE"},
    {(uint64_t)-1, "-1"},
};

#define N_ELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *lookup(const struct id_name *t, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id)
			return t[i].name;
	return NULL;
}

const char *btk_key_type_name(uint8_t type)
{
	return lookup(key_types, N_ELEM(key_types), type);
}

const char *btk_objectid_name(uint64_t id)
{
	return lookup(objectids, N_ELEM(objectids), id);
}

/* Tree headings as dump-tree prints them; other trees are file trees (subvolumes). */
static const struct id_name tree_titles[] = {
    {BTRFS_ROOT_TREE_OBJECTID, "root tree"},
    {BTRFS_CHUNK_TREE_OBJECTID, "chunk tree"},
    {BTRFS_EXTENT_TREE_OBJECTID, "extent tree"},
    {BTRFS_DEV_TREE_OBJECTID, "device tree"},
    {BTRFS_FS_TREE_OBJECTID, "fs tree"},
    {BTRFS_CSUM_TREE_OBJECTID, "checksum tree"},
    {BTRFS_QUOTA_TREE_OBJECTID, "quota tree"},
    {BTRFS_UUID_TREE_OBJECTID, "uuid tree"},
    {BTRFS_FREE_SPACE_TREE_OBJECTID, "free space tree"},
    {BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block group tree"},
    {BTRFS_DATA_RELOC_TREE_OBJECTID, "data reloc tree"},
    {BTRFS_TREE_RELOC_OBJECTID, "tree reloc tree"},
    {BTRFS_TREE_LOG_OBJECTID, "log tree"},
};

const char *btk_tree_title(uint64_t id)
{
	const char *t = lookup(tree_titles, N_ELEM(tree_titles), id);

	return t ? t : "file tree";
}

/* Short tree names as users type them (dump-tree -t accepts similar ones). */
static const struct id_name tree_aliases[] = {
    {BTRFS_ROOT_TREE_OBJECTID, "root"},
    {BTRFS_EXTENT_TREE_OBJECTID, "extent"},
    {BTRFS_CHUNK_TREE_OBJECTID, "chunk"},
    {BTRFS_DEV_TREE_OBJECTID, "dev"},
    {BTRFS_DEV_TREE_OBJECTID, "device"},
    {BTRFS_FS_TREE_OBJECTID, "fs"},
    {BTRFS_CSUM_TREE_OBJECTID, "csum"},
    {BTRFS_CSUM_TREE_OBJECTID, "checksum"},
    {BTRFS_QUOTA_TREE_OBJECTID, "quota"},
    {BTRFS_UUID_TREE_OBJECTID, "uuid"},
    {BTRFS_FREE_SPACE_TREE_OBJECTID, "free-space"},
    {BTRFS_FREE_SPACE_TREE_OBJECTID, "free_space"},
    {BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block-group"},
    {BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block_group"},
    {BTRFS_DATA_RELOC_TREE_OBJECTID, "data-reloc"},
    {BTRFS_DATA_RELOC_TREE_OBJECTID, "data_reloc"},
    {BTRFS_TREE_LOG_OBJECTID, "log"},
    {BTRFS_TREE_LOG_OBJECTID, "tree-log"},
    {BTRFS_TREE_LOG_OBJECTID, "tree_log"},
    {BTRFS_TREE_RELOC_OBJECTID, "tree-reloc"},
};

static int parse_number(const char *s, uint64_t *id)
{
	char *end;
	int neg = s[0] == '-';

	errno = 0;
	unsigned long long v = strtoull(s + neg, &end, 0);
	if (errno || end == s + neg || *end)
		return -EINVAL;
	/* Negative ids such as -9 (DATA_RELOC_TREE) are written as dump-tree prints them. */
	*id = neg ? (uint64_t)0 - v : v;
	return 0;
}

int btk_tree_id_parse(const char *s, uint64_t *id)
{
	if (!s || !*s)
		return -EINVAL;
	if ((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9'))
		return parse_number(s, id);
	for (size_t i = 0; i < N_ELEM(tree_aliases); i++)
		if (!strcasecmp(s, tree_aliases[i].name)) {
			*id = tree_aliases[i].id;
			return 0;
		}
	for (size_t i = 0; i < N_ELEM(objectids); i++) {
		const char *n = objectids[i].name;
		size_t len = strlen(s);

		if (!strcasecmp(s, n) && n[0] != '-') {
			*id = objectids[i].id;
			return 0;
		}
		/* "extent_tree" as well as "EXTENT_TREE"; also "EXTENT" for "EXTENT_TREE". */
		if (strlen(n) == len + 5 && !strncasecmp(s, n, len) && !strcmp(n + len, "_TREE")) {
			*id = objectids[i].id;
			return 0;
		}
	}
	return -EINVAL;
}

const char *btk_profile_name(uint64_t flags)
{
	const struct btk_raid_attr *ra = btk_raid_attr(flags);

	return ra ? ra->name : "unknown";
}

const char *btk_compression_name(unsigned type)
{
	static const char *const names[BTK_COMPRESS_TYPES] = {
	    [BTK_COMPRESS_NONE] = "none",
	    [BTK_COMPRESS_ZLIB] = "zlib",
	    [BTK_COMPRESS_LZO] = "lzo",
	    [BTK_COMPRESS_ZSTD] = "zstd",
	};

	return type < BTK_COMPRESS_TYPES ? names[type] : "unknown";
}
