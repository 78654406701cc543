/* fs_write.c — inode, directory entry, back reference, xattr, file extent and csum items. */
#include "fs/fs_write.h"
#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"

#include <errno.h>
#include <stdlib.h>

#define DIR_ITEM_SZ  BTK_DIR_ENTRY_HEAD
#define EXTREF_SZ    BTK_INODE_EXTREF_HEAD
#define FE_INLINE_SZ offsetof(struct btrfs_file_extent_item, disk_bytenr)

static uint32_t max_item(const struct btk_fs *fs)
{
	return fs->nodesize - (uint32_t)sizeof(struct btk_header) -
	       (uint32_t)sizeof(struct btk_item);
}

uint32_t btk_inline_max(const struct btk_fs *fs)
{
	return max_item(fs) - (uint32_t)FE_INLINE_SZ;
}

/* Fields an inode takes from its source: owner, mode, device, flags, times. */
static void put_attr(struct btk_inode_info *in, const struct btk_inode_attr *a)
{
	in->uid = a->uid;
	in->gid = a->gid;
	in->mode = a->mode;
	in->rdev = a->rdev;
	in->flags = a->flags;
	in->atime = a->atime;
	in->ctime = a->ctime;
	in->mtime = a->mtime;
	in->otime = a->otime;
}

/* The INODE_ITEM of ino with a and the given transid. */
static int inode_insert(struct btk_trans *t, uint64_t root, uint64_t ino,
			const struct btk_inode_attr *a, uint64_t transid)
{
	uint8_t it[sizeof(struct btrfs_inode_item)] = {0};
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_inode_info in = {
	    .generation = a->generation ? a->generation : btk_trans_id(t),
	    .transid = transid,
	    .size = a->size,
	    .nbytes = a->nbytes,
	    .nlink = a->nlink,
	};

	put_attr(&in, a);
	btk_inode_item_write(it, &in);
	return btk_item_insert(t, root, &k, it, sizeof(it));
}

int btk_inode_create(struct btk_trans *t, uint64_t root, uint64_t ino,
		     const struct btk_inode_attr *a)
{
	return inode_insert(t, root, ino, a, btk_trans_id(t));
}

int btk_top_dir_create(struct btk_trans *t, uint64_t root, uint64_t dirid,
		       const struct btk_inode_attr *a, bool new_fs)
{
	uint8_t ref[sizeof(struct btrfs_inode_ref) + 2];
	struct btk_key k = {dirid, BTRFS_INODE_REF_KEY, dirid};
	int ret = inode_insert(t, root, dirid, a, new_fs ? 0 : btk_trans_id(t));

	if (ret)
		return ret;
	return btk_item_insert(t, root, &k, ref, btk_ref_ent_write(ref, false, 0, 0, "..", 2));
}

/* Finds ino's INODE_ITEM for a change in place: *item, decoded in *in. */
static int inode_item(struct btk_trans *t, uint64_t root, uint64_t ino, struct btk_path *p,
		      uint8_t **item, struct btk_inode_info *in)
{
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	uint32_t size;
	int ret = btk_tree_search_write(t, root, &k, 0, p);

	if (ret > 0)
		ret = btk_err(ENOENT, "tree %llu: inode %llu not found", (unsigned long long)root,
			      (unsigned long long)ino);
	if (ret)
		return ret;
	*item = btk_item_ptr(p, &size);
	if (btk_inode_item_parse(*item, size, in))
		return btk_err(EUCLEAN, "tree %llu: inode %llu item too short",
			       (unsigned long long)root, (unsigned long long)ino);
	return 0;
}

/* The INODE_ITEM of (root, ino) read for writing, changed by change(in, arg), written back. */
static int inode_rewrite(struct btk_trans *t, uint64_t root, uint64_t ino,
			 void (*change)(struct btk_inode_info *in, const void *arg),
			 const void *arg)
{
	struct btk_path p;
	struct btk_inode_info in;
	uint8_t *it;
	int ret;

	btk_path_init(&p);
	ret = inode_item(t, root, ino, &p, &it, &in);
	if (!ret) {
		change(&in, arg);
		btk_inode_item_write(it, &in);
	}
	btk_wpath_release(&p);
	return ret;
}

static void set_size(struct btk_inode_info *in, const void *arg)
{
	const uint64_t *v = arg; /* size, nbytes */

	in->size = v[0];
	in->nbytes = v[1];
}

int btk_inode_set_size(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t size,
		       uint64_t nbytes)
{
	const uint64_t v[2] = {size, nbytes};

	return inode_rewrite(t, root, ino, set_size, v);
}

static void add_size(struct btk_inode_info *in, const void *arg)
{
	in->size += *(const uint64_t *)arg;
}

int btk_inode_add_dir_size(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t delta)
{
	return inode_rewrite(t, root, dir, add_size, &delta);
}

/* Adds an entry to the hashed item at key, creating it or appending on a hash collision. */
static int hashed_entry_add(struct btk_trans *t, uint64_t root, const struct btk_key *key,
			    const struct btk_key *loc, uint8_t ftype, const char *name,
			    uint16_t nlen, const void *data, uint16_t dlen)
{
	uint32_t esz = (uint32_t)DIR_ITEM_SZ + nlen + dlen, size;
	struct btk_path p;
	uint8_t *item;
	int ret;

	btk_path_init(&p);
	ret = btk_tree_search_write(t, root, key, (int)esz, &p);
	if (ret == 0) {
		item = btk_item_ptr(&p, &size);
		if (btk_dir_item_has_name(item, size, name, nlen))
			ret = btk_err(EEXIST, "%.*s: exists already", (int)nlen, name);
		else if (size + esz > max_item(btk_trans_fs(t)))
			ret = btk_err(E2BIG, "no room for one more colliding name in one item");
		else if (!(ret = btk_item_extend(t, &p, esz)))
			btk_dir_ent_write(btk_item_ptr(&p, &size) + size - esz, loc,
					  btk_trans_id(t), ftype, name, nlen, data, dlen);
		btk_wpath_release(&p);
		return ret;
	}
	btk_wpath_release(&p);
	if (ret < 0)
		return ret;
	ret = btk_item_insert_empty(t, root, key, esz, &p);
	if (!ret)
		btk_dir_ent_write(btk_item_ptr(&p, &size), loc, btk_trans_id(t), ftype, name, nlen,
				  data, dlen);
	btk_wpath_release(&p);
	return ret;
}

/* Appends to the item at key (creating it) `len` bytes from src; -EOVERFLOW when the item
 * would exceed the largest item size. */
static int append_item(struct btk_trans *t, uint64_t root, const struct btk_key *key,
		       const uint8_t *src, uint32_t len)
{
	struct btk_path p;
	uint32_t size;
	int ret;

	btk_path_init(&p);
	/* Look at the size first: asking the tree for room an item can never get would split
	 * leaves for nothing. */
	ret = btk_tree_search_write(t, root, key, 0, &p);
	if (ret == 0) {
		btk_item_ptr(&p, &size);
		btk_wpath_release(&p);
		if (size + len > max_item(btk_trans_fs(t)))
			return btk_err(EOVERFLOW,
				       "item (%llu %u %llu) of %u bytes cannot grow by %u",
				       (unsigned long long)key->objectid, key->type,
				       (unsigned long long)key->offset, size, len);
		ret = btk_tree_search_write(t, root, key, (int)len, &p);
	}
	if (ret == 0) {
		btk_item_ptr(&p, &size);
		if (!(ret = btk_item_extend(t, &p, len)))
			memcpy(btk_item_ptr(&p, &size) + size - len, src, len);
		btk_wpath_release(&p);
		return ret;
	}
	btk_wpath_release(&p);
	if (ret < 0)
		return ret;
	return btk_item_insert(t, root, key, src, len);
}

static int inode_ref_add(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t dir,
			 const char *name, uint16_t len, uint64_t index)
{
	uint8_t buf[EXTREF_SZ + BTK_NAME_MAX];
	struct btk_key k = {ino, BTRFS_INODE_REF_KEY, dir};
	int ret;

	ret = append_item(t, root, &k, buf, btk_ref_ent_write(buf, false, dir, index, name, len));
	if (ret != -EOVERFLOW)
		return ret;
	/* The parent's names of this inode fill an item: the rest go to extended refs. */
	k = (struct btk_key){ino, BTRFS_INODE_EXTREF_KEY, btk_extref_hash(dir, name, len)};
	ret = append_item(t, root, &k, buf, btk_ref_ent_write(buf, true, dir, index, name, len));
	if (ret == -EOVERFLOW)
		ret = btk_err(EMLINK, "inode %llu: too many links", (unsigned long long)ino);
	return ret;
}

int btk_dir_creatable(uint64_t dir, const char *name, uint16_t len)
{
	if (dir != BTK_STUB_INO) /* the kernel's placeholder has no mkdir or create: EPERM */
		return 0;
	return btk_err(EPERM,
		       "\"%.*s\": its directory is a snapshot's placeholder of a "
		       "subvolume, in which nothing can be created",
		       (int)len, name);
}

int btk_dir_name_add(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		     uint16_t len, const struct btk_key *loc, uint8_t ftype, uint64_t index,
		     unsigned sides)
{
	struct btk_key k = {dir, BTRFS_DIR_ITEM_KEY, btk_name_hash(name, len)};
	uint8_t entry[DIR_ITEM_SZ + BTK_NAME_MAX];
	int ret = 0;

	if (!len || len > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "name of %u bytes in directory %llu", len,
			       (unsigned long long)dir);
	if (sides & BTK_NAME_DIR_ITEM) {
		ret = hashed_entry_add(t, root, &k, loc, ftype, name, len, NULL, 0);
		if (ret == -EEXIST)
			return btk_err(EEXIST, "directory %llu already has \"%.*s\"",
				       (unsigned long long)dir, (int)len, name);
	}
	if (!ret && (sides & BTK_NAME_DIR_INDEX)) {
		k = (struct btk_key){dir, BTRFS_DIR_INDEX_KEY, index};
		btk_dir_ent_write(entry, loc, btk_trans_id(t), ftype, name, len, NULL, 0);
		ret = btk_item_insert(t, root, &k, entry, (uint32_t)DIR_ITEM_SZ + len);
	}
	if (!ret && (sides & BTK_NAME_REF) && loc->type == BTRFS_INODE_ITEM_KEY)
		ret = inode_ref_add(t, root, loc->objectid, dir, name, len, index);
	return ret;
}

int btk_dir_link(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		 const struct btk_key *loc, uint8_t ftype, uint64_t index)
{
	int ret = btk_dir_creatable(dir, name, len);

	if (!ret)
		ret = btk_dir_name_add(t, root, dir, name, len, loc, ftype, index,
				       BTK_NAME_DIR_ITEM | BTK_NAME_DIR_INDEX | BTK_NAME_REF);
	if (!ret)
		ret = btk_inode_add_dir_size(t, root, dir, 2ULL * len);
	return ret;
}

int btk_xattr_set(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name, uint16_t nlen,
		  const void *value, uint16_t vlen)
{
	struct btk_key k = {ino, BTRFS_XATTR_ITEM_KEY, btk_name_hash(name, nlen)};

	if ((uint32_t)DIR_ITEM_SZ + nlen + vlen > max_item(btk_trans_fs(t)))
		return btk_err(E2BIG, "inode %llu: xattr %.*s of %u bytes does not fit a leaf",
			       (unsigned long long)ino, (int)nlen, name, vlen);
	int ret = hashed_entry_add(t, root, &k, NULL, BTRFS_FT_XATTR, name, nlen, value, vlen);
	if (ret == -EEXIST)
		return btk_err(EEXIST, "inode %llu: xattr %.*s set twice", (unsigned long long)ino,
			       (int)nlen, name);
	return ret;
}

static void put_fe_head(uint8_t *fe, uint64_t transid, uint64_t ram, uint8_t comp, uint8_t type)
{
	typedef struct btrfs_file_extent_item F;

	BTK_PUT(F, fe, generation, transid);
	BTK_PUT(F, fe, ram_bytes, ram);
	BTK_PUT(F, fe, compression, comp);
	BTK_PUT(F, fe, encryption, 0);
	BTK_PUT(F, fe, other_encoding, 0);
	BTK_PUT(F, fe, type, type);
}

int btk_file_extent_inline(struct btk_trans *t, uint64_t root, uint64_t ino, const void *data,
			   uint32_t len, uint64_t ram_bytes, int compression)
{
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, 0};
	struct btk_path p;
	uint32_t size;
	int ret;

	if (len > btk_inline_max(btk_trans_fs(t)))
		return btk_err(E2BIG, "inode %llu: %u bytes do not fit inline",
			       (unsigned long long)ino, len);
	btk_path_init(&p);
	ret = btk_item_insert_empty(t, root, &k, (uint32_t)FE_INLINE_SZ + len, &p);
	if (!ret) {
		uint8_t *fe = btk_item_ptr(&p, &size);
		put_fe_head(fe, btk_trans_id(t), ram_bytes, (uint8_t)compression,
			    BTRFS_FILE_EXTENT_INLINE);
		memcpy(fe + FE_INLINE_SZ, data, len);
	}
	btk_wpath_release(&p);
	return ret;
}

int btk_file_extent_insert(struct btk_trans *t, uint64_t root, uint64_t ino,
			   const struct btk_file_extent *e)
{
	uint8_t fe[sizeof(struct btrfs_file_extent_item)];
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, e->file_offset};
	typedef struct btrfs_file_extent_item F;

	put_fe_head(fe, btk_trans_id(t), e->ram_bytes, e->compression, e->type);
	BTK_PUT(F, fe, disk_bytenr, e->disk_bytenr);
	BTK_PUT(F, fe, disk_num_bytes, e->disk_num_bytes);
	BTK_PUT(F, fe, offset, e->extent_offset);
	BTK_PUT(F, fe, num_bytes, e->num_bytes);
	return btk_item_insert(t, root, &k, fe, sizeof(fe));
}

int btk_file_extent_whole(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t off,
			  uint64_t bytenr, uint64_t len)
{
	struct btk_file_extent fe = {.file_offset = off,
				     .type = BTRFS_FILE_EXTENT_REG,
				     .disk_bytenr = bytenr,
				     .disk_num_bytes = len,
				     .num_bytes = len,
				     .ram_bytes = len};

	return btk_file_extent_insert(t, root, ino, &fe);
}

int btk_file_hole(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t off, uint64_t len)
{
	struct btk_file_extent fe = {
	    .file_offset = off, .type = BTRFS_FILE_EXTENT_REG, .num_bytes = len, .ram_bytes = len};

	if (!len || btk_le64(btk_trans_fs(t)->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_NO_HOLES)
		return 0;
	return btk_file_extent_insert(t, root, ino, &fe);
}

int btk_csum_insert_sums(struct btk_trans *t, uint64_t bytenr, const uint8_t *sums,
			 uint64_t nsectors)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint32_t cs = (uint32_t)fs->csum_size;
	/* As many sums as leave room for a second item in the leaf, like the kernel. */
	uint64_t per_item = (max_item(fs) - sizeof(struct btk_item)) / cs - 1;

	while (nsectors) {
		uint64_t n = nsectors < per_item ? nsectors : per_item;
		struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr};
		int ret =
		    btk_item_insert(t, BTRFS_CSUM_TREE_OBJECTID, &k, sums, (uint32_t)(n * cs));

		if (ret)
			return ret;
		bytenr += n * fs->sectorsize;
		sums += n * cs;
		nsectors -= n;
	}
	return 0;
}

int btk_csum_compute(const struct btk_fs *fs, const uint8_t *data, uint64_t len, uint8_t *sums)
{
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	uint8_t sum[BTK_CSUM_MAX];

	if (len % ss)
		return btk_err(EINVAL, "checksummed length %llu not sector aligned",
			       (unsigned long long)len);
	for (uint64_t i = 0; i < len / ss; i++) {
		btk_csum(fs->csum_type, data + i * ss, ss, sum);
		memcpy(sums + i * cs, sum, cs);
	}
	return 0;
}

static void set_attr(struct btk_inode_info *in, const void *arg)
{
	put_attr(in, arg);
}

int btk_inode_set_attr(struct btk_trans *t, uint64_t root, uint64_t ino,
		       const struct btk_inode_attr *a)
{
	return inode_rewrite(t, root, ino, set_attr, a);
}
