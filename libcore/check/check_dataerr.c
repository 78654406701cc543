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

/* Mirrors other than `bad` whose sector at logical verifies: "mirror 2", "none". */
static const char *good_mirrors(struct chk *c, const struct btk_phys *ph, int n, int bad,
				uint64_t off, const uint8_t *want)
{
	char list[64] = "";
	size_t used = 0;
	uint8_t *sec = malloc(c->fs->sectorsize);

	if (!sec)
		return "unknown";
	for (int j = 0; j < n; j++) {
		uint8_t out[BTK_CSUM_MAX];
		if (j == bad || !ph[j].dev ||
		    btk_dev_read(ph[j].dev, sec, c->fs->sectorsize, ph[j].physical + off))
			continue;
		btk_csum(c->fs->csum_type, sec, c->fs->sectorsize, out);
		if (memcmp(out, want, (size_t)c->fs->csum_size))
			continue;
		int k = snprintf(list + used, sizeof(list) - used, "%s%d", used ? ", " : "", j + 1);
		if (k > 0 && (size_t)k < sizeof(list) - used)
			used += (size_t)k;
	}
	free(sec);
	return used ? chk_fmt("good copy on mirror %s", list) : "no good copy";
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
		snprintf(out, len, "no owner found");
		btk_owner_release(&o);
		return;
	}
	for (size_t i = 0; i < o.ndata && i < MAX_OWNERS; i++) {
		const struct btk_data_owner *d = &o.data[i];
		struct btk_root root;
		char *sv = NULL, path[256] = "?";
		struct path_acc a = {path, sizeof(path), 0, 0};
		btk_subvol_path(c->fs, d->root, &sv);
		if (!btk_backref_root(c->br, d->root, &root)) {
			path[0] = 0;
			btk_inode_paths(c->fs, &root, d->inode, add_path, &a);
			if (!a.paths)
				snprintf(path, sizeof(path), "(inode %llu, no name)",
					 (unsigned long long)d->inode);
		}
		int k = snprintf(out + used, len - used,
				 "%ssubvolume %s (root %llu) path %s offset %llu", i ? "; " : "",
				 sv ? sv : "?", (unsigned long long)d->root, path,
				 (unsigned long long)d->offset);
		free(sv);
		if (k < 0 || (size_t)k >= len - used)
			break;
		used += (size_t)k;
	}
	if (o.ndata > MAX_OWNERS && used < len)
		snprintf(out + used, len - used, "; and %zu more", o.ndata - MAX_OWNERS);
	btk_owner_release(&o);
}

void chk_data_mismatch(struct chk *c, uint64_t logical, const struct btk_phys *ph, int n,
		       int mirror, uint64_t off, const uint8_t *want, const uint8_t *found)
{
	char exp[2 + 2 * BTK_CSUM_MAX + 1], got[2 + 2 * BTK_CSUM_MAX + 1], who[400];

	csum_hex(want, c->fs->csum_size, exp);
	csum_hex(found, c->fs->csum_size, got);
	if (c->opts->report && (!c->opts->max_reports || c->reported < c->opts->max_reports))
		owners(c, logical + off, who, sizeof(who));
	else
		who[0] = 0; /* counted only: spare the reads */
	chk_report(c, BTK_P_DATA_MISMATCH, BTRFS_CSUM_TREE_OBJECTID, logical + off, NULL,
		   chk_fmt("csum %s", exp), chk_fmt("csum %s", got),
		   "mirror %d bytenr %llu csum %s expected csum %s (mirror %d of %d: devid %llu "
		   "physical %llu); %s; %s",
		   mirror + 1, (unsigned long long)(logical + off), got, exp, mirror + 1, n,
		   (unsigned long long)ph[mirror].devid,
		   (unsigned long long)(ph[mirror].physical + off),
		   good_mirrors(c, ph, n, mirror, off, want), who);
}
