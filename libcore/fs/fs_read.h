/* fs_read.h — read-only pieces of the fs layer (layer 8): names, paths, subvolumes, file extents.
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

/* Calls fn for every item of root with this objectid and type and key offset >= from, in key
 * order. leaf/slot locate the item (the leaf stays referenced during the call). */
typedef int (*btk_item_fn)(void *ctx, const struct btk_block *leaf, int slot,
			   const struct btk_key *key, const uint8_t *data, uint32_t size);
int btk_for_each_item(struct btk_fs *fs, const struct btk_root *root, uint64_t objectid,
		      uint8_t type, uint64_t from, btk_item_fn fn, void *ctx);

/* The tree of a subvolume / snapshot / FS_TREE by id (btk_root_find, with an error message
 * that names the id). */
int btk_fs_root(struct btk_fs *fs, uint64_t root_id, struct btk_root *out);

/* True for ids that hold files: FS_TREE (5) and subvolume ids 256..BTRFS_LAST_FREE_OBJECTID. */
bool btk_is_fs_tree(uint64_t root_id);

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

/* Looks name up in directory dir (DIR_ITEM by name hash, then DIR_INDEX as a fallback). On 0,
 * *loc is the entry's location key (INODE_ITEM: an inode of this tree; ROOT_ITEM: a subvolume
 * whose id is loc->objectid) and *ftype the dir entry type (BTRFS_FT_*). -ENOENT if absent. */
int btk_dir_lookup(struct btk_fs *fs, const struct btk_root *root, uint64_t dir, const char *name,
		   size_t len, struct btk_key *loc, uint8_t *ftype);

/* Resolves an absolute path from the top-level subvolume ("/", "/sub/dir/file"), entering
 * subvolumes on the way, to (*root_id, *ino). Empty components and "." are skipped; ".." is
 * refused (-EINVAL). -ENOTDIR when a middle component is not a directory. */
int btk_path_lookup(struct btk_fs *fs, const char *path, uint64_t *root_id, uint64_t *ino);

/* The fields of an inode item that tools show: struct btk_inode_info (format/inode_item.h). */
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

#endif
