/* btk-image snapshot and subvol create / delete / default. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/uuid.h"
#include "wops.h"

#define PATH_BUF 4096

/* The subvolume whose top directory path is: 0 and *id, or an exit code. */
static int subvol_at(struct wops *w, const char *path, uint64_t *id)
{
	uint64_t ino;
	bool is_dir;
	int rc = wops_lookup(w, path, id, &ino, &is_dir);

	if (!rc && ino == BTK_STUB_INO) {
		cli_err("%s: not a subvolume but a snapshot's placeholder of one (an empty "
			"directory; rm -r removes it)",
			path);
		rc = CLI_EXIT_ERROR;
	} else if (!rc && ino != BTK_ROOT_DIRID) {
		cli_err("%s: not a subvolume", path);
		rc = CLI_EXIT_ERROR;
	}
	return rc;
}

int verb_snapshot(int argc, const char **argv)
{
	struct wops w = {0};
	int ro = 0, rc;
	char src[PATH_BUF], path[PATH_BUF], buf[PATH_BUF], extra[64];
	const char *name;
	uint16_t len;
	uint64_t sid, root, dir, id = 0;
	struct poptOption opts[] = {
	    {"readonly", 'r', POPT_ARG_NONE, &ro, 0, "make a read-only snapshot", NULL},
	    WOPS_OPTIONS(&w),
	    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG SUBVOL PATH", 3, 3)))
		return img_done(&w.c, rc);
	snprintf(src, sizeof(src), "%s", w.c.args[1]);
	snprintf(path, sizeof(path), "%s", w.c.args[2]);
	if ((rc = wops_open(&w)) || (rc = subvol_at(&w, src, &sid)) ||
	    (rc = wops_parent(&w, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return wops_finish(&w, rc);
	if (btk_fs_next_subvol_id(w.t, &id) || btk_tree_snapshot(w.t, sid, id, ro, w.now.sec) ||
	    btk_subvol_link(w.t, root, dir, name, len, id, &w.now) || btk_qgroup_create(w.t, id))
		rc = wops_failed(&w, path);
	rc = wops_finish(&w, rc);
	snprintf(extra, sizeof(extra), ", \"id\": %llu, \"readonly\": %s", (unsigned long long)id,
		 ro ? "true" : "false");
	if (!rc)
		wops_done(&w, "snapshot", path, "", extra);
	return rc;
}

static int subvol_create(struct wops *w, const char *path, uint64_t *id)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir;
	struct btk_dentry d;
	int rc = wops_parent(w, path, buf, sizeof(buf), &root, &dir, &name, &len);

	if (rc)
		return rc;
	if (btk_dir_find(w->t, root, dir, name, len, &d) == 0) {
		cli_err("%s: exists", path);
		return CLI_EXIT_ERROR;
	}
	btk_err_clear();
	if (btk_fs_next_subvol_id(w->t, id))
		return wops_failed(w, path);
	struct btk_subvol_new sv = {
	    .id = *id, .parent = root, .dir = dir, .name = name, .name_len = len};
	struct btk_inode_attr a = {.mode = S_IFDIR | 0755,
				   .nlink = 1,
				   .atime = w->now,
				   .mtime = w->now,
				   .ctime = w->now,
				   .otime = w->now};
	struct btk_inode_change c = {.mtime = &w->now, .ctime = &w->now};
	uint64_t index;
	btk_uuid_make(w->epoch_set ? w->fs->fsid : NULL, "subvol", *id, sv.uuid);
	if (btk_dir_next_index(w->t, root, dir, &index))
		return wops_failed(w, path);
	sv.index = index;
	if (btk_subvol_create(w->t, &sv, &a) || btk_inode_change(w->t, root, dir, &c, NULL))
		return wops_failed(w, path);
	return 0;
}

static void on_drop(void *ctx, uint64_t blocks)
{
	struct wops *w = ctx;

	cli_progress_job(&w->line, false, "freeing", blocks, 0, "tree blocks");
}

static int subvol_delete(struct wops *w, const char *path, uint64_t *id)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir;
	int rc = subvol_at(w, path, id);

	if (!rc && *id == BTRFS_FS_TREE_OBJECTID) {
		cli_err("%s: the top-level subvolume cannot be deleted", path);
		return CLI_EXIT_ERROR;
	}
	if (!rc)
		rc = wops_parent(w, path, buf, sizeof(buf), &root, &dir, &name, &len);
	if (!rc)
		rc = wops_guard(w, *id, 0, true, "subvol delete", path);
	if (!rc && btk_subvol_delete(w->t, *id, &w->now, on_drop, w))
		rc = wops_failed(w, path);
	return rc;
}

/* Whether one of the first two arguments (the action's places) is "list". */
static bool is_list(int argc, const char **argv)
{
	int pos = 0;

	for (int i = 1; i < argc && pos < 2; i++) {
		if (argv[i][0] == '-' && argv[i][1])
			continue;
		if (!strcmp(argv[i], "list"))
			return true;
		pos++;
	}
	return false;
}

int verb_subvol(int argc, const char **argv)
{
	struct wops w = {0};
	char what[16], path[PATH_BUF], extra[64];
	uint64_t id = 0;
	int rc;
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if (is_list(argc, argv))
		return verb_subvol_list(argc, argv);
	if ((rc = wops_parse(&w, argc, argv, opts,
			     "[options] create|delete|default IMG PATH | list IMG", 3, 3)))
		return img_done(&w.c, rc);
	/* img_parse took the first argument for IMG: here it is the action (IMG first works
	 * too) */
	int ai = 0;
	if (strcmp(w.c.args[0], "create") && strcmp(w.c.args[0], "delete") &&
	    strcmp(w.c.args[0], "default"))
		ai = 1;
	snprintf(what, sizeof(what), "%s", w.c.args[ai]);
	snprintf(path, sizeof(path), "%s", w.c.args[2]);
	if (strcmp(what, "create") && strcmp(what, "delete") && strcmp(what, "default")) {
		cli_err("%s: not create, delete or default", what);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	w.c.img = w.c.args[1 - ai];
	if ((rc = wops_open(&w)))
		return wops_finish(&w, rc);
	if (!strcmp(what, "create")) {
		rc = subvol_create(&w, path, &id);
	} else if (!strcmp(what, "delete")) {
		rc = subvol_delete(&w, path, &id);
	} else if (!(rc = subvol_at(&w, path, &id)) && btk_subvol_set_default(w.t, id)) {
		rc = wops_failed(&w, path);
	}
	rc = wops_finish(&w, rc);
	snprintf(extra, sizeof(extra), ", \"action\": \"%s\", \"id\": %llu", what,
		 (unsigned long long)id);
	if (!rc)
		wops_done(&w, "subvol", path, "", extra);
	return rc;
}
