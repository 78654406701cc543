/* open_img.c — what every file verb shares: options, opening IMG, resolving a path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"

#define IMG_NAME_MAX 255 /* bytes of one name (BTRFS_NAME_LEN) */

int img_parse(struct img_cmd *c, int argc, const char **argv, struct poptOption *opts,
	      const char *usage, int min_args, int max_args)
{
	int rc;

	c->verb = argv[0];
	cli_init(c->verb);	   /* messages start with "btk-image VERB" */
	cli_json_argv(argc, argv); /* before anything can fail: errors as JSON too */
	if ((rc = cli_popt_start(&c->pc, c->verb, argc, argv, opts, usage)))
		return rc;
	c->nargs = cli_popt_args(c->pc, &c->args);
	if (c->nargs < min_args || (max_args >= 0 && c->nargs > max_args)) {
		cli_err("usage: %s %s", c->verb, usage);
		return CLI_EXIT_USAGE;
	}
	c->img = c->nargs ? c->args[0] : NULL;
	return 0;
}

int img_paths(const struct img_cmd *c, const char **paths, int *n)
{
	*n = 0;
	paths[(*n)++] = c->img;
	for (char **d = c->devices; d && *d; d++) {
		if (*n == IMG_MAX_DEVS) {
			cli_err("more than %d devices", IMG_MAX_DEVS);
			return CLI_EXIT_USAGE;
		}
		paths[(*n)++] = *d;
	}
	return 0;
}

int img_open(struct img_cmd *c, bool write)
{
	const char *paths[IMG_MAX_DEVS];
	/* libcore's open refuses a device in use for writing and warns a reader of a mount */
	struct btk_open_opts oo = {
	    .super_mirror = -1, .write = write, .dev = c->dev, .short_ok = c->force};
	int n = 0, rc;

	if (cli_dev_where(&oo.dev))
		return CLI_EXIT_USAGE;
	if ((rc = img_paths(c, paths, &n)))
		return rc;
	if (!write && cli_root_opts(&oo))
		return CLI_EXIT_USAGE;
	if (!write && c->tree_root) {
		oo.tree_root = c->tree_root;
		oo.generation = 0;
		oo.backup = 0;
	}
	if (write)
		cli_interrupt_writer(paths, n);
	if (btk_fs_open(paths, n, &oo, &c->fs)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if (!write)
		cli_root_note(c->fs->generation, btk_le64(c->fs->sb.root));
	c->older = !write && (c->tree_root || oo.backup || oo.tree_root || oo.generation);
	c->write = write;
	return 0;
}

int img_done(struct img_cmd *c, int rc)
{
	btk_fs_close(c->fs);
	c->fs = NULL;
	if (c->pc)
		poptFreeContext(c->pc);
	c->pc = NULL;
	if (c->devices) {
		for (char **d = c->devices; *d; d++)
			free(*d);
		free(c->devices);
		c->devices = NULL;
	}
	return rc;
}

/* One line for a lookup failure: the errno's words, and the library's detail when it says
 * more than that (a damaged tree). */
static int lookup_err(struct img_cmd *c, const char *path, int err)
{
	if (err == -ENOENT || err == -ENOTDIR || err == -ENAMETOOLONG)
		cli_err("%s: %s: %s", c->img, path, strerror(-err));
	else
		cli_err("%s: %s: %s", c->img, path, btk_errmsg());
	return CLI_EXIT_ERROR;
}

/* "<INO>" or "<ROOT:INO>" (debugfs's and icat's way to name an inode; ROOT defaults to the
 * top-level subvolume): 1 with the numbers, 0 when path is not one. */
static int inode_address(const char *path, uint64_t *root, uint64_t *ino)
{
	char *end;

	if (path[0] != '<')
		return 0;
	*root = BTRFS_FS_TREE_OBJECTID;
	errno = 0;
	*ino = strtoull(path + 1, &end, 10);
	if (*end == ':') {
		*root = *ino;
		*ino = strtoull(end + 1, &end, 10);
	}
	return !errno && end != path + 1 && end[0] == '>' && !end[1];
}

int img_lookup(struct img_cmd *c, const char *path, struct img_node *out)
{
	const char *p = path;
	size_t len = strlen(path);
	int ret;

	memset(out, 0, sizeof(*out));
	if (inode_address(path, &out->root_id, &out->ino)) {
		if (!(ret = btk_fs_root(c->fs, out->root_id, &out->root)))
			ret = btk_inode_read(c->fs, &out->root, out->ino, &out->info);
		return ret ? lookup_err(c, path, ret) : 0;
	}

	while (*p) { /* btk_path_lookup takes any length; a name over 255 bytes exists nowhere */
		size_t n = strcspn(p, "/");
		if (n > IMG_NAME_MAX)
			return lookup_err(c, path, -ENAMETOOLONG);
		p += n + (p[n] == '/');
	}
	ret = btk_path_lookup(c->fs, path, &out->root_id, &out->ino);
	if (!ret)
		ret = btk_fs_root(c->fs, out->root_id, &out->root);
	if (!ret)
		ret = btk_inode_read(c->fs, &out->root, out->ino, &out->info);
	if (ret)
		return lookup_err(c, path, ret);
	/* "file/" names a directory that is not one */
	if (len && path[len - 1] == '/' && !S_ISDIR(out->info.mode))
		return lookup_err(c, path, -ENOTDIR);
	return 0;
}

int img_open_path(struct img_cmd *c, struct img_node *out)
{
	int rc = img_open(c, false);

	return rc ? rc : img_lookup(c, c->args[1], out);
}
