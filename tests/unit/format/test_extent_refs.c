/* Extent record header and back references: every ref type, EXTENT_OWNER_REF, truncated and
 * unknown refs, keyed refs, and the writer against the reader. Items are built byte by byte
 * from the documented layout, not with the writer under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "format/extent_refs.h"

/* A byte buffer built field by field. */
struct buf {
	uint8_t d[256];
	uint32_t n;
};

static void put8(struct buf *b, uint8_t v)
{
	b->d[b->n++] = v;
}
static void put32(struct buf *b, uint32_t v)
{
	btk_put32(b->d + b->n, v);
	b->n += 4;
}
static void put64(struct buf *b, uint64_t v)
{
	btk_put64(b->d + b->n, v);
	b->n += 8;
}

/* refs, generation, flags */
static void head(struct buf *b, uint64_t refs, uint64_t gen, uint64_t flags)
{
	put64(b, refs);
	put64(b, gen);
	put64(b, flags);
}

static void test_data_extent_all_data_refs(void **state)
{
	struct btk_key k = {1 << 20, BTRFS_EXTENT_ITEM_KEY, 4096};
	struct buf b = {0};
	struct btk_extent_head h;
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	(void)state;

	head(&b, 5, 7, BTRFS_EXTENT_FLAG_DATA);
	put8(&b, BTRFS_EXTENT_OWNER_REF_KEY); /* simple quotas: comes first */
	put64(&b, 256);
	put8(&b, BTRFS_EXTENT_DATA_REF_KEY);
	put64(&b, 5);	 /* root */
	put64(&b, 257);	 /* objectid */
	put64(&b, 8192); /* offset */
	put32(&b, 3);	 /* count */
	put8(&b, BTRFS_SHARED_DATA_REF_KEY);
	put64(&b, 30408704); /* parent */
	put32(&b, 2);	     /* count */

	assert_int_equal(btk_extent_head_parse(&k, b.d, b.n, &h), 0);
	assert_int_equal(h.refs, 5);
	assert_int_equal(h.generation, 7);
	assert_int_equal(h.flags, BTRFS_EXTENT_FLAG_DATA);
	assert_false(h.skinny);
	assert_false(h.has_info);
	assert_int_equal(h.level, -1);
	assert_int_equal(h.refs_at, 24);

	btk_inline_iter_init(&it, b.d, b.n, h.refs_at);
	assert_int_equal(btk_inline_next(&it, &r), 1);
	assert_int_equal(r.type, BTRFS_EXTENT_OWNER_REF_KEY);
	assert_true(r.inline_ref);
	assert_int_equal(r.root, 256);
	assert_int_equal(r.count, 0);
	assert_int_equal(it.at, 24);
	assert_int_equal(it.len, 9);

	assert_int_equal(btk_inline_next(&it, &r), 1);
	assert_int_equal(r.type, BTRFS_EXTENT_DATA_REF_KEY);
	assert_int_equal(r.root, 5);
	assert_int_equal(r.objectid, 257);
	assert_int_equal(r.offset, 8192);
	assert_int_equal(r.count, 3);
	assert_int_equal(r.parent, 0);
	assert_int_equal(it.at, 33);
	assert_int_equal(it.len, 29);

	assert_int_equal(btk_inline_next(&it, &r), 1);
	assert_int_equal(r.type, BTRFS_SHARED_DATA_REF_KEY);
	assert_int_equal(r.parent, 30408704);
	assert_int_equal(r.count, 2);
	assert_int_equal(r.root, 0);
	assert_int_equal(it.at, 62);
	assert_int_equal(it.len, 13);

	assert_int_equal(btk_inline_next(&it, &r), 0);
	assert_int_equal(it.at, b.n);
	assert_int_equal(btk_inline_next(&it, &r), 0); /* stays at the end */
}

static void test_tree_block_with_info(void **state)
{
	struct btk_key k = {1 << 22, BTRFS_EXTENT_ITEM_KEY, 16384};
	struct buf b = {0};
	struct btk_extent_head h;
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	(void)state;

	head(&b, 2, 9, BTRFS_EXTENT_FLAG_TREE_BLOCK | BTRFS_BLOCK_FLAG_FULL_BACKREF);
	put64(&b, 256); /* tree_block_info key */
	put8(&b, BTRFS_INODE_ITEM_KEY);
	put64(&b, 0);
	put8(&b, 1); /* level */
	put8(&b, BTRFS_TREE_BLOCK_REF_KEY);
	put64(&b, 5);
	put8(&b, BTRFS_SHARED_BLOCK_REF_KEY);
	put64(&b, 1 << 23);

	assert_int_equal(btk_extent_head_parse(&k, b.d, b.n, &h), 0);
	assert_true(h.has_info);
	assert_int_equal(h.info_key.objectid, 256);
	assert_int_equal(h.info_key.type, BTRFS_INODE_ITEM_KEY);
	assert_int_equal(h.info_key.offset, 0);
	assert_int_equal(h.level, 1);
	assert_int_equal(h.refs_at, 24 + 18);

	btk_inline_iter_init(&it, b.d, b.n, h.refs_at);
	assert_int_equal(btk_inline_next(&it, &r), 1);
	assert_int_equal(r.type, BTRFS_TREE_BLOCK_REF_KEY);
	assert_int_equal(r.root, 5);
	assert_int_equal(r.parent, 0);
	assert_int_equal(r.count, 0);
	assert_int_equal(btk_inline_next(&it, &r), 1);
	assert_int_equal(r.type, BTRFS_SHARED_BLOCK_REF_KEY);
	assert_int_equal(r.parent, 1 << 23);
	assert_int_equal(r.root, 0);
	assert_int_equal(btk_inline_next(&it, &r), 0);

	/* the info cut short: header fields kept, no refs */
	assert_int_equal(btk_extent_head_parse(&k, b.d, 24 + 17, &h), -ENODATA);
	assert_int_equal(h.refs, 2);
	assert_false(h.has_info);
	assert_int_equal(h.level, -1);
	assert_int_equal(h.refs_at, 24 + 17);
	/* shorter than the header */
	assert_int_equal(btk_extent_head_parse(&k, b.d, 23, &h), -EUCLEAN);
}

static void test_skinny_metadata(void **state)
{
	struct btk_key k = {1 << 22, BTRFS_METADATA_ITEM_KEY, 2};
	struct buf b = {0};
	struct btk_extent_head h;
	(void)state;

	head(&b, 1, 9, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	put8(&b, BTRFS_TREE_BLOCK_REF_KEY);
	put64(&b, 2);
	assert_int_equal(btk_extent_head_parse(&k, b.d, b.n, &h), 0);
	assert_true(h.skinny);
	assert_false(h.has_info);
	assert_int_equal(h.level, 2);
	assert_int_equal(h.refs_at, 24);
	k.offset = 200; /* a crafted level is clamped */
	assert_int_equal(btk_extent_head_parse(&k, b.d, b.n, &h), 0);
	assert_int_equal(h.level, BTK_MAX_LEVEL);
}

static void test_truncated_and_unknown(void **state)
{
	struct buf b = {0};
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	(void)state;

	head(&b, 1, 1, BTRFS_EXTENT_FLAG_DATA);
	put8(&b, BTRFS_TREE_BLOCK_REF_KEY);
	put64(&b, 5);
	put8(&b, BTRFS_EXTENT_DATA_REF_KEY);
	put64(&b, 5);
	put64(&b, 257);
	put64(&b, 0);
	put32(&b, 1);

	/* every cut inside the data ref overruns; the ref before it is still given */
	for (uint32_t cut = 34; cut < b.n; cut++) {
		btk_inline_iter_init(&it, b.d, cut, 24);
		assert_int_equal(btk_inline_next(&it, &r), 1);
		assert_int_equal(btk_inline_next(&it, &r), -EUCLEAN);
		assert_int_equal(it.at, 33);
		assert_int_equal(it.len, 29);
		assert_int_equal(btk_inline_next(&it, &r), -EUCLEAN); /* stays on it */
	}
	/* a cut inside the first ref */
	btk_inline_iter_init(&it, b.d, 30, 24);
	assert_int_equal(btk_inline_next(&it, &r), -EUCLEAN);
	assert_int_equal(it.at, 24);

	/* unknown types, including the obsolete v0 ref and a key type that is no ref */
	const uint8_t bad[] = {0, 1, BTRFS_EXTENT_REF_V0_KEY, BTRFS_EXTENT_ITEM_KEY, 171, 255};
	for (size_t i = 0; i < sizeof(bad); i++) {
		b.d[33] = bad[i];
		btk_inline_iter_init(&it, b.d, b.n, 24);
		assert_int_equal(btk_inline_next(&it, &r), 1);
		assert_int_equal(btk_inline_next(&it, &r), -ENOENT);
		assert_int_equal(it.at, 33);
		assert_int_equal(it.len, 0);
		assert_int_equal(btk_inline_ref_size(bad[i]), 0);
	}
}

static void test_keyed(void **state)
{
	struct btk_extent_ref r;
	struct btk_key k = {1 << 20, BTRFS_TREE_BLOCK_REF_KEY, 5};
	struct buf b = {0};
	(void)state;

	assert_int_equal(btk_keyed_ref_parse(&k, NULL, 0, &r), 0);
	assert_int_equal(r.root, 5);
	assert_false(r.inline_ref);
	k.type = BTRFS_SHARED_BLOCK_REF_KEY;
	assert_int_equal(btk_keyed_ref_parse(&k, NULL, 0, &r), 0);
	assert_int_equal(r.parent, 5);
	assert_int_equal(r.root, 0);

	put64(&b, 5);
	put64(&b, 258);
	put64(&b, 4096);
	put32(&b, 4);
	k.type = BTRFS_EXTENT_DATA_REF_KEY;
	k.offset = 0x1234; /* a hash: not read */
	assert_int_equal(btk_keyed_ref_size(k.type), 28);
	assert_int_equal(btk_keyed_ref_parse(&k, b.d, b.n, &r), 0);
	assert_int_equal(r.root, 5);
	assert_int_equal(r.objectid, 258);
	assert_int_equal(r.offset, 4096);
	assert_int_equal(r.count, 4);
	assert_int_equal(btk_keyed_ref_parse(&k, b.d, b.n - 1, &r), -EUCLEAN);

	k.type = BTRFS_SHARED_DATA_REF_KEY;
	k.offset = 1 << 23;
	assert_int_equal(btk_keyed_ref_size(k.type), 4);
	assert_int_equal(btk_keyed_ref_parse(&k, b.d + 24, 4, &r), 0);
	assert_int_equal(r.parent, 1 << 23);
	assert_int_equal(r.count, 4);
	assert_int_equal(btk_keyed_ref_parse(&k, b.d + 24, 3, &r), -EUCLEAN);

	k.type = BTRFS_EXTENT_ITEM_KEY;
	assert_int_equal(btk_keyed_ref_parse(&k, b.d, b.n, &r), 1);
	k.type = BTRFS_EXTENT_OWNER_REF_KEY; /* only ever inline */
	assert_int_equal(btk_keyed_ref_parse(&k, b.d, b.n, &r), 1);
}

/* The writer puts each field where the reader (checked above by hand) finds it. */
static void test_write_reads_back(void **state)
{
	const struct btk_extent_ref in[] = {
	    {.type = BTRFS_EXTENT_OWNER_REF_KEY, .root = 256},
	    {.type = BTRFS_TREE_BLOCK_REF_KEY, .root = 5},
	    {.type = BTRFS_EXTENT_DATA_REF_KEY, .root = 5, .objectid = 9, .offset = 3, .count = 7},
	    {.type = BTRFS_SHARED_BLOCK_REF_KEY, .parent = 1 << 24},
	    {.type = BTRFS_SHARED_DATA_REF_KEY, .parent = 1 << 25, .count = 11},
	};
	uint8_t d[5 * BTK_INLINE_REF_MAX];
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	uint32_t n = 0;
	(void)state;

	for (size_t i = 0; i < 5; i++) {
		uint32_t len = btk_inline_ref_write(d + n, &in[i]);
		assert_int_equal(len, btk_inline_ref_size(in[i].type));
		n += len;
	}
	assert_int_equal(n, 9 + 9 + 29 + 9 + 13);
	btk_inline_iter_init(&it, d, n, 0);
	for (size_t i = 0; i < 5; i++) {
		struct btk_extent_ref want = in[i];
		want.inline_ref = true;
		assert_int_equal(btk_inline_next(&it, &r), 1);
		assert_memory_equal(&r, &want, sizeof(r));
	}
	assert_int_equal(btk_inline_next(&it, &r), 0);

	/* count fields, inline (type byte included) and keyed */
	assert_int_equal(btk_le32(d + 18 + btk_ref_count_offset(BTRFS_EXTENT_DATA_REF_KEY, false)),
			 7);
	assert_int_equal(btk_le32(d + 56 + btk_ref_count_offset(BTRFS_SHARED_DATA_REF_KEY, false)),
			 11);
	assert_int_equal(btk_ref_count_offset(BTRFS_EXTENT_DATA_REF_KEY, true), 24);
	assert_int_equal(btk_ref_count_offset(BTRFS_SHARED_DATA_REF_KEY, true), 0);
	assert_int_equal(btk_ref_count_offset(BTRFS_TREE_BLOCK_REF_KEY, false), -1);

	struct btk_extent_ref unknown = {.type = 1};
	assert_int_equal(btk_inline_ref_write(d, &unknown), 0);
}

/* The header writer against the hand-built layout and the reader. */
static void test_head_write(void **state)
{
	struct btk_extent_head h = {.refs = 3,
				    .generation = 8,
				    .flags = BTRFS_EXTENT_FLAG_TREE_BLOCK,
				    .has_info = true,
				    .info_key = {256, BTRFS_DIR_ITEM_KEY, 77},
				    .level = 1},
			       back;
	struct btk_key k = {1 << 22, BTRFS_EXTENT_ITEM_KEY, 16384};
	struct buf want = {0};
	uint8_t d[64];
	(void)state;

	head(&want, 3, 8, BTRFS_EXTENT_FLAG_TREE_BLOCK);
	put64(&want, 256);
	put8(&want, BTRFS_DIR_ITEM_KEY);
	put64(&want, 77);
	put8(&want, 1);
	memset(d, 0xee, sizeof(d));
	assert_int_equal(btk_extent_head_write(d, &h), want.n);
	assert_memory_equal(d, want.d, want.n);
	assert_int_equal(d[want.n], 0xee); /* nothing past it */
	assert_int_equal(btk_extent_head_parse(&k, d, want.n, &back), 0);
	assert_int_equal(back.refs_at, want.n);
	assert_int_equal(back.info_key.offset, 77);

	h.has_info = false;
	h.flags = BTRFS_EXTENT_FLAG_DATA;
	assert_int_equal(btk_extent_head_write(d, &h), 24);
	assert_int_equal(btk_le64(d + 16), BTRFS_EXTENT_FLAG_DATA);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_data_extent_all_data_refs),
	    cmocka_unit_test(test_tree_block_with_info),
	    cmocka_unit_test(test_skinny_metadata),
	    cmocka_unit_test(test_truncated_and_unknown),
	    cmocka_unit_test(test_keyed),
	    cmocka_unit_test(test_write_reads_back),
	    cmocka_unit_test(test_head_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
