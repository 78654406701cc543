/* mkfs.c — creating a filesystem: validation, then a minimal bootstrap (the in-memory
 * filesystem object, its chunks and empty trees) after which everything else goes through
 * the general write path and one commit.
 */
#include "create/mkfs.h"
#include "create/create_int.h"
#include "create/inplace.h"
#include "fs/fs_estimate.h"
#include "fs/fs_write.h"
#include "format/dir_item.h"
#include "format/geometry.h"
#include "format/inode_item.h"
#include "format/root_item.h"
#include "tree/cache.h"
#include "base/csum.h"
#include "base/error.h"
#include "format/dev_items.h"
#include "io/io.h"
#include "base/units.h"
#include "base/uuid.h"

#include <blkid/blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SZ_1M (1ULL << 20)
/* with --shrink: data and metadata chunks of these sizes, and room left in a trimmed
 * last metadata chunk for the blocks the commit itself writes */
#define SHRINK_CHUNK	  (128 * SZ_1M)
#define SHRINK_META_CHUNK (32 * SZ_1M)
#define SHRINK_META_SLACK (4 * SZ_1M)

static const struct btk_mkfs_feature features[] = {
    {"mixed-bg", BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS, 0, false, false,
     "mixed data and metadata block groups", 0},
    {"extref", BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF, 0, true, false,
     "increased hardlink limit per file to 65536", 0},
    {"raid56", BTRFS_FEATURE_INCOMPAT_RAID56, 0, false, false, "raid56 extended format", 0},
    {"skinny-metadata", BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA, 0, true, false,
     "reduced-size metadata extent refs", 0},
    {"no-holes", BTRFS_FEATURE_INCOMPAT_NO_HOLES, 0, true, false,
     "no explicit hole extents for files", 0},
    {"raid1c34", BTRFS_FEATURE_INCOMPAT_RAID1C34, 0, false, false, "RAID1 with 3 or 4 copies", 0},
    {"free-space-tree", 0,
     BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE | BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID, true,
     true, "free space tree (space_cache=v2)", 0},
    {"block-group-tree", 0, BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE, false, false,
     "block group tree to reduce mount time", 0},
    {"quota", 0, 0, false, true, "quota support (qgroups)", BTK_MKFS_QUOTA},
    {"squota", BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA, 0, false, false,
     "simple quota accounting (squotas)", BTK_MKFS_QUOTA},
    {NULL, 0, 0, false, false, NULL, 0},
};

const struct btk_mkfs_feature *btk_mkfs_features(void)
{
	return features;
}

const struct btk_mkfs_feature *btk_mkfs_feature_find(const char *name)
{
	for (const struct btk_mkfs_feature *f = features; f->name; f++)
		if (!strcasecmp(f->name, name))
			return f;
	return NULL;
}

void btk_mkfs_opts_init(struct btk_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->data_profile = o->meta_profile = BTK_PROFILE_DEFAULT;
	o->csum_type = BTRFS_CSUM_TYPE_CRC32;
	o->discard = true;
	o->now = time(NULL);
}

/* ---- safety probes ---- */

int btk_mkfs_probe(const char *path, bool force)
{
	return force ? 0 : btk_dev_probe_signatures(path);
}

/* ---- validation ---- */

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

struct plan {
	uint64_t incompat, compat_ro;
	unsigned extra;	     /* BTK_MKFS_QUOTA... */
	uint64_t data, meta; /* profile bits */
	uint32_t nodesize, sectorsize;
	uint64_t min_size;
	bool derive_uuids; /* -U given: every other uuid follows from the fsid */
};

static int check_profile(uint64_t prof, const char *what, int ndevs)
{
	const struct btk_raid_attr *ra = btk_raid_attr(prof);

	if (!ra)
		return btk_err(EINVAL, "invalid %s profile", what);
	if (ndevs < ra->devs_min)
		return btk_err(EINVAL,
			       "unable to create FS with %s profile %s (have %d devices but %d "
			       "devices are required)",
			       what, ra->name, ndevs, ra->devs_min);
	return 0;
}

uint32_t btk_mkfs_nodesize(const struct btk_mkfs_opts *o)
{
	if (o->nodesize)
		return o->nodesize;
	if (o->mixed)
		return o->sectorsize ? o->sectorsize : 4096;
	return 16384;
}

uint64_t btk_mkfs_meta_estimate(const struct btk_mkfs_opts *o, const struct btk_meta_counts *m)
{
	int cs = btk_csum_size(o->csum_type);

	return btk_meta_estimate(m, btk_mkfs_nodesize(o), cs > 0 ? (uint32_t)cs : 4);
}

static int plan_options(const struct btk_mkfs_opts *o, struct plan *pl)
{
	int ret;

	if (o->ndevs < 1 || o->ndevs > 64)
		return btk_err(EINVAL, "need 1 to 64 devices, got %d", o->ndevs);
	if (btk_csum_size(o->csum_type) <= 0)
		return btk_err(EINVAL, "unknown checksum type %d", o->csum_type);
	pl->sectorsize = o->sectorsize ? o->sectorsize : 4096;
	pl->nodesize = btk_mkfs_nodesize(o);
	if (!pow2(pl->sectorsize) || pl->sectorsize < 4096 || pl->sectorsize > 65536)
		return btk_err(EINVAL, "invalid sectorsize %u (a power of two, 4K to 64K)",
			       pl->sectorsize);
	if (!pow2(pl->nodesize) || pl->nodesize < pl->sectorsize || pl->nodesize > 65536)
		return btk_err(EINVAL, "invalid nodesize %u (a power of two, sectorsize to 64K)",
			       pl->nodesize);
	if (o->mixed && pl->nodesize != pl->sectorsize)
		return btk_err(EINVAL,
			       "with mixed block groups nodesize (%u) must equal sectorsize "
			       "(%u)",
			       pl->nodesize, pl->sectorsize);
	if (o->dev_uuid && o->ndevs != 1)
		return btk_err(EINVAL, "a device uuid is for a one-device filesystem (%d devices)",
			       o->ndevs);
	if (o->label && strlen(o->label) >= BTK_LABEL_SIZE)
		return btk_err(EINVAL, "label is longer than %d bytes", BTK_LABEL_SIZE - 1);
	pl->meta = o->meta_profile != BTK_PROFILE_DEFAULT ? o->meta_profile
		   : o->mixed				  ? 0
		   : o->ndevs > 1			  ? BTRFS_BLOCK_GROUP_RAID1
							  : BTRFS_BLOCK_GROUP_DUP;
	pl->data = o->data_profile != BTK_PROFILE_DEFAULT ? o->data_profile
		   : o->mixed				  ? pl->meta
							  : 0;
	if ((ret = check_profile(pl->meta, "metadata", o->ndevs)) ||
	    (ret = check_profile(pl->data, "data", o->ndevs)))
		return ret;
	if (o->mixed && pl->meta != pl->data)
		return btk_err(EINVAL,
			       "with mixed block groups data and metadata profiles must match");
	pl->incompat = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF;
	for (const struct btk_mkfs_feature *f = features; f->name; f++)
		if (f->dflt) {
			pl->incompat |= f->incompat;
			pl->compat_ro |= f->compat_ro;
		}
	pl->incompat = (pl->incompat | o->features_on) & ~o->features_off;
	pl->compat_ro = (pl->compat_ro | o->ro_on) & ~o->ro_off;
	pl->incompat |= BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF;
	if (o->mixed)
		pl->incompat |= BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS;
	if (pl->incompat & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS && !o->mixed)
		return btk_err(EINVAL, "use -M for mixed block groups");
	if ((pl->meta | pl->data) & BTRFS_BLOCK_GROUP_RAID56_MASK)
		pl->incompat |= BTRFS_FEATURE_INCOMPAT_RAID56;
	if ((pl->meta | pl->data) & (BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4))
		pl->incompat |= BTRFS_FEATURE_INCOMPAT_RAID1C34;
	pl->extra = o->extra_on;
	if ((pl->incompat & BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA) && !(pl->extra & BTK_MKFS_QUOTA))
		return btk_err(EINVAL, "squota needs quota (-O squota turns both on)");
	if ((pl->extra & BTK_MKFS_QUOTA) && !o->count_qgroups)
		return btk_err(EINVAL, "quotas need a qgroup counting hook (btk_qgroups_rescan)");
	if ((pl->compat_ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE) &&
	    !(pl->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		return btk_err(EINVAL, "block-group-tree needs free-space-tree");
	/* mkfs.btrfs 6.2's minimum device size (btrfs_min_dev_size) */
	if (o->mixed) {
		pl->min_size = 2 * (4 * SZ_1M + ((uint64_t)pl->nodesize << 10));
	} else {
		uint64_t ms = (pl->meta & BTRFS_BLOCK_GROUP_DUP) ? 2 : 1;
		uint64_t ds = (pl->data & BTRFS_BLOCK_GROUP_DUP) ? 2 : 1;
		pl->min_size = 21 * SZ_1M;
		pl->min_size +=
		    ms * ((pl->meta & BTRFS_BLOCK_GROUP_PROFILE_MASK) ? 40 : 16) * SZ_1M;
		pl->min_size += ds * ((pl->data & BTRFS_BLOCK_GROUP_PROFILE_MASK) ? 64 : 8) * SZ_1M;
	}
	return 0;
}

/* ---- devices ---- */

/* Opens the devices (existed[i] false for each image file this call made, which a failure
 * later removes). */
static int open_devices(const struct btk_mkfs_opts *o, const struct plan *pl, bool *existed,
			struct btk_fs *fs)
{
	struct btk_dev_opts dopts = o->dev;
	struct btk_dev **devs;
	char h1[16], h2[16];
	int ret = btk_paths_distinct(o->paths, o->ndevs);

	for (int i = 0; i < o->ndevs; i++)
		existed[i] = true; /* until the open says it made the file */
	for (int i = 0; !ret && i < o->ndevs; i++) {
		struct stat st;
		if (btk_dev_name_stat(o->paths[i], &st) && !o->byte_count)
			return btk_err(ENOENT,
				       "%s: does not exist (give -b to create an image file)",
				       o->paths[i]);
		if (!btk_dev_name_stat(o->paths[i], &st) && S_ISDIR(st.st_mode))
			return btk_err(EISDIR,
				       "%s: is a directory (give an image file or a block "
				       "device)",
				       o->paths[i]);
	}
	if (ret)
		return ret;
	fs->devs = calloc((size_t)o->ndevs, sizeof(*fs->devs));
	devs = calloc((size_t)o->ndevs, sizeof(*devs));
	if (!fs->devs || !devs) {
		free(devs);
		return btk_err(ENOMEM, "out of memory");
	}
	dopts.write = dopts.create = true;
	dopts.no_clobber = !o->inplace && !o->force;
	/* in use, locked, probed, opened exclusively, wrapped: or none of them */
	ret = btk_devs_open(o->paths, o->ndevs, &dopts, devs);
	for (int i = 0; i < o->ndevs; i++) /* the open removed what it made if it failed */
		existed[i] = ret || !devs[i]->created;
	for (int i = 0; !ret && i < o->ndevs; i++) {
		fs->devs[i].dev = devs[i];
		fs->devs[i].devid = (uint64_t)i + 1;
	}
	free(devs);
	if (ret)
		return ret;
	fs->ndevs = o->ndevs;
	for (int i = 0; i < o->ndevs; i++) {
		const char *path = o->paths[i];
		struct btk_fs_dev *d = &fs->devs[i];
		bool exists = existed[i];
		uint64_t size;

		if (!exists) {
			/* a new image file gets its full size (sparse) */
			if ((ret = btk_dev_truncate(d->dev, o->byte_count)))
				return btk_err(-ret, "%s: cannot size the new image: %s", path,
					       strerror(-ret));
		}
		if (o->shrink && d->dev->fixed_size)
			return btk_err(EINVAL, "%s: --shrink works on image files only", path);
		if (exists && o->shrink && o->byte_count > d->dev->size) {
			/* room to build in; the commit truncates the file to what it needs */
			if ((ret = btk_dev_truncate(d->dev, o->byte_count)))
				return btk_err(-ret, "%s: cannot grow the image: %s", path,
					       strerror(-ret));
		}
		size = d->dev->size;
		if (o->byte_count) {
			if (exists && o->byte_count > size)
				return btk_err(
				    EINVAL,
				    "%s: size %s (%llu bytes) is larger than the device (%s)", path,
				    btk_human(o->byte_count, h1, sizeof(h1)),
				    (unsigned long long)o->byte_count,
				    btk_human(size, h2, sizeof(h2)));
			size = o->byte_count;
		}
		size -= size % pl->sectorsize;
		if (size < pl->min_size && !o->inplace)
			return btk_err(ENOSPC,
				       "%s: is too small to make a usable filesystem "
				       "(%s; the minimum size for each device is %s, %llu bytes)",
				       path, btk_human(size, h1, sizeof(h1)),
				       btk_human(pl->min_size, h2, sizeof(h2)),
				       (unsigned long long)pl->min_size);
		d->total_bytes = size;
	}
	return 0;
}

static void make_uuid(const struct btk_fs *fs, bool derive, const char *tag, uint64_t n, uint8_t *u)
{
	btk_uuid_make(derive ? fs->fsid : NULL, tag, n, u);
}

static void init_super(const struct btk_mkfs_opts *o, const struct plan *pl, struct btk_fs *fs)
{
	struct btk_super *sb = &fs->sb;
	uint64_t total = 0;

	for (int i = 0; i < fs->ndevs; i++)
		total += fs->devs[i].total_bytes;
	memcpy(sb->fsid, fs->fsid, BTK_FSID_SIZE);
	btk_put64(sb->magic, BTK_MAGIC);
	btk_put64(sb->total_bytes, total);
	btk_put64(sb->root_dir_objectid, BTRFS_ROOT_TREE_DIR_OBJECTID);
	btk_put64(sb->num_devices, (uint64_t)fs->ndevs);
	btk_put32(sb->sectorsize, pl->sectorsize);
	btk_put32(sb->nodesize, pl->nodesize);
	btk_put32(sb->leafsize, pl->nodesize);
	btk_put32(sb->stripesize, pl->sectorsize);
	btk_put64(sb->incompat_flags, pl->incompat);
	btk_put64(sb->compat_ro_flags, pl->compat_ro);
	btk_put16(sb->csum_type, (uint16_t)o->csum_type);
	if (!(pl->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		btk_put64(sb->cache_generation, UINT64_MAX); /* no v1 cache yet: kernel builds it */
	if (o->label)
		snprintf(sb->label, sizeof(sb->label), "%s", o->label);
	fs->nodesize = pl->nodesize;
	fs->sectorsize = pl->sectorsize;
	fs->stripesize = pl->sectorsize;
	fs->csum_type = o->csum_type;
	fs->csum_size = btk_csum_size(o->csum_type);
	memcpy(fs->meta_uuid, fs->fsid, BTK_FSID_SIZE);
}

/* ---- contents ---- */

/* A top directory as mkfs.btrfs makes it: 0755, one link, nbytes as given, times now. */
static struct btk_inode_attr top_attr(time_t now, uint64_t nbytes)
{
	struct btk_time tm = {.sec = (uint64_t)now};

	return (struct btk_inode_attr){.mode = 040755,
				       .nlink = 1,
				       .nbytes = nbytes,
				       .atime = tm,
				       .ctime = tm,
				       .mtime = tm,
				       .otime = tm};
}

static int insert_dev_items(struct btk_trans *t)
{
	struct btk_fs *fs = btk_trans_fs(t);
	int ret = 0;

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		uint8_t di[BTK_DEV_ITEM_SIZE];
		struct btk_key k = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, d->devid};
		btk_dev_item_write(di, d->devid, d->total_bytes, d->bytes_used, fs->sectorsize,
				   d->uuid, fs->fsid);
		ret = btk_item_insert(t, BTRFS_CHUNK_TREE_OBJECTID, &k, di, sizeof(di));
	}
	return ret;
}

/* Quotas on, as `btrfs quota enable` leaves them: a quota tree with its status item; the
 * commit's counting hook gives every subvolume its qgroup and counts them all. Simple quotas
 * (`--simple`): the status says so, and counts every extent from this generation on (its
 * enable_gen, after the kernel's four fields). */
static int create_quota_tree(struct btk_trans *t, bool simple)
{
	uint8_t st[BTK_QGROUP_STATUS_SIMPLE_SIZE] = {0};
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	uint64_t flags = BTRFS_QGROUP_STATUS_FLAG_ON;
	int ret = btk_tree_new(t, BTRFS_QUOTA_TREE_OBJECTID);

	if (simple) {
		flags |= BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE;
		btk_put64(st + sizeof(struct btrfs_qgroup_status_item), btk_trans_id(t));
	}
	BTK_PUT(struct btrfs_qgroup_status_item, st, version, BTRFS_QGROUP_STATUS_VERSION);
	BTK_PUT(struct btrfs_qgroup_status_item, st, generation, btk_trans_id(t));
	BTK_PUT(struct btrfs_qgroup_status_item, st, flags, flags);
	return ret ? ret
		   : btk_item_insert(t, BTRFS_QUOTA_TREE_OBJECTID, &k, st,
				     simple ? sizeof(st) : sizeof(struct btrfs_qgroup_status_item));
}

static int create_trees(struct btk_trans *t, const struct plan *pl, time_t now)
{
	static const uint64_t ids[] = {BTRFS_ROOT_TREE_OBJECTID,   BTRFS_CHUNK_TREE_OBJECTID,
				       BTRFS_EXTENT_TREE_OBJECTID, BTRFS_DEV_TREE_OBJECTID,
				       BTRFS_FS_TREE_OBJECTID,	   BTRFS_CSUM_TREE_OBJECTID,
				       BTRFS_UUID_TREE_OBJECTID,   BTRFS_DATA_RELOC_TREE_OBJECTID};
	struct btk_root_item ri;
	uint8_t *item;
	int ret = 0;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && !ret; i++)
		ret = btk_tree_new(t, ids[i]);
	if (!ret && (pl->compat_ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		ret = btk_tree_new(t, BTRFS_FREE_SPACE_TREE_OBJECTID);
	if (!ret && (pl->compat_ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE))
		ret = btk_tree_new(t, BTRFS_BLOCK_GROUP_TREE_OBJECTID);
	if (!ret && (pl->extra & BTK_MKFS_QUOTA))
		ret = create_quota_tree(t, pl->incompat & BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA);
	if (ret)
		return ret;
	/* the FS tree: a uuid, creation times and its root directory */
	item = (uint8_t *)btk_tree_root_item(t, BTRFS_FS_TREE_OBJECTID);
	if (!item || btk_root_item_parse(item, sizeof(struct btrfs_root_item), &ri))
		return btk_err(EUCLEAN, "the new FS tree has no root item");
	ri.root_dirid = BTRFS_FIRST_FREE_OBJECTID;
	make_uuid(btk_trans_fs(t), pl->derive_uuids, "fs-tree", 0, ri.uuid);
	ri.ctime = ri.otime = (struct btk_time){.sec = (uint64_t)now};
	btk_root_item_write(item, sizeof(struct btrfs_root_item), &ri);
	item = (uint8_t *)btk_tree_root_item(t, BTRFS_DATA_RELOC_TREE_OBJECTID);
	if (!item || btk_root_item_parse(item, sizeof(struct btrfs_root_item), &ri))
		return btk_err(EUCLEAN, "the new data relocation tree has no root item");
	ri.root_dirid = BTRFS_FIRST_FREE_OBJECTID;
	btk_root_item_write(item, sizeof(struct btrfs_root_item), &ri);
	return 0;
}

static int populate(struct btk_trans *t, time_t now)
{
	struct btrfs_root_item *ri = btk_tree_root_item(t, BTRFS_FS_TREE_OBJECTID);
	struct btk_key uk = {btk_le64(ri->uuid), BTRFS_UUID_KEY_SUBVOL, btk_le64(ri->uuid + 8)};
	struct btk_inode_attr a = top_attr(now, btk_trans_fs(t)->nodesize);
	uint8_t subvol[8];
	int ret = insert_dev_items(t);

	/* the top directories through fs; mkfs.btrfs gives them a node's size in nbytes, but
	 * none to the data relocation tree's */
	if (!ret)
		ret = btk_top_dir_create(t, BTRFS_FS_TREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID, &a,
					 true);
	if (!ret) {
		struct btk_inode_attr r = top_attr(now, 0);
		ret = btk_top_dir_create(t, BTRFS_DATA_RELOC_TREE_OBJECTID,
					 BTRFS_FIRST_FREE_OBJECTID, &r, true);
	}
	if (!ret)
		ret = btk_root_dir_create(t, &a);
	btk_put64(subvol, BTRFS_FS_TREE_OBJECTID);
	if (!ret)
		ret = btk_item_insert(t, BTRFS_UUID_TREE_OBJECTID, &uk, subvol, sizeof(subvol));
	return ret;
}

static int alloc_chunks(struct btk_trans *t, const struct btk_mkfs_opts *o, const struct plan *pl,
			struct btk_mkfs_result *res)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t lg;
	int ret;

	res->sys_flags = BTRFS_BLOCK_GROUP_SYSTEM | pl->meta;
	res->meta_flags = BTRFS_BLOCK_GROUP_METADATA | pl->meta;
	res->data_flags = BTRFS_BLOCK_GROUP_DATA | pl->data;
	if (o->mixed)
		res->meta_flags = res->data_flags = res->meta_flags | BTRFS_BLOCK_GROUP_DATA;
	/* mkfs.btrfs keeps its initial 4 MiB system chunk when the profile is single */
	if ((ret = btk_chunk_alloc_size(t, res->sys_flags,
					(pl->meta & BTRFS_BLOCK_GROUP_PROFILE_MASK) ? 0 : 4 * SZ_1M,
					&lg)))
		return ret;
	/* and that chunk carries the fields of its raw construction */
	if (!(pl->meta & BTRFS_BLOCK_GROUP_PROFILE_MASK) &&
	    (ret = btk_chunk_set_io(t, lg, pl->sectorsize, pl->sectorsize, 0)))
		return ret;
	res->sys_bytes = btk_chunk_find(fs, lg)->length;
	if ((ret = btk_chunk_alloc_size(t, res->meta_flags, 0, &lg)))
		return ret;
	res->meta_bytes = btk_chunk_find(fs, lg)->length;
	if (o->mixed) {
		res->data_bytes = res->meta_bytes;
		return 0;
	}
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->type & BTRFS_BLOCK_GROUP_DATA) {
			res->data_bytes += fs->chunks[i]->length; /* laid by the place hook */
			res->data_flags = fs->chunks[i]->type;
		}
	if (res->data_bytes)
		return 0;
	if ((ret = btk_chunk_alloc_size(t, res->data_flags, 0, &lg)))
		return ret;
	res->data_bytes = btk_chunk_find(fs, lg)->length;
	return 0;
}

/* Raw device bytes that logical bytes of a profile take. */
static uint64_t raw_of(uint64_t logical, uint64_t flags, int ndevs)
{
	const struct btk_raid_attr *ra = btk_raid_attr(flags);

	if (!ra)
		return logical;
	if (ra->nparity && ndevs > ra->nparity)
		return logical / (uint64_t)(ndevs - ra->nparity) * (uint64_t)ndevs;
	return logical * (uint64_t)ra->ncopies;
}

static double mib(uint64_t v)
{
	return (double)v / (double)SZ_1M;
}

/* Before the first write: the fill's data, in the data profile's copies, must fit in what
 * the system and metadata chunks leave of the devices (the first MiB of each is reserved). */
static int check_fill_fits(const struct btk_fs *fs, const struct btk_mkfs_opts *o,
			   const struct btk_mkfs_result *res)
{
	uint64_t raw = 0, taken, need;

	if (!o->fill_min_data)
		return 0;
	for (int i = 0; i < fs->ndevs; i++)
		raw += fs->devs[i].total_bytes > SZ_1M ? fs->devs[i].total_bytes - SZ_1M : 0;
	taken = raw_of(res->sys_bytes, res->sys_flags, fs->ndevs);
	if (!o->mixed)
		taken += raw_of(res->meta_bytes, res->meta_flags, fs->ndevs);
	need = raw_of(o->fill_min_data, res->data_flags, fs->ndevs);
	if (taken + need <= raw)
		return 0;
	return btk_err(ENOSPC,
		       "the source needs at least %.1f MiB of device space (%.1f MiB of file data "
		       "in the data profile's copies, %.1f MiB of system and metadata chunks); the "
		       "device%s hold%s %.1f MiB: nothing was written",
		       mib(need + taken), mib(need), mib(taken), fs->ndevs > 1 ? "s" : "",
		       fs->ndevs > 1 ? "" : "s", mib(raw));
}

/* After the fill of a shrinking mkfs: trims the last chunks; when the free metadata is then
 * below room, the devices get room for one more metadata chunk that makes up the difference,
 * placed after everything else, and end where it ends. */
static int shrink_devices(struct btk_trans *t, uint64_t meta_flags, uint64_t room)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t free_bytes = 0, lg, want;
	int ret = btk_chunk_trim_tail(t, room > SHRINK_META_SLACK ? room : SHRINK_META_SLACK);

	for (int i = 0; !ret && i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t used, pinned;
		if (!(c->type & BTRFS_BLOCK_GROUP_METADATA))
			continue;
		if ((ret = btk_bg_usage(t, c->logical, &used, &pinned)))
			return ret;
		free_bytes += c->length - used;
	}
	if (ret || free_bytes >= room)
		return ret;
	want = (room - free_bytes + SZ_1M - 1) / SZ_1M * SZ_1M;
	for (int i = 0; i < fs->ndevs; i++) /* image files only: they grow as written */
		fs->devs[i].total_bytes += 2 * want + SZ_1M;
	ret = btk_chunk_alloc_size(t, meta_flags, want, &lg);
	return ret ? ret : btk_chunk_trim_tail(t, want);
}

/* --slack: room to write after mounting, past the last chunk of each (image) device. */
static void add_slack(struct btk_fs *fs, uint64_t slack)
{
	for (int i = 0; i < fs->ndevs; i++)
		fs->devs[i].total_bytes += slack / 4096 * 4096;
}

static void discard_devices(struct btk_fs *fs)
{
	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_dev *d = fs->devs[i].dev;
		/* best effort, like mkfs.btrfs; files keep their bytes until the wipe */
		if (d->fixed_size && btk_dev_discard(d, 0, fs->devs[i].total_bytes))
			btk_err_clear();
	}
}

/* Clears old signatures as mkfs.btrfs does: the first MiB (other filesystems' superblocks,
 * boot sectors), the last 2 MiB (md, GPT backup) and the btrfs mirror places. Runs before the
 * commit, so it never touches a block of the new filesystem. */
static int wipe_devices(struct btk_fs *fs)
{
	uint8_t *zero = calloc(1, 2 * SZ_1M);
	int ret = zero ? 0 : btk_err(ENOMEM, "out of memory");

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_dev *d = fs->devs[i].dev;
		uint64_t end = d->size;
		ret = btk_dev_write(d, zero, SZ_1M, 0);
		if (!ret && end >= 4 * SZ_1M)
			ret = btk_dev_write(d, zero, 2 * SZ_1M, (end - 2 * SZ_1M) & ~4095ULL);
		for (int m = 1; !ret && m < BTK_SUPER_MIRRORS; m++)
			if (btk_super_offset(m) + BTK_SUPER_SIZE <= end)
				ret = btk_dev_write(d, zero, BTK_SUPER_SIZE, btk_super_offset(m));
	}
	free(zero);
	return ret;
}

static void fill_result(const struct btk_fs *fs, const struct plan *pl, struct btk_mkfs_result *res)
{
	memcpy(res->fsid, fs->fsid, BTK_FSID_SIZE);
	res->nodesize = pl->nodesize;
	res->sectorsize = pl->sectorsize;
	res->total_bytes = btk_le64(fs->sb.total_bytes);
	res->incompat = pl->incompat;
	res->compat_ro = pl->compat_ro;
	res->extra = pl->extra;
	res->csum_type = fs->csum_type;
	/* what is on disk: every chunk of the final map at its final length (--rootdir adds
	 * chunks as it fills them, --shrink trims them after they were made) */
	res->data_bytes = res->meta_bytes = res->sys_bytes = 0;
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		if (c->type & BTRFS_BLOCK_GROUP_SYSTEM)
			res->sys_bytes += c->length;
		else if (c->type & BTRFS_BLOCK_GROUP_METADATA)
			res->meta_bytes += c->length;
		else
			res->data_bytes += c->length;
	}
	if (res->data_flags == res->meta_flags) /* mixed: one kind of chunk */
		res->data_bytes = res->meta_bytes = res->meta_bytes + res->data_bytes;
	res->ndevs = fs->ndevs;
	res->unallocated = 0;
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].total_bytes > fs->devs[i].bytes_used + SZ_1M)
			res->unallocated +=
			    fs->devs[i].total_bytes - fs->devs[i].bytes_used - SZ_1M;
	for (int i = 0; i < fs->ndevs; i++) {
		res->devs[i].devid = fs->devs[i].devid;
		res->devs[i].size = fs->devs[i].total_bytes;
	}
}

/* After a shrinking commit: image files end where the filesystem does. */
static int truncate_images(struct btk_fs *fs)
{
	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_dev *d = fs->devs[i].dev;
		int ret = d->fixed_size ? 0 : btk_dev_truncate(d, fs->devs[i].total_bytes);
		if (ret)
			return btk_err(-ret, "%s: cannot truncate to %llu bytes: %s", d->path,
				       (unsigned long long)fs->devs[i].total_bytes, strerror(-ret));
	}
	return 0;
}

static void remove_created(const struct btk_mkfs_opts *o, const bool *existed)
{
	for (int i = 0; i < o->ndevs; i++)
		if (!existed[i])
			unlink(o->paths[i]);
}

/* One kind's chunk sizes: mkfs.btrfs's small ones for the first SINGLE chunks, else the
 * kernel's; exactly cap bytes when a cap is given. */
static void kind_size(uint64_t flags, uint64_t total, bool first, uint64_t cap,
		      struct btk_chunk_size *s)
{
	if (first && !(flags & BTRFS_BLOCK_GROUP_PROFILE_MASK))
		btk_chunk_size_first(s);
	else
		btk_chunk_size_kernel(flags, total, s);
	if (!cap)
		return;
	s->stripe = s->max_chunk = cap;
	if (s->min_stripe > cap)
		s->min_stripe = cap;
	s->exact = true;
}

/* The sizes of new chunks, while the first chunks are made (first) and after. --shrink keeps
 * chunks small (little is lost when the filesystem is cut to fit); an in-place build sizes
 * metadata chunks by what the fill needs and leaves the rest of the old filesystem's free
 * space to data. Returns false when the kernel's sizes apply. */
static bool plan_geometry(const struct btk_mkfs_opts *o, const struct plan *pl, uint64_t total,
			  bool first, struct btk_geometry *g)
{
	uint64_t cap = 0, meta_cap = 0;

	if (o->shrink) {
		cap = SHRINK_CHUNK;
		meta_cap = SHRINK_META_CHUNK;
		/* a small tree needs little metadata: a smaller chunk wastes less */
		if (o->meta_estimate && o->meta_estimate < meta_cap)
			meta_cap = o->meta_estimate < 4 * SZ_1M
				       ? 4 * SZ_1M
				       : (o->meta_estimate + SZ_1M - 1) / SZ_1M * SZ_1M;
	}
	if (o->inplace && o->meta_estimate) {
		cap = 1024 * SZ_1M;
		meta_cap = btk_inplace_meta_chunk(o->meta_estimate, pl->nodesize);
	}
	if (!first && !cap)
		return false;
	kind_size(BTRFS_BLOCK_GROUP_SYSTEM | pl->meta, total, first, 0, &g->sys);
	kind_size(BTRFS_BLOCK_GROUP_METADATA | pl->meta, total, first, meta_cap, &g->meta);
	kind_size(BTRFS_BLOCK_GROUP_DATA | pl->data, total, first, cap, &g->data);
	return true;
}

int btk_mkfs(const struct btk_mkfs_opts *o, struct btk_mkfs_result *res)
{
	struct btk_fs *fs = NULL;
	struct btk_wfs *w = NULL;
	struct btk_trans *t = NULL;
	struct btk_geometry geo;
	struct plan pl = {0};
	uint8_t chunk_uuid[BTK_UUID_SIZE];
	bool existed[64] = {false};
	bool committing = false;
	int ret = plan_options(o, &pl);

	memset(res, 0, sizeof(*res));
	if (ret)
		return ret;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return btk_err(ENOMEM, "out of memory");
	fs->writable = true;
	if (o->fsid)
		memcpy(fs->fsid, o->fsid, BTK_FSID_SIZE);
	else
		btk_uuid_make(NULL, NULL, 0, fs->fsid);
	pl.derive_uuids = o->fsid != NULL;
	make_uuid(fs, pl.derive_uuids, "chunk-tree", 0, chunk_uuid);
	ret = open_devices(o, &pl, existed, fs);
	for (int i = 0; !ret && i < fs->ndevs; i++)
		make_uuid(fs, pl.derive_uuids, "device", fs->devs[i].devid, fs->devs[i].uuid);
	if (!ret && o->dev_uuid)
		memcpy(fs->devs[0].uuid, o->dev_uuid, BTK_UUID_SIZE);
	if (!ret) {
		init_super(o, &pl, fs);
		fs->cache = btk_cache_new((uint64_t)(o->cache_mb ? o->cache_mb : 256) << 20);
		ret = fs->cache ? 0 : btk_err(ENOMEM, "out of memory");
	}
	if (!ret)
		ret = btk_write_new(fs, chunk_uuid, pl.derive_uuids ? fs->fsid : NULL, &w);
	if (!ret && (pl.extra & BTK_MKFS_QUOTA))
		btk_write_on_settled(w, o->count_qgroups, NULL);
	if (!ret)
		ret = btk_trans_start(w, &t);
	if (!ret && plan_geometry(o, &pl, btk_le64(fs->sb.total_bytes), true, &geo))
		btk_trans_set_geometry(t, &geo);
	if (!ret && o->place)
		ret = o->place(o->fill_ctx, t);
	if (!ret)
		ret = alloc_chunks(t, o, &pl, res);
	if (!ret)
		btk_trans_set_geometry(
		    t,
		    plan_geometry(o, &pl, btk_le64(fs->sb.total_bytes), false, &geo) ? &geo : NULL);
	if (!ret)
		ret = create_trees(t, &pl, o->now);
	if (!ret)
		ret = populate(t, o->now);
	if (!ret)
		ret = check_fill_fits(fs, o, res);
	if (!ret) {
		/* everything so far lives in memory: the first byte is written from here on (a
		 * fill writes file data and may write tree blocks early, so the wipe goes first) */
		if (o->discard && !o->inplace)
			discard_devices(fs);
		if (!o->inplace)
			ret = wipe_devices(fs);
	}
	if (!ret && o->fill)
		ret = o->fill(o->fill_ctx, t);
	if (!ret && o->shrink)
		ret = shrink_devices(t, res->meta_flags, btk_kernel_meta_room(pl.nodesize));
	if (!ret && o->shrink)
		add_slack(fs, o->slack);
	if (!ret && o->erase_len)
		ret = btk_trans_erase_with_super(t, o->erase_off, o->erase_len);
	if (!ret) {
		committing = true;
		ret = btk_trans_commit(t);
		t = NULL;
	}
	if (!ret && o->shrink)
		ret = truncate_images(fs);
	if (t)
		btk_trans_abort(t);
	if (!ret)
		fill_result(fs, &pl, res);
	btk_write_close(w);
	btk_fs_close(fs);
	if (ret && !committing)
		remove_created(o, existed);
	return ret;
}
