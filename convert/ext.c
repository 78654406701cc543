/* ext.c — opening the ext filesystem for conversion (libext2fs), refusing what cannot be
 * converted, and listing the blocks it uses. */
#include "ext.h"
#include "base/error.h"
#include "create/mkfs.h"
#include "io/io.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int e2err(errcode_t err, const char *path, const char *what)
{
	return btk_err(EIO, "%s: %s: %s", path, what, error_message(err));
}

/* The first feature present that btk-convert refuses, or NULL. */
static const char *refused_feature(ext2_filsys e)
{
	struct ext2_super_block *sb = e->super;

	if (ext2fs_has_feature_encrypt(sb))
		return "encrypt (files are encrypted: decrypt them or copy the data instead)";
	if (ext2fs_has_feature_casefold(sb))
		return "casefold (case-insensitive names have no btrfs equivalent)";
	if (ext2fs_has_feature_verity(sb))
		return "verity (fs-verity files have no btrfs equivalent here)";
	if (ext2fs_has_feature_bigalloc(sb))
		return "bigalloc (clusters larger than a block are not supported)";
	if (ext2fs_has_feature_journal_dev(sb))
		return "journal_dev (this is an external journal, not a filesystem)";
	return NULL;
}

static void list_features(ext2_filsys e, char *buf, size_t len)
{
	struct ext2_super_block *sb = e->super;
	const struct {
		int on;
		const char *name;
	} f[] = {
	    {ext2fs_has_feature_journal(sb), "has_journal"},
	    {ext2fs_has_feature_extents(sb), "extent"},
	    {ext2fs_has_feature_64bit(sb), "64bit"},
	    {ext2fs_has_feature_flex_bg(sb), "flex_bg"},
	    {ext2fs_has_feature_huge_file(sb), "huge_file"},
	    {ext2fs_has_feature_dir_nlink(sb), "dir_nlink"},
	    {ext2fs_has_feature_extra_isize(sb), "extra_isize"},
	    {ext2fs_has_feature_metadata_csum(sb), "metadata_csum"},
	    {ext2fs_has_feature_inline_data(sb), "inline_data"},
	    {ext2fs_has_feature_dir_index(sb), "dir_index"},
	    {ext2fs_has_feature_largedir(sb), "large_dir"},
	    {ext2fs_has_feature_orphan_file(sb), "orphan_file"},
	};
	size_t pos = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].on && pos < len)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", pos ? " " : "",
						f[i].name);
}

/* Marks blocks [b, +n) used in the block bitmap, counting those it had free; owner is the
 * inode using them (0: ext's metadata). */
static int mark_used(struct ext_src *s, ext2_ino_t owner, blk64_t b, blk64_t n)
{
	ext2_filsys e = s->e;
	blk64_t count = ext2fs_blocks_count(e->super), z = b, o;

	if (!n)
		return 0;
	if (b < e->super->s_first_data_block || b >= count || n > count - b) {
		if (owner)
			return btk_err(EUCLEAN,
				       "%s: ext inode %u uses blocks %llu-%llu, outside the "
				       "filesystem: run e2fsck -f %s first",
				       s->path, owner, (unsigned long long)b,
				       (unsigned long long)(b + n - 1), s->path);
		return btk_err(EUCLEAN,
			       "%s: ext metadata at blocks %llu-%llu, outside the filesystem: "
			       "run e2fsck -f %s first",
			       s->path, (unsigned long long)b, (unsigned long long)(b + n - 1),
			       s->path);
	}
	while (z < b + n && !ext2fs_find_first_zero_block_bitmap2(e->block_map, z, b + n - 1, &z)) {
		if (ext2fs_find_first_set_block_bitmap2(e->block_map, z, b + n - 1, &o))
			o = b + n;
		if (!s->unmarked) {
			s->first_unmarked = z;
			s->first_unmarked_ino = owner;
		}
		s->unmarked += o - z;
		z = o;
	}
	ext2fs_mark_block_bitmap_range2(e->block_map, b, (unsigned int)n);
	return 0;
}

static int mark_runs(struct ext_src *s, ext2_ino_t owner, const struct runs *rs)
{
	int ret = 0;

	for (size_t i = 0; i < rs->n && !ret; i++) {
		blk64_t b = rs->r[i].pblk, n = rs->r[i].len;
		/* in pieces: the bitmap's range calls take 32-bit lengths */
		for (blk64_t d = 0; d < n && !ret; d += 1U << 30)
			ret = mark_used(s, owner, b + d, n - d < (1U << 30) ? n - d : 1U << 30);
	}
	return ret;
}

/* ext's own blocks in every group, wherever flex_bg or meta_bg put them. */
static int mark_metadata(struct ext_src *s)
{
	ext2_filsys e = s->e;
	struct ext2_super_block *sb = e->super;
	blk64_t old_blocks = ext2fs_has_feature_meta_bg(sb)
				 ? sb->s_first_meta_bg
				 : e->desc_blocks + sb->s_reserved_gdt_blocks;
	int ret = 0;

	for (dgrp_t g = 0; g < e->group_desc_count && !ret; g++) {
		blk64_t super, old_desc, new_desc;
		blk_t used;
		errcode_t err =
		    ext2fs_super_and_bgd_loc2(e, g, &super, &old_desc, &new_desc, &used);
		if (err)
			return e2err(err, s->path, "reading the group descriptors");
		(void)used;
		if (super || !g)
			ret = mark_used(s, 0, super, 1);
		if (!ret && old_desc) {
			blk64_t n = old_blocks;
			if (old_desc < ext2fs_blocks_count(sb) &&
			    n > ext2fs_blocks_count(sb) - old_desc)
				n = ext2fs_blocks_count(sb) - old_desc;
			ret = mark_used(s, 0, old_desc, n);
		}
		if (!ret && new_desc)
			ret = mark_used(s, 0, new_desc, 1);
		if (!ret)
			ret = mark_used(s, 0, ext2fs_block_bitmap_loc(e, g), 1);
		if (!ret)
			ret = mark_used(s, 0, ext2fs_inode_bitmap_loc(e, g), 1);
		if (!ret)
			ret = mark_used(s, 0, ext2fs_inode_table_loc(e, g),
					e->inode_blocks_per_group);
	}
	if (!ret && ext2fs_has_feature_mmp(sb) && sb->s_mmp_block)
		ret = mark_used(s, 0, sb->s_mmp_block, 1);
	return ret;
}

int ext_used_inode(struct ext_src *s, ext2_ino_t ino, struct ext2_inode *in, struct runs *rs)
{
	struct runs meta = {0};
	blk64_t acl = ext2fs_file_acl_block(s->e, in);
	int ret = 0;

	if (!(in->i_flags & EXT4_INLINE_DATA_FL) && ext2fs_inode_has_valid_blocks2(s->e, in)) {
		ret = ext_runs(s->e, ino, in, rs, &meta);
		if (!ret)
			ret = mark_runs(s, ino, rs);
		if (!ret)
			ret = mark_runs(s, ino, &meta);
		free(meta.r);
	}
	if (!ret && acl)
		ret = mark_used(s, ino, acl, 1);
	return ret;
}

static int add_used(struct ext_src *s, uint64_t start, uint64_t len, size_t *cap)
{
	if (s->nused && s->used[s->nused - 1].start + s->used[s->nused - 1].len == start) {
		s->used[s->nused - 1].len += len;
	} else {
		struct btk_byte_range *r = btk_array_push(s->used, s->nused, *cap);
		if (!r)
			return btk_err(ENOMEM, "out of memory listing used blocks");
		*r = (struct btk_byte_range){start, len};
	}
	s->used_bytes += len;
	return 0;
}

/* Runs of set bits of the block bitmap (with what ext_used_inode added), as byte ranges. */
int ext_used_finish(struct ext_src *s)
{
	ext2_filsys e = s->e;
	blk64_t first = e->super->s_first_data_block, end = ext2fs_blocks_count(e->super) - 1;
	blk64_t b = first, z;
	size_t cap = 0;
	errcode_t err;
	int ret;

	free(s->used);
	s->used = NULL;
	s->nused = 0;
	s->used_bytes = 0;
	/* blocks before s_first_data_block (1 KiB block sizes only) are the boot block */
	if (first && (ret = add_used(s, 0, (uint64_t)first * s->blocksize, &cap)))
		return ret;
	while (b <= end) {
		err = ext2fs_find_first_set_block_bitmap2(e->block_map, b, end, &b);
		if (err == ENOENT)
			break;
		if (err)
			return e2err(err, s->path, "reading the block bitmap");
		err = ext2fs_find_first_zero_block_bitmap2(e->block_map, b, end, &z);
		if (err == ENOENT)
			z = end + 1;
		else if (err)
			return e2err(err, s->path, "reading the block bitmap");
		if ((ret = add_used(s, (uint64_t)b * s->blocksize, (uint64_t)(z - b) * s->blocksize,
				    &cap)))
			return ret;
		b = z;
	}
	btk_inplace_init(&s->layout, s->size, s->used, s->nused);
	return 0;
}

/* The first of ext2_saved, ext2_saved.1, ... that the ext root directory does not hold. */
static int pick_saved_name(struct ext_src *s)
{
	for (int i = 0; i < 100; i++) {
		ext2_ino_t ino;
		errcode_t err;
		if (i)
			snprintf(s->saved, sizeof(s->saved), "ext2_saved.%d", i);
		else
			snprintf(s->saved, sizeof(s->saved), "ext2_saved");
		err =
		    ext2fs_lookup(s->e, EXT2_ROOT_INO, s->saved, (int)strlen(s->saved), NULL, &ino);
		if (err == EXT2_ET_FILE_NOT_FOUND)
			return 0;
		if (err)
			return e2err(err, s->path, "reading the root directory");
	}
	return btk_err(EEXIST,
		       "%s: the ext root holds ext2_saved and ext2_saved.1 to .99: rename "
		       "one of them",
		       s->path);
}

/* Why libext2fs would not open path, in words: what is there instead, or the system's
 * reason (its own codes have no table loaded here: "Unknown code ext2 19"). */
static int open_failed(const char *path, errcode_t err)
{
	const char *what;
	char found[64];

	if (err == EXT2_ET_BAD_MAGIC || err == EXT2_ET_SB_CSUM_INVALID ||
	    err == EXT2_ET_CORRUPT_SUPERBLOCK) {
		int r = btk_dev_signature(path, found, sizeof(found), &what);
		if (err != EXT2_ET_BAD_MAGIC)
			return btk_err(EINVAL, "%s: the ext superblock is damaged (run e2fsck -f)",
				       path);
		if (r > 0)
			return btk_err(EINVAL, "%s: not an ext2/3/4 filesystem (it holds a %s %s)",
				       path, found, what);
		return btk_err(EINVAL, "%s: not an ext2/3/4 filesystem (no filesystem found)",
			       path);
	}
	if (err > 0 && err < 4096) /* an errno */
		return btk_err((int)err, "%s: cannot open: %s", path, strerror((int)err));
	return btk_err(EINVAL, "%s: cannot read the ext filesystem (libext2fs error %ld)", path,
		       (long)err);
}

int ext_open(const char *path, bool force, struct ext_src *s)
{
	return ext_open_at(path, path, 0, 0, force, s);
}

int ext_open_at(const char *path, const char *file, uint64_t off, uint64_t size, bool force,
		struct ext_src *s)
{
	struct stat st;
	struct ext2_super_block *sb;
	const char *bad;
	char io_opts[40];
	errcode_t err;
	int mflags = 0, ret;

	memset(s, 0, sizeof(*s));
	s->path = path;
	if ((ret = btk_dev_refuse_in_use_range(file, off, size)))
		return ret;
	/* libext2fs's own check looks at the whole file (a mounted loop device of any part of
	 * it): asked of block devices and of whole files only; the range check above covers a
	 * partition of an image file */
	if (!off || (!stat(file, &st) && S_ISBLK(st.st_mode)))
		err = ext2fs_check_if_mounted(file, &mflags);
	else
		err = 0;
	if (!err && (mflags & EXT2_MF_MOUNTED))
		return btk_err(EBUSY, "%s: is mounted (unmount it first)", path);
	/* unix_io's "offset=": every block libext2fs reads is off bytes further in */
	snprintf(io_opts, sizeof(io_opts), "offset=%llu", (unsigned long long)off);
	err = ext2fs_open2(file, off ? io_opts : NULL, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			   &s->e);
	if (err)
		return open_failed(path, err);
	sb = s->e->super;
	s->blocksize = s->e->blocksize;
	s->size = ext2fs_blocks_count(sb) * (uint64_t)s->blocksize;
	s->inodes = sb->s_inodes_count - sb->s_free_inodes_count;
	list_features(s->e, s->features, sizeof(s->features));
	if ((bad = refused_feature(s->e))) {
		ret = btk_err(EOPNOTSUPP, "%s: ext feature %s", path, bad);
		goto fail;
	}
	if (ext2fs_has_feature_journal_needs_recovery(sb)) {
		ret = btk_err(EUCLEAN, "%s: the journal needs recovery: run e2fsck first", path);
		goto fail;
	}
	if (!force && (!(sb->s_state & EXT2_VALID_FS) || (sb->s_state & EXT2_ERROR_FS))) {
		ret = btk_err(EUCLEAN,
			      "%s: not cleanly unmounted or marked with errors: run e2fsck -f "
			      "first (or --force)",
			      path);
		goto fail;
	}
	/* orphans (on the old list or in the orphan file) are inodes the kernel still has to
	 * finish deleting; e2fsck does it */
	if (!force && (sb->s_last_orphan || ext2fs_has_feature_orphan_present(sb))) {
		ret =
		    btk_err(EUCLEAN,
			    "%s: orphan inodes are waiting to be deleted: run e2fsck -f first (or "
			    "--force)",
			    path);
		goto fail;
	}
	if (s->blocksize != 4096) {
		ret = btk_err(EOPNOTSUPP,
			      "%s: block size %u: btrfs maps ext blocks 1:1 only with 4096-byte "
			      "blocks (the page size)",
			      path, s->blocksize);
		goto fail;
	}
	if ((err = ext2fs_read_bitmaps(s->e))) {
		ret = e2err(err, path, "reading the bitmaps");
		goto fail;
	}
	if ((ret = mark_metadata(s)) || (ret = pick_saved_name(s)))
		goto fail;
	/* the reserved ranges for ext_count; the used blocks once it has read every inode */
	btk_inplace_init(&s->layout, s->size, NULL, 0);
	return 0;
fail:
	ext_close(s);
	return ret;
}

void ext_close(struct ext_src *s)
{
	if (s->e)
		ext2fs_close_free(&s->e);
	free(s->used);
	s->used = NULL;
	s->nused = 0;
	free(s->links);
	s->links = NULL;
	btk_vec_free(&s->fixes);
}
