/* super.c (layer 10) — superblock copies rewritten from the best one that opens (rescue.h).
 *
 * The source is the newest valid copy that opens the filesystem (its system chunk array
 * parses, the chunk tree and the root tree read); when the newest does not (a fuzzed
 * stripe length in the primary's sys_chunk_array, with a good checksum), each copy is tried
 * in turn. Every present copy on every device that differs from the source (its own device
 * item, its own bytenr, a fresh checksum) is overwritten; a copy equal to it is never
 * written, so a write cut short leaves the source and a bad copy: the next run heals again.
 * When no copy opens but every copy (one device) is valid and the same, nothing is wrong with
 * them: a tree block they all name does not read (heal sets a flipped bit right), and nothing
 * is written.
 */
#include "repair/rescue.h"
#include "base/error.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/super.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens read-only from copy `mirror` (-1 newest valid) and reads the root tree's top block:
 * 0 with *out, or the error (why[] says it). */
static int try_open(const char *const *paths, int n, const struct btk_open_opts *oo, int mirror,
		    struct btk_fs **out)
{
	struct btk_open_opts o = *oo;
	struct btk_block_check chk = {.level = -1};
	struct btk_block *b;
	int ret;

	o.write = false;
	o.super_mirror = mirror;
	o.backup = 0;
	o.tree_root = o.chunk_root = 0;
	o.chunk_damage = false;
	o.sys_array_scan = false; /* a copy whose array does not parse does not open */
	if ((ret = btk_fs_open(paths, n, &o, out)))
		return ret;
	chk.level = (*out)->sb.root_level;
	chk.generation = btk_le64((*out)->sb.generation);
	if ((ret = btk_block_read(*out, btk_le64((*out)->sb.root), &chk, &b))) {
		btk_fs_close(*out);
		*out = NULL;
		return ret;
	}
	btk_block_put(b);
	return 0;
}

/* The chunk tree's device item of devid into sb's copy; 0 or -ENOENT. */
static int dev_item_from_chunk_tree(struct btk_fs *fs, uint64_t devid, struct btk_super *sb)
{
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid};
	int ret = btk_root_find(fs, BTRFS_CHUNK_TREE_OBJECTID, &r);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &r, &k, &p);
	if (!ret) {
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		if (size >= sizeof(sb->dev_item))
			memcpy(sb->dev_item, d, sizeof(sb->dev_item));
		else
			ret = 1;
	}
	btk_path_release(&p);
	if (ret > 0)
		ret = btk_err(ENOENT, "devid %llu: no device item in the chunk tree",
			      (unsigned long long)devid);
	return ret;
}

/* The first byte where two superblocks differ past their checksums, or -1. */
static long first_diff(const struct btk_super *a, const struct btk_super *b)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;

	for (size_t i = sizeof(a->csum); i < sizeof(*a); i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

/* Every copy of device d, compared with ref (the device's own superblock). */
static int heal_dev(struct btk_fs_dev *d, const struct btk_super *ref,
		    const struct btk_super_copy *copies, int from, const struct btk_super_opts *so,
		    struct btk_super_result *res)
{
	struct btk_super *exp = malloc(sizeof(*exp));
	int ret = 0;

	if (!exp)
		return btk_err(ENOMEM, "out of memory");
	for (int m = 0; m < BTK_SUPER_MIRRORS && !ret; m++) {
		const struct btk_super_copy *c = &copies[m];
		if (!c->present)
			continue;
		res->copies++;
		*exp = *ref;
		btk_put64(exp->bytenr, c->offset);
		btk_super_csum_fill(exp);
		if (!memcmp(exp, &c->sb, sizeof(*exp)))
			continue;
		struct btk_super_event e = {.devid = d->devid,
					    .path = d->dev->path,
					    .mirror = m,
					    .offset = c->offset,
					    .from_mirror = from,
					    .generation = btk_le64(ref->generation)};
		long at = first_diff(exp, &c->sb);
		if (!c->valid)
			snprintf(e.why, sizeof(e.why), "not valid: %s", c->why);
		else if (btk_le64(c->sb.generation) != btk_le64(ref->generation))
			snprintf(e.why, sizeof(e.why), "stale: generation %llu",
				 (unsigned long long)btk_le64(c->sb.generation));
		else
			snprintf(e.why, sizeof(e.why), "differs from copy %d at byte %ld", from,
				 at);
		if ((ret = btk_dev_write(d->dev, exp, sizeof(*exp), c->offset)))
			break;
		res->rewritten++;
		if (so->on_event)
			so->on_event(so->ctx, &e);
	}
	free(exp);
	return ret;
}

int btk_super_heal(const char *const *paths, int n, const struct btk_open_opts *oo,
		   const struct btk_super_opts *so, struct btk_super_result *res)
{
	static const int order[] = {-1, 0, 1, 2};
	struct btk_fs *fs = NULL;
	struct btk_open_opts o = *oo;
	struct btk_super_copy *copies = malloc(BTK_SUPER_MIRRORS * sizeof(*copies));
	struct btk_super *ref = malloc(sizeof(*ref));
	char why[4][200];
	int ret = 0, chosen = -1;

	memset(res, 0, sizeof(*res));
	if (!copies || !ref) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		ret = try_open(paths, n, oo, order[i], &fs);
		snprintf(why[i], sizeof(why[i]), "%s", ret ? btk_errmsg() : "");
		if (!ret) {
			chosen = fs->devs[0].super_mirror;
			for (int d = 0; d < fs->ndevs; d++)
				if (fs->devs[d].dev && fs->devs[d].dev->path &&
				    !strcmp(fs->devs[d].dev->path, paths[0]))
					chosen = fs->devs[d].super_mirror;
			break;
		}
		if (ret == -ENOMEM)
			goto out;
	}
	btk_fs_close(fs);
	fs = NULL;
	if (chosen < 0) {
		/* each copy of the first device: why it does not serve */
		struct btk_dev_opts dopt = oo->dev;
		struct btk_dev *dev = NULL;
		char list[600] = "";
		int agree = 0;
		dopt.write = dopt.create = false;
		dopt.undo_path = NULL;
		if (!btk_dev_open_opts(paths[0], &dopt, &dev)) {
			btk_super_read_all(dev, copies);
			/* every copy valid and the same: what does not read is a tree block they
			 * all name (heal's to set right), not a superblock */
			for (int m = 0; m < BTK_SUPER_MIRRORS && agree >= 0; m++) {
				if (!copies[m].present)
					continue;
				*ref = copies[0].sb;
				btk_put64(ref->bytenr, copies[m].offset);
				btk_super_csum_fill(ref);
				agree = copies[m].valid && copies[0].valid &&
						!memcmp(ref, &copies[m].sb, sizeof(*ref))
					    ? agree + 1
					    : -1;
			}
			for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
				size_t l = strlen(list);
				snprintf(list + l, sizeof(list) - l, "%scopy %d: %.150s",
					 m ? "; " : "", m,
					 !copies[m].present ? "past the device end"
					 : !copies[m].valid ? copies[m].why
							    : why[m + 1]);
			}
			btk_dev_close(dev);
		}
		if (agree > 0 && n == 1) {
			res->copies = agree;
			res->source_mirror = 0;
			res->generation = btk_le64(copies[0].sb.generation);
			btk_err_clear();
			ret = 0;
			goto out;
		}
		ret = btk_err(EUCLEAN,
			      "no superblock copy opens the filesystem (%s): none to rewrite the "
			      "others from",
			      *list ? list : why[0]);
		goto out;
	}
	res->source_mirror = chosen;
	o.write = true;
	o.super_mirror = chosen;
	if ((ret = btk_fs_open(paths, n, &o, &fs)))
		goto out;
	res->generation = btk_le64(fs->sb.generation);
	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		if (!d->dev)
			continue;
		int best = btk_super_read_all(d->dev, copies);
		int from = d->super_mirror >= 0 ? d->super_mirror : chosen;
		if (best < 0 && best != -EUCLEAN && best != -ENOENT) {
			ret = best;
			break;
		}
		btk_err_clear();
		if (from < BTK_SUPER_MIRRORS && copies[from].valid &&
		    btk_le64(copies[from].sb.generation) == res->generation) {
			*ref = copies[from].sb;
		} else {
			/* the chosen superblock with this device's own item from the chunk tree */
			*ref = fs->sb;
			if ((ret = dev_item_from_chunk_tree(fs, d->devid, ref)))
				break;
			from = chosen;
		}
		ret = heal_dev(d, ref, copies, from, so, res);
	}
	for (int i = 0; i < fs->ndevs; i++) {
		int r = fs->devs[i].dev && fs->devs[i].dev->writable
			    ? btk_dev_flush(fs->devs[i].dev)
			    : 0;
		if (!ret)
			ret = r;
	}
out:
	btk_fs_close(fs);
	free(copies);
	free(ref);
	return ret;
}
