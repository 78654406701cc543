/* check_super.c — superblock copies on every device, and the totals they claim. */
#include "check/check_priv.h"
#include "format/dev_items.h"
#include "volumes/super.h"

#include <stddef.h>
#include <string.h>

#define KNOWN_INCOMPAT	((1ULL << 17) - 1)
#define KNOWN_COMPAT_RO ((1ULL << 4) - 1)

static void check_copies(struct chk *c, const struct btk_fs_dev *d)
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	int best = btk_super_read_all(d->dev, copies);

	if (best < 0) {
		chk_report(c, BTK_P_SUPER_NONE, 0, 0, NULL, "a valid superblock", "none",
			   "device %llu (%s): no valid superblock", (unsigned long long)d->devid,
			   d->dev->path);
		return;
	}
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		const struct btk_super_copy *s = &copies[m];
		/* A mirror never written (no magic) is normal on restored and small images; a
		 * copy that claims to be btrfs but fails its checks is not. */
		if (!s->present || s->valid || btk_le64(s->sb.magic) != BTK_MAGIC)
			continue;
		chk_report(c, BTK_P_SUPER_MIRROR_BAD, 0, s->offset, NULL, "valid copy", s->why,
			   "device %llu (%s): superblock mirror %d is bad",
			   (unsigned long long)d->devid, d->dev->path, m);
	}
	if (!copies[0].valid && copies[0].present)
		chk_report(c, BTK_P_SUPER_PRIMARY_BAD, 0, copies[0].offset, NULL, "valid copy",
			   copies[0].why, "device %llu (%s): primary superblock is bad",
			   (unsigned long long)d->devid, d->dev->path);
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void geometry(struct chk *c, const char *field, const char *want, uint64_t have)
{
	chk_report(c, BTK_P_SUPER_GEOMETRY, 0, 0, NULL, want,
		   chk_fmt("%llu", (unsigned long long)have), "superblock %s out of range", field);
}

/* What the kernel (or btrfs check) refuses in the superblock besides what made the copy
 * invalid already (btk_super_check: sizes, levels, root alignment, checksum). */
static void super_geometry(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint32_t sec = btk_le32(sb->sectorsize), node = btk_le32(sb->nodesize);
	uint32_t stripe = btk_le32(sb->stripesize), sys = btk_le32(sb->sys_chunk_array_size);
	/* one key and one chunk item with one stripe: the least a system chunk array holds */
	uint32_t sys_min = sizeof(struct btk_disk_key) + sizeof(struct btrfs_chunk);
	const uint8_t *want_fsid =
	    btk_le64(sb->incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID ? sb->metadata_uuid
										: sb->fsid;

	if (!is_pow2(stripe) || (stripe != sec && stripe != 4096))
		geometry(c, "stripesize", chk_fmt("%u (the sector size)", sec), stripe);
	if (btk_le32(sb->leafsize) != node)
		geometry(c, "leafsize", chk_fmt("%u (the node size)", node),
			 btk_le32(sb->leafsize));
	if (node % sec)
		geometry(c, "nodesize", chk_fmt("a multiple of the sector size %u", sec), node);
	if (sys < sys_min)
		geometry(c, "sys_chunk_array_size", chk_fmt(">= %u", sys_min), sys);
	if (!btk_le64(sb->total_bytes))
		geometry(c, "total_bytes", "> 0", 0);
	if (btk_le64(sb->bytes_used) < 6ULL * node)
		geometry(c, "bytes_used", chk_fmt(">= %llu (6 tree blocks)", 6ULL * node),
			 btk_le64(sb->bytes_used));
	if (btk_le64(sb->num_devices) > (1ULL << 31))
		geometry(c, "num_devices", "<= 2^31", btk_le64(sb->num_devices));
	struct btk_dev_item_ent sdi;
	btk_dev_item_parse(sb->dev_item, BTK_DEV_ITEM_SIZE, &sdi);
	if (memcmp(sdi.fsid, want_fsid, BTK_FSID_SIZE))
		chk_report(c, BTK_P_SUPER_GEOMETRY, 0, 0, NULL, "the filesystem's fsid", "another",
			   "superblock device item fsid differs from the filesystem's");
}

void chk_supers(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint64_t incompat = btk_le64(sb->incompat_flags), compat_ro = btk_le64(sb->compat_ro_flags);

	for (int i = 0; i < c->fs->ndevs; i++)
		if (c->fs->devs[i].dev)
			check_copies(c, &c->fs->devs[i]);
		else
			chk_report(c, BTK_P_DEV_MISSING, 0, 0, NULL, "present", "missing",
				   "device %llu is missing",
				   (unsigned long long)c->fs->devs[i].devid);
	if (incompat & ~KNOWN_INCOMPAT)
		chk_report(c, BTK_P_SUPER_INCOMPAT, 0, 0, NULL, "",
			   chk_fmt("0x%llx", (unsigned long long)(incompat & ~KNOWN_INCOMPAT)),
			   "unknown incompat feature flags");
	if (compat_ro & ~KNOWN_COMPAT_RO)
		chk_report(c, BTK_P_SUPER_COMPAT_RO, 0, 0, NULL, "",
			   chk_fmt("0x%llx", (unsigned long long)(compat_ro & ~KNOWN_COMPAT_RO)),
			   "unknown compat_ro feature flags");
	super_geometry(c);
	if (btk_le64(sb->flags) & BTK_SUPER_FLAG_ERROR)
		chk_report(c, BTK_P_SUPER_ERROR_FLAG, 0, 0, NULL, "", "ERROR flag",
			   "the kernel marked the filesystem as having errors");
}

static void super_dev_item(struct chk *c, const struct chk_devitem *di)
{
	struct btk_dev_item_ent sdi;

	btk_dev_item_parse(c->fs->sb.dev_item, BTK_DEV_ITEM_SIZE, &sdi);
	uint64_t devid = sdi.devid;
	if (devid != di->devid)
		return;
	uint64_t tb = sdi.total_bytes;
	uint64_t bu = sdi.bytes_used;
	if (tb != di->total_bytes || bu != di->bytes_used)
		chk_report(
		    c, BTK_P_SUPER_DEV_ITEM, 0, 0, NULL,
		    chk_fmt("total %llu used %llu (dev item)", (unsigned long long)di->total_bytes,
			    (unsigned long long)di->bytes_used),
		    chk_fmt("total %llu used %llu", (unsigned long long)tb, (unsigned long long)bu),
		    "superblock's copy of device item %llu differs", (unsigned long long)devid);
}

void chk_super_totals(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint64_t total = 0, used_bg = 0;

	for (size_t i = 0; i < c->devitems.n; i++) {
		const struct chk_devitem *di = btk_vec_at(&c->devitems, i);
		total += di->total_bytes;
		super_dev_item(c, di);
		if (di->total_bytes % c->fs->sectorsize)
			chk_report(c, BTK_P_DEV_TOTAL_ALIGN, 3, 0, NULL,
				   chk_fmt("a multiple of %u", c->fs->sectorsize),
				   chk_fmt("%llu", (unsigned long long)di->total_bytes),
				   "device %llu total bytes unaligned",
				   (unsigned long long)di->devid);
	}
	if (btk_le64(sb->total_bytes) % c->fs->sectorsize)
		chk_report(c, BTK_P_SUPER_TOTAL_ALIGN, 0, 0, NULL,
			   chk_fmt("a multiple of %u", c->fs->sectorsize),
			   chk_fmt("%llu", (unsigned long long)btk_le64(sb->total_bytes)),
			   "superblock total bytes unaligned");
	if (c->devitems.n && btk_le64(sb->num_devices) != c->devitems.n)
		chk_report(c, BTK_P_SUPER_NUM_DEVICES, 0, 0, NULL,
			   chk_fmt("%zu (device items)", c->devitems.n),
			   chk_fmt("%llu", (unsigned long long)btk_le64(sb->num_devices)),
			   "superblock number of devices wrong");
	if (c->devitems.n && btk_le64(sb->total_bytes) != total)
		chk_report(c, BTK_P_SUPER_TOTAL_BYTES, 0, 0, NULL,
			   chk_fmt("%llu (sum of device sizes)", (unsigned long long)total),
			   chk_fmt("%llu", (unsigned long long)btk_le64(sb->total_bytes)),
			   "superblock total bytes wrong");
	for (size_t i = 0; i < c->bgs.n; i++)
		used_bg += ((const struct chk_bg *)btk_vec_at(&c->bgs, i))->found_used;
	if (c->extents.n && !c->extent_gap && btk_le64(sb->bytes_used) != used_bg)
		chk_report(c, BTK_P_SUPER_BYTES_USED, 0, 0, NULL,
			   chk_fmt("%llu (sum of extents)", (unsigned long long)used_bg),
			   chk_fmt("%llu", (unsigned long long)btk_le64(sb->bytes_used)),
			   "superblock bytes used wrong");
}
