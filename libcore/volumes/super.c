/* super.c — read, validate and choose among the superblock copies. */
#include "volumes/super.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/uuid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), -EUCLEAN)

int btk_super_check(const struct btk_super *sb, uint64_t offset, char *why, size_t whylen)
{
	uint8_t sum[BTK_CSUM_MAX];
	int type = btk_le16(sb->csum_type);
	uint32_t secsz = btk_le32(sb->sectorsize), nodesz = btk_le32(sb->nodesize);

	if (btk_le64(sb->magic) != BTK_MAGIC)
		return BAD("no btrfs magic");
	if (!btk_csum_size(type))
		return BAD("unknown checksum type %d", type);
	btk_csum(type, (const uint8_t *)sb + BTK_CSUM_MAX, BTK_SUPER_SIZE - BTK_CSUM_MAX, sum);
	if (memcmp(sum, sb->csum, (size_t)btk_csum_size(type)))
		return BAD("checksum mismatch");
	if (btk_le64(sb->bytenr) != offset)
		return BAD("bytenr %llu does not match its offset %llu",
			   (unsigned long long)btk_le64(sb->bytenr), (unsigned long long)offset);
	if (!is_pow2(secsz) || secsz < BTK_MIN_SECTORSIZE || secsz > BTK_MAX_SECTORSIZE)
		return BAD("invalid sectorsize %u", secsz);
	if (!is_pow2(nodesz) || nodesz < secsz || nodesz > BTK_MAX_NODESIZE)
		return BAD("invalid nodesize %u", nodesz);
	if (sb->root_level >= BTK_MAX_LEVEL || sb->chunk_root_level >= BTK_MAX_LEVEL ||
	    sb->log_root_level >= BTK_MAX_LEVEL)
		return BAD("invalid root level (root %u chunk %u log %u)", sb->root_level,
			   sb->chunk_root_level, sb->log_root_level);
	if (btk_le32(sb->sys_chunk_array_size) > BTK_SYS_ARRAY_SIZE)
		return BAD("system chunk array size %u exceeds %u",
			   btk_le32(sb->sys_chunk_array_size), BTK_SYS_ARRAY_SIZE);
	if (btk_le64(sb->root) % secsz || btk_le64(sb->chunk_root) % secsz ||
	    btk_le64(sb->log_root) % secsz)
		return BAD("tree root not aligned to sectorsize %u", secsz);
	if (!btk_le64(sb->num_devices))
		return BAD("num_devices is 0");
	if (!btk_le64(sb->generation))
		return BAD("generation is 0");
	return 0;
}

int btk_super_read_all(struct btk_dev *dev, struct btk_super_copy copies[BTK_SUPER_MIRRORS])
{
	int best = -1, magic = 0, ret;

	for (int i = 0; i < BTK_SUPER_MIRRORS; i++) {
		struct btk_super_copy *c = &copies[i];

		memset(c, 0, sizeof(*c));
		c->mirror = i;
		c->offset = btk_super_offset(i);
		if (c->offset + BTK_SUPER_SIZE > dev->size)
			continue;
		c->present = true;
		ret = btk_dev_read(dev, &c->sb, sizeof(c->sb), c->offset);
		if (ret) {
			snprintf(c->why, sizeof(c->why), "%s", btk_errmsg());
			continue;
		}
		if (btk_le64(c->sb.magic) == BTK_MAGIC)
			magic++;
		if (btk_super_check(&c->sb, c->offset, c->why, sizeof(c->why)))
			continue;
		c->valid = true;
		if (best < 0 || btk_le64(c->sb.generation) > btk_le64(copies[best].sb.generation))
			best = i;
	}
	if (best >= 0)
		return best;
	if (!copies[0].present)
		return btk_err(ENOENT, "%s: too small to hold a btrfs filesystem (%llu bytes)",
			       dev->path, (unsigned long long)dev->size);
	if (!magic) {
		char why[512];
		if (btk_dev_explain(dev, why, sizeof(why)) > 0)
			return btk_err(ENOENT, "%s: %s", dev->path, why);
		return btk_err(ENOENT, "%s: not a btrfs filesystem (no superblock magic at 64KiB)",
			       dev->path);
	}
	return btk_err(EUCLEAN, "%s: no valid superblock copy (primary: %s)", dev->path,
		       copies[0].why);
}

void btk_super_csum_fill(struct btk_super *sb)
{
	uint8_t sum[BTK_CSUM_MAX];

	btk_csum(btk_le16(sb->csum_type), (const uint8_t *)sb + BTK_CSUM_MAX,
		 BTK_SUPER_SIZE - BTK_CSUM_MAX, sum);
	memcpy(sb->csum, sum, BTK_CSUM_MAX);
}

static const char *const compat_ro_names[64] = {
    "free_space_tree",
    "free_space_tree_valid",
    "verity",
    "block_group_tree",
};
static const char *const incompat_names[64] = {
    "mixed_backref",   "default_subvol", "mixed_groups",     "compress_lzo",
    "compress_zstd",   "big_metadata",	 "extended_iref",    "raid56",
    "skinny_metadata", "no_holes",	 "metadata_uuid",    "raid1c34",
    "zoned",	       "extent_tree_v2", "raid_stripe_tree", NULL,
    "simple_quota",
};

const char *btk_feature_names(int which, uint64_t flags, char *buf, size_t len)
{
	const char *const *names = which == 1 ? compat_ro_names : incompat_names;
	size_t pos = 0;

	buf[0] = 0;
	for (int bit = 0; bit < 64 && pos < len; bit++) {
		if (!(flags & (1ULL << bit)))
			continue;
		int n =
		    names[bit]
			? snprintf(buf + pos, len - pos, "%s%s", pos ? "," : "", names[bit])
			: snprintf(buf + pos, len - pos, "%s0x%llx", pos ? "," : "", 1ULL << bit);
		if (n < 0)
			break;
		pos += (size_t)n;
	}
	return buf;
}

int btk_dev_holds(struct btk_dev *dev, struct btk_holds *h)
{
	struct btk_super_copy c[BTK_SUPER_MIRRORS];
	int best;

	memset(h, 0, sizeof(*h));
	best = btk_super_read_all(dev, c);
	if (best >= 0) {
		snprintf(h->type, sizeof(h->type), "btrfs");
		memcpy(h->label, c[best].sb.label,
		       BTK_LABEL_SIZE < sizeof(h->label) ? BTK_LABEL_SIZE : sizeof(h->label) - 1);
		_Static_assert(sizeof(h->uuid) >= BTK_UUID_STR, "room for a uuid");
		btk_uuid_str(c[best].sb.fsid, h->uuid);
		h->devid = btk_super_devid(&c[best].sb);
		return 0;
	}
	return btk_dev_blkid(dev, h->type, h->label, h->uuid) < 0 ? -EIO : 0;
}
