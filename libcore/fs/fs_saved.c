/* fs_saved.c — the image a conversion keeps for its rollback, and the guard every writer puts
 * before a change that would end the chance of a rollback. */
#include "fs/fs_edit.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int btk_convert_image(struct btk_fs *fs, char **path)
{
	struct btk_inode_info in;
	struct btk_root rt;
	int ret = btk_root_find(fs, BTK_CONVERT_SUBVOL, &rt);

	if (path)
		*path = NULL;
	if (!ret)
		ret = btk_inode_read(fs, &rt, BTK_CONVERT_IMAGE_INO, &in);
	if (ret == -ENOENT) {
		btk_err_clear();
		return 0;
	}
	if (ret)
		return ret;
	if (!S_ISREG(in.mode) || !(in.flags & BTK_INODE_READONLY))
		return 0;
	if (path && btk_subvol_path(fs, BTK_CONVERT_SUBVOL, path)) {
		btk_err_clear(); /* not linked anywhere: the rollbacks find it by id all the same */
		*path = NULL;
	}
	return 1;
}

/* Whether directory dir of the conversion's subvolume holds the image's first name below
 * it (its path is a prefix of the image's). */
static int holds_image(struct btk_fs *fs, uint64_t dir)
{
	char *dp = NULL, *ip = NULL;
	struct btk_root rt;
	int ret = btk_root_find(fs, BTK_CONVERT_SUBVOL, &rt);

	if (!ret)
		ret = btk_dir_path(fs, &rt, dir, &dp);
	if (!ret)
		ret = btk_dir_path(fs, &rt, BTK_CONVERT_IMAGE_INO, &ip);
	if (!ret) {
		size_t l = strlen(dp);
		ret = !strncmp(ip, dp, l) && ip[l] == '/';
	} else if (ret == -ENOENT) {
		btk_err_clear();
		ret = 0;
	}
	free(dp);
	free(ip);
	return ret;
}

int btk_convert_guard(struct btk_fs *fs, uint64_t root, uint64_t ino, bool tree, bool force,
		      const char *what)
{
	char *path = NULL;
	int ret;

	if (root && root != BTK_CONVERT_SUBVOL)
		return 0;
	if (root && ino && ino != BTK_CONVERT_IMAGE_INO &&
	    (!tree || (ret = holds_image(fs, ino)) <= 0))
		return tree ? ret : 0;
	if ((ret = btk_convert_image(fs, &path)) <= 0)
		return ret;
	const char *p = path ? path + (path[0] == '/' && path[1]) : "subvolume 256";
	if (force)
		btk_warn("--force: %s although %s holds the image of a converted filesystem; a "
			 "rollback will no longer work",
			 what, p);
	else
		ret = btk_err(EPERM,
			      "%s holds the image of a converted filesystem: %s would end the "
			      "chance of a rollback (--force does it anyway)",
			      p, what);
	free(path);
	return force ? 0 : ret;
}
