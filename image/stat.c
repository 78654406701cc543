/* stat.c — btk-image stat [--json] IMG PATH: every field of an inode, its xattrs and extents. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "decode/decode.h"
#include "fileops.h"
#include "fs/fs_read.h"

struct st {
	struct img_cmd *c;
	int n;		  /* items printed in the current list */
	const char *hash; /* --hash */
};

static void text_value(const uint8_t *v, size_t len)
{
	bool text = true;

	for (size_t i = 0; i < len; i++)
		if (!isprint(v[i]) && !(i == len - 1 && !v[i]))
			text = false;
	if (text) {
		putchar('"');
		for (size_t i = 0; i < len && v[i]; i++)
			printf(v[i] == '"' || v[i] == '\\' ? "\\%c" : "%c", v[i]);
		putchar('"');
	} else {
		printf("0x");
		for (size_t i = 0; i < len; i++)
			printf("%02x", v[i]);
	}
}

static int xattr_cb(void *ctx, const char *name, uint16_t nlen, const uint8_t *v, uint16_t vlen)
{
	struct st *s = ctx;

	if (s->c->json) {
		printf("%s{\"name\": ", s->n++ ? "," : "");
		btk_json_str(stdout, name, nlen);
		printf(", \"value\": ");
		btk_json_str(stdout, v, vlen);
		printf(", \"size\": %u}", vlen);
	} else {
		s->n++;
		printf("  %.*s=", (int)nlen, name);
		text_value(v, vlen);
		putchar('\n');
	}
	return 0;
}

static const char *extent_kind(const struct btk_file_extent *fe)
{
	if (fe->type == BTRFS_FILE_EXTENT_INLINE)
		return "inline";
	if (fe->type == BTRFS_FILE_EXTENT_PREALLOC)
		return "prealloc";
	return fe->disk_bytenr ? "regular" : "hole";
}

static int extent_cb(void *ctx, const struct btk_file_extent *fe)
{
	struct st *s = ctx;
	const char *kind = extent_kind(fe), *comp = btk_compression_name(fe->compression);

	if (s->c->json) {
		printf("%s{\"offset\": %llu, \"length\": %llu, \"type\": \"%s\", "
		       "\"compression\": \"%s\", \"ram_bytes\": %llu, \"generation\": %llu",
		       s->n++ ? "," : "", (unsigned long long)fe->file_offset,
		       (unsigned long long)fe->num_bytes, kind, comp,
		       (unsigned long long)fe->ram_bytes, (unsigned long long)fe->generation);
		if (fe->type == BTRFS_FILE_EXTENT_INLINE)
			printf(", \"inline_bytes\": %u", fe->inline_len);
		else
			printf(", \"disk_bytenr\": %llu, \"disk_bytes\": %llu, \"extent_offset\": "
			       "%llu",
			       (unsigned long long)fe->disk_bytenr,
			       (unsigned long long)fe->disk_num_bytes,
			       (unsigned long long)fe->extent_offset);
		if (fe->encryption || fe->other_encoding)
			printf(", \"encryption\": %u, \"other_encoding\": %u", fe->encryption,
			       fe->other_encoding);
		printf("}");
		return 0;
	}
	s->n++;
	printf("  %12llu %10llu %-8s", (unsigned long long)fe->file_offset,
	       (unsigned long long)fe->num_bytes, kind);
	if (fe->type == BTRFS_FILE_EXTENT_INLINE)
		printf(" %u bytes stored", fe->inline_len);
	else if (fe->disk_bytenr)
		printf(" disk %llu+%llu offset %llu", (unsigned long long)fe->disk_bytenr,
		       (unsigned long long)fe->disk_num_bytes,
		       (unsigned long long)fe->extent_offset);
	printf(" ram %llu %s gen %llu\n", (unsigned long long)fe->ram_bytes, comp,
	       (unsigned long long)fe->generation);
	return 0;
}

static void show_time(const char *label, const struct btk_time *t, bool json)
{
	char s[48];

	img_time_str(t, s);
	if (json)
		printf(", \"%s\": {\"sec\": %lld, \"nsec\": %u, \"utc\": \"%s\"}", label,
		       (long long)t->sec, t->nsec, s);
	else
		printf("%7s: %s\n", label, s);
}

static void show_inode(struct st *s, const struct img_entry *e)
{
	const struct btk_inode_info *i = &e->node.info;
	bool json = s->c->json;
	char mode[11], flags[128];

	img_mode_str(i->mode, mode);
	btk_inode_flags_str(i->flags, flags, sizeof(flags));
	if (json) {
		printf("{\"path\": ");
		btk_json_cstr(stdout, e->path);
		printf(", \"tree\": %llu, \"ino\": %llu, \"type\": \"%s\", \"mode\": %u, "
		       "\"mode_str\": \"%s\", \"nlink\": %u, \"uid\": %u, \"gid\": %u, "
		       "\"size\": %llu, \"nbytes\": %llu, \"rdev\": %llu, \"generation\": %llu, "
		       "\"transid\": %llu, \"sequence\": %llu, \"block_group\": %llu, "
		       "\"flags\": %llu, \"flags_str\": \"%s\"",
		       (unsigned long long)e->node.root_id, (unsigned long long)e->node.ino,
		       img_type_name(i->mode), i->mode, mode, i->nlink, i->uid, i->gid,
		       (unsigned long long)i->size, (unsigned long long)i->nbytes,
		       (unsigned long long)i->rdev, (unsigned long long)i->generation,
		       (unsigned long long)i->transid, (unsigned long long)i->sequence,
		       (unsigned long long)i->block_group, (unsigned long long)i->flags, flags);
		if (e->subvol)
			printf(", \"subvolume\": %llu, \"readonly\": %s",
			       (unsigned long long)e->subvol, e->readonly ? "true" : "false");
	} else {
		printf("   Path: %s\n   Tree: %llu  Inode: %llu  Type: %s%s\n", e->path,
		       (unsigned long long)e->node.root_id, (unsigned long long)e->node.ino,
		       img_type_name(i->mode), e->subvol ? " (subvolume top)" : "");
		if (e->subvol)
			printf("  Subvolume: %llu%s\n", (unsigned long long)e->subvol,
			       e->readonly ? " (read-only)" : "");
		printf("   Mode: %04o (%s)  Links: %u  Uid: %u  Gid: %u\n", i->mode & 07777, mode,
		       i->nlink, i->uid, i->gid);
		printf("   Size: %llu  Bytes: %llu  Rdev: %llu (%u, %u)\n",
		       (unsigned long long)i->size, (unsigned long long)i->nbytes,
		       (unsigned long long)i->rdev, btk_rdev_major(i->rdev),
		       btk_rdev_minor(i->rdev));
		printf("   Generation: %llu  Transid: %llu  Sequence: %llu  Block group: %llu\n",
		       (unsigned long long)i->generation, (unsigned long long)i->transid,
		       (unsigned long long)i->sequence, (unsigned long long)i->block_group);
		printf("   Flags: 0x%llx (%s)\n", (unsigned long long)i->flags, flags);
	}
	show_time("atime", &i->atime, json);
	show_time("mtime", &i->mtime, json);
	show_time("ctime", &i->ctime, json);
	show_time("otime", &i->otime, json);
}

static int entry_cb(void *ctx, const struct img_entry *e)
{
	struct st *s = ctx;
	struct img_cmd *c = s->c;
	int ret, rc = 0;

	show_inode(s, e);
	if (S_ISLNK(e->node.info.mode)) {
		char *t = img_symlink_target(c, &e->node, e->path);
		if (!t)
			rc = CLI_EXIT_ERROR;
		else if (c->json)
			printf(", \"target\": "), btk_json_cstr(stdout, t);
		else
			printf("  Target: %s\n", t);
		free(t);
	}
	if (s->hash && S_ISREG(e->node.info.mode)) {
		char h[IMG_HASH_HEX];
		if (img_file_hash(c, &e->node, s->hash, h)) {
			cli_err("%s: %s: %s: %s", c->img, e->path, s->hash, btk_errmsg());
			rc = CLI_EXIT_ERROR;
			h[0] = 0;
		}
		if (c->json)
			printf(h[0] ? ", \"%s\": \"%s\"" : ", \"%s\": null%s", s->hash, h);
		else
			printf("  %s: %s\n", s->hash, h[0] ? h : "-");
	}
	s->n = 0;
	printf(c->json ? ", \"xattrs\": [" : "Xattrs:\n");
	ret = btk_xattr_for_each(c->fs, &e->node.root, e->node.ino, xattr_cb, s);
	if (ret)
		cli_err("%s: %s: xattrs: %s", c->img, e->path, btk_errmsg()), rc = CLI_EXIT_ERROR;
	if (c->json)
		printf("]");
	s->n = 0;
	printf(c->json ? ", \"extents\": [" : "Extents: (file offset, length, kind, ...)\n");
	ret = btk_file_for_each_extent(c->fs, &e->node.root, e->node.ino, 0, extent_cb, s);
	if (ret)
		cli_err("%s: %s: extents: %s", c->img, e->path, btk_errmsg()), rc = CLI_EXIT_ERROR;
	if (c->json)
		printf("], \"errors\": %s}\n", rc ? "true" : "false");
	return rc ? rc : IMG_WALK_SKIP;
}

int verb_stat(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct st s = {.c = &c};
	char *hash_s = NULL;
	struct poptOption opts[] = {IMG_OPT_HASH(&hash_s, "the content hash of a file"),
				    IMG_READ_OPTIONS(&c)};
	int rc = img_parse(&c, argc, argv, opts, "[--json] [--hash ALGO] IMG PATH", 2, 2);

	rc = img_hash_opt(rc, hash_s, &s.hash);

	if (!rc)
		rc = img_open(&c, false);
	if (!rc) {
		struct img_walk_ops ops = {.entry = entry_cb};
		if (c.json)
			cli_json_on(false); /* an output under way carries "errors" */
		rc = img_walk(&c, c.args[1], &ops, &s);
	}
	return img_done(&c, rc);
}
