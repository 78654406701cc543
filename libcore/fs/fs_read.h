/* fs_read.h — read-only pieces of the fs layer (layer 6): names, paths, subvolumes, file extents.
 *
 * Everything here reads through the validated tree layer (tree.h) and never trusts item
 * contents: names, counts and lengths are bounds-checked against the item size, parent chains
 * are followed with a depth bound (BTK_PATH_MAX_DEPTH) so a cycle on disk ends in -ELOOP.
 *
 * Conventions for every function below:
 * - Errors are negative errno values with a message recorded by btk_err():
 *   -ENOENT  the object (root, inode, name, back reference) does not exist;
 *   -EUCLEAN an item is malformed (size too small, name past the item end, ...);
 *   -ELOOP   a parent chain is longer than BTK_PATH_MAX_DEPTH (a cycle or absurd depth);
 *   -ENAMETOOLONG a composed path exceeds BTK_PATH_MAX_LEN;
 *   -ENOMEM, -EIO and the read errors of btk_block_read / btk_search.
 * - Strings returned through `char **out` are malloc'ed and owned by the caller (free()).
 *   Strings passed to callbacks are valid only during the call.
 * - Callbacks return 0 to continue; any other value stops the iteration and is returned.
 * - Paths are byte strings as stored on disk (names may hold any byte but '/' and NUL; a stored
 *   NUL or '/' is replaced by '?', since the result is a C string).
 */
#ifndef BTK_FS_READ_H
#define BTK_FS_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/csum.h" /* btk_name_hash() */
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "tree/tree.h"

#define BTK_PATH_MAX_DEPTH 4096	  /* directory levels (and subvolume nesting) followed */
#define BTK_PATH_MAX_LEN   65536  /* bytes of one composed path, NUL included */
#define BTK_ROOT_DIRID	   256ULL /* BTRFS_FIRST_FREE_OBJECTID: every subvolume's top dir */
/* The inode number the kernel gives a snapshot's placeholder (BTRFS_EMPTY_SUBVOL_DIR_OBJECTID):
 * a snapshot keeps the directory entries of the subvolumes nested in its source, but no
 * ROOT_REF links them from the snapshot, so the kernel shows each as an empty directory that
 * is no inode of any tree (nothing can be created in it, rmdir removes the entry). */
#define BTK_STUB_INO 2ULL

/* Calls fn for every item of root with this objectid and type and key offset >= from, in key
 * order. leaf/slot locate the item (the leaf stays referenced during the call). */
typedef int (*btk_item_fn)(void *ctx, const struct btk_block *leaf, int slot,
			   const struct btk_key *key, const uint8_t *data, uint32_t size);
int btk_for_each_item(struct btk_fs *fs, const struct btk_root *root, uint64_t objectid,
		      uint8_t type, uint64_t from, btk_item_fn fn, void *ctx);

/* The tree of a subvolume / snapshot / FS_TREE by id (btk_root_find, with an error message
 * that names the id). */
int btk_fs_root(struct btk_fs *fs, uint64_t root_id, struct btk_root *out);

/* One name of an inode: the directory holding it and the name there. */
struct btk_name_ref {
	uint64_t parent;  /* directory inode in the same tree */
	uint64_t index;	  /* DIR_INDEX sequence number */
	const char *name; /* not NUL-terminated; name_len bytes, inside the leaf */
	uint16_t name_len;
	bool extref; /* from an INODE_EXTREF item (else INODE_REF) */
};

/* Called once per name; returns 0 to go on, anything else to stop (see above). */
typedef int (*btk_name_fn)(void *ctx, const struct btk_name_ref *ref);

/* Walks the entries of one INODE_REF or INODE_EXTREF item (by key->type) that the caller has
 * in hand, and calls fn for each in order. The two layouts differ only in their header:
 *   INODE_REF    {index u64, name_len u16, name}...              key offset: the parent
 *   INODE_EXTREF {parent u64, index u64, name_len u16, name}...  key offset: a name hash
 * Returns 0 after the last entry, or fn's value when it is not 0. -EUCLEAN (with a message
 * naming the inode and key) when a header or name runs past the item's size bytes; the
 * entries before that one have been passed to fn. Reads only data[0..size): the caller owns
 * the item (a leaf it holds), and ref->name points into it. */
int btk_inode_ref_walk(const struct btk_key *key, const uint8_t *data, uint32_t size,
		       btk_name_fn fn, void *ctx);

/* Calls fn for every name of inode ino: every entry of its INODE_REF items, then of its
 * INODE_EXTREF items. The root directory's self reference ("..", parent == ino) is passed
 * too; callers skip it. -EUCLEAN if an entry overruns its item. */
int btk_inode_for_each_name(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
			    btk_name_fn fn, void *ctx);

/* The path of directory (or any inode, by its first name) ino inside its subvolume, relative
 * to the subvolume's top directory: "" for the top directory itself, else "/a/b". *out is
 * owned by the caller. */
int btk_dir_path(struct btk_fs *fs, const struct btk_root *root, uint64_t ino, char **out);

/* Every path of inode ino inside its subvolume (one per hard link; "" for the top directory),
 * relative to the subvolume top, as "/a/b/file". fn sees each path once. */
int btk_inode_paths(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		    int (*fn)(void *ctx, const char *path), void *ctx);

/* Path of subvolume root_id from the top-level subvolume: "/" for FS_TREE, else "/a/sub"
 * (through ROOT_BACKREF items, their names and the directory path in the parent).
 * -ENOENT if the subvolume has no back reference (deleted, or not linked anywhere). */
int btk_subvol_path(struct btk_fs *fs, uint64_t root_id, char **out);
/* The same as root tree rt (an older one) has it. */
int btk_subvol_path_at(struct btk_fs *fs, const struct btk_root *rt, uint64_t root_id, char **out);

/* Looks name up in directory dir (DIR_ITEM by name hash, then DIR_INDEX as a fallback). On 0,
 * *loc is the entry's location key (INODE_ITEM: an inode of this tree; ROOT_ITEM: a subvolume
 * whose id is loc->objectid) and *ftype the dir entry type (BTRFS_FT_*). -ENOENT if absent. */
int btk_dir_lookup(struct btk_fs *fs, const struct btk_root *root, uint64_t dir, const char *name,
		   size_t len, struct btk_key *loc, uint8_t *ftype);

/* Resolves an absolute path from the top-level subvolume ("/", "/sub/dir/file"), entering
 * subvolumes on the way, to (*root_id, *ino). Empty components and "." are skipped; ".." is
 * refused (-EINVAL). -ENOTDIR when a middle component is not a directory. A subvolume entry
 * that no ROOT_REF links there (a snapshot's placeholder) is entered as the kernel does: an
 * empty directory, (*root_id the tree holding the entry, *ino BTK_STUB_INO); nothing is below
 * it (-ENOENT). */
int btk_path_lookup(struct btk_fs *fs, const char *path, uint64_t *root_id, uint64_t *ino);

/* The fields of an inode item that tools show: struct btk_inode_info (format/inode_item.h).
 * BTK_STUB_INO gives a placeholder's: a directory, mode 0755, one link, nothing else. */
int btk_inode_read(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		   struct btk_inode_info *out);

/* Decodes an EXTENT_DATA item of size bytes at key offset `file_offset` into *fe (struct
 * btk_file_extent, format/file_extent.h); -EUCLEAN (message set) if too short or with an
 * unknown type. */
int btk_file_extent_parse(const uint8_t *data, uint32_t size, uint64_t file_offset,
			  struct btk_file_extent *fe);

/* Calls fn for every EXTENT_DATA item of inode ino in file order whose key offset is >= from
 * (0: all). Holes (disk_bytenr 0) are passed too. */
int btk_file_for_each_extent(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
			     uint64_t from, int (*fn)(void *ctx, const struct btk_file_extent *fe),
			     void *ctx);

/* ---- directories, subvolume items, xattrs (fs_read_dir.c) ---- */

/* One directory entry (a DIR_INDEX item's entry). */
struct btk_dir_entry {
	uint64_t index;	    /* DIR_INDEX sequence number (its key offset) */
	struct btk_key loc; /* INODE_ITEM key of an inode here, or ROOT_ITEM key of a subvolume */
	uint64_t transid;
	uint8_t type;	  /* BTRFS_FT_* */
	const char *name; /* name_len bytes, not NUL-terminated, inside the leaf */
	uint16_t name_len;
	/* where the entry leads: subvol 0 and inode ino of this tree, or the top directory
	 * (BTK_ROOT_DIRID) of subvolume subvol */
	uint64_t subvol, ino;
};

/* Calls fn for every entry of directory dir in index (creation) order. -EUCLEAN when an entry
 * overruns its item (the entries before it have been passed). fn may search other trees. */
int btk_dir_for_each(struct btk_fs *fs, const struct btk_root *root, uint64_t dir,
		     int (*fn)(void *ctx, const struct btk_dir_entry *e), void *ctx);

/* The ROOT_ITEM of subvolume / snapshot id (the one with the highest key offset). */
struct btk_root_item;
int btk_subvol_item(struct btk_fs *fs, uint64_t id, struct btk_root_item *out);
/* Whether the entry `name` of directory dir in tree parent leading to subvolume child is
 * linked by a ROOT_REF (parent, child) naming that directory and name. A snapshot keeps
 * the entries of the subvolumes nested in its source without such a reference; the kernel
 * shows them as empty directories. 0 linked, -ENOENT not (no message), other errors. */
int btk_subvol_ref_check(struct btk_fs *fs, uint64_t parent, uint64_t child, uint64_t dir,
			 const char *name, size_t len);
/* Calls fn(ctx, id, parent) for FS_TREE (parent 0) and every subvolume and snapshot whose root
 * item the root tree holds, in id order; parent is the subvolume its ROOT_BACKREF names (0
 * when none: being deleted, or not linked). A non-zero return of fn stops and is returned. */
int btk_subvol_for_each(struct btk_fs *fs, int (*fn)(void *ctx, uint64_t id, uint64_t parent),
			void *ctx);
/* Whether subvolume id is read-only (its ROOT_ITEM's flag). */
int btk_subvol_readonly(struct btk_fs *fs, uint64_t id, bool *ro);

/* Calls fn for every extended attribute of inode ino (XATTR_ITEM entries, in name-hash order).
 * name and value point into the leaf, valid during the call. -EUCLEAN when an entry overruns
 * its item. */
typedef int (*btk_xattr_fn)(void *ctx, const char *name, uint16_t name_len, const uint8_t *value,
			    uint16_t value_len);
int btk_xattr_for_each(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		       btk_xattr_fn fn, void *ctx);

/* The value of xattr name of inode ino: *value malloc'ed (owned by the caller; not
 * NUL-terminated), *len its length. -ENODATA when the inode has no such attribute. */
int btk_xattr_get(struct btk_fs *fs, const struct btk_root *root, uint64_t ino, const char *name,
		  size_t name_len, uint8_t **value, size_t *len);

/* ---- file data (fs_read_data.c) ---- */

/* What btk_file_read passes on, in file order, covering [0, size) with no gap or overlap. */
struct btk_file_read_ops {
	/* len bytes of file data at file offset off; data NULL: a hole or prealloc range (reads
	 * as zeros). Return 0 to go on; anything else stops the read and is returned. */
	int (*data)(void *ctx, uint64_t off, const uint8_t *data, size_t len);
	/* [off, off+len) could not be read (unreadable or corrupt extent, checksum mismatch,
	 * bad compressed stream): why says what. NULL, or a nonzero return: the read stops with
	 * -EIO / that value. 0: go on; the range is then passed to data() as a hole. */
	int (*bad)(void *ctx, uint64_t off, uint64_t len, const char *why);
};

/* Reads bytes [off, off+len) of file ino whose inode is ii (the range is cut at ii->size; len
 * UINT64_MAX: to the end): inline, regular (data
 * checksums verified unless the inode has NODATASUM), compressed (zlib, lzo, zstd), prealloc
 * and hole extents, reflinked extents (an extent_offset into a shared extent). Memory is
 * bounded by the largest extent (128 KiB compressed, or one chunk of 1 MiB at a time for
 * uncompressed extents). Errors: those of the extent tree walk (-EUCLEAN, -EIO), -ENOMEM,
 * ops' return values. */
int btk_file_read(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		  const struct btk_inode_info *ii, uint64_t off, uint64_t len,
		  const struct btk_file_read_ops *ops, void *ctx);

/* Bytes [off, off+len) of file ino into buf (holes as zeros); *got the count (less than len
 * at the end of the file). For symlink targets and small reads; -EIO (with the reason) for an
 * unreadable range. */
int btk_file_pread(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		   const struct btk_inode_info *ii, uint8_t *buf, size_t len, uint64_t off,
		   size_t *got);

#endif
