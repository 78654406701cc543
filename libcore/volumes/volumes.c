/* volumes.c — the devices of a filesystem: member devices, superblock choice, the system chunk
 * array and the chunk map. Reading the chunk tree is the tree layer's (tree/open.c). */
#include "volumes/volumes.h"
#include "base/csum.h"
#include "base/error.h"

#include <blkid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int btk_fs_dev_forget(struct btk_fs *fs, uint64_t devid)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);

	if (!d)
		return btk_err(ENOENT, "devid %llu: no such device", (unsigned long long)devid);
	if (d->dev)
		return btk_err(EBUSY, "devid %llu is open", (unsigned long long)devid);
	for (int i = 0; i < fs->nchunks; i++)
		for (int s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].devid == devid)
				return btk_err(EBUSY, "devid %llu still holds chunk %llu",
					       (unsigned long long)devid,
					       (unsigned long long)fs->chunks[i]->logical);
	int at = (int)(d - fs->devs);
	memmove(d, d + 1, (size_t)(fs->ndevs - at - 1) * sizeof(*d));
	fs->ndevs--;
	return 0;
}

struct btk_fs_dev *btk_fs_dev_find(struct btk_fs *fs, uint64_t devid)
{
	int lo = 0, hi = fs->ndevs;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (fs->devs[mid].devid == devid)
			return &fs->devs[mid];
		if (fs->devs[mid].devid < devid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_dev(const void *a, const void *b)
{
	uint64_t x = ((const struct btk_fs_dev *)a)->devid,
		 y = ((const struct btk_fs_dev *)b)->devid;
	return x < y ? -1 : x > y;
}

/* Adds (or completes) the entry for devid; keeps the array sorted. */
struct btk_fs_dev *btk_fs_dev_add(struct btk_fs *fs, uint64_t devid)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid), *nv;

	if (d)
		return d;
	nv = realloc(fs->devs, (size_t)(fs->ndevs + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	fs->devs = nv;
	memset(&fs->devs[fs->ndevs], 0, sizeof(*nv));
	fs->devs[fs->ndevs].devid = devid;
	fs->devs[fs->ndevs].super_mirror = -1;
	fs->ndevs++;
	qsort(fs->devs, (size_t)fs->ndevs, sizeof(*nv), cmp_dev);
	return btk_fs_dev_find(fs, devid);
}

void btk_fs_dev_fill(struct btk_fs_dev *d, const uint8_t *item)
{
	d->total_bytes = BTK_GET(struct btrfs_dev_item, item, total_bytes);
	d->bytes_used = BTK_GET(struct btrfs_dev_item, item, bytes_used);
	memcpy(d->uuid, item + offsetof(struct btrfs_dev_item, uuid), BTK_UUID_SIZE);
}

/* Opens one device and reads its superblocks; *best is the chosen copy's index. */
static int open_member(const char *path, const struct btk_open_opts *o, struct btk_dev **dev,
		       struct btk_super_copy *copies, int *best)
{
	int ret = btk_dev_open(path, o->write ? BTK_OPEN_WRITE | BTK_OPEN_EXCL : 0, dev);

	if (ret)
		return ret;
	ret = btk_super_read_all(*dev, copies);
	if (ret >= 0 && o->super_mirror >= 0) {
		if (o->super_mirror >= BTK_SUPER_MIRRORS || !copies[o->super_mirror].valid)
			ret = btk_err(
			    EUCLEAN, "%s: superblock copy %d is not valid%s%s", path,
			    o->super_mirror, o->super_mirror < BTK_SUPER_MIRRORS ? ": " : "",
			    o->super_mirror < BTK_SUPER_MIRRORS ? copies[o->super_mirror].why : "");
		else
			ret = o->super_mirror;
	}
	if (ret < 0) {
		btk_dev_close(*dev);
		*dev = NULL;
		return ret;
	}
	if (ret > 0 && o->super_mirror < 0)
		btk_warn("%s: primary superblock %s (%s); using the copy at %llu", path,
			 copies[0].present ? "invalid" : "missing", copies[0].why,
			 (unsigned long long)copies[ret].offset);
	*best = ret;
	return 0;
}

/* Adds a device to fs if its superblock belongs to the filesystem; *added tells. */
static int add_member(struct btk_fs *fs, const char *path, const struct btk_open_opts *o, bool must,
		      bool *added)
{
	struct btk_super_copy *copies = malloc(sizeof(*copies) * BTK_SUPER_MIRRORS);
	struct btk_dev *dev = NULL;
	struct btk_fs_dev *d;
	int best, ret;

	*added = false;
	if (!copies)
		return btk_err(ENOMEM, "out of memory");
	ret = open_member(path, o, &dev, copies, &best);
	if (ret)
		goto out;
	const struct btk_super *sb = &copies[best].sb;
	uint64_t devid = BTK_GET(struct btrfs_dev_item, sb->dev_item, devid);
	if (fs->ndevs && memcmp(sb->fsid, fs->fsid, BTK_FSID_SIZE)) {
		ret = must ? btk_err(EINVAL, "%s: belongs to another filesystem", path) : 0;
		goto out;
	}
	d = btk_fs_dev_find(fs, devid);
	if (d && d->dev) {
		ret = must ? btk_err(EINVAL, "%s: devid %llu given twice (also %s)", path,
				     (unsigned long long)devid, d->dev->path)
			   : 0;
		goto out;
	}
	if (!fs->ndevs || btk_le64(sb->generation) > fs->generation) {
		fs->sb = *sb;
		fs->generation = btk_le64(sb->generation);
		memcpy(fs->fsid, sb->fsid, BTK_FSID_SIZE);
	}
	if (!(d = btk_fs_dev_add(fs, devid))) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	d->dev = dev;
	d->super_mirror = best;
	btk_fs_dev_fill(d, sb->dev_item);
	dev = NULL;
	*added = true;
out:
	btk_dev_close(dev);
	free(copies);
	return ret;
}

static int count_present(const struct btk_fs *fs)
{
	int n = 0;

	for (int i = 0; i < fs->ndevs; i++)
		n += fs->devs[i].dev != NULL;
	return n;
}

/* Finds the other members with libblkid (block devices only; image files must be named). */
static void scan_members(struct btk_fs *fs, const struct btk_open_opts *o)
{
	blkid_cache cache;
	blkid_dev_iterate it;
	blkid_dev bd;
	bool added;

	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return;
	blkid_probe_all(cache);
	it = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(it, "TYPE", "btrfs");
	while (blkid_dev_next(it, &bd) == 0 &&
	       (uint64_t)count_present(fs) < btk_le64(fs->sb.num_devices))
		add_member(fs, blkid_dev_devname(bd), o, false, &added);
	blkid_dev_iterate_end(it);
	blkid_put_cache(cache);
	btk_err_clear();
}

static int cmp_chunk(const void *a, const void *b)
{
	uint64_t x = (*(struct btk_chunk *const *)a)->logical;
	uint64_t y = (*(struct btk_chunk *const *)b)->logical;
	return x < y ? -1 : x > y;
}

/* Adds a chunk, replacing one at the same logical address (the chunk tree wins over the
 * superblock's copy). Keeps the array sorted and rejects overlaps. */
int btk_chunk_map_add(struct btk_fs *fs, struct btk_chunk *c)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical == c->logical) {
			free(fs->chunks[i]);
			fs->chunks[i] = c;
			return 0;
		}
	struct btk_chunk **nv = realloc(fs->chunks, (size_t)(fs->nchunks + 1) * sizeof(*nv));
	if (!nv) {
		free(c);
		return btk_err(ENOMEM, "out of memory");
	}
	fs->chunks = nv;
	fs->chunks[fs->nchunks++] = c;
	qsort(fs->chunks, (size_t)fs->nchunks, sizeof(*nv), cmp_chunk);
	return 0;
}

int btk_chunk_map_check(const struct btk_fs *fs)
{
	for (int i = 1; i < fs->nchunks; i++) {
		const struct btk_chunk *a = fs->chunks[i - 1], *b = fs->chunks[i];
		if (a->logical + a->length > b->logical)
			return btk_err(EUCLEAN, "chunks at %llu and %llu overlap",
				       (unsigned long long)a->logical,
				       (unsigned long long)b->logical);
	}
	return 0;
}

static int load_sys_array(struct btk_fs *fs)
{
	const uint8_t *a = fs->sb.sys_chunk_array;
	uint32_t size = btk_le32(fs->sb.sys_chunk_array_size), pos = 0;

	while (pos < size) {
		struct btk_key k;
		struct btk_chunk *c;
		int ret;

		if (size - pos < sizeof(struct btk_disk_key) + offsetof(struct btrfs_chunk, stripe))
			return btk_err(EUCLEAN, "superblock system chunk array truncated at %u",
				       pos);
		btk_disk_to_key((const struct btk_disk_key *)(a + pos), &k);
		pos += sizeof(struct btk_disk_key);
		if (k.type != BTRFS_CHUNK_ITEM_KEY)
			return btk_err(EUCLEAN, "system chunk array: unexpected key type %u at %u",
				       k.type, pos);
		uint16_t n = BTK_GET(struct btrfs_chunk, a + pos, num_stripes);
		uint32_t len = (uint32_t)(offsetof(struct btrfs_chunk, stripe) +
					  n * sizeof(struct btrfs_stripe));
		if (len > size - pos)
			return btk_err(EUCLEAN, "system chunk array: chunk %llu overruns the array",
				       (unsigned long long)k.offset);
		ret = btk_chunk_parse(a + pos, len, k.offset, fs->sectorsize, &c);
		if (ret)
			return ret;
		if ((ret = btk_chunk_map_add(fs, c)))
			return ret;
		pos += len;
	}
	if (!fs->nchunks)
		return btk_err(EUCLEAN, "superblock system chunk array is empty");
	return btk_chunk_map_check(fs);
}

int btk_volumes_check_missing(struct btk_fs *fs, const struct btk_open_opts *o)
{
	char buf[256] = "";
	size_t pos = 0;
	int missing = 0;

	for (int i = 0; i < fs->ndevs; i++) {
		if (fs->devs[i].dev)
			continue;
		missing++;
		if (pos < sizeof(buf))
			pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%s%llu",
						missing > 1 ? ", " : "",
						(unsigned long long)fs->devs[i].devid);
	}
	if (!missing)
		return 0;
	if (o->degraded) {
		btk_warn("missing device(s): devid %s", buf);
		return 0;
	}
	return btk_err(ENODEV, "missing device(s): devid %s (give every member device)", buf);
}

static int setup(struct btk_fs *fs)
{
	uint64_t incompat = btk_le64(fs->sb.incompat_flags);

	fs->nodesize = btk_le32(fs->sb.nodesize);
	fs->sectorsize = btk_le32(fs->sb.sectorsize);
	fs->stripesize = btk_le32(fs->sb.stripesize);
	fs->csum_type = btk_le16(fs->sb.csum_type);
	fs->csum_size = btk_csum_size(fs->csum_type);
	memcpy(fs->meta_uuid,
	       incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID ? fs->sb.metadata_uuid : fs->sb.fsid,
	       BTK_FSID_SIZE);
	return load_sys_array(fs);
}

int btk_volumes_open(const char *const *paths, int n, const struct btk_open_opts *opts,
		     struct btk_fs **out)
{
	struct btk_open_opts o = {.super_mirror = -1};
	struct btk_fs *fs;
	bool added;
	int ret = 0;

	if (opts)
		o = *opts;
	if (n < 1)
		return btk_err(EINVAL, "no device given");
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return btk_err(ENOMEM, "out of memory");
	fs->writable = o.write;
	for (int i = 0; i < n && !ret; i++)
		ret = add_member(fs, paths[i], &o, true, &added);
	if (!ret && (uint64_t)count_present(fs) < btk_le64(fs->sb.num_devices) && !o.no_scan)
		scan_members(fs, &o);
	if (!ret)
		ret = setup(fs);
	if (ret) {
		btk_volumes_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

void btk_volumes_close(struct btk_fs *fs)
{
	if (!fs)
		return;
	for (int i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i]);
	free(fs->chunks);
	for (int i = 0; i < fs->ndevs; i++)
		btk_dev_close(fs->devs[i].dev);
	free(fs->devs);
	free(fs);
}
