/* fs_edit.h (layer 6) — changing a filesystem that exists: free numbers, looking names up as the
 * running transaction sees them, unlinking, links, renames, inode attribute changes, xattr removal,
 * deleting inodes with their data, subvolume deletion.
 *
 * Everything reads the transaction's current state (trans.h btk_item_next/prev), so a run of
 * changes in one transaction sees its own earlier changes. Errors are negative errno values
 * with a message (btk_errmsg): -ENOENT a name or inode absent, -EEXIST a name present,
 * -ENOTEMPTY a directory not empty, -EUCLEAN a malformed item, and the write path's errors.
 * Times are the caller's (SOURCE_DATE_EPOCH or the clock): nothing here reads the clock.
 */
#ifndef BTK_FS_EDIT_H
#define BTK_FS_EDIT_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/fs_write.h"

/* The item at exactly key in tree, copied into a malloc'd buffer of nodesize bytes (*out,
 * the caller frees it): 0, 1 when absent, negative errno. */
int btk_fs_item_get(struct btk_trans *t, uint64_t tree, const struct btk_key *key, uint8_t **out,
		    uint32_t *size);

/* One past the highest inode number used in tree root (at least 257). -EOVERFLOW when none
 * is left. */
int btk_fs_next_ino(struct btk_trans *t, uint64_t root, uint64_t *ino);
/* One past the highest DIR_INDEX of directory dir (at least 2). */
int btk_dir_next_index(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t *index);
/* One past the highest tree id in the root tree among subvolume ids (at least 256). */
int btk_fs_next_subvol_id(struct btk_trans *t, uint64_t *id);

/* A directory entry as found. */
struct btk_dentry {
	struct btk_key loc; /* INODE_ITEM key, or (subvol id, ROOT_ITEM, -1) */
	uint8_t ftype;	    /* BTRFS_FT_* */
	/* a subvolume entry that no ROOT_REF (root, subvol) naming this directory and name links:
	 * a snapshot's placeholder (fs_read.h BTK_STUB_INO), an empty directory for every verb;
	 * the subvolume loc names is elsewhere and no business of this entry */
	bool stub;
};
/* Looks name up in dir: 0 and *out, -ENOENT. */
int btk_dir_find(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		 struct btk_dentry *out);
/* The first entry of dir by index (its name copied to name[256], NUL-terminated, *len set):
 * 0, 1 when the directory is empty. */
int btk_dir_first(struct btk_trans *t, uint64_t root, uint64_t dir, char *name, uint16_t *len,
		  struct btk_dentry *out);
/* The inode's item as it is now. */
int btk_inode_get(struct btk_trans *t, uint64_t root, uint64_t ino, struct btk_inode_info *out);
/* The directory an inode's first name is in (INODE_REF, else INODE_EXTREF); the top
 * directory (its own parent) gives itself. */
int btk_inode_parent(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t *parent);

/* A change of an inode's attributes; NULL / false fields stay. The transid becomes this
 * transaction's. *after (may be NULL) gets the result. */
struct btk_inode_change {
	int nlink_delta;
	bool set_mode, set_uid, set_gid;
	/* chown(2)'s rule (even for root): a non-directory loses set-user-ID, and set-group-ID
	 * when group execution is on (without it the bit is kept) */
	bool kill_suid;
	uint32_t mode, uid, gid; /* mode: the permission bits (07777) only */
	const struct btk_time *atime, *mtime, *ctime;
};
int btk_inode_change(struct btk_trans *t, uint64_t root, uint64_t ino,
		     const struct btk_inode_change *c, struct btk_inode_info *after);

/* Removes name from dir: DIR_ITEM entry, DIR_INDEX, and for an inode its INODE_REF or
 * INODE_EXTREF entry; the directory's size shrinks by 2 * len and its mtime and ctime become
 * now. The target itself is not touched (*out says what it was). For a subvolume entry the
 * index comes from `index` (its ROOT_REF sequence; the caller removes the ROOT_REFs). */
int btk_dir_unlink(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		   uint64_t index, const struct btk_time *now, struct btk_dentry *out);
/* Links an inode as name in dir with the next index (btk_dir_link), setting the directory's
 * mtime and ctime to now. */
int btk_dir_add(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		const struct btk_dentry *d, const struct btk_time *now);

/* Creates a new inode (the next free number, *ino) with attributes a (nlink is set to 1; the
 * inode takes the nodatacow/nodatasum/compress/nocompress flags of dir, its group and
 * set-group-ID bit (btk_dir_inherit_owner), and what dir's default ACL gives
 * (btk_acl_inherit), as the kernel's inheritance does) named name in dir. A
 * symlink gets target (tlen bytes, inline) as its content and size. */
int btk_fs_create(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		  const struct btk_inode_attr *a, const char *target, uint32_t tlen, uint64_t *ino);
/* The inheritable flags of directory dir (to pass on to what is created in it). */
int btk_dir_inherit_flags(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t *flags);
/* The kernel's xattr_permission for a change of xattr name in inode ino: user.* names only on
 * regular files and directories (-EPERM otherwise). */
int btk_xattr_permitted(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
			uint16_t len);
/* The kernel's inode_init_owner for a new inode with attributes a in dir: when dir has the
 * set-group-ID bit, a takes dir's group, and a directory takes the bit too. */
int btk_dir_inherit_owner(struct btk_trans *t, uint64_t root, uint64_t dir,
			  struct btk_inode_attr *a);

/* Deletes every item of inode ino (inode, names, xattrs, file extents: the data references
 * go, and data no longer referenced is freed with its checksums after the commit). */
int btk_inode_delete(struct btk_trans *t, uint64_t root, uint64_t ino);

/* unlink(2)/rmdir(2): removes name from dir; a directory must be empty; an inode whose last
 * name goes is deleted. A subvolume entry is refused (-EISDIR); a placeholder (an empty
 * directory) goes as the kernel's rmdir removes it, its subvolume untouched. */
int btk_fs_unlink(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		  const struct btk_time *now);
/* rm -r: name and everything below it, in bounded memory (a stack of directory levels).
 * A subvolume inside is refused (-EPERM, nothing of it removed). *removed counts names. */
int btk_fs_unlink_tree(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		       uint16_t len, const struct btk_time *now, uint64_t *removed);
/* rename(2) inside one tree: a target that exists is replaced (a directory only by a
 * directory, and only when empty: -ENOTEMPTY, -EISDIR, -ENOTDIR); a directory cannot move
 * below itself (-EINVAL). Subvolume entries are refused (-EXDEV). */
int btk_fs_rename(struct btk_trans *t, uint64_t root, uint64_t sdir, const char *sname,
		  uint16_t slen, uint64_t ddir, const char *dname, uint16_t dlen,
		  const struct btk_time *now);
/* link(2): another name for inode ino (not a directory: -EPERM). */
int btk_fs_link(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t dir, const char *name,
		uint16_t len, const struct btk_time *now);

/* Whether directory dir has a default POSIX ACL (system.posix_acl_default): then the kernel
 * applies no umask to what is created in it (callers choose the mode asked for). */
int btk_acl_default(struct btk_trans *t, uint64_t root, uint64_t dir, bool *has);
/* What inode ino, just created in directory dir, inherits from dir's default ACL, as the
 * kernel's posix_acl_create gives it: its mode masked by the ACL and the access ACL (stored
 * when it says more than the mode), and for a directory the default ACL itself. keep_own:
 * an access (default) ACL the inode already has stays, as a copy that carries its own (put).
 * Nothing without a default ACL, nothing for a symlink. */
int btk_acl_inherit(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t ino, bool keep_own);

/* chmod(2)'s part in the access ACL of ino (posix_acl_chmod): its owner, mask (or owning
 * group) and other entries become mode's bits. The caller sets the mode. Nothing without an
 * access ACL. */
int btk_acl_chmod(struct btk_trans *t, uint64_t root, uint64_t ino, uint32_t mode);
/* btk_acl_inherit (keep_own) for inode top just created in dir and, top down, for everything
 * below it when it is a directory: a tree copied in (put), each entry as the kernel's create
 * in its directory would make it. */
int btk_acl_inherit_tree(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t top);

/* Removes xattr name of ino; -ENODATA when absent. */
int btk_xattr_remove(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
		     uint16_t len);
/* Sets or replaces xattr name of ino. */
int btk_xattr_replace(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
		      uint16_t nlen, const void *value, uint16_t vlen);

/* Deletes subvolume id (named `name` in directory dir of tree parent): its directory entry,
 * ROOT_REF/ROOT_BACKREF, uuid tree entries, then the whole tree (btk_tree_drop). Refused:
 * the default subvolume (-EPERM), one holding other subvolumes (-ENOTEMPTY). */
int btk_subvol_delete(struct btk_trans *t, uint64_t id, const struct btk_time *now,
		      void (*progress)(void *ctx, uint64_t blocks), void *ctx);
/* Names tree id (a snapshot made with btk_tree_snapshot) as name in directory dir of tree
 * parent: the directory entry (next index), ROOT_REF and ROOT_BACKREF; the directory's mtime
 * and ctime become now. */
int btk_subvol_link(struct btk_trans *t, uint64_t parent, uint64_t dir, const char *name,
		    uint16_t len, uint64_t id, const struct btk_time *now);
/* The reverse: subvolume id's entry name (index) in directory dir of tree parent, as
 * btk_subvol_parent gives them, goes with ROOT_REF and ROOT_BACKREF; the tree stays. */
int btk_subvol_unlink(struct btk_trans *t, uint64_t id, uint64_t parent, uint64_t dir,
		      const char *name, uint16_t len, uint64_t index, const struct btk_time *now);
/* mv of a subvolume: subvolume id, wherever it is named now, becomes name dname in directory
 * ddir of tree droot (any subvolume but id and those inside it: -EINVAL): the old directory
 * entry and ROOT_REF/ROOT_BACKREF go, new ones come (btk_subvol_link). An existing target is
 * replaced only when it is an empty plain directory (-ENOTEMPTY, -ENOTDIR, -EEXIST for a
 * subvolume). The subvolume's own tree is not changed. */
int btk_subvol_move(struct btk_trans *t, uint64_t id, uint64_t droot, uint64_t ddir,
		    const char *dname, uint16_t dlen, const struct btk_time *now);
/* The subvolume that holds subvolume id (its ROOT_BACKREF): parent tree, directory, index,
 * name (copied to name[256]). -ENOENT for the top level or an unlinked tree. */
int btk_subvol_parent(struct btk_trans *t, uint64_t id, uint64_t *parent, uint64_t *dir,
		      uint64_t *index, char *name, uint16_t *len);

/* ---- before a transaction: what refuses writing (committed state) ---- */
/* Whether the filesystem holds the image a conversion keeps for its rollback (format.h
 * BTK_CONVERT_*): 1 (and with path, its subvolume's path, malloc'd, or NULL when unlinked),
 * 0, or a read error. */
int btk_convert_image(struct btk_fs *fs, char **path);
/* The one guard of every writer before a change that ends the chance of a rollback: `what`
 * (a verb, for the message) is about to delete or change inode ino of tree root, with tree
 * everything below directory ino too (ino 0: the whole subvolume; root 0: the whole
 * filesystem, as a resize). When that reaches the conversion's image: -EPERM naming it, or
 * with force a warning (btk_warn) and 0. Renaming the subvolume is harmless (found by id). */
int btk_convert_guard(struct btk_fs *fs, uint64_t root, uint64_t ino, bool tree, bool force,
		      const char *what);
/* Work the kernel left unfinished on disk, resumed or cleaned up at its next mount; the
 * first found in this order. */
enum btk_unfinished {
	BTK_UNFINISHED_NONE,
	BTK_UNFINISHED_LOG,	    /* a log tree (fsync'd writes) to replay at mount */
	BTK_UNFINISHED_BALANCE,	    /* a balance item (paused or interrupted balance) */
	BTK_UNFINISHED_RELOC_TREES, /* relocation trees, no balance item (a shrink's) */
	BTK_UNFINISHED_RELOC_INODE, /* a data relocation inode left in the data reloc tree */
};
int btk_fs_unfinished(struct btk_fs *fs, enum btk_unfinished *what);
/* 0 when file operations may write; -EOPNOTSUPP naming why not: a balance in progress,
 * relocation trees left, a log tree that needs replay. */
int btk_fs_write_refusals(struct btk_fs *fs);

#endif
