/* format.h — btrfs on-disk structures and constants (layer 0).
 *
 * The kernel's <linux/btrfs_tree.h> supplies item structures, key types and object ids; this
 * file adds what it lacks (superblock, tree-block header, items, node pointers) and
 * little-endian accessors. Every on-disk struct is packed and little-endian: read fields only
 * through the get/put helpers below, never by casting to host integers.
 */
#ifndef BTK_FORMAT_H
#define BTK_FORMAT_H

#include <endian.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <linux/btrfs_tree.h>
#include <linux/btrfs.h>

#define BTK_MAGIC	     0x4D5F53665248425FULL /* "_BHRfS_M" */
#define BTK_SUPER_SIZE	     4096
#define BTK_SUPER_MIRRORS    3
#define BTK_SUPER_OFFSET     65536ULL
#define BTK_SYS_ARRAY_SIZE   2048
#define BTK_MAX_INLINE	     2048 /* the kernel's default max_inline: larger files get extents */
#define BTK_NUM_BACKUP_ROOTS 4
#define BTK_LABEL_SIZE	     256
#define BTK_MAX_LEVEL	     8
#define BTK_FSID_SIZE	     16
#define BTK_UUID_SIZE	     16
#define BTK_STRIPE_LEN	     65536ULL
#define BTK_NAME_MAX	     255

/* Sector and node sizes btrfs allows: powers of two, sectors of 4 KiB to 64 KiB, nodes of a
 * sector to 64 KiB. */
#define BTK_MIN_SECTORSIZE 4096
#define BTK_MAX_SECTORSIZE 65536
#define BTK_MAX_NODESIZE   65536
/* The largest data extent the kernel makes: file extents are cut at it. */
#define BTK_MAX_EXTENT_SIZE (128ULL << 20)
/* The most file bytes one compressed extent holds (its ram_bytes; the kernel's
 * BTRFS_MAX_UNCOMPRESSED). */
#define BTK_MAX_COMPRESSED_IN (128 * 1024)
/* The bytes at the start of every device that btrfs never allocates (boot loaders, the
 * primary superblock at BTK_SUPER_OFFSET). */
#define BTK_DEV_RESERVED 0x100000ULL

/* Superblock flags (not in the uapi headers). */
#define BTK_SUPER_FLAG_ERROR		(1ULL << 2)
#define BTK_SUPER_FLAG_SEEDING		(1ULL << 32)
#define BTK_SUPER_FLAG_METADUMP		(1ULL << 33)
#define BTK_SUPER_FLAG_METADUMP_V2	(1ULL << 34)
#define BTK_SUPER_FLAG_CHANGING_FSID	(1ULL << 35)
#define BTK_SUPER_FLAG_CHANGING_FSID_V2 (1ULL << 36)

/* Tree-block header flags; the top byte holds the backref revision. */
#define BTK_HEADER_FLAG_WRITTEN (1ULL << 0)
#define BTK_HEADER_FLAG_RELOC	(1ULL << 1)
#define BTK_BACKREF_REV_SHIFT	56
#define BTK_MIXED_BACKREF_REV	1

/* Inode flags (btrfs_inode_item.flags). */
#define BTK_INODE_NODATASUM  (1ULL << 0)
#define BTK_INODE_NODATACOW  (1ULL << 1)
#define BTK_INODE_READONLY   (1ULL << 2)
#define BTK_INODE_NOCOMPRESS (1ULL << 3)
#define BTK_INODE_PREALLOC   (1ULL << 4)
#define BTK_INODE_SYNC	     (1ULL << 5)
#define BTK_INODE_IMMUTABLE  (1ULL << 6)
#define BTK_INODE_APPEND     (1ULL << 7)
#define BTK_INODE_NODUMP     (1ULL << 8)
#define BTK_INODE_NOATIME    (1ULL << 9)
#define BTK_INODE_DIRSYNC    (1ULL << 10)
#define BTK_INODE_COMPRESS   (1ULL << 11)
/* Only in the inode item embedded in a ROOT_ITEM: the item's flags and byte_limit are valid.
 * When it loads an fs tree whose item lacks it, the kernel zeroes flags (so RDONLY is lost)
 * and byte_limit, as for items of very old kernels. */
#define BTK_INODE_ROOT_ITEM_INIT (1ULL << 31)

/* What a conversion (btrfs-convert, btk-convert) keeps for its rollback: the source
 * filesystem as file "image", inode 257 with the READONLY flag (which only convert sets; the
 * kernel refuses writes to it), in the top directory of subvolume 256, named ext2_saved
 * (reiserfs_saved; ext2_saved.N when the source root had that name). Both rollbacks find it
 * by these numbers, not by the subvolume's name. */
#define BTK_CONVERT_SUBVOL     256ULL
#define BTK_CONVERT_IMAGE_INO  257ULL
#define BTK_CONVERT_IMAGE_NAME "image"

#ifndef BTRFS_BLOCK_GROUP_TREE_OBJECTID
#define BTRFS_BLOCK_GROUP_TREE_OBJECTID 11ULL
#endif
#ifndef BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
#define BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE (1ULL << 3)
#endif
#ifndef BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE
#define BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE (1ULL << 14)
#endif
#ifndef BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA
#define BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA (1ULL << 16)
#endif
/* simple quotas (kernel 6.7): the status item's flag, and its size with the enable_gen field
 * (the generation from which extents carry an owner and are counted) after `rescan` */
#ifndef BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE
#define BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE (1ULL << 3)
#endif
#define BTK_QGROUP_STATUS_SIMPLE_SIZE 40

struct btk_disk_key {
	uint8_t objectid[8];
	uint8_t type;
	uint8_t offset[8];
} __attribute__((packed));

struct btk_root_backup {
	uint8_t tree_root[8], tree_root_gen[8];
	uint8_t chunk_root[8], chunk_root_gen[8];
	uint8_t extent_root[8], extent_root_gen[8];
	uint8_t fs_root[8], fs_root_gen[8];
	uint8_t dev_root[8], dev_root_gen[8];
	uint8_t csum_root[8], csum_root_gen[8];
	uint8_t total_bytes[8], bytes_used[8], num_devices[8];
	uint8_t unused_64[4][8];
	uint8_t tree_root_level, chunk_root_level, extent_root_level;
	uint8_t fs_root_level, dev_root_level, csum_root_level;
	uint8_t unused_8[10];
} __attribute__((packed));

/* struct btrfs_dev_item as raw bytes (98 bytes), decoded through btrfs_tree.h offsets. */
struct btk_super {
	uint8_t csum[32];
	uint8_t fsid[16];
	uint8_t bytenr[8];
	uint8_t flags[8];
	uint8_t magic[8];
	uint8_t generation[8];
	uint8_t root[8];
	uint8_t chunk_root[8];
	uint8_t log_root[8];
	uint8_t log_root_transid[8];
	uint8_t total_bytes[8];
	uint8_t bytes_used[8];
	uint8_t root_dir_objectid[8];
	uint8_t num_devices[8];
	uint8_t sectorsize[4];
	uint8_t nodesize[4];
	uint8_t leafsize[4];
	uint8_t stripesize[4];
	uint8_t sys_chunk_array_size[4];
	uint8_t chunk_root_generation[8];
	uint8_t compat_flags[8];
	uint8_t compat_ro_flags[8];
	uint8_t incompat_flags[8];
	uint8_t csum_type[2];
	uint8_t root_level;
	uint8_t chunk_root_level;
	uint8_t log_root_level;
	uint8_t dev_item[sizeof(struct btrfs_dev_item)];
	char label[BTK_LABEL_SIZE];
	uint8_t cache_generation[8];
	uint8_t uuid_tree_generation[8];
	uint8_t metadata_uuid[16];
	uint8_t nr_global_roots[8];
	uint8_t reserved[27][8];
	uint8_t sys_chunk_array[BTK_SYS_ARRAY_SIZE];
	struct btk_root_backup super_roots[BTK_NUM_BACKUP_ROOTS];
	uint8_t padding[565];
} __attribute__((packed));

struct btk_header {
	uint8_t csum[32];
	uint8_t fsid[16];
	uint8_t bytenr[8];
	uint8_t flags[8];
	uint8_t chunk_tree_uuid[16];
	uint8_t generation[8];
	uint8_t owner[8];
	uint8_t nritems[4];
	uint8_t level;
} __attribute__((packed));

struct btk_item {
	struct btk_disk_key key;
	uint8_t offset[4]; /* from the end of the header */
	uint8_t size[4];
} __attribute__((packed));

struct btk_key_ptr {
	struct btk_disk_key key;
	uint8_t blockptr[8];
	uint8_t generation[8];
} __attribute__((packed));

/* Sizes and field offsets of the structures above: checked at compile time in ondisk.c. */

/* A key in host order. Keys sort by objectid, then type, then offset. */
struct btk_key {
	uint64_t objectid;
	uint8_t type;
	uint64_t offset;
};

/* Little-endian access to unaligned bytes. */
static inline uint16_t btk_le16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}
static inline uint32_t btk_le32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}
static inline uint64_t btk_le64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}
static inline void btk_put16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}
static inline void btk_put32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}
static inline void btk_put64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* True for ids that hold files: FS_TREE (5) and subvolume ids 256..BTRFS_LAST_FREE_OBJECTID
 * (the trees qgroups account). */
static inline bool btk_is_fs_tree(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

/* Field of a uapi struct (whose fields are __le types) at a possibly unaligned address. */
#define BTK_GET(type, ptr, field)                                                                  \
	(sizeof(((type *)0)->field) == 8                                                           \
	     ? btk_le64((const uint8_t *)(ptr) + offsetof(type, field))                            \
	 : sizeof(((type *)0)->field) == 4                                                         \
	     ? btk_le32((const uint8_t *)(ptr) + offsetof(type, field))                            \
	 : sizeof(((type *)0)->field) == 2                                                         \
	     ? btk_le16((const uint8_t *)(ptr) + offsetof(type, field))                            \
	     : *((const uint8_t *)(ptr) + offsetof(type, field)))
#define BTK_PUT(type, ptr, field, v)                                                               \
	do {                                                                                       \
		uint8_t *p_ = (uint8_t *)(ptr) + offsetof(type, field);                            \
		switch (sizeof(((type *)0)->field)) {                                              \
		case 8:                                                                            \
			btk_put64(p_, (v));                                                        \
			break;                                                                     \
		case 4:                                                                            \
			btk_put32(p_, (uint32_t)(v));                                              \
			break;                                                                     \
		case 2:                                                                            \
			btk_put16(p_, (uint16_t)(v));                                              \
			break;                                                                     \
		default:                                                                           \
			*p_ = (uint8_t)(v);                                                        \
		}                                                                                  \
	} while (0)

static inline void btk_disk_to_key(const struct btk_disk_key *d, struct btk_key *k)
{
	k->objectid = btk_le64(d->objectid);
	k->type = d->type;
	k->offset = btk_le64(d->offset);
}
static inline void btk_key_to_disk(const struct btk_key *k, struct btk_disk_key *d)
{
	btk_put64(d->objectid, k->objectid);
	d->type = k->type;
	btk_put64(d->offset, k->offset);
}
/* -1, 0 or 1 as a is below, equal to or above b: comparators chain these with ?: */
static inline int btk_cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}
/* True when [bytenr, bytenr + len) crosses a 64 KiB stripe boundary of the block group (chunk)
 * that starts at bg_start: stripes are counted from the block group's start, not from logical
 * 0 (btrfs check's rule for tree blocks; the allocators keep to it). */
static inline bool btk_crosses_stripe(uint64_t bg_start, uint64_t bytenr, uint64_t len)
{
	uint64_t rel = bytenr - bg_start;
	return len && rel / BTK_STRIPE_LEN != (rel + len - 1) / BTK_STRIPE_LEN;
}

static inline int btk_key_cmp(const struct btk_key *a, const struct btk_key *b)
{
	return btk_cmp_u64(a->objectid, b->objectid) ?: btk_cmp_u64(a->type, b->type)
		   ?: btk_cmp_u64(a->offset, b->offset);
}

/* *k becomes the next key in key order (offset, then type, then objectid carried). */
static inline void btk_key_after(struct btk_key *k)
{
	if (++k->offset)
		return;
	if (++k->type)
		return;
	k->objectid++;
}

/* Byte offset of superblock mirror i (0, 1, 2): 64 KiB, 64 MiB, 256 GiB. */
static inline uint64_t btk_super_offset(int mirror)
{
	return mirror == 0 ? BTK_SUPER_OFFSET : (16384ULL << (12 * mirror));
}

/* Hashes in key offsets: crc32c (Castagnoli, reflected) started from a seed, without the
 * final inversion; base/csum.c computes them (format calls nothing).
 * DIR_ITEM and XATTR_ITEM key offset: the name's crc32c seeded with BTK_NAME_HASH_SEED. */
#define BTK_NAME_HASH_SEED (~1U)
/* INODE_EXTREF key offset: the name's crc32c seeded with the parent inode's low 32 bits. */
static inline uint32_t btk_extref_hash_seed(uint64_t parent)
{
	return (uint32_t)parent;
}
/* EXTENT_DATA_REF key offset: high = crc32c of the root id, low = crc32c of the inode number
 * continued with the file offset (each as 8 little-endian bytes, both seeded with
 * BTK_DATA_REF_HASH_SEED); the offset is high << 31 ^ low. */
#define BTK_DATA_REF_HASH_SEED (~0U)
static inline uint64_t btk_data_ref_hash_join(uint32_t high, uint32_t low)
{
	return ((uint64_t)high << 31) ^ (uint64_t)low;
}

/* lzo framing of a compressed extent: a BTK_LZO_LEN_SIZE little-endian total length (itself
 * included), then per sector of input one segment: its BTK_LZO_LEN_SIZE length and the lzo1x
 * stream. A segment header never straddles a sector boundary: when fewer bytes than a header
 * remain in the sector, they are zero padding and the header starts the next sector. */
#define BTK_LZO_LEN_SIZE 4
/* Where the segment header due at byte pos of a frame starts. */
static inline size_t btk_lzo_seg_start(size_t pos, uint32_t sectorsize)
{
	size_t room = sectorsize - pos % sectorsize;

	return room < BTK_LZO_LEN_SIZE ? pos + room : pos;
}

/* Names as the kernel spells them without BTRFS_ and _KEY (e.g. "INODE_ITEM"); NULL if
 * unknown. Static strings. */
const char *btk_key_type_name(uint8_t type);
/* Tree / object id names as dump-tree prints them ("ROOT_TREE", "FS_TREE", ...); NULL if
 * the id has no name. Static strings. */
const char *btk_objectid_name(uint64_t id);
/* Heading of a tree in dumps ("root tree", "fs tree", ...; "file tree" for subvolumes).
 * Static string. */
const char *btk_tree_title(uint64_t id);
/* Parse a tree name ("fs", "FS_TREE", "extent", "5") into an object id; -EINVAL if unknown. */
int btk_tree_id_parse(const char *s, uint64_t *id);
/* Values of btrfs_file_extent_item.compression. */
enum { BTK_COMPRESS_NONE = 0, BTK_COMPRESS_ZLIB = 1, BTK_COMPRESS_LZO = 2, BTK_COMPRESS_ZSTD = 3 };
#define BTK_COMPRESS_TYPES 4 /* values below it are known */

/* Name of a compression type ("none", "zlib", "lzo", "zstd"; "unknown" otherwise). Static. */
const char *btk_compression_name(unsigned type);

/* Block group profile name ("single", "dup", "raid1", ...) of a flags word. Static string. */
const char *btk_profile_name(uint64_t bg_flags);

#endif
