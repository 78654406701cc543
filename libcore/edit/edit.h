/* edit.h (layer 8) — changing files of an unmounted filesystem, one transaction per change:
 * the policy every writer of files shares (btk-image's file verbs, libbtk's btkfs_* writes).
 *
 * A session (struct btk_edit) runs on a filesystem opened for writing through the open path
 * with dev.undo set (every byte changed before the commit is kept): btk_edit_begin refuses
 * what a file change must not touch (btk_fs_write_refusals: a balance, relocation trees, a log
 * to replay), opens the write path, counts quota groups in the commit (backref/qgroup.h) and
 * starts the transaction; the verbs below resolve their paths, refuse what they must (a
 * read-only subvolume without force, a snapshot's placeholder, the conversion's image without
 * force: btk_convert_guard) and change the transaction; btk_edit_end commits, or drops the
 * transaction and puts back every byte written (the undo log), saying in e->note when that
 * could not be done. The filesystem object cannot be written again after btk_edit_end: close
 * it and open it again for the next change.
 *
 * Paths are absolute from the top-level subvolume ("/sub/dir/name"). Errors are negative
 * errno values with a one-line message (btk_errmsg) that names the path: -ENOENT, -ENOTDIR,
 * -EEXIST, -EISDIR, -EROFS (a read-only subvolume), -EPERM (a placeholder, the conversion's
 * image, across subvolumes), -ENAMETOOLONG, -EINVAL (not a name to create, a relative path),
 * -ENOSPC, and the write path's. Nothing here prints or reads the clock: e->now is the
 * caller's (SOURCE_DATE_EPOCH or the clock). */
#ifndef BTK_EDIT_H
#define BTK_EDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "backref/qgroup.h"
#include "fs/fs_edit.h"
#include "fs/populate.h"

struct btk_edit {
	/* the caller's, before btk_edit_begin */
	struct btk_fs *fs; /* opened for writing, devices undo-logged */
	struct btk_time now;
	bool epoch_set; /* now is SOURCE_DATE_EPOCH: new uuids follow from the fsid */
	uint64_t epoch;
	bool force; /* write into read-only subvolumes, past the conversion guard (a warning) */
	/* called while a subvolume's tree blocks are freed (may be NULL) */
	void (*progress)(void *ctx, uint64_t blocks);
	void *progress_ctx;
	/* the session's */
	struct btk_wfs *wfs;
	struct btk_trans *t;
	struct btk_qgroup_acct quota; /* what the commit did with quotas (quota.marked: a
					 rescan is needed, quota.why says why) */
	uint64_t generation;	      /* after btk_edit_end: the filesystem's */
	/* after a failed btk_edit_end: "" when every byte written went back, else what the
	 * devices hold now (a commit whose superblock went out, or bytes that did not go back) */
	char note[600];
};

/* Starts a session on e->fs (set e->fs, now, epoch, force first). 0, or a negative errno with
 * a message; btk_edit_end must follow either way. */
int btk_edit_begin(struct btk_edit *e);
/* Ends it: with ret 0 commits (its error when that fails), otherwise drops the transaction and
 * returns ret; after any failure the bytes written go back (e->note when they could not). */
int btk_edit_end(struct btk_edit *e, int ret);

/* ---- paths (for the verbs, and for tools that add their own) ---- */
/* path → tree root, inode ino, whether a directory. */
int btk_edit_lookup(struct btk_edit *e, const char *path, uint64_t *root, uint64_t *ino,
		    bool *is_dir);
/* The directory that will hold path's last name, and the name (pointing into buf, a copy of
 * path of len bytes, 4096 or more): missing parents, a parent that is not a directory or is
 * a placeholder, a name over 255 bytes, "." and "..", a read-only subvolume (without force)
 * are refused. */
int btk_edit_parent(struct btk_edit *e, const char *path, char *buf, size_t len, uint64_t *root,
		    uint64_t *dir, const char **name, uint16_t *nlen);
/* -EROFS for a read-only subvolume root unless force. */
int btk_edit_writable(struct btk_edit *e, uint64_t root, const char *path);
/* Before `what` deletes or changes inode ino of root (with tree: all below; ino 0: the whole
 * subvolume): the conversion guard (btk_convert_guard; with force a warning). */
int btk_edit_guard(struct btk_edit *e, uint64_t root, uint64_t ino, bool tree, const char *what,
		   const char *path);
/* Before `what` changes inode ino in place: writable, guard, not a placeholder. */
int btk_edit_changeable(struct btk_edit *e, uint64_t root, uint64_t ino, const char *what,
			const char *path);
/* PATH, or PATH/basename(from) when PATH is an existing directory (put, mv, ln): into out
 * (len bytes). -EINVAL when from has no name to give. */
int btk_edit_into_dir(struct btk_edit *e, const char *from, const char *path, char *out,
		      size_t len);

/* ---- the verbs: each changes e->t ---- */
#define BTK_EDIT_MODE_UNSET 0xffffffffu
/* mkdir: mode (07777) or BTK_EDIT_MODE_UNSET (0755, 0777 under a default ACL); with parents
 * every missing component and no error when it exists. *made counts directories made. */
int btk_edit_mkdir(struct btk_edit *e, const char *path, uint32_t mode, bool parents,
		   uint64_t *made);
/* rm (recursive: rm -r); subvolumes are refused (subvol delete). *removed counts names. */
int btk_edit_rm(struct btk_edit *e, const char *path, bool recursive, uint64_t *removed);
/* mv: rename(2), or a subvolume's entry to any directory. dst as btk_edit_into_dir. */
int btk_edit_mv(struct btk_edit *e, const char *src, const char *dst);
/* ln target path (symbolic: a symlink holding target), path as btk_edit_into_dir. */
int btk_edit_ln(struct btk_edit *e, const char *target, const char *path, bool symbolic);
/* chmod, chown (set_uid / set_gid say which), touch (times; NULL: now; a missing file is made). */
int btk_edit_chmod(struct btk_edit *e, const char *path, uint32_t mode);
int btk_edit_chown(struct btk_edit *e, const char *path, bool set_uid, uint32_t uid, bool set_gid,
		   uint32_t gid);
int btk_edit_touch(struct btk_edit *e, const char *path, const struct btk_time *when);
/* setfattr: value NULL removes name (-ENODATA when absent). */
int btk_edit_setxattr(struct btk_edit *e, const char *path, const char *name, const void *value,
		      uint16_t vlen);
/* snapshot of subvolume src as path (readonly); *id the new subvolume's. */
int btk_edit_snapshot(struct btk_edit *e, const char *src, const char *path, bool readonly,
		      uint64_t *id);
int btk_edit_subvol_create(struct btk_edit *e, const char *path, uint64_t *id);
int btk_edit_subvol_delete(struct btk_edit *e, const char *path, uint64_t *id);
int btk_edit_subvol_default(struct btk_edit *e, const char *path, uint64_t *id);

/* put: the scanned source s (fs/populate.h) becomes path (as btk_edit_into_dir from src's
 * name, unless into is false: then path itself); an existing non-directory there is replaced
 * when replace, else -EEXIST. o's compression, progress and stream fields are the caller's;
 * the rest is set here. With check_space (a host tree whose sizes are known), a source that
 * cannot fit is refused before anything is written (-ENOSPC). stream_fn (may be NULL) fills
 * s inside the transaction (an archive: its data goes in as it is read) before populate. */
struct btk_edit_put {
	const char *src; /* for the name under an existing directory, and messages */
	bool into;	 /* path may be a directory to put src's name into */
	bool replace;	 /* -f */
	bool check_space;
	struct btk_populate_opts o; /* compress, compress_level, progress: the caller's */
	/* an archive: fills *s (after btk_stream_start with o) inside the transaction; its
	 * stream is released by the caller after the put (btk_stream_release) */
	int (*stream_fn)(void *ctx, struct btk_edit *e, const struct btk_populate_opts *o,
			 uint64_t inherit, struct btk_src_tree *s);
	void *stream_ctx;
	/* out */
	char path[4096]; /* where it went */
	struct btk_populate_stats st;
};
int btk_edit_put(struct btk_edit *e, struct btk_src_tree *s, const char *path,
		 struct btk_edit_put *p);

#endif
