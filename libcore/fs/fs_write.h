/* fs_write.h — writing files, directories, links and xattrs into an fs tree (layer 6).
 *
 * These build the items the kernel would: INODE_ITEM, DIR_ITEM (by name hash, several names
 * in one item on a collision) + DIR_INDEX (by sequence number) + INODE_REF (or INODE_EXTREF
 * when the names of one parent no longer fit one item), XATTR_ITEM, EXTENT_DATA, and csum items
 * for data. They run inside a transaction (trans.h) and return 0 or a negative errno with a
 * message (btk_errmsg). Callers choose inode numbers and directory indexes, which keeps the
 * result a pure function of the input (reproducible images).
 */
#ifndef BTK_FS_WRITE_H
#define BTK_FS_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/fs_read.h"
#include "trans/trans.h"

/* struct btk_time and btk_put_time: format/inode_item.h. */
struct btk_inode_attr {
	uint32_t mode, uid, gid, nlink;
	uint64_t rdev, size, nbytes, flags, generation;
	struct btk_time atime, mtime, ctime, otime;
};

/* Inserts the INODE_ITEM of ino. -EEXIST if present. */
int btk_inode_create(struct btk_trans *t, uint64_t root, uint64_t ino,
		     const struct btk_inode_attr *a);
/* The top directory `dirid` of tree root (a tree of this transaction): its INODE_ITEM with
 * attributes a, and a ".." INODE_REF to itself, its only name. new_fs: a tree made with the
 * filesystem, whose inode keeps transid 0 as mkfs.btrfs writes it. */
int btk_top_dir_create(struct btk_trans *t, uint64_t root, uint64_t dirid,
		       const struct btk_inode_attr *a, bool new_fs);
/* Adds delta_size to the directory's i_size and sets size/nbytes of a file: a read-modify-
 * write of the INODE_ITEM; only the non-negative fields given change. */
int btk_inode_set_size(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t size,
		       uint64_t nbytes);
int btk_inode_add_dir_size(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t delta);

/* Links ino as `name` in directory dir with DIR_INDEX sequence `index` (2, 3, ... per dir):
 * DIR_ITEM, DIR_INDEX, INODE_REF/EXTREF, and the directory's i_size grows by 2 * len.
 * `loc` is the location key of the target: (ino, INODE_ITEM, 0) for an inode, (subvol id,
 * ROOT_ITEM, -1) for a subvolume (then no INODE_REF is written: the ROOT_REF stands for it).
 * ftype is BTRFS_FT_*. -EEXIST if dir already has that name. -ENAMETOOLONG past 255 bytes. */
int btk_dir_link(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		 const struct btk_key *loc, uint8_t ftype, uint64_t index);
/* The sides of a name btk_dir_link writes, chosen (a repair adds what a name lacks): DIR_ITEM
 * (appended to an item of a colliding hash), DIR_INDEX, INODE_REF/EXTREF; the directory's
 * size is left as it is. -EEXIST, -ENAMETOOLONG as btk_dir_link. */
#define BTK_NAME_DIR_ITEM  1u
#define BTK_NAME_DIR_INDEX 2u
#define BTK_NAME_REF	   4u
int btk_dir_name_add(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		     uint16_t len, const struct btk_key *loc, uint8_t ftype, uint64_t index,
		     unsigned sides);
/* -EPERM (with a message) when dir is a snapshot's placeholder (BTK_STUB_INO), in which the
 * kernel creates nothing; else 0. btk_dir_link and everything creating names check it. */
int btk_dir_creatable(uint64_t dir, const char *name, uint16_t len);

/* Sets xattr name=value on ino (XATTR_ITEM keyed by name hash). -E2BIG when it cannot fit one
 * leaf, as the kernel refuses too. */
int btk_xattr_set(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name, uint16_t nlen,
		  const void *value, uint16_t vlen);

/* The room new file data can get now (fs_space.c). */
struct btk_data_room {
	uint64_t in_chunks;	   /* free bytes in data chunks */
	uint64_t unallocated;	   /* device bytes in no chunk */
	uint64_t meta_reserved;	   /* of them, what new metadata chunks would take */
	uint64_t from_unallocated; /* data bytes the rest takes in data_type's profile */
	uint64_t room;		   /* in_chunks + from_unallocated */
	uint64_t data_type;	   /* block group flags of data chunks (profile) */
};
/* What data the transaction can still write when meta_need more bytes of tree blocks (one
 * copy, btk_meta_estimate) come first: free space in data chunks, and unallocated device
 * space as chunks of the data profile take it (copies, parity, devices a chunk needs) after
 * new metadata chunks of the metadata profile took meta_need beyond the free space of the
 * metadata chunks. An estimate within a step (1/256 of the largest device room, 1 MiB at
 * least) per device. */
int btk_data_room(struct btk_trans *t, uint64_t meta_need, struct btk_data_room *r);

/* Largest inline extent payload the leaf can take (the kernel also caps by max_inline). */
uint32_t btk_inline_max(const struct btk_fs *fs);

/* EXTENT_DATA items. Inline: data (compressed if compression != 0, ram_bytes the plain size)
 * stored in the leaf at file offset 0. Regular/prealloc: a reference to [disk_bytenr,
 * +disk_len) of which num_bytes from extent_offset are used at file_offset; disk_bytenr 0 is
 * an explicit hole. */
int btk_file_extent_inline(struct btk_trans *t, uint64_t root, uint64_t ino, const void *data,
			   uint32_t len, uint64_t ram_bytes, int compression);
/* Uses fe's file_offset, type (REG or PREALLOC), compression, disk_bytenr, disk_num_bytes,
 * extent_offset, num_bytes and ram_bytes (struct from fs_read.h). */
int btk_file_extent_insert(struct btk_trans *t, uint64_t root, uint64_t ino,
			   const struct btk_file_extent *fe);
/* A plain REG extent that uses all of [bytenr, +len) (no compression, extent_offset 0) at
 * file offset off. */
int btk_file_extent_whole(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t off,
			  uint64_t bytenr, uint64_t len);
/* The hole [off, +len) of ino, for writers that place a file's extents in order: without
 * NO_HOLES every hole below the size (rounded up to a sector) is an explicit REG item with
 * disk_bytenr 0, and checkers report a gap; with NO_HOLES, or len 0, nothing is written. */
int btk_file_hole(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t off, uint64_t len);

/* Checksums of len bytes (sector multiple) of data into sums (csum_size each). */
int btk_csum_compute(const struct btk_fs *fs, const uint8_t *data, uint64_t len, uint8_t *sums);
/* Inserts precomputed checksums of nsectors sectors from logical bytenr as csum items, split
 * to fit leaves. */
int btk_csum_insert_sums(struct btk_trans *t, uint64_t bytenr, const uint8_t *sums,
			 uint64_t nsectors);

/* Rewrites mode, uid, gid, rdev, flags and the four times of an existing inode. */
int btk_inode_set_attr(struct btk_trans *t, uint64_t root, uint64_t ino,
		       const struct btk_inode_attr *a);

/* Creates subvolume `id` (a new fs tree with its top directory 256 carrying attributes a)
 * linked as `name` in directory dir of tree parent with DIR_INDEX `index`: ROOT_ITEM (uuid,
 * times from a->otime, read-only when ro), ROOT_REF/ROOT_BACKREF, the uuid tree entry, and
 * with quotas on its qgroup (btk_qgroup_create). */
struct btk_subvol_new {
	uint64_t id, parent, dir, index;
	const char *name;
	uint16_t name_len;
	bool ro;
	uint8_t uuid[16];
};
int btk_subvol_create(struct btk_trans *t, const struct btk_subvol_new *s,
		      const struct btk_inode_attr *a);
/* The root tree's directory (BTRFS_ROOT_TREE_DIR_OBJECTID, attributes a) with its "default"
 * entry naming the FS tree, as a new filesystem has it. */
int btk_root_dir_create(struct btk_trans *t, const struct btk_inode_attr *a);
/* With quotas on (a quota tree), the level-0 qgroup of a new subvolume or snapshot id, as the
 * kernel creates it: QGROUP_INFO (this generation, no usage counted) and QGROUP_LIMIT (no
 * limits); without it 'btrfs subvolume show' fails. The numbers come with the rescan the
 * commit asks for (the status is marked inconsistent). Nothing when quotas are off or the
 * qgroup exists. */
int btk_qgroup_create(struct btk_trans *t, uint64_t id);
/* Makes subvolume id the default mounted one (the root tree's "default" entry and the
 * DEFAULT_SUBVOL feature). */
int btk_subvol_set_default(struct btk_trans *t, uint64_t id);

#endif
