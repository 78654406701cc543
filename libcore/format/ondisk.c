/* ondisk.c — compile-time checks of the on-disk layout (layer 0).
 *
 * Every structure btk declares to mirror disk bytes (format.h) gets its size and the offset of
 * each field checked here, and so do the sizes of the kernel's item structures btk reads
 * through <linux/btrfs_tree.h>. The numbers come from the format's documentation (btrfs-progs
 * Documentation/dev/On-disk-format.rst: superblock, header, key pointer, item, key, file
 * extent, inode refs, dev item) and from the kernel's backup-root layout, never from this code:
 * a field moved, resized or padded by the compiler fails the build. Nothing here is linked.
 */
#include "format/format.h"

#define SIZE(s, n)	_Static_assert(sizeof(struct s) == (n), "sizeof(struct " #s ") != " #n)
#define OFFSET(s, f, n) _Static_assert(offsetof(struct s, f) == (n), #s "." #f " not at " #n)

/* key: objectid, type, offset */
SIZE(btk_disk_key, 0x11);
OFFSET(btk_disk_key, objectid, 0x0);
OFFSET(btk_disk_key, type, 0x8);
OFFSET(btk_disk_key, offset, 0x9);
SIZE(btrfs_disk_key, 0x11);

/* superblock */
SIZE(btk_super, 0x1000);
_Static_assert(sizeof(struct btk_super) == BTK_SUPER_SIZE, "BTK_SUPER_SIZE");
OFFSET(btk_super, csum, 0x0);
OFFSET(btk_super, fsid, 0x20);
OFFSET(btk_super, bytenr, 0x30);
OFFSET(btk_super, flags, 0x38);
OFFSET(btk_super, magic, 0x40);
OFFSET(btk_super, generation, 0x48);
OFFSET(btk_super, root, 0x50);
OFFSET(btk_super, chunk_root, 0x58);
OFFSET(btk_super, log_root, 0x60);
OFFSET(btk_super, log_root_transid, 0x68);
OFFSET(btk_super, total_bytes, 0x70);
OFFSET(btk_super, bytes_used, 0x78);
OFFSET(btk_super, root_dir_objectid, 0x80);
OFFSET(btk_super, num_devices, 0x88);
OFFSET(btk_super, sectorsize, 0x90);
OFFSET(btk_super, nodesize, 0x94);
OFFSET(btk_super, leafsize, 0x98);
OFFSET(btk_super, stripesize, 0x9c);
OFFSET(btk_super, sys_chunk_array_size, 0xa0);
OFFSET(btk_super, chunk_root_generation, 0xa4);
OFFSET(btk_super, compat_flags, 0xac);
OFFSET(btk_super, compat_ro_flags, 0xb4);
OFFSET(btk_super, incompat_flags, 0xbc);
OFFSET(btk_super, csum_type, 0xc4);
OFFSET(btk_super, root_level, 0xc6);
OFFSET(btk_super, chunk_root_level, 0xc7);
OFFSET(btk_super, log_root_level, 0xc8);
OFFSET(btk_super, dev_item, 0xc9);
OFFSET(btk_super, label, 0x12b);
OFFSET(btk_super, cache_generation, 0x22b);
OFFSET(btk_super, uuid_tree_generation, 0x233);
/* the documentation's reserved 0x23b..0x32b now starts with these two (kernel 5.0, 5.19) */
OFFSET(btk_super, metadata_uuid, 0x23b);
OFFSET(btk_super, nr_global_roots, 0x24b);
OFFSET(btk_super, reserved, 0x253);
OFFSET(btk_super, sys_chunk_array, 0x32b);
OFFSET(btk_super, super_roots, 0xb2b);
OFFSET(btk_super, padding, 0xdcb);
_Static_assert(sizeof(((struct btk_super *)0)->sys_chunk_array) == 0x800, "sys array size");
_Static_assert(sizeof(((struct btk_super *)0)->super_roots) == 0x2a0, "backup roots size");
_Static_assert(sizeof(((struct btk_super *)0)->label) == 0x100, "label size");
SIZE(btrfs_dev_item, 0x62);

/* backup root: 15 u64 (roots, generations, totals), 4 unused u64, 6 levels, 10 unused */
SIZE(btk_root_backup, 0xa8);
OFFSET(btk_root_backup, tree_root, 0x0);
OFFSET(btk_root_backup, tree_root_gen, 0x8);
OFFSET(btk_root_backup, chunk_root, 0x10);
OFFSET(btk_root_backup, chunk_root_gen, 0x18);
OFFSET(btk_root_backup, extent_root, 0x20);
OFFSET(btk_root_backup, extent_root_gen, 0x28);
OFFSET(btk_root_backup, fs_root, 0x30);
OFFSET(btk_root_backup, fs_root_gen, 0x38);
OFFSET(btk_root_backup, dev_root, 0x40);
OFFSET(btk_root_backup, dev_root_gen, 0x48);
OFFSET(btk_root_backup, csum_root, 0x50);
OFFSET(btk_root_backup, csum_root_gen, 0x58);
OFFSET(btk_root_backup, total_bytes, 0x60);
OFFSET(btk_root_backup, bytes_used, 0x68);
OFFSET(btk_root_backup, num_devices, 0x70);
OFFSET(btk_root_backup, unused_64, 0x78);
OFFSET(btk_root_backup, tree_root_level, 0x98);
OFFSET(btk_root_backup, chunk_root_level, 0x99);
OFFSET(btk_root_backup, extent_root_level, 0x9a);
OFFSET(btk_root_backup, fs_root_level, 0x9b);
OFFSET(btk_root_backup, dev_root_level, 0x9c);
OFFSET(btk_root_backup, csum_root_level, 0x9d);
OFFSET(btk_root_backup, unused_8, 0x9e);

/* tree-block header */
SIZE(btk_header, 0x65);
OFFSET(btk_header, csum, 0x0);
OFFSET(btk_header, fsid, 0x20);
OFFSET(btk_header, bytenr, 0x30);
OFFSET(btk_header, flags, 0x38); /* the backref revision is its top byte, 0x3f */
OFFSET(btk_header, chunk_tree_uuid, 0x40);
OFFSET(btk_header, generation, 0x50);
OFFSET(btk_header, owner, 0x58);
OFFSET(btk_header, nritems, 0x60);
OFFSET(btk_header, level, 0x64);
_Static_assert(BTK_BACKREF_REV_SHIFT == (0x3f - 0x38) * 8, "backref revision byte");

/* node: key pointers; leaf: items (data offsets from the end of the header) */
SIZE(btk_key_ptr, 0x21);
OFFSET(btk_key_ptr, key, 0x0);
OFFSET(btk_key_ptr, blockptr, 0x11);
OFFSET(btk_key_ptr, generation, 0x19);
SIZE(btk_item, 0x19);
OFFSET(btk_item, key, 0x0);
OFFSET(btk_item, offset, 0x11);
OFFSET(btk_item, size, 0x15);

/* item bodies btk reads through the kernel's structures */
SIZE(btrfs_inode_ref, 0xa);
SIZE(btrfs_inode_extref, 0x12);
SIZE(btrfs_file_extent_item, 0x35);
_Static_assert(offsetof(struct btrfs_file_extent_item, disk_bytenr) == 0x15, "inline data start");
