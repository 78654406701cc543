/* tree.c — `btk-debug tree`: every tree block and item decoded, as dump-tree text or JSON
 * Lines (one object per leaf item or node pointer). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "debug.h"
#include "cli/cli.h"
#include "base/error.h"
#include "tree/tree.h"
#include "volumes/super.h"

#define MAX_LOG_ROOTS 4096

struct tctx {
	struct btk_fs *fs;
	const char *dev; /* for messages */
	bool json;
	struct render r;
	struct btk_sink s;
	struct btk_decode_env env;
	uint64_t tree; /* objectid of the tree being dumped */
	int errors;
	int bad_items;	    /* items whose decode reported an error field */
	uint64_t bad_block; /* the first of them */
	int bad_slot;
	/* subvolume log trees found in the log root tree, walked after it */
	struct btk_root *logs;
	int nlogs;
};

int debug_open(const char *const *devs, int n, struct btk_fs **fs)
{
	struct btk_open_opts o = {.super_mirror = -1};
	int ret;

	if (cli_dev_where(&o.dev) || cli_root_opts(&o))
		return -EINVAL;
	ret = btk_fs_open(devs, n, &o, fs);
	if (!ret)
		cli_root_note((*fs)->generation, btk_le64((*fs)->sb.root));
	if (ret) {
		const char *m = btk_errmsg();

		/* name the device when libcore's message does not */
		if (m[0] && strstr(m, devs[0]))
			cli_err("%s", m);
		else if (m[0])
			cli_err("%s: %s", devs[0], m);
		else
			cli_err("%s: cannot open: %s", devs[0], strerror(-ret));
	}
	return ret;
}

static void json_head(struct tctx *t, const struct btk_block *b, int slot, const struct btk_key *k)
{
	/* once per item: no printf */
	fputs_unlocked("{\"tree\":", stdout);
	put_u64(stdout, t->tree);
	fputs_unlocked(",\"block\":", stdout);
	put_u64(stdout, b->bytenr);
	fputs_unlocked(",\"level\":", stdout);
	put_u64(stdout, (uint64_t)btk_block_level(b));
	fputs_unlocked(",\"slot\":", stdout);
	put_u64(stdout, (uint64_t)slot);
	fputs_unlocked(",\"key\":", stdout);
	json_key(stdout, k);
}

static void text_header(const struct btk_block *b, uint32_t nodesize)
{
	const struct btk_header *h = btk_hdr(b);
	uint32_t nr = btk_block_nritems(b);
	uint64_t flags = btk_block_flags(b);
	uint64_t low = flags & (BTK_HEADER_FLAG_WRITTEN | BTK_HEADER_FLAG_RELOC);
	int space = btk_block_free_space(b, nodesize);
	char ob[32], u1[CLI_UUID_STR], u2[CLI_UUID_STR];
	const char *kind = btk_block_level(b) ? "node" : "leaf";

	if (btk_block_level(b)) {
		printf("node %" PRIu64 " level %d items %u free space %u generation %" PRIu64
		       " owner %s\n",
		       b->bytenr, btk_block_level(b), nr, (unsigned)space, btk_block_generation(b),
		       btk_objectid_str(btk_block_owner(b), 0, ob, sizeof(ob)));
	} else {
		printf("leaf %" PRIu64 " items %u free space %d generation %" PRIu64 " owner %s\n",
		       b->bytenr, nr, space, btk_block_generation(b),
		       btk_objectid_str(btk_block_owner(b), 0, ob, sizeof(ob)));
	}
	printf("%s %" PRIu64 " flags 0x%" PRIx64 "(%s%s%s) backref revision %d\n", kind, b->bytenr,
	       low, (low & BTK_HEADER_FLAG_WRITTEN) ? "WRITTEN" : "",
	       low == (BTK_HEADER_FLAG_WRITTEN | BTK_HEADER_FLAG_RELOC) ? "|" : "",
	       (low & BTK_HEADER_FLAG_RELOC) ? "RELOC" : "", (int)(flags >> BTK_BACKREF_REV_SHIFT));
	cli_uuid_format(h->fsid, u1);
	cli_uuid_format(h->chunk_tree_uuid, u2);
	printf("fs uuid %s\nchunk uuid %s\n", u1, u2);
}

static void dump_node(struct tctx *t, const struct btk_block *b)
{
	uint32_t nr = btk_block_nritems(b);
	struct btk_key k;
	char kb[96];

	for (uint32_t i = 0; i < nr; i++) {
		btk_node_key(b, (int)i, &k);
		if (t->json) {
			json_head(t, b, (int)i, &k);
			fputs_unlocked(",\"data\":{\"blockptr\":", stdout);
			put_u64(stdout, btk_node_blockptr(b, (int)i));
			fputs_unlocked(",\"generation\":", stdout);
			put_u64(stdout, btk_node_gen(b, (int)i));
			fputs_unlocked("}}\n", stdout);
		} else {
			printf("\tkey %s block %" PRIu64 " gen %" PRIu64 "\n",
			       btk_key_format(&k, kb, sizeof(kb)), btk_node_blockptr(b, (int)i),
			       btk_node_gen(b, (int)i));
		}
	}
}

/* Remembers a subvolume log tree listed in the log root tree. */
static void note_log_root(struct tctx *t, const struct btk_key *k, const uint8_t *p, uint32_t size)
{
	struct btk_root *r;

	if (k->type != BTRFS_ROOT_ITEM_KEY || t->nlogs >= MAX_LOG_ROOTS)
		return;
	if (!t->logs && !(t->logs = calloc(MAX_LOG_ROOTS, sizeof(*t->logs))))
		return;
	r = &t->logs[t->nlogs];
	if (btk_root_from_item(BTRFS_TREE_LOG_OBJECTID, k->offset, p, size, r) == 0)
		t->nlogs++;
}

static void dump_item(struct tctx *t, const struct btk_block *b, int slot)
{
	struct btk_key k;
	uint32_t size = btk_leaf_size(b, slot);
	const uint8_t *p = btk_leaf_data(b, slot);
	int ret;

	btk_leaf_key(b, slot, &k);
	if (t->tree == BTRFS_TREE_LOG_OBJECTID && k.objectid == BTRFS_TREE_LOG_OBJECTID &&
	    btk_block_owner(b) == BTRFS_TREE_LOG_OBJECTID && t->logs != (void *)-1)
		note_log_root(t, &k, p, size);
	render_reset(&t->r);
	if (t->json) {
		json_head(t, b, slot, &k);
		fputs_unlocked(",\"size\":", stdout);
		put_u64(stdout, size);
		fputs_unlocked(",\"data\":{", stdout);
		ret = btk_decode_item(&t->env, &k, p, size, &t->s);
		fputs("}}\n", stdout);
	} else {
		fputs_unlocked("\titem ", stdout);
		put_u64(stdout, (uint64_t)slot);
		fputs_unlocked(" key ", stdout);
		text_key(stdout, &k);
		fputs_unlocked(" itemoff ", stdout);
		put_u64(stdout, btk_leaf_offset(b, slot));
		fputs_unlocked(" itemsize ", stdout);
		put_u64(stdout, size);
		putc_unlocked('\n', stdout);
		ret = btk_decode_item(&t->env, &k, p, size, &t->s);
		render_finish(&t->r);
	}
	if (ret && !t->bad_items++) {
		t->bad_block = b->bytenr;
		t->bad_slot = slot;
	}
}

static void dump_block(struct tctx *t, const struct btk_block *b)
{
	if (!t->json)
		text_header(b, t->fs->nodesize);
	if (btk_block_level(b)) {
		dump_node(t, b);
		return;
	}
	for (uint32_t i = 0; i < btk_block_nritems(b); i++)
		dump_item(t, b, (int)i);
}

static int walk_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	(void)fs;
	(void)depth;
	dump_block(ctx, b);
	return 0;
}

static int walk_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct tctx *t = ctx;
	char ob[32];

	fflush(stdout);
	cli_err("%s: tree %s: block %" PRIu64 " (level %d): %s", t->dev,
		btk_objectid_str(t->tree, 0, ob, sizeof(ob)), bytenr, level,
		msg && msg[0] ? msg : strerror(-err));
	t->errors++;
	return 0; /* go on with the rest of the tree */
}

static int walk_root(struct tctx *t, const struct btk_root *r)
{
	struct btk_walk_ops ops = {.block = walk_block, .on_error = walk_error};
	struct btk_key k = {r->objectid, BTRFS_ROOT_ITEM_KEY, r->key_offset};
	char kb[96];
	int ret;

	t->tree = r->objectid;
	if (!t->json) {
		if (r->objectid == BTRFS_ROOT_TREE_OBJECTID ||
		    r->objectid == BTRFS_CHUNK_TREE_OBJECTID)
			printf("%s\n", btk_tree_title(r->objectid));
		else if (r->objectid == BTRFS_TREE_LOG_OBJECTID && t->logs != (void *)-1)
			printf("log root tree\n"); /* the superblock's, listing subvolume logs */
		else
			printf("%s key %s \n", btk_tree_title(r->objectid),
			       btk_key_format(&k, kb, sizeof(kb)));
	}
	ret = btk_tree_walk(t->fs, r, &ops, t);
	if (ret < 0) {
		walk_error(t, r->bytenr, r->level, ret, btk_errmsg());
		return ret == -ENOMEM ? ret : 0;
	}
	return 0;
}

static int each_root(void *ctx, const struct btk_root *r)
{
	struct tctx *t = ctx;
	int ret = walk_root(t, r);

	/* The log root tree lists one log tree per subvolume that had fsyncs. */
	if (!ret && r->objectid == BTRFS_TREE_LOG_OBJECTID && t->logs) {
		int n = t->nlogs;
		struct btk_root *logs = t->logs;

		t->logs = (void *)-1; /* do not collect from the subvolume logs */
		for (int i = 0; i < n && !ret; i++)
			ret = walk_root(t, &logs[i]);
		free(logs);
		t->logs = NULL;
		t->nlogs = 0;
	}
	return ret;
}

static int dump_one_block(struct tctx *t, const char *block, const char *tree)
{
	struct btk_block_check chk = {.level = -1};
	struct btk_block *b;
	char *end;
	uint64_t bytenr;

	errno = 0;
	bytenr = strtoull(block, &end, 0);
	if (errno || !*block || *end) {
		cli_err("invalid block number '%s'", block);
		return CLI_EXIT_USAGE;
	}
	if (btk_block_read(t->fs, bytenr, &chk, &b)) {
		cli_err("%s: %s", t->dev, btk_errmsg()); /* it names the block */
		return CLI_EXIT_ERROR;
	}
	t->tree = btk_block_owner(b);
	if (tree && btk_tree_id_parse(tree, &t->tree)) {
		btk_block_put(b);
		cli_err("unknown tree '%s'", tree);
		return CLI_EXIT_USAGE;
	}
	dump_block(t, b);
	btk_block_put(b);
	return 0;
}

static int dump_tree(struct tctx *t, const char *tree, const char *block)
{
	struct btk_root r;
	uint64_t id;
	int ret;

	if (block)
		return dump_one_block(t, block, tree);
	if (tree) {
		if (btk_tree_id_parse(tree, &id)) {
			cli_err("unknown tree '%s'", tree);
			return CLI_EXIT_USAGE;
		}
		ret = btk_root_find(t->fs, id, &r);
		if (ret) {
			cli_err("%s: tree %s: %s", t->dev, tree,
				ret == -ENOENT ? "no such tree" : btk_errmsg());
			return CLI_EXIT_ERROR;
		}
		ret = each_root(t, &r);
	} else {
		ret = btk_for_each_root(t->fs, each_root, t);
	}
	if (ret) {
		fflush(stdout);
		cli_err("%s: cannot list the trees: %s", t->dev, btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if (t->bad_items) {
		fflush(stdout);
		cli_err("%s: %d malformed item(s), the first at block %" PRIu64 " slot %d "
			"(see its \"error\" field)",
			t->dev, t->bad_items, t->bad_block, t->bad_slot);
	}
	return t->errors || t->bad_items ? 1 : 0;
}

/* dump-tree ends a full dump with these. */
static void footer(const struct btk_fs *fs)
{
	char u[CLI_UUID_STR];

	cli_uuid_format(fs->fsid, u);
	printf("total bytes %" PRIu64 "\nbytes used %" PRIu64 "\nuuid %s\n",
	       btk_super_total_bytes(&fs->sb), btk_super_bytes_used(&fs->sb), u);
}

int cmd_tree(const char *const *devs, int n, const char *tree, const char *block, bool json)
{
	static char obuf[1 << 16];
	struct tctx t = {.dev = devs[0], .json = json};
	int ret;

	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if (debug_open(devs, n, &t.fs))
		return CLI_EXIT_ERROR;
	render_init(&t.r, &t.s, stdout, json);
	t.env.sectorsize = t.fs->sectorsize;
	t.env.csum_size = t.fs->csum_size;
	ret = dump_tree(&t, tree, block);
	if (!json && !tree && !block && ret != 2)
		footer(t.fs);
	if (cli_stdout_check())
		ret = 1;
	btk_fs_close(t.fs);
	return ret;
}
