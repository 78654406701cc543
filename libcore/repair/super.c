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
#include "repair/repair_int.h"
#include "base/error.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/super.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options of a trial open from copy `mirror` (-1 newest valid), read-only, from what the
 * copy says alone. */
static struct btk_open_opts trial_opts(const struct btk_open_opts *oo, int mirror)
{
	struct btk_open_opts o = *oo;

	o.write = false;
	o.super_mirror = mirror;
	o.backup = 0;
	o.tree_root = o.chunk_root = 0;
	o.chunk_damage = false;
	o.sys_array_scan = false; /* a copy whose array does not parse does not open */
	return o;
}

/* Reads the root tree's top block of *out (closed on failure). */
static int root_reads(struct btk_fs **out)
{
	struct btk_block_check chk = {.level = -1};
	struct btk_block *b;
	int ret;

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

/* Opens read-only from copy `mirror` (-1 newest valid) and reads the root tree's top block:
 * 0 with *out, or the error (why[] says it). */
static int try_open(const char *const *paths, int n, const struct btk_open_opts *oo, int mirror,
		    struct btk_fs **out)
{
	struct btk_open_opts o = trial_opts(oo, mirror);
	int ret;

	if ((ret = btk_fs_open(paths, n, &o, out)))
		return ret;
	return root_reads(out);
}

/* The parts of a superblock one copy may lend another (its checksum and bytenr are made
 * afresh): each field, the system chunk array with its size, each backup root. */
#define SB_FIELD(f, name)                                                                          \
	{                                                                                          \
		offsetof(struct btk_super, f), sizeof(((struct btk_super *)0)->f), 0, 0, name      \
	}
static const struct sb_part {
	size_t off, len, off2, len2; /* a second range: the array's size goes with the array */
	const char *name;
} sb_parts[] = {
    SB_FIELD(flags, "flags"),
    SB_FIELD(generation, "generation"),
    SB_FIELD(root, "root"),
    SB_FIELD(chunk_root, "chunk root"),
    SB_FIELD(log_root, "log root"),
    SB_FIELD(log_root_transid, "log root transid"),
    SB_FIELD(total_bytes, "total bytes"),
    SB_FIELD(bytes_used, "bytes used"),
    SB_FIELD(root_dir_objectid, "root dir objectid"),
    SB_FIELD(num_devices, "number of devices"),
    SB_FIELD(sectorsize, "sector size"),
    SB_FIELD(nodesize, "node size"),
    SB_FIELD(leafsize, "leaf size"),
    SB_FIELD(stripesize, "stripe size"),
    {offsetof(struct btk_super, sys_chunk_array), BTK_SYS_ARRAY_SIZE,
     offsetof(struct btk_super, sys_chunk_array_size), 4, "system chunk array"},
    SB_FIELD(chunk_root_generation, "chunk root generation"),
    SB_FIELD(compat_flags, "compat flags"),
    SB_FIELD(compat_ro_flags, "compat_ro flags"),
    SB_FIELD(incompat_flags, "incompat flags"),
    SB_FIELD(csum_type, "checksum type"),
    SB_FIELD(root_level, "root level"),
    SB_FIELD(chunk_root_level, "chunk root level"),
    SB_FIELD(log_root_level, "log root level"),
    SB_FIELD(dev_item, "device item"),
    SB_FIELD(label, "label"),
    SB_FIELD(cache_generation, "cache generation"),
    SB_FIELD(uuid_tree_generation, "uuid tree generation"),
    SB_FIELD(metadata_uuid, "metadata uuid"),
    SB_FIELD(nr_global_roots, "global roots"),
    SB_FIELD(reserved, "reserved bytes"),
    SB_FIELD(super_roots[0], "backup root 0"),
    SB_FIELD(super_roots[1], "backup root 1"),
    SB_FIELD(super_roots[2], "backup root 2"),
    SB_FIELD(super_roots[3], "backup root 3"),
    SB_FIELD(padding, "padding"),
};
#define SB_NPARTS (sizeof(sb_parts) / sizeof(sb_parts[0]))
/* Copies that differ in more parts than this are not one superblock damaged twice. */
#define SB_MERGE_MAX_PARTS 12

static bool part_differs(const struct btk_super *a, const struct btk_super *b,
			 const struct sb_part *p)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;

	return memcmp(x + p->off, y + p->off, p->len) ||
	       (p->len2 && memcmp(x + p->off2, y + p->off2, p->len2));
}

/* Whether sb, written to every copy of dev (ncopies present), opens the filesystem. */
static bool merged_opens(struct btk_dev *dev, const struct btk_super *sb, int ncopies,
			 const struct btk_open_opts *oo, struct btk_super *slots)
{
	struct btk_open_opts o = trial_opts(oo, 0);
	struct btk_dev *ov;
	struct btk_fs *fs = NULL;

	o.no_scan = true;
	for (int m = 0; m < ncopies; m++) {
		slots[m] = *sb;
		btk_put64(slots[m].bytenr, btk_super_offset(m));
		btk_super_csum_fill(&slots[m]);
	}
	if (rp_super_overlay(dev, slots, ncopies, &ov))
		return false;
	bool ok = !btk_fs_open_devs(&ov, 1, &o, &fs) && !root_reads(&fs);
	btk_fs_close(fs);
	btk_err_clear();
	return ok;
}

/* No copy opens the filesystem: copies damaged in different places. A copy (the primary
 * first) with one part of it (a field, the system chunk array, a backup root) taken from
 * another copy of the same filesystem (same fsid and magic, differing in few parts) is tried
 * in turn; the first that opens is *out (base and donor copies, the part's name). */
static bool merge_copies(struct btk_dev *dev, const struct btk_super_copy *copies,
			 const struct btk_open_opts *oo, struct btk_super *out, int *base,
			 int *donor, const char **part)
{
	struct btk_super *slots = malloc(BTK_SUPER_MIRRORS * sizeof(*slots));
	int ncopies = 0;
	bool found = false;

	for (int m = 0; m < BTK_SUPER_MIRRORS && copies[m].present; m++)
		ncopies = m + 1;
	for (int b = 0; slots && !found && b < ncopies; b++) {
		const struct btk_super *x = &copies[b].sb;
		if (!btk_super_magic_ok(x))
			continue;
		for (int d = 0; !found && d < ncopies; d++) {
			const struct btk_super *y = &copies[d].sb;
			size_t ndiff = 0;
			if (d == b || !btk_super_magic_ok(y) ||
			    memcmp(x->fsid, y->fsid, sizeof(x->fsid)))
				continue;
			for (size_t i = 0; i < SB_NPARTS; i++)
				ndiff += part_differs(x, y, &sb_parts[i]);
			if (!ndiff || ndiff > SB_MERGE_MAX_PARTS)
				continue;
			for (size_t i = 0; !found && i < SB_NPARTS; i++) {
				const struct sb_part *p = &sb_parts[i];
				if (!part_differs(x, y, p))
					continue;
				*out = *x;
				memcpy((uint8_t *)out + p->off, (const uint8_t *)y + p->off,
				       p->len);
				if (p->len2)
					memcpy((uint8_t *)out + p->off2,
					       (const uint8_t *)y + p->off2, p->len2);
				if (merged_opens(dev, out, ncopies, oo, slots)) {
					found = true;
					*base = b;
					*donor = d;
					*part = p->name;
				}
			}
		}
	}
	free(slots);
	return found;
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
	/* a merge (res->merged_part) writes its base copy too: why says what it took */
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
		if (res->merged_part && m == from)
			snprintf(e.why, sizeof(e.why),
				 "its %s taken from copy %d (no copy opened the filesystem alone)",
				 res->merged_part, res->merged_donor);
		else if (!c->valid)
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

/* Writes the merged superblock sb (copy base with a part of copy donor) over every copy of
 * the device at path that differs from it, through the open path (undo, faults). */
static int write_merged(const char *path, const struct btk_open_opts *oo,
			const struct btk_super *sb, const struct btk_super_copy *copies, int base,
			int donor, const char *part, const struct btk_super_opts *so,
			struct btk_super_result *res)
{
	struct btk_dev_opts dopt = oo->dev;
	struct btk_fs_dev d = {.devid = BTK_GET(struct btrfs_dev_item, sb->dev_item, devid)};
	int ret, r;

	dopt.write = true;
	dopt.create = false;
	if ((ret = btk_dev_open_opts(path, &dopt, &d.dev)))
		return ret;
	res->source_mirror = base;
	res->merged_donor = donor;
	res->merged_part = part;
	res->generation = btk_le64(sb->generation);
	ret = heal_dev(&d, sb, copies, base, so, res);
	r = btk_dev_flush(d.dev);
	btk_dev_close(d.dev);
	return ret ? ret : r;
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
		}
		if (agree > 0 && n == 1) {
			btk_dev_close(dev);
			res->copies = agree;
			res->source_mirror = 0;
			res->generation = btk_le64(copies[0].sb.generation);
			btk_err_clear();
			ret = 0;
			goto out;
		}
		int base, donor;
		const char *part;
		bool merged =
		    dev && n == 1 && merge_copies(dev, copies, oo, ref, &base, &donor, &part);
		btk_dev_close(dev);
		if (merged) {
			ret = write_merged(paths[0], oo, ref, copies, base, donor, part, so, res);
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
