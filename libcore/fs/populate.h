/* populate.h (layer 6) — copying a host directory tree into a filesystem tree (mkfs --rootdir, and
 * later image put -r), through the fs layer.
 *
 * The result depends only on the tree's content: names are taken in byte order, inode numbers
 * and directory indexes are assigned in that order, hard links are found by (st_dev, st_ino)
 * and counted within the tree, and with a SOURCE_DATE_EPOCH every time is clamped to it
 * (atime follows mtime; ctime and otime are the epoch), so readdir order, source inode numbers
 * and ctimes of a copy do not leak in.
 */
#ifndef BTK_POPULATE_H
#define BTK_POPULATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "trans/trans.h"
#include "base/vec.h"

/* The scanned source tree: one node per name; nodes sharing an inode share `ino`. */
struct btk_src_node {
	char *name; /* in the tree's names arena; NULL for the top */
	uint16_t name_len;
	uint32_t parent;		 /* index of the parent node */
	uint32_t first_child, nchildren; /* children are contiguous, in name order */
	uint32_t inode;			 /* index into btk_src_tree.inodes */
};

/* What the copy writes of a source inode's struct stat, packed (a tree holds one per file:
 * 72 bytes, not a struct stat's 144); btk_src_inode_set fills it from one. */
struct btk_src_inode {
	int64_t mtime, atime, ctime; /* seconds (before 1970: negative) */
	uint64_t size;		     /* st_size */
	union {
		uint64_t rdev;	 /* a device node: st_rdev */
		uint64_t blocks; /* a regular file: st_blocks (512 bytes) */
	};
	uint32_t mtime_ns, atime_ns, ctime_ns;
	uint32_t uid, gid;
	uint32_t first_node; /* the node through which it is created */
	uint32_t names;	     /* hard links within the tree */
	uint16_t mode;	     /* st_mode: type and permission bits */
	bool made;	     /* made by btk_src_apply: nothing to read at its host path */
};

/* Sets what in keeps of st (first_node, names and made stay). */
void btk_src_inode_set(struct btk_src_inode *in, const struct stat *st);

struct btk_populate_stats {
	uint64_t inodes, names, data_bytes, inline_files, extents, compressed_extents;
};

struct btk_src_content;
struct btk_src_spool;
struct btk_src_tree {
	char *top; /* host path of the source directory, or the archive's name (owned) */
	struct btk_arena names; /* the nodes' names */
	struct btk_src_node *nodes;
	uint32_t nnodes;
	struct btk_src_inode *inodes;
	uint32_t ninodes;
	/* from an archive stream (btk_stream_end): per inode, what arrived (data on disk
	 * already), and what writing it cost; NULL for a host directory */
	struct btk_src_content *content;
	struct btk_src_spool *spool; /* the bytes content keeps (owned) */
	struct btk_populate_stats pre;
};

/* As btk_src_scan, but path may also be a single file, symlink or special file (a tree of one
 * node). */
int btk_src_scan_any(const char *path, bool skip_unreadable, struct btk_src_tree *out);
/* Scans dir (lstat, no following of links, no crossing into other filesystems is not
 * enforced). -ENOTDIR, or the errno of the first unreadable directory with its path in
 * btk_errmsg (skip_unreadable: warn and leave it empty instead). *out is freed with
 * btk_src_free. */
int btk_src_scan(const char *dir, bool skip_unreadable, struct btk_src_tree *out);
void btk_src_free(struct btk_src_tree *t);
/* Device-table changes (makedevs, genext2fs -D): path relative to the top; an entry there
 * gets st's permission bits, uid, gid (and rdev for a device); a missing one is made (its
 * parent must be a directory of the tree or made by an earlier change) as st says: a
 * directory, an empty file, a device node or a fifo, with st's times. An entry of another
 * type is an error naming it. The tree keeps its order (names sorted, breadth first). */
struct btk_src_change {
	const char *path;
	struct stat st;
};
int btk_src_apply(struct btk_src_tree *t, const struct btk_src_change *c, size_t n);

/* Node index of relpath ("a/b", relative to the top; "" or "." is the top). -ENOENT. */
int btk_src_lookup(const struct btk_src_tree *t, const char *relpath, uint32_t *node);
/* Host path of node i into buf (returns buf, or NULL if it does not fit). */
char *btk_src_path(const struct btk_src_tree *t, uint32_t i, char *buf, size_t len);

#define BTK_SUBVOL_RO	   1 /* read-only subvolume */
#define BTK_SUBVOL_DEFAULT 2 /* the default subvolume */

/* Which source directories become subvolumes, and inode flags asked for: by node index
 * (btk_src_lookup). Directory flags nodatacow/nodatasum/compress/nocompress pass to
 * everything below, as the kernel's inheritance would. */
struct btk_populate_subvol {
	uint32_t node;
	int flags; /* BTK_SUBVOL_* */
};
struct btk_populate_iflags {
	uint32_t node;
	uint64_t flags; /* BTK_INODE_* */
};

struct btk_populate_opts {
	const struct btk_populate_subvol *subvols;
	int nsubvols;
	const struct btk_populate_iflags *iflags;
	int niflags;
	const uint8_t *uuid_seed; /* fsid when uuids must be reproducible, else NULL */
	uint64_t root;		  /* fs tree to fill (BTRFS_FS_TREE_OBJECTID) */
	uint64_t top_ino;	  /* its top directory (256), which must exist */
	/* put: when link_dir is set, the source's top becomes a new inode top_ino (file or
	 * directory) named link_name in directory link_dir with DIR_INDEX link_index, instead of
	 * giving its attributes to an existing top_ino */
	uint64_t link_dir, link_index;
	const char *link_name;
	uint16_t link_len;
	uint64_t first_ino; /* first inode number to assign (257) */
	/* mode bits every directory made gets besides its source's (put into a set-group-ID
	 * directory: S_ISGID, which the kernel gives each directory made there) */
	uint32_t dir_mode_or;
	bool epoch_set;
	uint64_t epoch; /* SOURCE_DATE_EPOCH */
	/* owners without root: every inode's uid (gid) is uid (gid) when force_uid (force_gid),
	 * else the source's plus uid_offset (gid_offset), which must stay within 0..2^32-2 */
	bool force_uid, force_gid;
	uint32_t uid, gid;
	int64_t uid_offset, gid_offset;
	int compress, compress_level;
	bool skip_unreadable;
	uint32_t max_inline; /* the kernel's max_inline; 0 = its default, BTK_MAX_INLINE */
	/* an archive stream: memory for small files' bytes and xattrs until their inodes are
	 * made, the rest in a temporary file (0 = 16 MiB; 1 = a file for all but 1 byte) */
	uint64_t spool_mem;
	/* Called every 1024 names, every 64 MiB of file data and once at the
	 * end, with the names done and the bytes of regular files done: st_size of each inode
	 * created (whatever is inline, sparse or compressed), plus the part of the one being
	 * copied. Only reports: it must not touch the transaction. */
	void (*progress)(void *ctx, uint64_t names, uint64_t bytes);
	void *progress_ctx;
	/* --file-contexts: the security.selinux value of the inode first named path ("/", or
	 * "/a/b" below the top of the copy) of type mode: 1 with *value (malloc'd, len bytes),
	 * which replaces the source's; 0 when none applies (the source's stays); or -errno after
	 * btk_err. NULL: the source's labels only. */
	int (*label)(void *ctx, const char *path, uint32_t mode, char **value, size_t *len);
	void *label_ctx;
};

/* Whether every owner o's offsets give is a valid id (not -1): 0, or -ERANGE naming the first
 * path that fails (btk_populate checks it too, before it makes anything). */
int btk_src_check_owners(const struct btk_src_tree *src, const struct btk_populate_opts *o);

/* Writes the scanned tree into o->root within t. */
int btk_populate(struct btk_trans *t, const struct btk_src_tree *src,
		 const struct btk_populate_opts *o, struct btk_populate_stats *st);

/* ---- archive streams (populate_stream.c) ----
 * Members of an archive arrive once, in the archive's order: each file's data goes straight to
 * data extents as it arrives (a placeholder reference holds them), the rest (names, attributes,
 * xattrs, small files' inline bytes) is kept. btk_stream_end sorts what arrived into a tree as a
 * directory scan gives it, and btk_populate makes every inode and name in that order, so the
 * metadata depends only on what the archive holds; the data lies in the archive's order. */

/* POSIX ACL entry tags and permission bits (the kernel's posix_acl_xattr values) */
enum {
	BTK_ACL_USER_OBJ = 1,
	BTK_ACL_USER = 2,
	BTK_ACL_GROUP_OBJ = 4,
	BTK_ACL_GROUP = 8,
	BTK_ACL_MASK = 0x10,
	BTK_ACL_OTHER = 0x20
};
struct btk_src_acl {
	uint16_t tag, perm; /* perm: 4 read, 2 write, 1 execute */
	uint32_t id;
};
struct btk_src_xattr {
	const char *name;
	const void *value;
	size_t len;
};
struct btk_src_island {
	uint64_t off, len;
};
struct btk_src_entry {
	const char *path;     /* member name as the archive has it */
	const char *hardlink; /* a hard link to this earlier member, or NULL */
	const char *symlink;  /* S_ISLNK: the target */
	struct stat st;	      /* type and mode, uid, gid, rdev, size, times */
	const struct btk_src_xattr *xattrs;
	size_t nxattrs;
	const struct btk_src_acl *acl_access, *acl_default; /* as system.posix_acl_* */
	size_t nacl_access, nacl_default;
	bool sparse; /* data only in islands (sorted); otherwise [0, st_size) */
	const struct btk_src_island *islands;
	size_t nislands;
	/* the member's data: len bytes at off (rising offsets; what was not stored reads as
	 * zeros); 0 or -errno with btk_err */
	int (*read)(void *ctx, void *buf, size_t len, uint64_t off);
	void *read_ctx;
};

struct btk_stream_stats {
	uint64_t members, escaping, absolute, repeated, dangling_links, skipped;
	char first_escaping[256], first_repeated[256], first_dangling[256];
};

struct btk_stream;
/* o as for btk_populate (compression, max_inline, root); iflags by path: FLAGS of paths that
 * decide how data is written (nodatasum, nodatacow), inherited below a directory. */
int btk_stream_start(struct btk_trans *t, const struct btk_populate_opts *o, const char *name,
		     struct btk_stream **out);
int btk_stream_iflags(struct btk_stream *s, const char *path, uint64_t flags);
/* One member. Members that escape the top ("../") are skipped, absolute names made relative,
 * a repeated name replaces the earlier one (a directory keeps its entries), as GNU tar
 * extracts them: counted in the stats. */
int btk_stream_add(struct btk_stream *s, const struct btk_src_entry *e);
/* The tree of what arrived, for btk_populate (*out freed with btk_src_free) */
int btk_stream_end(struct btk_stream *s, struct btk_src_tree *out, struct btk_stream_stats *st);
/* After btk_populate in the same transaction: the placeholder references go (data of members
 * no name kept is freed). Then frees s. With t NULL (a failed copy) only frees. */
int btk_stream_release(struct btk_stream *s, struct btk_trans *t);

#endif
