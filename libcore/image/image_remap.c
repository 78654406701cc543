/* image_remap.c — a dump of a multi-device filesystem restored onto one device, as btrfs-image
 * does by default: every chunk becomes SINGLE (DUP stays DUP) on that device. A chunk keeps the
 * physical offset of its first stripe unless that overlaps a chunk placed before; those move
 * past the end, clear of superblock mirrors. Chunk-tree leaves and block-group items are
 * rewritten as they stream by (same keys, so no parent changes); the device items and device
 * extents are redone afterwards through the write path (image_fixup.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"
#include "base/error.h"
#include "image/image_int.h"
#include "trans/trans.h"

struct range {
	uint64_t start, end;
};

static bool overlaps(const struct range *v, size_t n, uint64_t s, uint64_t e)
{
	for (size_t i = 0; i < n; i++)
		if (s < v[i].end && v[i].start < e)
			return true;
	return false;
}

static bool holds_super(uint64_t s, uint64_t e)
{
	for (int i = 0; i < BTK_SUPER_MIRRORS; i++)
		if (btk_super_offset(i) < e && s < btk_super_offset(i) + BTK_SUPER_SIZE)
			return true;
	return false;
}

int btk_image_remap_plan(struct btk_chunk **chunks, size_t n, uint64_t devid,
			 const uint8_t uuid[BTK_UUID_SIZE], uint64_t *dev_size, uint64_t *dev_used)
{
	struct range *placed = calloc(2 * n + 1, sizeof(*placed));
	size_t np = 0;
	uint64_t end = 1ULL << 20, used = 0;
	bool *moved = calloc(n + 1, sizeof(bool));

	if (!placed || !moved) {
		free(placed);
		free(moved);
		return btk_err(ENOMEM, "restore layout");
	}
	for (size_t i = 0; i < n; i++) {
		struct btk_chunk *c = chunks[i];
		bool dup = c->type & BTRFS_BLOCK_GROUP_DUP;
		uint64_t p0 = c->stripes[0].offset, p1 = dup ? c->stripes[1].offset : 0;

		if (overlaps(placed, np, p0, p0 + c->length) ||
		    (dup && overlaps(placed, np, p1, p1 + c->length))) {
			moved[i] = true;
			continue;
		}
		placed[np++] = (struct range){p0, p0 + c->length};
		if (dup)
			placed[np++] = (struct range){p1, p1 + c->length};
	}
	for (size_t i = 0; i < np; i++)
		if (placed[i].end > end)
			end = placed[i].end;
	for (size_t i = 0; i < n; i++) {
		struct btk_chunk *c = chunks[i];
		bool dup = c->type & BTRFS_BLOCK_GROUP_DUP;
		int ns = dup ? 2 : 1;

		for (int s = 0; s < ns && moved[i]; s++) {
			uint64_t at = (end + (1ULL << 20) - 1) & ~((1ULL << 20) - 1);
			while (holds_super(at, at + c->length))
				at += 1ULL << 20;
			c->stripes[s].offset = at;
			end = at + c->length;
		}
		c->type &= BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_DUP;
		c->num_stripes = (uint16_t)ns;
		c->sub_stripes = 1;
		for (int s = 0; s < ns; s++) {
			c->stripes[s].devid = devid;
			memcpy(c->stripes[s].dev_uuid, uuid, BTK_UUID_SIZE);
			if (c->stripes[s].offset + c->length > end)
				end = c->stripes[s].offset + c->length;
		}
		used += (uint64_t)ns * c->length;
	}
	free(placed);
	free(moved);
	*dev_size = end;
	*dev_used = used;
	return 0;
}

/* A chunk-tree leaf with every CHUNK_ITEM replaced by its remapped form; the items only
 * shrink, so they always fit. */
static int remap_chunk_leaf(const struct btk_fs *fs, uint8_t *leaf)
{
	uint32_t ns = fs->nodesize, hdr = sizeof(struct btk_header);
	uint32_t n = btk_le32(((struct btk_header *)leaf)->nritems);
	uint8_t *out = calloc(1, ns);
	uint32_t data_end = ns - hdr; /* offsets count from the end of the header */

	if (!out)
		return btk_err(ENOMEM, "restore leaf");
	uint32_t kept = 0;

	memcpy(out, leaf, hdr);
	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *old = (const struct btk_item *)(leaf + hdr) + i;
		struct btk_item *it = (struct btk_item *)(out + hdr) + kept;
		uint32_t off = btk_le32(old->offset), size = btk_le32(old->size);
		struct btk_key k;
		uint8_t item[sizeof(struct btrfs_chunk) + 16 * sizeof(struct btrfs_stripe)];
		const uint8_t *src = leaf + hdr + off;

		btk_disk_to_key(&old->key, &k);
		/* other devices' items go, but never a leaf's first (its parent names that key);
		 * the write path deletes what is left (image_fixup.c) */
		if (k.type == BTRFS_DEV_ITEM_KEY && i > 0 && k.offset != fs->devs[0].devid)
			continue;
		*it = *old;
		kept++;
		if ((uint64_t)off + size > ns - hdr || size > data_end) {
			free(out);
			return btk_err(EUCLEAN, "chunk tree leaf: item %u outside the block", i);
		}
		if (k.type == BTRFS_CHUNK_ITEM_KEY) {
			const struct btk_chunk *c = btk_chunk_find(fs, k.offset);
			if (c && c->logical == k.offset && c->num_stripes <= 16) {
				size = btk_chunk_to_item(c, item);
				src = item;
			}
		}
		data_end -= size;
		memcpy(out + hdr + data_end, src, size);
		btk_put32(it->offset, data_end);
		btk_put32(it->size, size);
	}
	btk_put32(((struct btk_header *)out)->nritems, kept);
	memcpy(leaf, out, ns);
	free(out);
	return 0;
}

/* Block-group items lose their profile bits, as the chunks did. */
static void remap_bg_leaf(uint8_t *leaf)
{
	uint32_t hdr = sizeof(struct btk_header);
	uint32_t n = btk_le32(((struct btk_header *)leaf)->nritems);
	const uint64_t keep = BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_DUP;

	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = (const struct btk_item *)(leaf + hdr) + i;
		uint8_t *p = leaf + hdr + btk_le32(it->offset);
		if (it->key.type != BTRFS_BLOCK_GROUP_ITEM_KEY ||
		    btk_le32(it->size) < sizeof(struct btrfs_block_group_item))
			continue;
		uint64_t f = BTK_GET(struct btrfs_block_group_item, p, flags);
		BTK_PUT(struct btrfs_block_group_item, p, flags, f & keep);
	}
}

int btk_image_remap_block(const struct btk_fs *fs, uint8_t *b, uint64_t logical)
{
	const struct btk_header *h = (const struct btk_header *)b;
	uint64_t owner = btk_le64(h->owner);
	uint32_t n = btk_le32(h->nritems), hdr = sizeof(*h);
	uint8_t csum[BTK_CSUM_MAX];
	int ret = 0;

	if (btk_le64(h->bytenr) != logical || memcmp(h->fsid, fs->meta_uuid, BTK_FSID_SIZE) ||
	    h->level || n > (fs->nodesize - hdr) / sizeof(struct btk_item))
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = (const struct btk_item *)(b + hdr) + i;
		if ((uint64_t)btk_le32(it->offset) + btk_le32(it->size) > fs->nodesize - hdr)
			return 0; /* not a leaf we can edit safely: written as it is */
	}
	if (owner == BTRFS_CHUNK_TREE_OBJECTID)
		ret = remap_chunk_leaf(fs, b);
	else if (owner == BTRFS_EXTENT_TREE_OBJECTID || owner == BTRFS_BLOCK_GROUP_TREE_OBJECTID)
		remap_bg_leaf(b);
	else
		return 0;
	if (ret)
		return ret;
	btk_csum(fs->csum_type, b + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, csum);
	memcpy(b, csum, (size_t)fs->csum_size);
	return 0;
}

int btk_image_csum_fixup(const struct btk_fs *fs, uint8_t *b, uint64_t logical)
{
	const struct btk_header *h = (const struct btk_header *)b;
	uint8_t want[BTK_CSUM_MAX], crc[BTK_CSUM_MAX];
	uint32_t body = fs->nodesize - BTK_CSUM_MAX;

	if (fs->csum_type == BTRFS_CSUM_TYPE_CRC32 || btk_le64(h->bytenr) != logical ||
	    memcmp(h->fsid, fs->meta_uuid, BTK_FSID_SIZE))
		return 0;
	btk_csum(fs->csum_type, b + BTK_CSUM_MAX, body, want);
	if (!memcmp(want, b, (size_t)fs->csum_size))
		return 0;
	btk_csum(BTRFS_CSUM_TYPE_CRC32, b + BTK_CSUM_MAX, body, crc);
	if (memcmp(crc, b, 4))
		return 0; /* some other damage: kept as it is */
	memcpy(b, want, (size_t)fs->csum_size);
	return 1;
}
