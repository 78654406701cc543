/* decode.h (layer 8) — decoding of tree items, tree-block headers and superblocks into a generic
 * field sink, for dumps (btk-debug) and checks.
 *
 * There is one decoder; the sink decides how to render (human text like `btrfs
 * inspect-internal dump-tree`, or JSON). The decoder never reads outside the bytes it is
 * given: an item shorter than its structure, a name running past the item end, an inline ref
 * past the end or of an unknown type, all end the decode of that item with an "error" field
 * (kind BTK_F_ERROR) after closing any open object/array, and btk_decode_item returns
 * -EUCLEAN. The decoder does not allocate.
 *
 * Pointers in a struct btk_field (p, text) are valid only during the callback.
 *
 * Field names. Where dump-tree (btrfs-progs kernel-shared/print-tree.c) prints "label value",
 * the field is that label in lowercase with spaces as underscores. Per item type (key type):
 *
 *  INODE_ITEM       generation transid size nbytes block_group mode links uid gid rdev
 *                   sequence flags(F) atime ctime mtime otime(T)
 *  INODE_REF        refs[ {index namelen name} ]
 *  INODE_EXTREF     refs[ {index parent namelen name} ]
 *  DIR_ITEM, DIR_INDEX, XATTR_ITEM
 *                   entries[ {location(K) type(E: FILE DIR ... XATTR) transid data_len
 *                   name_len name data} ]   ("data" only when data_len > 0)
 *  DIR_LOG_ITEM/_INDEX  end
 *  EXTENT_DATA      generation type(E: inline regular prealloc) compression(E: none zlib lzo
 *                   zstd) encryption other_encoding; inline: data_size ram_bytes;
 *                   regular/prealloc: disk_bytenr disk_num_bytes offset num_bytes ram_bytes
 *  EXTENT_ITEM, METADATA_ITEM
 *                   refs gen flags(F: DATA TREE_BLOCK FULL_BACKREF)
 *                   tree_block{key(K) level} (non-skinny tree blocks) or
 *                   tree_block{level} (METADATA_ITEM: the level is the key offset)
 *                   inline_refs[ {type(S) + TREE_BLOCK_REF: root | SHARED_BLOCK_REF: parent |
 *                   EXTENT_DATA_REF: root objectid offset count | SHARED_DATA_REF: parent
 *                   count | EXTENT_OWNER_REF: root} ]
 *  TREE_BLOCK_REF, SHARED_BLOCK_REF   (no fields: the key says it all)
 *  EXTENT_DATA_REF  root objectid offset count      SHARED_DATA_REF  count
 *  BLOCK_GROUP_ITEM used chunk_objectid flags(F: DATA|METADATA|SYSTEM|profile)
 *  DEV_ITEM         devid total_bytes bytes_used io_align io_width sector_size type
 *                   generation start_offset dev_group seek_speed bandwidth uuid(U) fsid(U)
 *  DEV_EXTENT       chunk_tree chunk_objectid chunk_offset length chunk_tree_uuid(U)
 *  CHUNK_ITEM       length owner stripe_len type(F) io_align io_width sector_size
 *                   num_stripes sub_stripes stripes[ {stripe(index) devid offset dev_uuid(U)} ]
 *  ROOT_ITEM        generation root_dirid bytenr byte_limit bytes_used last_snapshot
 *                   flags(F: RDONLY) refs drop_progress(K) drop_level level generation_v2
 *                   and, when the item has the v2 part and generation == generation_v2 (as
 *                   dump-tree): uuid parent_uuid received_uuid(U) ctransid otransid stransid
 *                   rtransid ctime otime stime rtime(T)
 *  ROOT_REF, ROOT_BACKREF  dirid sequence name_len name
 *  EXTENT_CSUM      start end length num_csums csums[ hex strings ] (end/length/csums need
 *                   the csum size and sector size in the env; else only start, num bytes)
 *  UNTYPED (free space cache header, objectid FREE_SPACE, type 0)
 *                   location(K) cache_generation entries bitmaps
 *  FREE_SPACE_INFO  extent_count flags(F: USING_BITMAPS)
 *  FREE_SPACE_EXTENT (no fields)    FREE_SPACE_BITMAP  bits_set bitmap(H)
 *  ORPHAN_ITEM      (no fields)
 *  UUID_KEY_SUBVOL, UUID_KEY_RECEIVED_SUBVOL  subvol_ids[ u64 ]
 *  QGROUP_STATUS    version generation flags(F: ON|SCANNING|INCONSISTENT) scan [enable_gen]
 *  QGROUP_INFO      generation referenced referenced_compressed exclusive
 *                   exclusive_compressed
 *  QGROUP_LIMIT     flags max_referenced max_exclusive rsv_referenced rsv_exclusive (signed)
 *  QGROUP_RELATION  (no fields)
 *  PERSISTENT_ITEM  objectid DEV_STATS: write_errs read_errs flush_errs corruption_errs
 *                   generation [unknown[ u64 ]]; else hex
 *  TEMPORARY_ITEM   objectid BALANCE: flags data{} metadata{} system{} each with profiles
 *                   devid target flags usage_min usage_max pstart pend vstart vend limit_min
 *                   limit_max stripes_min stripes_max; else hex
 *  DEV_REPLACE      src_devid cursor_left cursor_right cont_reading_from_srcdev_mode
 *                   replace_state time_started time_stopped num_write_errors
 *                   num_uncorrectable_read_errors
 *  STRING_ITEM      item_data(S)
 *  VERITY_DESC_ITEM (offset 0)  size encryption; other verity items and unknown types: hex(H)
 *
 * Kinds: (F) flags: numeric value + names; (E) enum: numeric value + name; (K) key;
 * (U) uuid; (T) timestamp; (S) string of raw bytes; (H) hex blob. Everything else is an
 * unsigned number (BTK_F_U64) unless noted signed.
 */
#ifndef BTK_DECODE_H
#define BTK_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/format.h"

enum btk_field_kind {
	BTK_F_U64,   /* u */
	BTK_F_S64,   /* s */
	BTK_F_STR,   /* p, len: raw bytes, not NUL-terminated, maybe not UTF-8 */
	BTK_F_UUID,  /* p: 16 bytes */
	BTK_F_HEX,   /* p, len: bytes shown as hex */
	BTK_F_TIME,  /* u: seconds, nsec */
	BTK_F_FLAGS, /* u: the word; text: "NAME|NAME" ("none"/"" when no known bit) */
	BTK_F_ENUM,  /* u: the value; text: its name ("UNKNOWN.n" when unknown) */
	BTK_F_KEY,   /* key */
	BTK_F_ERROR, /* text: what is wrong; name is "error" */
};

/* Rendering hints for numbers; JSON always prints decimal. */
enum btk_field_fmt {
	BTK_FMT_DEC = 0,
	BTK_FMT_OCT,   /* e.g. inode mode */
	BTK_FMT_HEX,   /* e.g. flags */
	BTK_FMT_OBJID, /* a tree/object id: show its name (FS_TREE) where it has one */
	BTK_FMT_NAME,  /* an enum shown by its name only (dump-tree's dir item "type FILE") */
};

struct btk_field {
	enum btk_field_kind kind;
	enum btk_field_fmt fmt;
	const char *name; /* NULL for array elements */
	uint64_t u;
	int64_t s;
	uint32_t nsec;
	const uint8_t *p;
	size_t len;
	const char *text;
	struct btk_key key;
};

/* The sink. begin/end open and close a nested object (array=false) or array (array=true);
 * name is NULL for an element of an array. brk is a line-break hint for text renderers
 * (dump-tree layout); JSON ignores it. Any callback may be NULL (ignored). */
struct btk_sink {
	void *ctx;
	void (*field)(void *ctx, const struct btk_field *f);
	void (*begin)(void *ctx, const char *name, bool array);
	void (*end)(void *ctx, bool array);
	void (*brk)(void *ctx);
};

/* What item decoding needs to know about the filesystem; zeros mean unknown. */
struct btk_decode_env {
	uint32_t sectorsize;
	int csum_size;
};

/* Decodes one leaf item (key, size bytes at data) into sink. Returns 0, or -EUCLEAN when the
 * item is malformed (an "error" field was emitted; fields before it remain valid). */
int btk_decode_item(const struct btk_decode_env *env, const struct btk_key *key,
		    const uint8_t *data, uint32_t size, const struct btk_sink *sink);

/* Decodes a chunk item (as in the chunk tree or the sys chunk array): fields as CHUNK_ITEM. */
int btk_decode_chunk(const uint8_t *data, uint32_t size, const struct btk_sink *sink);

/* Decodes a tree-block header: bytenr flags(F: WRITTEN|RELOC) backref_rev fsid(U)
 * chunk_tree_uuid(U) generation owner nritems level csum(H, csum_size bytes; 32 if 0). */
void btk_decode_header(const struct btk_header *h, int csum_size, const struct btk_sink *sink);

/* Decodes every superblock field, with names as `btrfs inspect-internal dump-super -f`:
 * csum_type(E) csum_size csum(H) bytenr flags(F) magic(S) fsid metadata_uuid(U) label(S)
 * generation root sys_array_size chunk_root_generation root_level chunk_root chunk_root_level
 * log_root log_root_transid log_root_level total_bytes bytes_used sectorsize nodesize
 * leafsize stripesize root_dir num_devices compat_flags compat_ro_flags(F) incompat_flags(F)
 * cache_generation uuid_tree_generation nr_global_roots dev_item{...DEV_ITEM fields}
 * sys_chunk_array[ {key(K) + CHUNK_ITEM fields} ] backup_roots[ {index backup_tree_root
 * backup_tree_root_gen backup_tree_root_level ... chunk, extent, fs, dev, csum likewise,
 * backup_total_bytes backup_bytes_used backup_num_devices} ] (empty backups skipped).
 * Returns 0 or -EUCLEAN (a malformed sys chunk array: an error field was emitted). */
int btk_decode_super(const struct btk_super *sb, const struct btk_sink *sink);

/* Key type as dump-tree prints it: the name, "UNTYPED" (type 0 of FREE_SPACE), or
 * "UNKNOWN.<n>". Returns buf (at least 32 bytes) or a static string. */
const char *btk_key_type_str(uint64_t objectid, uint8_t type, char *buf, size_t len);

/* Formats a key as dump-tree does: "(FS_TREE ROOT_ITEM 0)", "(256 INODE_ITEM 0)",
 * "(0/5 QGROUP_INFO 0/5)" ... Returns buf; needs about 80 bytes. */
const char *btk_key_format(const struct btk_key *k, char *buf, size_t len);
/* True when btk_key_format would print k as "(OBJECTID TYPE OFFSET)" with a named type and
 * both numbers in decimal, so that a fast printer may write it directly. */
bool btk_key_format_plain(const struct btk_key *k);

/* Object id as dump-tree prints it in a key of that type (DEV_ITEMS, FIRST_CHUNK_TREE, 0/5,
 * 0x..., names of trees, -1, or the number). Returns buf (at least 32 bytes). */
const char *btk_objectid_str(uint64_t id, uint8_t type, char *buf, size_t len);

/* Inode flag names ("NODATASUM|COMPRESS", "none"); block group flags ("DATA|RAID1");
 * extent flags ("DATA", "TREE_BLOCK|FULL_BACKREF"). Return buf (at least 128 bytes). */
const char *btk_inode_flags_str(uint64_t flags, char *buf, size_t len);
const char *btk_bg_flags_str(uint64_t flags, char *buf, size_t len);

#endif
