/* ls.c — btk-image ls [-laRh] [--json] IMG [PATH]: a directory's entries, or one entry. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "fileops.h"

struct ls {
	struct img_cmd *c;
	int lng, rec, all, human, deleted, body;
	const char *hash; /* --hash: md5, sha1 or sha256 */
	bool first; /* nothing printed yet (text: blank lines between -R sections; JSON: commas) */
	int failed;
};

static void json_time(const char *name, const struct btk_time *t)
{
	printf(", \"%s\": {\"sec\": %lld, \"nsec\": %u}", name, (long long)t->sec, t->nsec);
}

/* The --hash digest of a regular file into out ("" otherwise, or after one line). */
static void entry_hash(struct ls *l, const struct img_entry *e, char out[IMG_HASH_HEX])
{
	out[0] = 0;
	if (!l->hash || !S_ISREG(e->node.info.mode))
		return;
	if (img_file_hash(l->c, &e->node, l->hash, out)) {
		cli_err("%s: %s: %s: %s", l->c->img, e->path, l->hash, btk_errmsg());
		l->failed = 1;
		out[0] = 0;
	}
}

static void print_json(struct ls *l, const struct img_entry *e)
{
	const struct btk_inode_info *i = &e->node.info;

	printf("%s{\"path\": ", l->first ? "" : ",");
	l->first = false;
	btk_json_cstr(stdout, e->path);
	printf(", \"name\": ");
	btk_json_cstr(stdout, e->name);
	printf(", \"tree\": %llu, \"ino\": %llu, \"type\": \"%s\", \"mode\": %u, \"nlink\": %u, "
	       "\"uid\": %u, \"gid\": %u, \"size\": %llu, \"nbytes\": %llu",
	       (unsigned long long)e->node.root_id, (unsigned long long)e->node.ino,
	       img_type_name(i->mode), i->mode & 07777, i->nlink, i->uid, i->gid,
	       (unsigned long long)i->size, (unsigned long long)i->nbytes);
	if (S_ISCHR(i->mode) || S_ISBLK(i->mode))
		printf(", \"rdev\": {\"major\": %u, \"minor\": %u}", btk_rdev_major(i->rdev),
		       btk_rdev_minor(i->rdev));
	json_time("atime", &i->atime);
	json_time("mtime", &i->mtime);
	json_time("ctime", &i->ctime);
	json_time("otime", &i->otime);
	if (e->subvol)
		printf(", \"subvolume\": %llu, \"readonly\": %s", (unsigned long long)e->subvol,
		       e->readonly ? "true" : "false");
	if (l->hash && S_ISREG(i->mode)) {
		char h[IMG_HASH_HEX];
		entry_hash(l, e, h);
		printf(", \"%s\": ", l->hash);
		if (h[0])
			printf("\"%s\"", h);
		else
			printf("null");
	}
	if (S_ISLNK(i->mode)) {
		char *t = img_symlink_target(l->c, &e->node, e->path);
		printf(", \"target\": ");
		if (t)
			btk_json_cstr(stdout, t);
		else
			printf("null"), l->failed = 1;
		free(t);
	}
	printf("}");
}

static void print_long(struct ls *l, const struct img_entry *e, const char *name)
{
	const struct btk_inode_info *i = &e->node.info;
	char mode[11], when[48], size[32];

	img_mode_str(i->mode, mode);
	img_time_str(&i->mtime, when);
	if (S_ISCHR(i->mode) || S_ISBLK(i->mode))
		snprintf(size, sizeof(size), "%u, %u", btk_rdev_major(i->rdev),
			 btk_rdev_minor(i->rdev));
	else if (l->human)
		cli_human(i->size, size, sizeof(size));
	else
		snprintf(size, sizeof(size), "%llu", (unsigned long long)i->size);
	printf("%8llu %s %3u %5u %5u %10s %s %s", (unsigned long long)e->node.ino, mode, i->nlink,
	       i->uid, i->gid, size, when, name);
	if (S_ISLNK(i->mode)) {
		char *t = img_symlink_target(l->c, &e->node, e->path);
		if (t)
			printf(" -> %s", t);
		else
			l->failed = 1;
		free(t);
	}
	if (e->subvol)
		printf("  [subvolume %llu%s]", (unsigned long long)e->subvol,
		       e->readonly ? ", read-only" : "");
	putchar('\n');
}

static void print_body(struct ls *l, const struct img_entry *e)
{
	char h[IMG_HASH_HEX];

	entry_hash(l, e, h);
	img_body_line(h, e->path, NULL, e->node.root_id, e->node.ino, &e->node.info);
}

static void print_one(struct ls *l, const struct img_entry *e, const char *name)
{
	if (l->body)
		print_body(l, e);
	else if (l->c->json)
		print_json(l, e);
	else if (l->lng)
		print_long(l, e, name);
	else
		printf("%s\n", name);
}

static int on_entry(void *ctx, const struct img_entry *e)
{
	struct ls *l = ctx;

	if (l->body && (l->rec || e->depth == 0))
		print_body(l, e); /* every entry, directories too, as fls -m */
	else if (e->depth == 0 && !S_ISDIR(e->node.info.mode))
		print_one(l, e, e->path);
	return 0;
}

static int on_list(void *ctx, const struct img_entry *dir, const struct img_entry *kids, size_t n)
{
	struct ls *l = ctx;

	if (l->body) {
		for (size_t i = 0; i < n && !l->rec; i++)
			print_body(l, &kids[i]);
		return 0;
	}
	if (l->rec && !l->c->json) {
		printf("%s%s:\n", l->first ? "" : "\n", dir->path);
		l->first = false;
	}
	for (size_t i = 0; i < n; i++)
		print_one(l, &kids[i], kids[i].name);
	return 0;
}

static int on_bad(void *ctx, const char *path, const char *why)
{
	struct ls *l = ctx;

	cli_err("%s: %s: %s", l->c->img, path, why);
	l->failed = 1;
	return 0;
}

int verb_ls(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct ls l = {.c = &c, .first = true};
	char *hash_s = NULL;
	struct poptOption opts[] = {
	    {"long", 'l', POPT_ARG_NONE, &l.lng, 0,
	     "inode, mode, links, owner, group, size, mtime (UTC, ns), subvolume marks", NULL},
	    {"recursive", 'R', POPT_ARG_NONE, &l.rec, 0, "list subdirectories (and subvolumes)",
	     NULL},
	    {"all", 'a', POPT_ARG_NONE, &l.all, 0,
	     "names starting with a dot too (always listed: for ls -la habits)", NULL},
	    {"human-readable", 'h', POPT_ARG_NONE, &l.human, 0, "with -l: sizes as 1.5MiB", NULL},
	    {"deleted", 0, POPT_ARG_NONE, &l.deleted, 0,
	     "names under PATH that older roots hold and the current one does not", NULL},
	    {"bodyfile", 0, POPT_ARG_NONE, &l.body, 0,
	     "The Sleuth Kit's body file for mactime (with --deleted: deleted names too)", NULL},
	    IMG_OPT_HASH(&hash_s, "the content hash of each file"),
	    IMG_READ_OPTIONS(&c)};
	int rc = img_parse(&c, argc, argv, opts, "[-laRh] [--json] IMG [PATH]", 1, 2);

	rc = img_hash_opt(rc, hash_s, &l.hash);
	if (!rc && l.body && c.json) {
		cli_err("--bodyfile and --json: give one of them");
		rc = CLI_EXIT_USAGE;
	}
	if (!rc)
		rc = img_open(&c, false);
	if (rc)
		return img_done(&c, rc);
	const char *path = c.nargs > 1 ? c.args[1] : "/";
	struct img_walk_ops ops = {
	    .entry = on_entry, .list = on_list, .bad = on_bad, .recurse = l.rec};
	if (c.json) {
		cli_json_on(false); /* errors go to stderr; the output says "errors" */
		printf("{\"path\": ");
		btk_json_cstr(stdout, path);
		printf(", \"entries\": [");
	}
	if (l.body) {
		rc = img_walk(&c, path, &ops, &l);
		if (!rc && l.deleted)
			rc = img_deleted_list(&c, path, IMG_DEL_BODY);
	} else if (l.deleted) {
		rc = img_deleted_list(&c, path, l.lng ? IMG_DEL_LONG : IMG_DEL_SHORT);
	} else {
		rc = img_walk(&c, path, &ops, &l);
	}
	if (c.json)
		printf("], \"errors\": %s}\n", rc || l.failed ? "true" : "false");
	return img_done(&c, rc || l.failed ? CLI_EXIT_ERROR : CLI_EXIT_OK);
}
