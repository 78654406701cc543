/* rollback.c — checks the saved image and writes the moved ext blocks back. */
#include "rollback.h"
#include "build.h"
#include "ext.h"
#include "base/error.h"
#include "cli/cli.h"
#include "fs/fs_read.h"
#include "io/io.h"
#include "tree/tree.h"
#include "create/mkfs.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct piece {
	uint64_t fo, logical, len;
};

struct scan {
	struct btk_fs *fs;
	uint64_t gen, size;
	struct btk_byte_range res[BTK_SUPER_MIRRORS];
	int nres;
	struct piece *p; /* the copies: file ranges inside reserved ranges */
	size_t n, cap;
	uint64_t in_place;
};

static bool inside(const struct btk_byte_range *r, uint64_t s, uint64_t l)
{
	return s >= r->start && s + l <= r->start + r->len;
}

static int moved(uint64_t fo, const char *why)
{
	return btk_err(EUCLEAN,
		       "ext2_saved/image was changed since the conversion (%s at image offset "
		       "%llu): cannot roll back",
		       why, (unsigned long long)fo);
}

static int check_extent(void *ctx, const struct btk_file_extent *fe)
{
	struct scan *s = ctx;
	uint64_t fo = fe->file_offset, len = fe->num_bytes, lg;

	if (fe->type == BTRFS_FILE_EXTENT_REG && !fe->disk_bytenr)
		return 0; /* a hole: ext does not use these blocks */
	if (fe->type != BTRFS_FILE_EXTENT_REG || fe->compression || fe->encryption)
		return moved(fo, "an extent that is not plain data");
	if (fe->generation != s->gen)
		return moved(fo, "an extent written later");
	if (fo + len < fo || fo + len > s->size)
		return moved(fo, "an extent past the ext size");
	lg = fe->disk_bytenr + fe->extent_offset;
	for (int i = 0; i < s->nres; i++)
		if (inside(&s->res[i], fo, len)) {
			struct piece *p = btk_array_push(s->p, s->n, s->cap);
			if (!p)
				return btk_err(ENOMEM, "out of memory");
			*p = (struct piece){fo, lg, len};
			return 0;
		}
	/* in place: logical == physical == image offset, on every byte */
	for (uint64_t d = 0; d < len;) {
		struct btk_phys ph;
		uint64_t contig;
		int n, ret = btk_map_logical(s->fs, lg + d, &ph, 1, &n, &contig);
		if (ret || n != 1 || ph.physical != fo + d || ph.devid != s->fs->devs[0].devid)
			return moved(fo + d, "an extent moved");
		d += contig < len - d ? contig : len - d;
		if (!contig)
			return moved(fo + d, "an unmapped extent");
	}
	s->in_place += len;
	return 0;
}

/* Reads the copies into one buffer per reserved range (zeros where ext had free blocks). */
static int gather(struct scan *s, uint8_t *bufs[3])
{
	for (int i = 0; i < s->nres; i++) {
		bufs[i] = calloc(1, s->res[i].len);
		if (!bufs[i])
			return btk_err(ENOMEM, "out of memory");
	}
	for (size_t j = 0; j < s->n; j++) {
		const struct piece *p = &s->p[j];
		for (int i = 0; i < s->nres; i++) {
			int ret;
			if (!inside(&s->res[i], p->fo, p->len))
				continue;
			ret = btk_read_logical(s->fs, p->logical,
					       bufs[i] + (p->fo - s->res[i].start), p->len);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* The image's first MiB must start with the ext superblock of an ext of this size. */
static int check_ext_super(const uint8_t *first, uint64_t size)
{
	const struct ext2_super_block *sb = (const struct ext2_super_block *)(first + 1024);
	uint64_t blocks = sb->s_blocks_count | (uint64_t)sb->s_blocks_count_hi << 32;

	if (sb->s_magic != EXT2_SUPER_MAGIC)
		return btk_err(EUCLEAN,
			       "ext2_saved/image holds no ext superblock: cannot roll back");
	if (!(sb->s_feature_incompat & EXT4_FEATURE_INCOMPAT_64BIT))
		blocks = sb->s_blocks_count;
	if (blocks * (1024ULL << sb->s_log_block_size) != size)
		return btk_err(EUCLEAN, "ext2_saved/image: size differs from its ext superblock");
	return 0;
}

/* Refused before anything is read when a loop device or a mount uses the range the rollback
 * writes (a partition's only: another partition of the same image may be attached); the
 * writable open checks again. Split raw and EWF names: the whole file, as the open sees them. */
static int refuse_in_use(const char *path, const struct btk_dev_opts *dopts)
{
	char base[4096];
	uint64_t off, size;
	int ret =
	    btk_dev_where_resolve(path, &dopts->where, false, base, sizeof(base), &off, &size);

	if (ret == -EOPNOTSUPP)
		return btk_dev_refuse_in_use(path);
	return ret ? ret : btk_dev_refuse_in_use_range(base, off, size);
}

static int open_scan(const char *path, const struct btk_dev_opts *dopts, struct scan *s)
{
	const char *paths[1] = {path};
	struct btk_open_opts oo = {.super_mirror = -1, .no_scan = true, .dev.where = dopts->where};
	struct btk_inode_info info;
	struct btk_root root;
	struct btk_key loc;
	char *name = NULL;
	uint8_t ft;
	int ret = refuse_in_use(path, dopts);

	if (ret || (ret = btk_fs_open(paths, 1, &oo, &s->fs)))
		return ret;
	/* by id, not by path: the subvolume may have been renamed, or named ext2_saved.N because
	 * the ext root had an ext2_saved (a back reference exists while it is linked) */
	ret = btk_subvol_path(s->fs, CONV_IMAGE_SUBVOL, &name);
	free(name);
	if (!ret)
		ret = btk_fs_root(s->fs, CONV_IMAGE_SUBVOL, &root);
	if (!ret)
		ret = btk_dir_lookup(s->fs, &root, BTK_ROOT_DIRID, "image", 5, &loc, &ft);
	if (!ret && (loc.type != BTRFS_INODE_ITEM_KEY || loc.objectid != CONV_IMAGE_INO))
		ret = -ENOENT;
	if (ret == -ENOENT)
		return btk_err(ENOENT, "%s: ext2_saved/image is gone: nothing to roll back to",
			       path);
	if (!ret)
		ret = btk_inode_read(s->fs, &root, CONV_IMAGE_INO, &info);
	if (ret)
		return ret;
	if (info.transid != info.generation)
		return btk_err(EUCLEAN,
			       "%s: ext2_saved/image was modified after the conversion (inode "
			       "transid %llu, created in %llu): cannot roll back",
			       path, (unsigned long long)info.transid,
			       (unsigned long long)info.generation);
	s->gen = info.generation;
	s->size = info.size;
	if (s->size > s->fs->devs[0].dev->size || s->size < (1ULL << 20))
		return btk_err(EUCLEAN, "%s: ext2_saved/image has an impossible size %llu", path,
			       (unsigned long long)s->size);
	s->nres = btk_dev_reserved(s->size, s->res);
	return btk_file_for_each_extent(s->fs, &root, CONV_IMAGE_INO, 0, check_extent, s);
}

static int write_range(struct btk_dev *d, const uint8_t *buf, uint64_t off, uint64_t len)
{
	return len ? btk_dev_write(d, buf, len, off) : 0;
}

int rollback(const char *path, bool dry_run, const struct btk_dev_opts *dopts,
	     struct rollback_result *res)
{
	struct scan s = {0};
	uint8_t *bufs[3] = {NULL, NULL, NULL};
	struct btk_dev_opts wo = *dopts;
	struct btk_lock *hold = NULL;
	struct btk_dev *d = NULL;
	int ret = dry_run ? 0 : btk_lock_take(path, dopts->wait, &hold);

	if (!ret)
		ret = open_scan(path, dopts, &s);

	memset(res, 0, sizeof(*res));
	if (!ret)
		ret = gather(&s, bufs);
	if (!ret)
		ret = check_ext_super(bufs[0], s.size);
	res->ext_size = s.size;
	res->in_place = s.in_place;
	for (size_t i = 0; i < s.n; i++)
		res->restored += s.p[i].len;
	btk_fs_close(s.fs);
	if (ret || dry_run)
		goto out;
	/* until the primary superblock is overwritten the device is the btrfs filesystem */
	cli_interrupt_writer(&path, 1);
	cli_interrupt_before("%s is still the btrfs filesystem: the rollback did not finish (run "
			     "btk-convert --rollback %s again)",
			     path, path);
	wo.write = true;
	wo.create = false;
	ret = btk_dev_open_opts(path, &wo, &d);
	/* mirrors first, then the first MiB but for ext's superblock and btrfs's primary one;
	 * last, in one write, both: ext's comes back as btrfs's goes (blkid finds one or the
	 * other at every stop, never both) */
	for (int i = 1; !ret && i < s.nres; i++)
		ret = write_range(d, bufs[i], s.res[i].start, s.res[i].len);
	if (!ret)
		ret = btk_dev_flush(d);
	if (!ret)
		ret = write_range(d, bufs[0], 0, CONV_EXT_SUPER);
	if (!ret)
		ret = write_range(d, bufs[0] + BTK_SUPER_OFFSET + BTK_SUPER_SIZE,
				  BTK_SUPER_OFFSET + BTK_SUPER_SIZE,
				  s.res[0].len - BTK_SUPER_OFFSET - BTK_SUPER_SIZE);
	if (!ret)
		ret = btk_dev_flush(d);
	if (!ret)
		ret = write_range(d, bufs[0] + CONV_EXT_SUPER, CONV_EXT_SUPER,
				  BTK_SUPER_OFFSET + BTK_SUPER_SIZE - CONV_EXT_SUPER);
	if (!ret)
		cli_interrupt_before("%s is the ext filesystem again", path);
	if (!ret)
		ret = btk_dev_flush(d);
out:
	btk_dev_close(d);
	btk_lock_drop(hold);
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
	free(s.p);
	return ret;
}
