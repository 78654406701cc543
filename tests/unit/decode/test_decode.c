/* test_decode.c — the item decoder on hand-built item bytes, including truncated and
 * malicious items. Items live in exactly-sized heap buffers so that a sanitizer build catches
 * any read past their end. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "decode/decode.h"

#define MAXF 512

struct rec {
	struct btk_field f[MAXF];
	char path[MAXF][96]; /* "entries.0.name"-like path of each field */
	char text[MAXF][160];
	uint8_t bytes[MAXF][16]; /* copies: the item buffer is freed after decoding */
	int n, depth, max_depth, errors;
	char stack[16][96];
	int idx[16];
	bool arr[16];
};

static void rec_path(struct rec *r, const char *name, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (int i = 1; i <= r->depth; i++)
		o += (size_t)snprintf(out + o, len - o, "%s.", r->stack[i]);
	if (name)
		snprintf(out + o, len - o, "%s", name);
	else
		snprintf(out + o, len - o, "%d", r->idx[r->depth]++);
}

static void rec_field(void *ctx, const struct btk_field *f)
{
	struct rec *r = ctx;

	assert_true(r->n < MAXF);
	r->f[r->n] = *f;
	if (f->p) {
		memcpy(r->bytes[r->n], f->p, f->len < 16 ? f->len : 16);
		r->f[r->n].p = r->bytes[r->n];
	}
	char path[96];

	rec_path(r, f->name, path, sizeof(path));
	memcpy(r->path[r->n], path, sizeof(path));
	if (f->text)
		snprintf(r->text[r->n], sizeof(r->text[0]), "%s", f->text);
	else if (f->kind == BTK_F_STR)
		snprintf(r->text[r->n], sizeof(r->text[0]), "%.*s", (int)f->len,
			 (const char *)f->p);
	if (f->kind == BTK_F_ERROR) {
		r->errors++;
		assert_int_equal(r->depth, 0); /* errors close every container first */
	}
	r->n++;
}

static void rec_begin(void *ctx, const char *name, bool array)
{
	struct rec *r = ctx;
	char p[96];

	assert_true(r->depth < 15);
	if (name)
		snprintf(p, sizeof(p), "%s", name);
	else
		snprintf(p, sizeof(p), "%d", r->idx[r->depth]++);
	r->depth++;
	snprintf(r->stack[r->depth], sizeof(r->stack[0]), "%s", p);
	r->idx[r->depth] = 0;
	r->arr[r->depth] = array;
	if (r->depth > r->max_depth)
		r->max_depth = r->depth;
}

static void rec_end(void *ctx, bool array)
{
	struct rec *r = ctx;

	assert_true(r->depth > 0);
	assert_int_equal(r->arr[r->depth], array);
	r->depth--;
}

static struct btk_sink rec_sink(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	return (struct btk_sink){r, rec_field, rec_begin, rec_end, NULL};
}

/* The field at path, or fail. */
static const struct btk_field *get(struct rec *r, const char *path)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->path[i], path))
			return &r->f[i];
	fail_msg("no field %s", path);
	return NULL;
}
static bool has(struct rec *r, const char *path)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->path[i], path))
			return true;
	return false;
}
static const char *text_of(struct rec *r, const char *path)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->path[i], path))
			return r->text[i];
	fail_msg("no field %s", path);
	return NULL;
}

static const struct btk_decode_env env4k = {4096, 4};

/* Decodes len bytes copied into an exact-size heap buffer. */
static int decode(struct rec *r, uint64_t oid, uint8_t type, uint64_t off, const void *bytes,
		  uint32_t len)
{
	struct btk_key k = {oid, type, off};
	uint8_t *buf = malloc(len ? len : 1);
	struct btk_sink s = rec_sink(r);
	int ret;

	assert_non_null(buf);
	memcpy(buf, bytes, len);
	ret = btk_decode_item(&env4k, &k, buf, len, &s);
	free(buf);
	assert_int_equal(r->depth, 0);
	assert_int_equal(ret == 0, r->errors == 0);
	return ret;
}

static void test_inode_item(void **state)
{
	struct btrfs_inode_item ii;
	struct rec r;

	(void)state;
	memset(&ii, 0, sizeof(ii));
	ii.generation = htole64(7);
	ii.size = htole64(1ULL << 40);
	ii.nlink = htole32(3);
	ii.mode = htole32(0100644);
	ii.flags = htole64(1 | (1 << 11)) /* NODATASUM, COMPRESS */;
	ii.mtime.sec = htole64(1700000000);
	ii.mtime.nsec = htole32(123);
	assert_int_equal(decode(&r, 256, BTRFS_INODE_ITEM_KEY, 0, &ii, sizeof(ii)), 0);
	assert_int_equal(get(&r, "generation")->u, 7);
	assert_int_equal(get(&r, "size")->u, 1ULL << 40);
	assert_int_equal(get(&r, "links")->u, 3);
	assert_int_equal(get(&r, "mode")->u, 0100644);
	assert_int_equal(get(&r, "mode")->fmt, BTK_FMT_OCT);
	assert_string_equal(text_of(&r, "flags"), "NODATASUM|COMPRESS");
	assert_int_equal(get(&r, "mtime")->u, 1700000000);
	assert_int_equal(get(&r, "mtime")->nsec, 123);

	/* one byte short: an error, and nothing read past the end */
	assert_int_equal(decode(&r, 256, BTRFS_INODE_ITEM_KEY, 0, &ii, sizeof(ii) - 1), -EUCLEAN);
	assert_int_equal(r.errors, 1);
	assert_false(has(&r, "generation"));
}

static size_t put_ref(uint8_t *p, uint64_t index, const char *name, int fake_len)
{
	size_t nl = strlen(name);

	btk_put64(p, index);
	btk_put16(p + 8, (uint16_t)(fake_len >= 0 ? fake_len : (int)nl));
	memcpy(p + 10, name, nl);
	return 10 + nl;
}

static void test_inode_ref(void **state)
{
	uint8_t b[64];
	size_t n;
	struct rec r;

	(void)state;
	n = put_ref(b, 2, "a", -1);
	n += put_ref(b + n, 3, "second", -1);
	assert_int_equal(decode(&r, 257, BTRFS_INODE_REF_KEY, 256, b, (uint32_t)n), 0);
	assert_int_equal(get(&r, "refs.0.index")->u, 2);
	assert_string_equal(text_of(&r, "refs.0.name"), "a");
	assert_int_equal(get(&r, "refs.1.namelen")->u, 6);
	assert_string_equal(text_of(&r, "refs.1.name"), "second");

	/* second name claims 200 bytes: first entry intact, then an error */
	n = put_ref(b, 2, "a", -1);
	n += put_ref(b + n, 3, "second", 200);
	assert_int_equal(decode(&r, 257, BTRFS_INODE_REF_KEY, 256, b, (uint32_t)n), -EUCLEAN);
	assert_string_equal(text_of(&r, "refs.0.name"), "a");
	assert_false(has(&r, "refs.1.name"));

	/* a header cut in the middle */
	assert_int_equal(decode(&r, 257, BTRFS_INODE_REF_KEY, 256, b, 5), -EUCLEAN);
}

static void test_inode_extref(void **state)
{
	uint8_t b[80];
	size_t n = 0;
	struct rec r;

	(void)state;
	for (int i = 0; i < 2; i++) {
		btk_put64(b + n, 256 + i);
		btk_put64(b + n + 8, 10 + i);
		btk_put16(b + n + 16, 4);
		memcpy(b + n + 18, i ? "zzzz" : "name", 4);
		n += 22;
	}
	assert_int_equal(decode(&r, 300, BTRFS_INODE_EXTREF_KEY, 12345, b, (uint32_t)n), 0);
	assert_int_equal(get(&r, "refs.1.parent")->u, 257);
	assert_int_equal(get(&r, "refs.1.index")->u, 11);
	assert_string_equal(text_of(&r, "refs.1.name"), "zzzz");
	assert_int_equal(decode(&r, 300, BTRFS_INODE_EXTREF_KEY, 1, b, (uint32_t)n - 1), -EUCLEAN);
}

static size_t put_dir(uint8_t *p, uint64_t ino, uint8_t ft, const char *name, const char *data)
{
	struct btrfs_dir_item *d = (struct btrfs_dir_item *)p;
	size_t nl = strlen(name), dl = data ? strlen(data) : 0;

	memset(d, 0, sizeof(*d));
	d->location.objectid = htole64(ino);
	d->location.type = BTRFS_INODE_ITEM_KEY;
	d->transid = htole64(9);
	d->name_len = htole16((uint16_t)nl);
	d->data_len = htole16((uint16_t)dl);
	d->type = ft;
	memcpy(p + sizeof(*d), name, nl);
	if (dl)
		memcpy(p + sizeof(*d) + nl, data, dl);
	return sizeof(*d) + nl + dl;
}

static void test_dir_item(void **state)
{
	uint8_t b[200];
	size_t n;
	struct rec r;

	(void)state;
	n = put_dir(b, 257, BTRFS_FT_REG_FILE, "file", NULL);
	n += put_dir(b + n, 258, BTRFS_FT_DIR, "other", NULL);
	assert_int_equal(decode(&r, 256, BTRFS_DIR_ITEM_KEY, 1234, b, (uint32_t)n), 0);
	assert_int_equal(get(&r, "entries.0.location")->key.objectid, 257);
	assert_string_equal(text_of(&r, "entries.0.type"), "FILE");
	assert_string_equal(text_of(&r, "entries.1.type"), "DIR");
	assert_string_equal(text_of(&r, "entries.1.name"), "other");
	assert_false(has(&r, "entries.0.data"));

	n = put_dir(b, 0, BTRFS_FT_XATTR, "user.x", "value\xff");
	assert_int_equal(decode(&r, 256, BTRFS_XATTR_ITEM_KEY, 1, b, (uint32_t)n), 0);
	assert_int_equal(get(&r, "entries.0.data")->len, 6);
	assert_int_equal(get(&r, "entries.0.data_len")->u, 6);

	/* data_len runs past the item */
	assert_int_equal(decode(&r, 256, BTRFS_XATTR_ITEM_KEY, 1, b, (uint32_t)n - 2), -EUCLEAN);
	assert_true(has(&r, "entries.0.name"));
	assert_false(has(&r, "entries.0.data"));

	/* an unknown file type is named like dump-tree names it */
	n = put_dir(b, 257, 42, "f", NULL);
	assert_int_equal(decode(&r, 256, BTRFS_DIR_INDEX_KEY, 2, b, (uint32_t)n), 0);
	assert_string_equal(text_of(&r, "entries.0.type"), "DIR_ITEM.42");
}

static void test_file_extent(void **state)
{
	uint8_t b[sizeof(struct btrfs_file_extent_item) + 100];
	struct btrfs_file_extent_item *fe = (struct btrfs_file_extent_item *)b;
	const size_t head = offsetof(struct btrfs_file_extent_item, disk_bytenr);
	struct rec r;

	(void)state;
	memset(b, 0xab, sizeof(b));
	fe->generation = htole64(5);
	fe->ram_bytes = htole64(3000);
	fe->compression = 3;
	fe->encryption = 0;
	fe->other_encoding = 0;
	fe->type = BTRFS_FILE_EXTENT_INLINE;
	assert_int_equal(decode(&r, 257, BTRFS_EXTENT_DATA_KEY, 0, b, head + 40), 0);
	assert_int_equal(get(&r, "data_size")->u, 40);
	assert_int_equal(get(&r, "ram_bytes")->u, 3000);
	assert_string_equal(text_of(&r, "compression"), "zstd");
	assert_string_equal(text_of(&r, "type"), "inline");
	assert_false(has(&r, "disk_bytenr"));

	fe->type = BTRFS_FILE_EXTENT_PREALLOC;
	fe->compression = 0;
	fe->disk_bytenr = htole64(1ULL << 33);
	fe->disk_num_bytes = htole64(1 << 20);
	fe->offset = htole64(4096);
	fe->num_bytes = htole64(8192);
	assert_int_equal(decode(&r, 257, BTRFS_EXTENT_DATA_KEY, 0, b, sizeof(*fe)), 0);
	assert_string_equal(text_of(&r, "type"), "prealloc");
	assert_int_equal(get(&r, "disk_bytenr")->u, 1ULL << 33);
	assert_int_equal(get(&r, "num_bytes")->u, 8192);
	assert_string_equal(text_of(&r, "compression"), "none");

	/* a regular extent shorter than its structure */
	fe->type = BTRFS_FILE_EXTENT_REG;
	assert_int_equal(decode(&r, 257, BTRFS_EXTENT_DATA_KEY, 0, b, sizeof(*fe) - 1), -EUCLEAN);
	assert_int_equal(decode(&r, 257, BTRFS_EXTENT_DATA_KEY, 0, b, 10), -EUCLEAN);
	fe->compression = 9;
	assert_int_equal(decode(&r, 257, BTRFS_EXTENT_DATA_KEY, 0, b, sizeof(*fe)), 0);
	assert_string_equal(text_of(&r, "compression"), "UNKNOWN.9");
}

static void test_extent_item(void **state)
{
	uint8_t b[128];
	size_t n = 0;
	struct rec r;

	(void)state;
	/* non-skinny tree block: extent item, tree_block_info, one TREE_BLOCK_REF */
	btk_put64(b, 1);
	btk_put64(b + 8, 11);
	btk_put64(b + 16, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	n = 24;
	memset(b + n, 0, 17);
	btk_put64(b + n, 256); /* key objectid */
	b[n + 8] = BTRFS_INODE_ITEM_KEY;
	b[n + 17] = 1; /* level */
	n += 18;
	b[n] = BTRFS_TREE_BLOCK_REF_KEY;
	btk_put64(b + n + 1, 5);
	n += 9;
	assert_int_equal(decode(&r, 30408704, BTRFS_EXTENT_ITEM_KEY, 16384, b, (uint32_t)n), 0);
	assert_string_equal(text_of(&r, "flags"), "TREE_BLOCK");
	assert_int_equal(get(&r, "tree_block.key")->key.objectid, 256);
	assert_int_equal(get(&r, "tree_block.level")->u, 1);
	assert_string_equal(text_of(&r, "inline_refs.0.type"), "TREE_BLOCK_REF");
	assert_int_equal(get(&r, "inline_refs.0.root")->u, 5);

	/* data extent: EXTENT_DATA_REF then SHARED_DATA_REF */
	btk_put64(b + 16, BTRFS_EXTENT_FLAG_DATA);
	n = 24;
	b[n] = BTRFS_EXTENT_DATA_REF_KEY;
	btk_put64(b + n + 1, 5);
	btk_put64(b + n + 9, 257);
	btk_put64(b + n + 17, 4096);
	btk_put32(b + n + 25, 2);
	n += 29;
	b[n] = BTRFS_SHARED_DATA_REF_KEY;
	btk_put64(b + n + 1, 123456);
	btk_put32(b + n + 9, 7);
	n += 13;
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_ITEM_KEY, 4096, b, (uint32_t)n), 0);
	assert_int_equal(get(&r, "inline_refs.0.objectid")->u, 257);
	assert_int_equal(get(&r, "inline_refs.0.offset")->u, 4096);
	assert_int_equal(get(&r, "inline_refs.0.count")->u, 2);
	assert_int_equal(get(&r, "inline_refs.1.parent")->u, 123456);
	assert_int_equal(get(&r, "inline_refs.1.count")->u, 7);
	assert_false(has(&r, "tree_block.level"));

	/* the last ref cut short, then a bad ref type */
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_ITEM_KEY, 4096, b, (uint32_t)n - 1),
			 -EUCLEAN);
	assert_true(has(&r, "inline_refs.0.count"));
	assert_false(has(&r, "inline_refs.1.parent"));
	b[24] = 99;
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_ITEM_KEY, 4096, b, (uint32_t)n),
			 -EUCLEAN);
	assert_false(has(&r, "inline_refs.0.type"));

	/* skinny metadata: level from the key offset, SHARED_BLOCK_REF */
	btk_put64(b + 16, BTRFS_EXTENT_FLAG_TREE_BLOCK | BTRFS_BLOCK_FLAG_FULL_BACKREF);
	b[24] = BTRFS_SHARED_BLOCK_REF_KEY;
	btk_put64(b + 25, 999);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_METADATA_ITEM_KEY, 2, b, 33), 0);
	assert_int_equal(get(&r, "tree_block.level")->u, 2);
	assert_int_equal(get(&r, "inline_refs.0.parent")->u, 999);
	assert_string_equal(text_of(&r, "flags"), "TREE_BLOCK|FULL_BACKREF");

	/* shorter than an extent item */
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_ITEM_KEY, 4096, b, 4), -EUCLEAN);
}

static void test_chunk(void **state)
{
	uint8_t b[sizeof(struct btrfs_chunk) + 2 * sizeof(struct btrfs_stripe)];
	struct btrfs_chunk *c = (struct btrfs_chunk *)b;
	struct btrfs_stripe *s = &c->stripe;
	uint32_t size2 = sizeof(struct btrfs_chunk) + sizeof(struct btrfs_stripe);
	struct rec r;

	(void)state;
	memset(b, 0, sizeof(b));
	c->length = htole64(8 << 20);
	c->type = htole64(BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1);
	c->num_stripes = htole16(2);
	s[0].devid = htole64(1);
	s[1].devid = htole64(2);
	s[1].offset = htole64(1 << 30);
	s[1].dev_uuid[0] = 0xaa;
	assert_int_equal(decode(&r, 256, BTRFS_CHUNK_ITEM_KEY, 1 << 22, b, size2), 0);
	assert_string_equal(text_of(&r, "type"), "METADATA|RAID1");
	assert_int_equal(get(&r, "stripes.1.devid")->u, 2);
	assert_int_equal(get(&r, "stripes.1.offset")->u, 1 << 30);
	assert_int_equal(get(&r, "stripes.1.dev_uuid")->p[0], 0xaa);

	c->num_stripes = htole16(3); /* more stripes than bytes */
	assert_int_equal(decode(&r, 256, BTRFS_CHUNK_ITEM_KEY, 1 << 22, b, size2), -EUCLEAN);
	assert_false(has(&r, "stripes.0.devid"));
	c->num_stripes = 0;
	assert_int_equal(decode(&r, 256, BTRFS_CHUNK_ITEM_KEY, 1 << 22, b, size2), -EUCLEAN);
}

static void test_root_item(void **state)
{
	struct btrfs_root_item ri;
	uint32_t legacy = offsetof(struct btrfs_root_item, generation_v2);
	struct rec r;

	(void)state;
	memset(&ri, 0, sizeof(ri));
	ri.generation = htole64(8);
	ri.generation_v2 = htole64(8);
	ri.bytenr = htole64(30408704);
	ri.flags = htole64(BTRFS_ROOT_SUBVOL_RDONLY);
	ri.uuid[15] = 1;
	ri.otime.sec = htole64(42);
	ri.drop_progress.objectid = htole64(300);
	assert_int_equal(decode(&r, 256, BTRFS_ROOT_ITEM_KEY, 0, &ri, sizeof(ri)), 0);
	assert_int_equal(get(&r, "bytenr")->u, 30408704);
	assert_string_equal(text_of(&r, "flags"), "RDONLY");
	assert_int_equal(get(&r, "uuid")->p[15], 1);
	assert_int_equal(get(&r, "otime")->u, 42);
	assert_int_equal(get(&r, "drop_progress")->key.objectid, 300);

	/* legacy size: no v2 fields; stale generation_v2: no v2 fields either */
	assert_int_equal(decode(&r, 256, BTRFS_ROOT_ITEM_KEY, 0, &ri, legacy), 0);
	assert_false(has(&r, "uuid"));
	assert_false(has(&r, "generation_v2"));
	ri.generation_v2 = htole64(7);
	assert_int_equal(decode(&r, 256, BTRFS_ROOT_ITEM_KEY, 0, &ri, sizeof(ri)), 0);
	assert_int_equal(get(&r, "generation_v2")->u, 7);
	assert_false(has(&r, "uuid"));
	assert_int_equal(decode(&r, 256, BTRFS_ROOT_ITEM_KEY, 0, &ri, legacy - 1), -EUCLEAN);
}

static void test_small_items(void **state)
{
	uint8_t b[64] = {0};
	struct rec r;

	(void)state;
	/* csums: 3 crc32c values cover 3 sectors */
	assert_int_equal(
	    decode(&r, BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 1 << 20, b, 12), 0);
	assert_int_equal(get(&r, "num_csums")->u, 3);
	assert_int_equal(get(&r, "end")->u, (1 << 20) + 3 * 4096);
	assert_int_equal(get(&r, "csums.2")->len, 4);
	assert_int_equal(decode(&r, BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0, b, 13),
			 -EUCLEAN);

	/* uuid items: a multiple of 8 */
	btk_put64(b + 8, 257);
	assert_int_equal(decode(&r, 1, BTRFS_UUID_KEY_SUBVOL, 2, b, 16), 0);
	assert_int_equal(get(&r, "subvol_ids.1")->u, 257);
	assert_int_equal(decode(&r, 1, BTRFS_UUID_KEY_SUBVOL, 2, b, 12), -EUCLEAN);

	/* block group, dev extent, qgroup items: exact and short */
	btk_put64(b, 4096);
	btk_put64(b + 8, 256);
	btk_put64(b + 16, BTRFS_BLOCK_GROUP_DATA);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_BLOCK_GROUP_ITEM_KEY, 1 << 20, b, 24), 0);
	assert_int_equal(get(&r, "used")->u, 4096);
	assert_string_equal(text_of(&r, "flags"), "DATA");
	assert_int_equal(decode(&r, 1 << 20, BTRFS_BLOCK_GROUP_ITEM_KEY, 1 << 20, b, 23), -EUCLEAN);
	assert_int_equal(decode(&r, 1, BTRFS_DEV_EXTENT_KEY, 0, b, 47), -EUCLEAN);
	assert_int_equal(decode(&r, 1, BTRFS_DEV_ITEM_KEY, 1, b, 60), -EUCLEAN);
	btk_put64(b + 8, (uint64_t)-1);
	assert_int_equal(decode(&r, 0, BTRFS_QGROUP_LIMIT_KEY, 5, b, 40), 0);
	assert_int_equal(get(&r, "max_referenced")->s, -1);
	btk_put64(b + 16, BTRFS_QGROUP_STATUS_FLAG_ON | BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT);
	assert_int_equal(decode(&r, 0, BTRFS_QGROUP_STATUS_KEY, 0, b, 32), 0);
	assert_string_equal(text_of(&r, "flags"), "ON|INCONSISTENT");
	assert_int_equal(decode(&r, 0, BTRFS_QGROUP_INFO_KEY, 5, b, 39), -EUCLEAN);

	/* dev stats (PERSISTENT_ITEM of objectid 0) and a string item */
	btk_put64(b + 8, 3);
	assert_int_equal(decode(&r, 0, BTRFS_PERSISTENT_ITEM_KEY, 1, b, 40), 0);
	assert_int_equal(get(&r, "read_errs")->u, 3);
	assert_int_equal(decode(&r, 0, BTRFS_STRING_ITEM_KEY, 0, "hello", 5), 0);
	assert_string_equal(text_of(&r, "item_data"), "hello");

	/* free space: info, bitmap, and the v1 cache header (UNTYPED) */
	btk_put32(b, 12);
	btk_put32(b + 4, 1);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_FREE_SPACE_INFO_KEY, 1 << 20, b, 8), 0);
	assert_int_equal(get(&r, "extent_count")->u, 12);
	assert_string_equal(text_of(&r, "flags"), "USING_BITMAPS");
	memset(b, 0x0f, 4);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_FREE_SPACE_BITMAP_KEY, 1 << 15, b, 4), 0);
	assert_int_equal(get(&r, "bits_set")->u, 16);
	assert_int_equal(decode(&r, BTRFS_FREE_SPACE_OBJECTID, 0, 1 << 20, b, 40), -EUCLEAN);
	assert_int_equal(decode(&r, BTRFS_FREE_SPACE_OBJECTID, 0, 1 << 20, b, 41), 0);
	assert_true(has(&r, "cache_generation"));

	/* keyed refs and an unknown type shown as hex */
	btk_put64(b, 5);
	btk_put32(b + 24, 4);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_DATA_REF_KEY, 77, b, 28), 0);
	assert_int_equal(get(&r, "count")->u, 4);
	assert_int_equal(decode(&r, 1 << 20, BTRFS_EXTENT_DATA_REF_KEY, 77, b, 27), -EUCLEAN);
	assert_int_equal(decode(&r, 1, 77, 0, b, 3), 0);
	assert_int_equal(get(&r, "hex")->len, 3);
	assert_int_equal(decode(&r, 0, BTRFS_ORPHAN_ITEM_KEY, 257, b, 0), 0);
	assert_int_equal(r.n, 0);
}

static void test_balance(void **state)
{
	struct btrfs_balance_item bi;
	struct rec r;

	(void)state;
	memset(&bi, 0, sizeof(bi));
	bi.flags = htole64(7);
	bi.meta.usage_max = htole32(90);
	bi.sys.stripes_min = htole32(2);
	assert_int_equal(
	    decode(&r, BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0, &bi, sizeof(bi)), 0);
	assert_int_equal(get(&r, "flags")->u, 7);
	assert_int_equal(get(&r, "metadata.usage_max")->u, 90);
	assert_int_equal(get(&r, "system.stripes_min")->u, 2);
	assert_int_equal(
	    decode(&r, BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0, &bi, sizeof(bi) - 8),
	    -EUCLEAN);
}

/* Every key type, every size up to 300, pseudo-random bytes: decoding ends, containers
 * balance (checked by the recording sink) and nothing is read out of bounds (sanitizers). */
static void test_fuzz(void **state)
{
	uint8_t b[300];
	uint32_t seed = 12345;
	struct rec *r = malloc(sizeof(*r));

	(void)state;
	assert_non_null(r);
	for (int type = 0; type < 256; type++) {
		for (uint32_t size = 0; size <= sizeof(b); size += (size < 64 ? 1 : 7)) {
			for (size_t i = 0; i < sizeof(b); i++) {
				seed = seed * 1103515245 + 12345;
				b[i] = (uint8_t)(seed >> 16);
			}
			/* plausible small lengths and ref types so that parsing goes deep */
			if (size > 30 && (seed & 1)) {
				b[24] = (uint8_t)(seed & 4 ? BTRFS_EXTENT_DATA_REF_KEY
							   : BTRFS_SHARED_DATA_REF_KEY);
				btk_put16(b + 8, (uint16_t)(seed % 40));
				btk_put16(b + 27, (uint16_t)(seed % 20));
				btk_put16(b + 25, (uint16_t)(seed % 13));
			}
			decode(r, seed & 8 ? BTRFS_BALANCE_OBJECTID : 0, (uint8_t)type, seed % 5, b,
			       size);
			assert_true(r->max_depth <= 8);
		}
	}
	free(r);
}

static void test_super(void **state)
{
	struct btk_super *sb = calloc(1, sizeof(*sb));
	struct btrfs_chunk c;
	struct btk_disk_key k;
	struct rec r;
	struct btk_sink s;
	size_t n = 0;

	(void)state;
	assert_non_null(sb);
	memset(&k, 0, sizeof(k));
	memcpy(sb->magic, "_BHRfS_M", 8);
	btk_put16(sb->csum_type, 1);
	memcpy(sb->label, "lbl", 3);
	btk_put64(sb->incompat_flags, (1ULL << 8) | (1ULL << 40));
	memset(&c, 0, sizeof(c));
	c.num_stripes = htole16(1);
	c.length = htole64(4 << 20);
	btk_put64(k.objectid, 256);
	k.type = BTRFS_CHUNK_ITEM_KEY;
	for (int i = 0; i < 2; i++) {
		memcpy(sb->sys_chunk_array + n, &k, sizeof(k));
		memcpy(sb->sys_chunk_array + n + sizeof(k), &c, sizeof(c));
		n += sizeof(k) + sizeof(c);
	}
	btk_put32(sb->sys_chunk_array_size, (uint32_t)n);
	btk_put64(sb->super_roots[2].tree_root, 1234);

	s = rec_sink(&r);
	assert_int_equal(btk_decode_super(sb, &s), 0);
	assert_string_equal(text_of(&r, "csum_type"), "xxhash64");
	assert_int_equal(get(&r, "csum")->len, 8);
	assert_string_equal(text_of(&r, "label"), "lbl");
	assert_string_equal(text_of(&r, "incompat_flags"),
			    "SKINNY_METADATA|unknown flag: 0x10000000000");
	assert_int_equal(get(&r, "sys_chunk_array.1.length")->u, 4 << 20);
	assert_int_equal(get(&r, "backup_roots.0.index")->u, 2);
	assert_int_equal(get(&r, "backup_roots.0.backup_tree_root")->u, 1234);
	assert_int_equal(r.errors, 0);

	/* an array one byte short of its last stripe, then a wrong item type, then too big */
	btk_put32(sb->sys_chunk_array_size, (uint32_t)n - 1);
	s = rec_sink(&r);
	assert_int_equal(btk_decode_super(sb, &s), -EUCLEAN);
	assert_true(has(&r, "sys_chunk_array.0.length"));
	assert_int_equal(r.depth, 0);
	btk_put32(sb->sys_chunk_array_size, (uint32_t)n);
	sb->sys_chunk_array[sizeof(k) + sizeof(c) + 8] = BTRFS_DEV_ITEM_KEY;
	s = rec_sink(&r);
	assert_int_equal(btk_decode_super(sb, &s), -EUCLEAN);
	btk_put32(sb->sys_chunk_array_size, 5000);
	s = rec_sink(&r);
	assert_int_equal(btk_decode_super(sb, &s), -EUCLEAN);
	free(sb);
}

static void test_names(void **state)
{
	uint64_t id;
	char buf[96];
	struct btk_key k;

	(void)state;
	assert_string_equal(btk_key_type_name(BTRFS_INODE_ITEM_KEY), "INODE_ITEM");
	assert_string_equal(btk_key_type_name(BTRFS_METADATA_ITEM_KEY), "METADATA_ITEM");
	assert_string_equal(btk_key_type_name(BTRFS_PERSISTENT_ITEM_KEY), "PERSISTENT_ITEM");
	assert_null(btk_key_type_name(77));
	assert_string_equal(btk_objectid_name(BTRFS_DATA_RELOC_TREE_OBJECTID), "DATA_RELOC_TREE");
	assert_null(btk_objectid_name(256));
	assert_int_equal(btk_tree_id_parse("fs", &id), 0);
	assert_int_equal(id, 5);
	assert_int_equal(btk_tree_id_parse("EXTENT_TREE", &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(btk_tree_id_parse("csum_tree", &id), 0);
	assert_int_equal(id, 7);
	assert_int_equal(btk_tree_id_parse("free-space", &id), 0);
	assert_int_equal(id, 10);
	assert_int_equal(btk_tree_id_parse("257", &id), 0);
	assert_int_equal(id, 257);
	assert_int_equal(btk_tree_id_parse("-9", &id), 0);
	assert_int_equal(id, BTRFS_DATA_RELOC_TREE_OBJECTID);
	assert_int_equal(btk_tree_id_parse("nonsense", &id), -EINVAL);
	assert_int_equal(btk_tree_id_parse("12x", &id), -EINVAL);
	assert_int_equal(btk_tree_id_parse("", &id), -EINVAL);
	assert_string_equal(btk_profile_name(BTRFS_BLOCK_GROUP_DATA), "single");
	assert_string_equal(btk_profile_name(BTRFS_BLOCK_GROUP_RAID1C3 | 4), "raid1c3");

	k = (struct btk_key){BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(FS_TREE ROOT_ITEM 0)");
	k = (struct btk_key){256, BTRFS_DIR_ITEM_KEY, (uint64_t)-1};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(256 DIR_ITEM -1)");
	k = (struct btk_key){(1ULL << 48) | 7, BTRFS_QGROUP_RELATION_KEY, 5};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(1/7 QGROUP_RELATION 0/5)");
	k = (struct btk_key){1, BTRFS_DEV_ITEM_KEY, 1};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(DEV_ITEMS DEV_ITEM 1)");
	k = (struct btk_key){BTRFS_FREE_SPACE_OBJECTID, 0, 1 << 20};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(FREE_SPACE UNTYPED 1048576)");
	k = (struct btk_key){0, 0, 0};
	assert_string_equal(btk_key_format(&k, buf, sizeof(buf)), "(0 UNKNOWN.0 0)");
}

static void test_header_and_chunk_api(void **state)
{
	struct btk_header h;
	uint8_t b[sizeof(struct btrfs_chunk)];
	struct btrfs_chunk *c = (struct btrfs_chunk *)b;
	struct rec r;
	struct btk_sink s;

	(void)state;
	memset(&h, 0, sizeof(h));
	btk_put64(h.bytenr, 30408704);
	btk_put64(h.flags, (1ULL << 56) | BTK_HEADER_FLAG_WRITTEN | BTK_HEADER_FLAG_RELOC);
	btk_put64(h.owner, BTRFS_CSUM_TREE_OBJECTID);
	btk_put32(h.nritems, 12);
	h.level = 1;
	h.fsid[0] = 0x42;
	s = rec_sink(&r);
	btk_decode_header(&h, 4, &s);
	assert_int_equal(get(&r, "bytenr")->u, 30408704);
	assert_int_equal(get(&r, "backref_rev")->u, 1);
	assert_string_equal(text_of(&r, "flags"), "WRITTEN|RELOC");
	assert_int_equal(get(&r, "owner")->fmt, BTK_FMT_OBJID);
	assert_int_equal(get(&r, "csum")->len, 4);
	assert_int_equal(get(&r, "fsid")->p[0], 0x42);

	memset(b, 0, sizeof(b));
	c->num_stripes = htole16(1);
	c->type = htole64(BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP);
	s = rec_sink(&r);
	assert_int_equal(btk_decode_chunk(b, sizeof(b), &s), 0);
	assert_string_equal(text_of(&r, "type"), "SYSTEM|DUP");
	assert_int_equal(get(&r, "stripes.0.stripe")->u, 0);
	s = rec_sink(&r);
	assert_int_equal(btk_decode_chunk(b, sizeof(b) - 1, &s), -EUCLEAN);
	assert_int_equal(r.depth, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inode_item),	 cmocka_unit_test(test_inode_ref),
	    cmocka_unit_test(test_inode_extref), cmocka_unit_test(test_dir_item),
	    cmocka_unit_test(test_file_extent),	 cmocka_unit_test(test_extent_item),
	    cmocka_unit_test(test_chunk),	 cmocka_unit_test(test_root_item),
	    cmocka_unit_test(test_small_items),	 cmocka_unit_test(test_balance),
	    cmocka_unit_test(test_fuzz),	 cmocka_unit_test(test_super),
	    cmocka_unit_test(test_names),	 cmocka_unit_test(test_header_and_chunk_api),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
