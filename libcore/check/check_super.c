/* check_super.c — superblock copies on every device, and the totals they claim. */
#include "check/check_priv.h"
#include "format/dev_items.h"
#include "volumes/super.h"

#include <stddef.h>
#include <string.h>

#define KNOWN_INCOMPAT	((1ULL << 17) - 1)
#define KNOWN_COMPAT_RO ((1ULL << 4) - 1)

/* Where a mirror may differ from a primary of its generation: its checksum and own offset, and
 * the log root, which an fsync's log commit writes to the primary alone (the mirrors keep
 * the last transaction's, until the next commit). */
static bool may_differ(size_t i)
{
	static const struct {
		size_t at, len;
	} f[] = {
	    {offsetof(struct btk_super, csum), sizeof(((struct btk_super *)0)->csum)},
	    {offsetof(struct btk_super, bytenr), sizeof(((struct btk_super *)0)->bytenr)},
	    {offsetof(struct btk_super, log_root), sizeof(((struct btk_super *)0)->log_root)},
	    {offsetof(struct btk_super, log_root_level), 1},
	};

	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
		if (i >= f[k].at && i < f[k].at + f[k].len)
			return true;
	return false;
}

/* A mirror the kernel wrote with the primary (the same generation) holds the same bytes but
 * where may_differ says. */
static void copy_vs_primary(struct chk *c, const struct btk_fs_dev *d, const struct btk_super *p,
			    const struct btk_super *s, int m)
{
	const uint8_t *a = (const uint8_t *)p, *b = (const uint8_t *)s;

	for (size_t i = 0; i < sizeof(*p); i++) {
		if (a[i] != b[i] && !may_differ(i)) {
			chk_rep(c, CHK_M_SUPER_COPY_DIFFERS, 0, btk_super_offset(m), NULL,
				CHK_U(d->devid), CHK_S(d->dev->path), CHK_I(m),
				CHK_U(btk_le64(p->generation)), CHK_U(i));
			return;
		}
	}
}

static void check_copies(struct chk *c, const struct btk_fs_dev *d)
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	int best = btk_super_read_all(d->dev, copies);

	if (best < 0) {
		chk_rep(c, CHK_M_SUPER_NONE, 0, 0, NULL, CHK_U(d->devid), CHK_S(d->dev->path));
		return;
	}
	struct chk_devsb *ds = chk_push(c, &c->devsbs);
	if (ds) {
		struct btk_dev_item_ent sdi;
		btk_dev_item_parse(copies[best].sb.dev_item, BTK_DEV_ITEM_SIZE, &sdi);
		ds->devid = sdi.devid;
		memcpy(ds->uuid, sdi.uuid, BTK_UUID_SIZE);
		memcpy(ds->fsid, sdi.fsid, BTK_FSID_SIZE);
	}
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		const struct btk_super_copy *s = &copies[m];
		if (m && s->valid && copies[0].valid &&
		    btk_le64(s->sb.generation) == btk_le64(copies[0].sb.generation))
			copy_vs_primary(c, d, &copies[0].sb, &s->sb, m);
		/* A mirror never written (no magic) is normal on restored and small images; a
		 * copy that claims to be btrfs but fails its checks is not. */
		if (!s->present || s->valid || btk_le64(s->sb.magic) != BTK_MAGIC)
			continue;
		chk_rep(c, CHK_M_SUPER_MIRROR_BAD, 0, s->offset, NULL, CHK_U(d->devid),
			CHK_S(d->dev->path), CHK_I(m), CHK_S(s->why));
	}
	if (!copies[0].valid && copies[0].present)
		chk_rep(c, CHK_M_SUPER_PRIMARY_BAD, 0, copies[0].offset, NULL, CHK_U(d->devid),
			CHK_S(d->dev->path), CHK_S(copies[0].why));
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
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
		chk_rep(c, CHK_M_SUPER_STRIPESIZE, 0, 0, NULL, CHK_U(sec), CHK_U(stripe));
	if (btk_le32(sb->leafsize) != node)
		chk_rep(c, CHK_M_SUPER_LEAFSIZE, 0, 0, NULL, CHK_U(node),
			CHK_U(btk_le32(sb->leafsize)));
	if (node % sec)
		chk_rep(c, CHK_M_SUPER_NODESIZE, 0, 0, NULL, CHK_U(sec), CHK_U(node));
	if (sys < sys_min)
		chk_rep(c, CHK_M_SUPER_SYS_ARRAY, 0, 0, NULL, CHK_U(sys_min), CHK_U(sys));
	if (!btk_le64(sb->total_bytes))
		chk_rep(c, CHK_M_SUPER_TOTAL_ZERO, 0, 0, NULL);
	if (btk_le64(sb->bytes_used) < 6ULL * node)
		chk_rep(c, CHK_M_SUPER_USED_MIN, 0, 0, NULL, CHK_U(6ULL * node),
			CHK_U(btk_le64(sb->bytes_used)));
	if (btk_le64(sb->num_devices) > (1ULL << 31))
		chk_rep(c, CHK_M_SUPER_NUM_DEVICES_MAX, 0, 0, NULL,
			CHK_U(btk_le64(sb->num_devices)));
	struct btk_dev_item_ent sdi;
	btk_dev_item_parse(sb->dev_item, BTK_DEV_ITEM_SIZE, &sdi);
	if (memcmp(sdi.fsid, want_fsid, BTK_FSID_SIZE))
		chk_rep(c, CHK_M_SUPER_DEV_FSID, 0, 0, NULL);
}

/* Chunks the missing devices took their only copy of (data: the open refuses a filesystem
 * that lost metadata): one report, an error, since files are lost with them. */
static void lost_chunks(struct chk *c)
{
	uint64_t n = 0, bytes = 0, first = 0;

	for (int i = 0; i < c->fs->nchunks; i++) {
		const struct btk_chunk *ch = c->fs->chunks[i];
		if (btk_chunk_readable(c->fs, ch))
			continue;
		if (!n++)
			first = ch->logical;
		bytes += ch->length;
	}
	if (n)
		chk_rep(c, CHK_M_DEV_MISSING_DATA, 0, first, NULL, CHK_U(n), CHK_U(bytes),
			CHK_U(first));
}

void chk_supers(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;
	uint64_t incompat = btk_le64(sb->incompat_flags), compat_ro = btk_le64(sb->compat_ro_flags);

	for (int i = 0; i < c->fs->ndevs; i++)
		if (c->fs->devs[i].dev)
			check_copies(c, &c->fs->devs[i]);
		else
			chk_rep(c, CHK_M_DEV_MISSING, 0, 0, NULL, CHK_U(c->fs->devs[i].devid));
	lost_chunks(c);
	if (c->fs->sys_array_scanned)
		chk_rep(c, CHK_M_SYS_ARRAY, 0, 0, NULL, CHK_S(c->fs->sys_array_why));
	if (incompat & ~KNOWN_INCOMPAT)
		chk_rep(c, CHK_M_SUPER_INCOMPAT, 0, 0, NULL, CHK_U((incompat & ~KNOWN_INCOMPAT)));
	if (compat_ro & ~KNOWN_COMPAT_RO)
		chk_rep(c, CHK_M_SUPER_COMPAT_RO, 0, 0, NULL,
			CHK_U((compat_ro & ~KNOWN_COMPAT_RO)));
	super_geometry(c);
	if (btk_le64(sb->flags) & BTK_SUPER_FLAG_ERROR)
		chk_rep(c, CHK_M_SUPER_ERROR_FLAG, 0, 0, NULL);
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
		chk_rep(c, CHK_M_SUPER_DEV_ITEM, 0, 0, NULL, CHK_U(devid), CHK_U(di->total_bytes),
			CHK_U(di->bytes_used), CHK_U(tb), CHK_U(bu));
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
			chk_rep(c, CHK_M_DEV_TOTAL_ALIGN, 3, 0, NULL, CHK_U(di->devid),
				CHK_U(c->fs->sectorsize), CHK_U(di->total_bytes));
	}
	if (btk_le64(sb->total_bytes) % c->fs->sectorsize)
		chk_rep(c, CHK_M_SUPER_TOTAL_ALIGN, 0, 0, NULL, CHK_U(c->fs->sectorsize),
			CHK_U(btk_le64(sb->total_bytes)));
	if (c->devitems.n && btk_le64(sb->num_devices) != c->devitems.n)
		chk_rep(c, CHK_M_SUPER_NUM_DEVICES, 0, 0, NULL, CHK_U(c->devitems.n),
			CHK_U(btk_le64(sb->num_devices)));
	if (c->devitems.n && btk_le64(sb->total_bytes) != total)
		chk_rep(c, CHK_M_SUPER_TOTAL_BYTES, 0, 0, NULL, CHK_U(total),
			CHK_U(btk_le64(sb->total_bytes)));
	for (size_t i = 0; i < c->bgs.n; i++)
		used_bg += ((const struct chk_bg *)btk_vec_at(&c->bgs, i))->found_used;
	if (c->extents.n && !c->extent_gap && btk_le64(sb->bytes_used) != used_bg)
		chk_rep(c, CHK_M_SUPER_BYTES_USED, 0, 0, NULL, CHK_U(used_bg),
			CHK_U(btk_le64(sb->bytes_used)));
}
