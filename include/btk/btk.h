/* btk.h — libbtk: read an unmounted btrfs filesystem from image files, devices or a caller's
 * read function, and change its files, one crash-safe transaction per call.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Conventions for every function:
 * - Errors are negative errno values (-ENOENT no such path, -ENOTDIR, -EISDIR, -EINVAL a bad
 *   argument, -EIO / -EUCLEAN damage on disk, -ENOMEM, ...). The calling thread's last error
 *   has a one-line message, btkfs_errmsg(), valid until the thread's next libbtk call.
 * - Handles are opaque. A handle may be used by one thread at a time; different handles may be
 *   used by different threads at once (there is no global state but the per-thread message).
 * - Strings passed in are NUL-terminated byte strings; paths are absolute from the top-level
 *   subvolume ("/", "/sub/dir/file"), entering subvolumes on the way. ".." is refused.
 * - Structures the caller passes in start with a size field set to sizeof() as the caller was
 *   compiled, so that later versions can add fields at the end.
 * Nothing here is a btrfs on-disk structure: the layouts may change, these may not.
 */
#ifndef BTK_BTK_H
#define BTK_BTK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTKFS_VERSION_MAJOR 0
#define BTKFS_VERSION_MINOR 3

/* The library's version, "0.3". Static storage. */
const char *btkfs_version(void);

/* The calling thread's last error message; never NULL (empty when none). */
const char *btkfs_errmsg(void);

typedef struct btkfs btkfs;
typedef struct btkfs_dir btkfs_dir;
typedef struct btkfs_file btkfs_file;

/* What a long change has done so far (since 0.3; see btkfs_open_opts.progress). The library
 * fills it: later versions may add fields at the end. */
struct btkfs_progress {
	const char *what;     /* "copying" (btkfs_put: bytes of file data), "freeing" (a subvolume's
				 delete: tree blocks) */
	uint64_t done, total; /* total 0: not known */
	const char *unit;     /* NULL: bytes; else what is counted ("tree blocks") */
};

struct btkfs_open_opts {
	size_t size;	    /* sizeof(struct btkfs_open_opts) */
	uint64_t offset;    /* the filesystem starts this many bytes into each device (0) */
	unsigned flags;	    /* BTKFS_OPEN_* */
	unsigned partition; /* or in partition N of each (1-based, as mmls and sfdisk count
			       MBR primary and logical and GPT entries; 0: none) */
	/* since 0.2: read an older root instead of the superblock's (read-only opens; one of
	 * them): the backup root BTKFS_BACKUP_SLOT(n) (n 0..3; the field is n + 1, 1..4) or
	 * BTKFS_BACKUP_NEWEST, the newest root tree
	 * of generation `generation` or older that still reads, or the root tree whose root
	 * block is at tree_root (as btk-image roots lists them). 0: not chosen. */
	int backup;
	uint64_t generation;
	uint64_t tree_root;
	/* since 0.3 (an older caller's smaller size leaves them NULL): */
	/* with BTKFS_OPEN_WRITE: keep the old bytes of every change made through the handle in
	 * this file (btk-undo(8) puts the devices back from it). It must not exist or be empty;
	 * it is made at the first change. NULL: none (a failed change is still put back). */
	const char *undo_path;
	/* the library's warnings during calls on this handle (a damaged superblock copy, a
	 * fallback to another copy, what an archive put skipped), one line each, valid during
	 * the call, from the thread that calls in. NULL: they go to the process's btk warning
	 * hook, which only btk's own tools set (elsewhere they are dropped). */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* called now and then during a long change (may be NULL); p is valid during the call */
	void (*progress)(void *ctx, const struct btkfs_progress *p);
	void *progress_ctx;
};
/* backup: the backup root in superblock slot n (0..3, as btk-image -b and the messages count
 * them) is BTKFS_BACKUP_SLOT(n); the field holds n + 1 so that 0 can mean "none". */
#define BTKFS_BACKUP_SLOT(n) ((n) + 1)
#define BTKFS_BACKUP_NEWEST  5
/* flags */
#define BTKFS_OPEN_WRITE 1u /* open for writing (the write calls below); exclusive */
#define BTKFS_OPEN_WAIT	 2u /* with WRITE: wait while another process writes, not -EBUSY */
#define BTKFS_OPEN_FORCE                                                                           \
	4u /* with WRITE: write into read-only subvolumes, and change the                          \
	      image a conversion keeps for its rollback (refused otherwise) */

/* Opens the filesystem on npaths devices or image files, read-only (it never writes to them;
 * a mounted device may be read, but what is read may be stale). A path may carry where the
 * filesystem lies in it: "disk.img@p2" (partition 2), "disk.img@1m" (an offset), as btk(7)
 * says; opts may be NULL. On 0, *out is the caller's: btkfs_close() it.
 * With BTKFS_OPEN_WRITE the devices are opened read-write and exclusively: a device the
 * kernel uses (mounted, a member of a mounted filesystem, backing a loop device) is refused
 * (-EBUSY), as is a device another process writes with btk (-EBUSY naming its pid, unless
 * BTKFS_OPEN_WAIT); the handle keeps that lock until btkfs_close. Older roots cannot be
 * written (-EINVAL). */
int btkfs_open(const char *const *paths, int npaths, const struct btkfs_open_opts *opts,
	       btkfs **out);

/* Reads exactly len bytes at off into buf: 0, or a negative errno. Called from the thread
 * that calls into libbtk with the handle, never after btkfs_close. */
typedef int (*btkfs_read_fn)(void *ctx, void *buf, size_t len, uint64_t off);

/* Opens a single-device filesystem whose bytes come from read (a file-like object, an
 * evidence-container reader, a network stream); size is the device's size in bytes, and the
 * function gives the filesystem's own bytes (no offset or partition: -ENOTSUP). */
int btkfs_open_reader(btkfs_read_fn read, void *ctx, uint64_t size,
		      const struct btkfs_open_opts *opts, btkfs **out);

/* Closes fs and everything opened from it that is still open. NULL is ignored. */
void btkfs_close(btkfs *fs);

struct btkfs_info {
	char uuid[37]; /* the filesystem's uuid, as text */
	char label[256];
	uint32_t nodesize, sectorsize;
	uint32_t num_devices;
	uint64_t generation;
	uint64_t total_bytes; /* of all devices */
	uint64_t bytes_used;
	char csum_type[16]; /* "crc32c", "xxhash64", "sha256", "blake2b" */
};
int btkfs_get_info(btkfs *fs, struct btkfs_info *out);

struct btkfs_time {
	int64_t sec;
	uint32_t nsec;
};

/* The top level (id 5) and every subvolume and snapshot, in id order. */
struct btkfs_subvol {
	uint64_t id, parent;		/* parent: the subvolume holding its entry (0: none) */
	const char *path;		/* from the top level ("/" for it); NULL when not linked */
	int readonly;			/* 1 for a read-only snapshot */
	uint64_t generation;		/* of its last change */
	struct btkfs_time otime;	/* when it was made */
	const char *uuid, *parent_uuid; /* as text; "" when none (a snapshot's source: parent) */
};
/* Calls fn for each (strings valid during the call); fn returns 0 to go on, anything else
 * stops and is returned. */
int btkfs_subvolumes(btkfs *fs, int (*fn)(void *ctx, const struct btkfs_subvol *s), void *ctx);

/* An inode, as stat(2) would show it (symbolic links are not followed). */
struct btkfs_stat {
	uint64_t subvol; /* the subvolume (tree id) holding the inode: 5 for the top level */
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;
	uint64_t bytes; /* bytes of data it holds on disk (st_blocks * 512) */
	uint32_t rdev_major, rdev_minor;
	uint64_t flags;				      /* btrfs inode flags (BTRFS_INODE_*) */
	uint64_t generation;			      /* when it was created */
	uint64_t transid;			      /* when it last changed */
	struct btkfs_time atime, mtime, ctime, otime; /* otime: creation */
};
int btkfs_stat(btkfs *fs, const char *path, struct btkfs_stat *out);

/* The target of symbolic link path into buf (not NUL-terminated when it fills buf). Returns
 * the target's full length, which may be more than size; -EINVAL if path is no link. */
ssize_t btkfs_readlink(btkfs *fs, const char *path, char *buf, size_t size);

/* Extended attributes: names as NUL-terminated strings one after another (as listxattr(2));
 * returns the bytes they take, which may be more than size (then buf holds as many whole
 * names as fit). size 0 asks for the length only. */
ssize_t btkfs_listxattr(btkfs *fs, const char *path, char *buf, size_t size);
/* The value of xattr name; returns its length, which may be more than size (then buf holds
 * its first size bytes). -ENODATA when there is none. */
ssize_t btkfs_getxattr(btkfs *fs, const char *path, const char *name, void *buf, size_t size);

/* Directories: the entries of path in creation order, "." and ".." left out. */
int btkfs_opendir(btkfs *fs, const char *path, btkfs_dir **out);
struct btkfs_dirent {
	const char *name;     /* NUL-terminated; valid until the next btkfs_readdir or closedir */
	uint64_t subvol, ino; /* where it leads: a subvolume's entry leads to its top (ino 256) */
	unsigned char type;   /* DT_REG, DT_DIR, DT_LNK, ... (dirent.h) */
};
/* 1 with *e filled, 0 at the end, negative on an error. */
int btkfs_readdir(btkfs_dir *d, struct btkfs_dirent *e);
void btkfs_closedir(btkfs_dir *d);

/* Files: open a regular file (or any inode) to read its data. */
int btkfs_file_open(btkfs *fs, const char *path, btkfs_file **out);
/* Up to len bytes at off into buf (holes, prealloc ranges and unwritten tails read as
 * zeros; compressed and inline data decoded; checksums verified). Returns the bytes read:
 * fewer than len only at the end of the file, 0 at or past it. -EIO for data that does not
 * read (a checksum mismatch, an unreadable block), with the reason in btkfs_errmsg(). */
ssize_t btkfs_file_pread(btkfs_file *f, void *buf, size_t len, uint64_t off);
uint64_t btkfs_file_size(const btkfs_file *f);
void btkfs_file_close(btkfs_file *f);

/* One piece of a file's data as it lies on disk. */
struct btkfs_extent {
	uint64_t offset, length; /* the file range [offset, offset+length) */
	unsigned kind;		 /* BTKFS_EXTENT_* */
	unsigned compression;	 /* 0 none, 1 zlib, 2 lzo, 3 zstd */
	/* REGULAR and PREALLOC: the extent on disk, and where the range's first byte lies */
	uint64_t disk_logical, disk_length; /* the whole (maybe compressed) extent */
	uint64_t logical;		    /* the range's first byte; compressed: disk_logical */
	uint64_t devid, physical;	    /* the first copy of that byte */
};
#define BTKFS_EXTENT_REGULAR  1
#define BTKFS_EXTENT_INLINE   2 /* in the tree, no disk address */
#define BTKFS_EXTENT_PREALLOC 3 /* allocated, reads as zeros */
#define BTKFS_EXTENT_HOLE     4
/* Calls fn for every extent of the file in file order; fn returns 0 to go on, anything else
 * stops the walk and is returned. */
int btkfs_file_extents(btkfs_file *f, int (*fn)(void *ctx, const struct btkfs_extent *e),
		       void *ctx);

/* Who owns the byte at a logical address. */
struct btkfs_owner {
	unsigned kind;	  /* BTKFS_OWNER_* */
	uint64_t subvol;  /* FILE: the subvolume; TREE: the tree id */
	uint64_t ino;	  /* FILE: the inode */
	uint64_t offset;  /* FILE: the byte's offset in the file */
	int level;	  /* TREE: the block's level */
	const char *path; /* FILE: one path of the inode from the top level (NULL if unknown);
			     valid during the callback */
};
#define BTKFS_OWNER_FILE 1 /* file data */
#define BTKFS_OWNER_TREE 2 /* a tree block */
/* What lies at logical: returns BTKFS_BYTE_* and calls fn (may be NULL) for every owner. */
int btkfs_owners(btkfs *fs, uint64_t logical, int (*fn)(void *ctx, const struct btkfs_owner *o),
		 void *ctx);
#define BTKFS_BYTE_FREE	    1 /* inside a chunk, owned by nothing */
#define BTKFS_BYTE_DATA	    2
#define BTKFS_BYTE_METADATA 3
#define BTKFS_BYTE_UNMAPPED 4 /* no chunk holds the address */

/* The consistency check (btk-fsck's, read-only). fn (may be NULL) sees each problem as it is
 * found; its strings are valid during the call; its return value is ignored (the check runs
 * to its end). Returns 0 when the check ran, whatever it found (see *out), or a negative
 * errno when it could not run. */
struct btkfs_problem {
	unsigned code;	       /* printed E%04u; stable */
	const char *name;      /* e.g. "nlink"; stable */
	const char *kind;      /* e.g. "inode" */
	int error;	       /* 1 an error, 0 a warning */
	const char *message;   /* what is wrong, one line */
	const char *expected;  /* what the counterpart says ("" when n/a) */
	const char *found;     /* what is on disk ("" when n/a) */
	uint64_t tree, bytenr; /* where, 0 when not about a tree / an address */
};
struct btkfs_check_result {
	size_t size; /* sizeof(struct btkfs_check_result) */
	uint64_t errors, warnings;
	uint64_t tree_blocks, bytes_used;
};
#define BTKFS_CHECK_DATA 1 /* read and verify every data block's checksum, every copy */
int btkfs_check(btkfs *fs, unsigned flags, int (*fn)(void *ctx, const struct btkfs_problem *p),
		void *ctx, struct btkfs_check_result *out);

/* ---- Changing files (since 0.2; a handle opened with BTKFS_OPEN_WRITE, else -EBADF) ----
 * Each call is one transaction: it is all on disk when the call returns 0, and nothing of it
 * is when it fails (the bytes it wrote before the failure are put back from an undo log; a
 * power cut or a kill at any moment leaves the old filesystem or the new one, as every write
 * lands where no committed tree reaches and the superblocks go last). The handle reads the
 * new state afterwards. Refused before anything is written: a filesystem with work the kernel
 * left (a log tree to replay, a balance, relocation trees: -EOPNOTSUPP), a read-only
 * subvolume (-EROFS) and the image a conversion keeps for its rollback (-EPERM) without
 * BTKFS_OPEN_FORCE, a snapshot's placeholder of a nested subvolume (-EPERM). With quotas on,
 * the commit counts the quota groups (or marks them for a rescan when it cannot). Times are
 * the clock's, or SOURCE_DATE_EPOCH's when that is set (new uuids then follow from the
 * filesystem's, so that the result is reproducible). Paths are absolute; errors as above,
 * with -EEXIST, -ENOTEMPTY, -EISDIR, -EXDEV (across subvolumes), -ENOSPC. */

/* Copies host file or directory tree src (as cp -a: data, holes, hard links, symlinks,
 * owners, modes, times, xattrs, ACLs) to path; when path is a directory, into it under src's
 * name. An existing non-directory there is -EEXIST unless BTKFS_PUT_REPLACE. */
#define BTKFS_PUT_REPLACE 1u
int btkfs_put(btkfs *fs, const char *src, const char *path, unsigned flags);
/* mode: the permission bits (07777), or BTKFS_MODE_DEFAULT (0755; 0777 masked by a default
 * ACL). BTKFS_MKDIR_PARENTS: missing parents too, an existing directory is no error. */
#define BTKFS_MODE_DEFAULT  0xffffffffu
#define BTKFS_MKDIR_PARENTS 1u
int btkfs_mkdir(btkfs *fs, const char *path, uint32_t mode, unsigned flags);
/* Removes a file, symlink, ... or an empty directory; with BTKFS_REMOVE_RECURSIVE a
 * directory and everything below it. Subvolumes: btkfs_subvol_delete. */
#define BTKFS_REMOVE_RECURSIVE 1u
int btkfs_remove(btkfs *fs, const char *path, unsigned flags);
/* rename(2) (dst an existing directory: into it); a subvolume moves to any directory. */
int btkfs_rename(btkfs *fs, const char *src, const char *dst);
/* A hard link path to target (same subvolume), or a symbolic link path holding target. */
int btkfs_link(btkfs *fs, const char *target, const char *path);
int btkfs_symlink(btkfs *fs, const char *target, const char *path);
/* chmod(2) (07777; an access ACL follows); chown(2) ((uint32_t)-1 keeps that id; a file
 * loses set-user-ID and capabilities as with the kernel). */
int btkfs_chmod(btkfs *fs, const char *path, uint32_t mode);
int btkfs_chown(btkfs *fs, const char *path, uint32_t uid, uint32_t gid);
/* touch: atime and mtime become *when (NULL: now), ctime now; a missing file is created
 * (empty, 0644). */
int btkfs_touch(btkfs *fs, const char *path, const struct btkfs_time *when);
/* Sets (replaces) or removes extended attribute name ("user.x", "security.y", ...; user.*
 * only on files and directories: -EPERM). Values up to 65535 bytes (the leaf may take
 * fewer: -ENOSPC). */
int btkfs_setxattr(btkfs *fs, const char *path, const char *name, const void *value, size_t size);
int btkfs_removexattr(btkfs *fs, const char *path, const char *name);
/* A snapshot of subvolume src (its top directory's path) as path; *id (may be NULL) gets
 * its subvolume id. */
#define BTKFS_SNAPSHOT_READONLY 1u
int btkfs_snapshot(btkfs *fs, const char *src, const char *path, unsigned flags, uint64_t *id);
int btkfs_subvol_create(btkfs *fs, const char *path, uint64_t *id);
/* Deletes subvolume path and its whole tree (not the top level, not the default one, not
 * one that holds others). */
int btkfs_subvol_delete(btkfs *fs, const char *path);
/* The subvolume a mount without subvol= shows. */
int btkfs_subvol_set_default(btkfs *fs, const char *path);

/* ---- since 0.3 ---- */

/* btkfs_put with options: flags BTKFS_PUT_*, compress the data of new files ("zlib", "lzo",
 * "zstd", "zlib:LEVEL", "zstd:LEVEL"; NULL: none; a bad name: -EINVAL). BTKFS_PUT_ARCHIVE:
 * src is an archive (tar: ustar, pax, GNU; cpio; compressed with gzip, xz, zstd, bzip2...;
 * "-": standard input), read with libarchive (loaded at the first such put: -ENOSYS without
 * it), and path becomes the directory of its tree; what it skips (names with "..", links to
 * nothing) is said through the warning callback. BTKFS_PUT_NO_DIR: a directory src is refused
 * (-EISDIR) rather than copied with all below it. opts may be NULL (btkfs_put). */
struct btkfs_put_opts {
	size_t size; /* sizeof(struct btkfs_put_opts) */
	unsigned flags;
	const char *compress;
};
#define BTKFS_PUT_ARCHIVE 2u
#define BTKFS_PUT_NO_DIR  4u
int btkfs_put_ex(btkfs *fs, const char *src, const char *path, const struct btkfs_put_opts *opts);

/* What the handle's last change did (a write call above, successful or not): copied into
 * *out as far as out->size reaches (set it to sizeof(struct btkfs_change)); its strings are
 * valid until the handle's next call. -ENOENT when the handle made no change yet. On 0 the
 * calling thread's message (btkfs_errmsg(): the change's) is left as it was. */
struct btkfs_change {
	size_t size;	     /* sizeof(struct btkfs_change) */
	int failed;	     /* 0: committed; or where it failed, BTKFS_FAILED_* */
	uint64_t generation; /* the filesystem's after it */
	uint64_t count;	     /* mkdir: directories made; remove: names removed; else 0 */
	uint64_t id;	     /* snapshot, subvol create/delete/set_default: the subvolume's id */
	const char *path;    /* where it went: put, rename, link, symlink into a directory give
				path/name; else the path given */
	const char *quota_rescan; /* NULL, or why the commit marked the quota groups for a rescan
				     (btrfs quota rescan after mounting) */
	const char *note;	  /* after a failure, "" when every byte written was put back, else
				     what the devices hold (also at the end of btkfs_errmsg()) */
	/* put: what was copied */
	uint64_t inodes, names, data_bytes, extents, compressed_extents, inline_files;
};
#define BTKFS_FAILED_SOURCE  1 /* put: the source could not be read; nothing was written */
#define BTKFS_FAILED_REFUSED 2 /* the filesystem may not be changed (work the kernel left, ...) */
#define BTKFS_FAILED_CHANGE  3 /* the change itself (its message names the path) */
#define BTKFS_FAILED_COMMIT  4 /* its commit */
int btkfs_last_change(btkfs *fs, struct btkfs_change *out);

#ifdef __cplusplus
}
#endif
#endif
