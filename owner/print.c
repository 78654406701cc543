/* print.c — text and JSON output of address queries (format documented in btk-owner(8)). */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "cli/cli.h"
#include "owner.h"

const char *found_name(int found)
{
	return found == BTK_FOUND_SCAN ? "scan" : "backref";
}

/* Text: bytes outside printable ASCII, space, '\\' and '=' as \xHH, so fields split on
 * spaces and every name can be recovered. */
void print_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == '\\' || *p == '=')
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

static const char *kind_name(const struct query *q)
{
	switch (q->kind) {
	case Q_SUPER:
		return "superblock";
	case Q_UNALLOC:
		return "unallocated";
	case Q_PARITY:
		return "parity";
	case Q_BEYOND:
		return "beyond-device";
	case Q_RESOLVED:
		break;
	default:
		return "error";
	}
	switch (q->own.kind) {
	case BTK_KIND_FREE:
		return q->stale ? "stale-metadata" : "free";
	case BTK_KIND_DATA:
		return "data";
	case BTK_KIND_METADATA:
		return "metadata";
	case BTK_KIND_UNMAPPED:
		return "unmapped";
	}
	return "error";
}

static void text_head(FILE *f, const struct query *q)
{
	fprintf(f, "%llu %s", (unsigned long long)q->input, kind_name(q));
	if (q->physical)
		fprintf(f, " devid=%llu", (unsigned long long)q->devid);
	if (q->kind == Q_SUPER)
		fprintf(f, " mirror=%d", q->mirror);
	if (q->have_logical)
		fprintf(f, " logical=%llu", (unsigned long long)q->logical);
}

static void text_key(FILE *f, const char *name, const struct btk_key *k)
{
	fprintf(f, " %s=%llu,%u,%llu", name, (unsigned long long)k->objectid, k->type,
		(unsigned long long)k->offset);
}

static void text_data_owner(struct owner_ctx *c, const struct query *q,
			    const struct btk_data_owner *d)
{
	const char *sv = subvol_path(c, d->root);
	char **paths;
	size_t n = 0;

	text_head(stdout, q);
	printf(" root=%llu inode=%llu offset=%llu subvol=", (unsigned long long)d->root,
	       (unsigned long long)d->inode, (unsigned long long)d->offset);
	print_escaped(stdout, sv ? sv : "?");
	if (!sv && subvol_unlinked(c, d->root))
		printf(" unlinked");
	if (d->compression)
		printf(" compressed=%s file_range=%llu+%llu", btk_compression_name(d->compression),
		       (unsigned long long)d->file_start, (unsigned long long)d->file_len);
	if (d->type == BTRFS_FILE_EXTENT_PREALLOC)
		printf(" prealloc");
	printf(" found=%s", found_name(d->found));
	inode_paths(c, d->root, d->inode, &paths, &n);
	for (size_t i = 0; i < n; i++) {
		printf(" path=");
		print_escaped(stdout, paths[i]);
	}
	putchar('\n');
}

static void text_stale(const struct query *q)
{
	const struct btk_stale *s = q->stale;

	text_head(stdout, q);
	printf(" tree=%llu generation=%llu level=%d block=%llu", (unsigned long long)s->owner,
	       (unsigned long long)s->generation, s->level, (unsigned long long)s->bytenr);
	if (s->nritems) {
		text_key(stdout, "first", &s->first);
		text_key(stdout, "last", &s->last);
	}
	for (uint32_t i = 0; i < s->nnames && i < BTK_STALE_NAMES; i++) {
		printf(" name=%llu/%llu:", (unsigned long long)s->names[i].dir,
		       (unsigned long long)s->names[i].ino);
		print_escaped(stdout, s->names[i].name);
	}
	if (s->nnames > BTK_STALE_NAMES)
		printf(" names=%u", s->nnames);
	for (uint32_t i = 0; i < s->ninodes && i < BTK_STALE_NAMES; i++)
		printf(" inode=%llu", (unsigned long long)s->inodes[i]);
	if (s->ninodes > BTK_STALE_NAMES)
		printf(" inodes=%u", s->ninodes);
	putchar('\n');
}

static void json_stale(const struct btk_stale *s)
{
	printf(",\"stale\":{\"block\":%llu,\"tree\":%llu,\"generation\":%llu,\"level\":%d",
	       (unsigned long long)s->bytenr, (unsigned long long)s->owner,
	       (unsigned long long)s->generation, s->level);
	printf(",\"names\":[");
	for (uint32_t i = 0; i < s->nnames && i < BTK_STALE_NAMES; i++) {
		printf("%s{\"dir\":%llu,\"inode\":%llu,\"name\":", i ? "," : "",
		       (unsigned long long)s->names[i].dir, (unsigned long long)s->names[i].ino);
		btk_json_cstr(stdout, s->names[i].name);
		putchar('}');
	}
	printf("],\"nnames\":%u,\"inodes\":[", s->nnames);
	for (uint32_t i = 0; i < s->ninodes && i < BTK_STALE_NAMES; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)s->inodes[i]);
	printf("],\"ninodes\":%u}", s->ninodes);
}

static void print_text(struct owner_ctx *c, const struct query *q)
{
	const struct btk_owner *o = &q->own;

	if (q->stale) {
		text_stale(q);
		return;
	}

	if (q->err) {
		text_head(stdout, q);
		putchar('\n');
		return;
	}
	for (size_t i = 0; i < o->ndata; i++)
		text_data_owner(c, q, &o->data[i]);
	for (size_t i = 0; i < o->ntree; i++) {
		text_head(stdout, q);
		printf(" root=%llu level=%d", (unsigned long long)o->tree[i].root,
		       o->tree[i].level);
		if (o->have_keys) {
			text_key(stdout, "first", &o->first_key);
			text_key(stdout, "last", &o->last_key);
		}
		printf(" found=%s\n", found_name(o->tree[i].found));
	}
	if (!o->ndata && !o->ntree) {
		text_head(stdout, q);
		if (o->kind == BTK_KIND_DATA || o->kind == BTK_KIND_METADATA)
			printf(" no-owner");
		putchar('\n');
	}
}

static void json_key(FILE *f, const char *name, const struct btk_key *k)
{
	const char *t = btk_key_type_name(k->type);

	fprintf(f, ",\"%s\":{\"objectid\":%llu,\"type\":", name, (unsigned long long)k->objectid);
	if (t)
		fprintf(f, "\"%s\"", t);
	else
		fprintf(f, "%u", k->type);
	fprintf(f, ",\"offset\":%llu}", (unsigned long long)k->offset);
}

static void json_data_owner(struct owner_ctx *c, const struct btk_data_owner *d)
{
	const char *sv = subvol_path(c, d->root);
	char **paths;
	size_t n = 0;

	printf("{\"root\":%llu,\"subvol\":", (unsigned long long)d->root);
	if (sv)
		btk_json_cstr(stdout, sv);
	else
		fputs(subvol_unlinked(c, d->root) ? "null,\"unlinked\":true" : "null", stdout);
	printf(",\"inode\":%llu,\"offset\":%llu,\"paths\":[", (unsigned long long)d->inode,
	       (unsigned long long)d->offset);
	inode_paths(c, d->root, d->inode, &paths, &n);
	for (size_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		btk_json_cstr(stdout, paths[i]);
	}
	printf("],\"file_range\":{\"offset\":%llu,\"length\":%llu}",
	       (unsigned long long)d->file_start, (unsigned long long)d->file_len);
	if (d->compression)
		printf(",\"compressed\":\"%s\"", btk_compression_name(d->compression));
	if (d->type == BTRFS_FILE_EXTENT_PREALLOC)
		printf(",\"prealloc\":true");
	printf(",\"found\":\"%s\"}", found_name(d->found));
}

static void json_owners(struct owner_ctx *c, const struct btk_owner *o)
{
	printf(",\"owners\":[");
	for (size_t i = 0; i < o->ndata; i++) {
		if (i)
			putchar(',');
		json_data_owner(c, &o->data[i]);
	}
	for (size_t i = 0; i < o->ntree; i++) {
		if (i || o->ndata)
			putchar(',');
		printf("{\"root\":%llu,\"level\":%d,\"found\":\"%s\"}",
		       (unsigned long long)o->tree[i].root, o->tree[i].level,
		       found_name(o->tree[i].found));
	}
	putchar(']');
}

static void print_json(struct owner_ctx *c, const struct query *q)
{
	const struct btk_owner *o = &q->own;

	printf("%s{\"address\":%llu", c->nqueries_out++ ? "," : "", (unsigned long long)q->input);
	if (q->physical)
		printf(",\"devid\":%llu", (unsigned long long)q->devid);
	else
		printf(",\"devid\":null");
	if (q->have_logical)
		printf(",\"logical\":%llu", (unsigned long long)q->logical);
	else
		printf(",\"logical\":null");
	printf(",\"kind\":\"%s\"", kind_name(q));
	if (q->kind == Q_SUPER)
		printf(",\"mirror\":%d", q->mirror);
	if (o->have_extent)
		printf(",\"extent\":{\"start\":%llu,\"length\":%llu,\"refs\":%llu,"
		       "\"generation\":%llu}",
		       (unsigned long long)o->ext.start, (unsigned long long)o->ext.len,
		       (unsigned long long)o->ext.refs, (unsigned long long)o->ext.generation);
	if (o->have_keys) {
		json_key(stdout, "first_key", &o->first_key);
		json_key(stdout, "last_key", &o->last_key);
	}
	if (q->stale)
		json_stale(q->stale);
	json_owners(c, o);
	if (q->err || o->nerrors) {
		const char *msg = q->err ? q->errmsg : o->error;

		printf(",\"errors\":%d,\"error\":", q->err ? 1 : o->nerrors);
		btk_json_cstr(stdout, msg ? msg : "");
	}
	putchar('}');
}

void print_begin(struct owner_ctx *c)
{
	if (c->o.json)
		printf("{\"queries\":[");
}

void print_query(struct owner_ctx *c, struct query *q)
{
	query_stale(c, q);
	if (q->err)
		cli_err("%llu: %s", (unsigned long long)q->input, q->errmsg ? q->errmsg : "error");
	else if (q->own.nerrors && q->own.kind == BTK_KIND_METADATA && !q->own.have_keys &&
		 q->own.ntree)
		/* the block itself does not read, but its extent item names the owner */
		cli_err("%llu: the tree block does not read (%s); its owner comes from the "
			"extent item (TREE_BLOCK_REF)",
			(unsigned long long)q->input, q->own.error ? q->own.error : "?");
	else if (q->own.nerrors && !c->o.scan)
		cli_err("%llu: %d reference(s) not followed (%s); --scan walks the trees instead",
			(unsigned long long)q->input, q->own.nerrors,
			q->own.error ? q->own.error : "?");
	if (q->err || q->own.nerrors)
		c->failures++;
	if (c->o.json)
		print_json(c, q);
	else
		print_text(c, q);
}

void print_end(struct owner_ctx *c)
{
	if (c->o.json)
		printf("]}\n"); /* a report: one object on one line (btk.7, JSON OUTPUT) */
	fflush(stdout);
}
