/* edit.c (layer 8) — a file change's session: refusals, the transaction, its commit or the
 * rollback of every byte it wrote; resolving the paths of a change. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "edit/edit.h"
#include "fs/fs_read.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/super.h"

int btk_edit_begin(struct btk_edit *e)
{
	int ret;

	e->note[0] = 0;
	if ((ret = btk_fs_write_refusals(e->fs)) || (ret = btk_write_open(e->fs, 0, &e->wfs)))
		return ret;
	btk_qgroups_count(e->fs, e->wfs, &e->quota);
	if ((ret = btk_trans_start(e->wfs, &e->t)))
		return ret;
	if (e->epoch_set)
		btk_trans_derive_uuids(e->t, e->fs->fsid);
	return 0;
}

/* The generation of the newest superblock on the devices now (0: none readable): a commit
 * that failed after writing one left the filesystem changed. */
static uint64_t disk_generation(struct btk_fs *fs)
{
	struct btk_super_copy c[BTK_SUPER_MIRRORS];
	uint64_t gen = 0;

	for (int i = 0; i < fs->ndevs; i++) {
		int k = fs->devs[i].dev ? btk_super_read_all(fs->devs[i].dev, c) : -1;
		if (k >= 0 && btk_le64(c[k].sb.generation) > gen)
			gen = btk_le64(c[k].sb.generation);
	}
	return gen;
}

/* A failed change: the bytes it wrote go back (the filesystem was right without them:
 * copy-on-write never touches what is committed; now it is the same bytes too). When they
 * cannot (a power cut), e->note says which filesystem the devices hold. */
static void rollback(struct btk_edit *e, uint64_t committed)
{
	char keep[512], why[512] = "";
	bool failed = false;

	snprintf(keep, sizeof(keep), "%s", btk_errmsg());
	for (int i = 0; i < e->fs->ndevs; i++) {
		struct btk_dev *d = e->fs->devs[i].dev;
		if (d && d->writable && btk_dev_undo_rollback(d) && d->stats.writes && !failed) {
			failed = true;
			snprintf(why, sizeof(why), "%s", btk_errmsg());
		}
	}
	if (failed) {
		uint64_t gen = disk_generation(e->fs);
		if (gen > committed)
			snprintf(e->note, sizeof(e->note),
				 "the commit failed after its superblock was written: the "
				 "filesystem holds the change (generation %llu); %s",
				 (unsigned long long)gen, why);
		else
			snprintf(e->note, sizeof(e->note),
				 "the bytes written before the failure could not all be put back "
				 "(the filesystem is unchanged; its free space is not): %s",
				 why);
	}
	btk_err_clear();
	if (keep[0])
		btk_err(EIO, "%s", keep); /* the change's own failure stays the message */
}

int btk_edit_end(struct btk_edit *e, int ret)
{
	uint64_t committed = e->fs ? e->fs->generation : 0;

	if (e->t && !ret) {
		btk_err_clear();
		ret = btk_trans_commit(e->t);
	} else if (e->t) {
		btk_trans_abort(e->t);
	}
	if (ret && e->fs) {
		int keep = ret;
		rollback(e, committed);
		ret = keep;
	}
	e->t = NULL;
	btk_write_close(e->wfs);
	e->wfs = NULL;
	e->generation = e->fs ? e->fs->generation : 0;
	return ret;
}

/* ---- paths ---- */

static int relative(const char *path)
{
	return btk_err(EINVAL, "%s: paths inside the image start with /", path);
}

int btk_edit_lookup(struct btk_edit *e, const char *path, uint64_t *root, uint64_t *ino,
		    bool *is_dir)
{
	struct btk_inode_info in;
	struct btk_root r;
	int ret;

	if (path[0] != '/')
		return relative(path);
	btk_err_clear();
	ret = btk_path_lookup(e->fs, path, root, ino);
	if (ret == -ENOENT)
		return btk_err(ENOENT, "%s: No such file or directory", path);
	if (ret == -ENOTDIR)
		return btk_err(ENOTDIR, "%s: a component of the path is not a directory", path);
	if (ret || (ret = btk_fs_root(e->fs, *root, &r)) ||
	    (ret = btk_inode_read(e->fs, &r, *ino, &in)))
		return ret;
	if (is_dir)
		*is_dir = S_ISDIR(in.mode);
	return 0;
}

int btk_edit_writable(struct btk_edit *e, uint64_t root, const char *path)
{
	bool ro;
	int ret = btk_subvol_readonly(e->fs, root, &ro);

	if (ret)
		return ret;
	if (ro && !e->force)
		return btk_err(EROFS, "%s: in a read-only subvolume (--force writes anyway)", path);
	return 0;
}

int btk_edit_parent(struct btk_edit *e, const char *path, char *buf, size_t len, uint64_t *root,
		    uint64_t *dir, const char **name, uint16_t *nlen)
{
	size_t l = strlen(path);
	bool is_dir;
	char *slash;
	int ret;

	if (path[0] != '/')
		return relative(path);
	if (l >= len)
		return btk_err(ENAMETOOLONG, "path too long");
	memcpy(buf, path, l + 1);
	while (l > 1 && buf[l - 1] == '/')
		buf[--l] = 0;
	slash = strrchr(buf, '/');
	if (!slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return btk_err(EINVAL, "%s: not a name to create or change", path);
	if (strlen(slash + 1) > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "%s: name longer than %d bytes", path, BTK_NAME_MAX);
	*name = slash + 1;
	*nlen = (uint16_t)strlen(slash + 1);
	if (slash == buf) {
		ret = btk_edit_lookup(e, "/", root, dir, &is_dir);
	} else {
		*slash = 0;
		ret = btk_edit_lookup(e, buf, root, dir, &is_dir);
		if (!ret && !is_dir)
			ret = btk_err(ENOTDIR, "%s: not a directory", buf);
		*slash = '/';
	}
	if (!ret && *dir == BTK_STUB_INO)
		ret = btk_err(EPERM,
			      "%s: its directory is a snapshot's placeholder of a subvolume (an "
			      "empty directory in which nothing can be created)",
			      path);
	return ret ? ret : btk_edit_writable(e, *root, path);
}

int btk_edit_guard(struct btk_edit *e, uint64_t root, uint64_t ino, bool tree, const char *what,
		   const char *path)
{
	int ret;

	(void)path;
	btk_err_clear();
	ret = btk_convert_guard(e->fs, root, ino, tree, e->force, what);
	return ret;
}

int btk_edit_changeable(struct btk_edit *e, uint64_t root, uint64_t ino, const char *what,
			const char *path)
{
	if (ino == BTK_STUB_INO)
		return btk_err(EPERM,
			       "%s: is a snapshot's placeholder of a subvolume (an empty directory "
			       "with no inode to change)",
			       path);
	return btk_edit_writable(e, root, path) ?: btk_edit_guard(e, root, ino, false, what, path);
}

int btk_edit_into_dir(struct btk_edit *e, const char *from, const char *path, char *out, size_t len)
{
	uint64_t root, ino;
	bool is_dir;
	char tmp[4096];
	const char *b;
	size_t l;

	if ((size_t)snprintf(out, len, "%s", path) >= len)
		return btk_err(ENAMETOOLONG, "path too long");
	btk_err_clear();
	if (btk_path_lookup(e->fs, path, &root, &ino) ||
	    btk_edit_lookup(e, path, &root, &ino, &is_dir) || !is_dir) {
		btk_err_clear();
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s", from);
	l = strlen(tmp);
	while (l > 1 && tmp[l - 1] == '/')
		tmp[--l] = 0;
	b = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
	if (!*b)
		b = "/";
	if (!strcmp(b, "/") || !strcmp(b, ".") || !strcmp(b, ".."))
		return btk_err(EINVAL, "%s: give the name to create in %s", from, path);
	if ((size_t)snprintf(out, len, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
			     b) >= len)
		return btk_err(ENAMETOOLONG, "path too long");
	return 0;
}
