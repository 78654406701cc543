/* check_dataerr.c — a data block whose checksum does not match, said so that it can be acted
 * on and matched with btrfs check's output: which mirror (1..N, chunk stripe order, as btrfs
 * numbers them), where it lies (devid, physical), both checksums as btrfs check prints them
 * (0x and the bytes in disk order), whether another mirror holds a good copy, and the files
 * that own the block (subvolume path, path in it, file offset) found through back
 * references. Rare by nature: each mismatch may read the other mirrors and walk references.
 */
#include "check/check_priv.h"
#include "backref/backref.h"
#include "base/csum.h"
#include "base/error.h"
#include "fs/fs_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OWNERS 3

static void csum_hex(const uint8_t *sum, int size, char *out)
{
	out += sprintf(out, "0x");
	for (int i = 0; i < size; i++)
		out += sprintf(out, "%02x", sum[i]);
}

/* Mirrors other than `bad` whose sector at logical verifies, said in out[len]: "good copy on
 * mirror 2", "no good copy". */
static const char *good_mirrors(struct chk *c, const struct btk_phys *ph, int n, int bad,
				uint64_t off, const uint8_t *want, char *out, size_t len)
{
	char list[64] = "", item[32];
	size_t used = 0;
	uint8_t *sec = malloc(c->fs->sectorsize);

	if (!sec) {
		chk_part(out, len, CHK_PART_GOOD_UNKNOWN);
		return out;
	}
	for (int j = 0; j < n; j++) {
		uint8_t out[BTK_CSUM_MAX];
		if (j == bad || !ph[j].dev ||
		    btk_dev_read(ph[j].dev, sec, c->fs->sectorsize, ph[j].physical + off))
			continue;
		btk_csum(c->fs->csum_type, sec, c->fs->sectorsize, out);
		if (memcmp(out, want, (size_t)c->fs->csum_size))
			continue;
		size_t k = used ? chk_part(item, sizeof(item), CHK_PART_LIST_SEP) : 0;
		k += chk_part(item + k, sizeof(item) - k, CHK_PART_MIRROR, CHK_I(j + 1));
		if (k < sizeof(list) - used) {
			memcpy(list + used, item, k + 1);
			used += k;
		}
	}
	free(sec);
	if (used)
		chk_part(out, len, CHK_PART_GOOD_MIRRORS, CHK_S(list));
	else
		chk_part(out, len, CHK_PART_NO_GOOD_COPY);
	return out;
}

struct path_acc {
	char *buf;
	size_t len, used;
	int paths;
};

static int add_path(void *ctx, const char *path)
{
	struct path_acc *a = ctx;

	if (a->paths++)
		return 1; /* the first name is enough: the inode is what matters */
	int k = snprintf(a->buf + a->used, a->len - a->used, "%s", *path ? path : "/");
	if (k > 0 && (size_t)k < a->len - a->used)
		a->used += (size_t)k;
	return 1;
}

/* "subvolume /snap (root 257) path /a/b offset 4096; ..." or "no owner found". */
static void owners(struct chk *c, uint64_t logical, char *out, size_t len)
{
	struct btk_owner o;
	size_t used = 0;

	out[0] = 0;
	if (!c->br && btk_backref_new(c->fs, &c->br))
		return;
	memset(&o, 0, sizeof(o));
	if (btk_owner_lookup(c->br, logical, &o) || !o.ndata) {
		chk_part(out, len, CHK_PART_NO_OWNER);
		btk_owner_release(&o);
		return;
	}
	for (size_t i = 0; i < o.ndata && i < MAX_OWNERS; i++) {
		const struct btk_data_owner *d = &o.data[i];
		struct btk_root root;
		char *sv = NULL, path[256], item[CHK_TEXT_MAX];
		struct path_acc a = {path, sizeof(path), 0, 0};
		chk_part(path, sizeof(path), CHK_PART_UNKNOWN);
		btk_subvol_path(c->fs, d->root, &sv);
		if (!btk_backref_root(c->br, d->root, &root)) {
			path[0] = 0;
			btk_inode_paths(c->fs, &root, d->inode, add_path, &a);
			if (!a.paths)
				chk_part(path, sizeof(path), CHK_PART_NO_NAME, CHK_U(d->inode));
		}
		/* an owner is said whole or not at all */
		size_t k = i ? chk_part(item, sizeof(item), CHK_PART_OWNER_SEP) : 0;
		k += chk_part(item + k, sizeof(item) - k, CHK_PART_OWNER,
			      CHK_S(sv ? sv : chk_part_text(CHK_PART_UNKNOWN)), CHK_U(d->root),
			      CHK_S(path), CHK_U(d->offset));
		free(sv);
		if (k >= len - used)
			break;
		memcpy(out + used, item, k + 1);
		used += k;
	}
	if (o.ndata > MAX_OWNERS && used < len)
		chk_part(out + used, len - used, CHK_PART_OWNERS_MORE, CHK_U(o.ndata - MAX_OWNERS));
	btk_owner_release(&o);
}

void chk_data_mismatch_run(struct chk *c, uint64_t ext, uint64_t ext_len, uint64_t count,
			   uint64_t logical, const struct btk_phys *ph, int n, int mirror,
			   uint64_t off, const uint8_t *want, const uint8_t *found)
{
	char exp[2 + 2 * BTK_CSUM_MAX + 1], got[2 + 2 * BTK_CSUM_MAX + 1], who[400];
	char good[CHK_TEXT_MAX];
	uint64_t at = logical + off;

	csum_hex(want, c->fs->csum_size, exp);
	csum_hex(found, c->fs->csum_size, got);
	if (c->opts->report && (!c->opts->max_reports || c->reported < c->opts->max_reports))
		owners(c, at, who, sizeof(who));
	else
		who[0] = 0; /* counted only: spare the reads */
	good_mirrors(c, ph, n, mirror, off, want, good, sizeof(good));
	if (count == 1) /* one sector: said as btrfs check says it */
		chk_rep(c, CHK_M_DATA_MISMATCH, BTRFS_CSUM_TREE_OBJECTID, at, NULL,
			CHK_I(mirror + 1), CHK_U(at), CHK_S(got), CHK_S(exp), CHK_I(n),
			CHK_U(ph[mirror].devid), CHK_U((ph[mirror].physical + off)), CHK_S(good),
			CHK_S(who));
	else
		chk_rep(c, CHK_M_DATA_MISMATCH_RUN, BTRFS_CSUM_TREE_OBJECTID, at, NULL,
			CHK_I(mirror + 1), CHK_U(count), CHK_U(ext), CHK_U(ext_len), CHK_U(at),
			CHK_I(n), CHK_U(ph[mirror].devid), CHK_U((ph[mirror].physical + off)),
			CHK_S(good), CHK_S(who), CHK_S(exp), CHK_S(got));
	if (count > 1)
		chk_count_more(c, CHK_M_DATA_MISMATCH_RUN, count - 1);
}

void chk_data_mismatch(struct chk *c, uint64_t logical, const struct btk_phys *ph, int n,
		       int mirror, uint64_t off, const uint8_t *want, const uint8_t *found)
{
	chk_data_mismatch_run(c, logical, 0, 1, logical, ph, n, mirror, off, want, found);
}
