/* extent_refs.c — extent record header, inline and keyed back references (see extent_refs.h). */
#include "format/extent_refs.h"

#include <errno.h>
#include <string.h>

#define EI_SZ	((uint32_t)sizeof(struct btrfs_extent_item))
#define TBI_SZ	((uint32_t)sizeof(struct btrfs_tree_block_info))
#define EDR_SZ	((uint32_t)sizeof(struct btrfs_extent_data_ref))
#define SDR_SZ	((uint32_t)sizeof(struct btrfs_shared_data_ref))
#define IREF_SZ ((uint32_t)sizeof(struct btrfs_extent_inline_ref)) /* type + offset */

_Static_assert(IREF_SZ == 9, "inline ref header");
_Static_assert(1 + EDR_SZ == BTK_INLINE_REF_MAX, "largest inline ref");

int btk_extent_head_parse(const struct btk_key *k, const uint8_t *d, uint32_t size,
			  struct btk_extent_head *h)
{
	if (size < EI_SZ)
		return -EUCLEAN;
	memset(h, 0, sizeof(*h));
	h->refs = BTK_GET(struct btrfs_extent_item, d, refs);
	h->generation = BTK_GET(struct btrfs_extent_item, d, generation);
	h->flags = BTK_GET(struct btrfs_extent_item, d, flags);
	h->level = -1;
	h->refs_at = EI_SZ;
	if (k->type == BTRFS_METADATA_ITEM_KEY) {
		h->skinny = true;
		h->level = k->offset < BTK_MAX_LEVEL ? (int)k->offset : BTK_MAX_LEVEL;
		return 0;
	}
	if (!(h->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK))
		return 0;
	if (size - EI_SZ < TBI_SZ) {
		h->refs_at = size;
		return -ENODATA;
	}
	h->has_info = true;
	btk_disk_to_key((const struct btk_disk_key *)(d + EI_SZ), &h->info_key);
	h->level = d[EI_SZ + offsetof(struct btrfs_tree_block_info, level)];
	h->refs_at = EI_SZ + TBI_SZ;
	return 0;
}

uint32_t btk_extent_head_write(uint8_t *d, const struct btk_extent_head *h)
{
	BTK_PUT(struct btrfs_extent_item, d, refs, h->refs);
	BTK_PUT(struct btrfs_extent_item, d, generation, h->generation);
	BTK_PUT(struct btrfs_extent_item, d, flags, h->flags);
	if (!h->has_info)
		return EI_SZ;
	btk_key_to_disk(&h->info_key, (struct btk_disk_key *)(d + EI_SZ));
	d[EI_SZ + offsetof(struct btrfs_tree_block_info, level)] = (uint8_t)h->level;
	return EI_SZ + TBI_SZ;
}

uint32_t btk_inline_ref_size(uint8_t type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		return IREF_SZ;
	case BTRFS_SHARED_DATA_REF_KEY:
		return IREF_SZ + SDR_SZ;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return 1 + EDR_SZ; /* the data ref takes the place of the offset field */
	}
	return 0;
}

static void data_ref(const uint8_t *d, struct btk_extent_ref *r)
{
	r->root = BTK_GET(struct btrfs_extent_data_ref, d, root);
	r->objectid = BTK_GET(struct btrfs_extent_data_ref, d, objectid);
	r->offset = BTK_GET(struct btrfs_extent_data_ref, d, offset);
	r->count = BTK_GET(struct btrfs_extent_data_ref, d, count);
}

int btk_inline_next(struct btk_inline_iter *it, struct btk_extent_ref *r)
{
	const uint8_t *p;
	uint64_t off;

	it->at = it->next;
	if (it->at >= it->size)
		return 0;
	p = it->d + it->at;
	it->len = btk_inline_ref_size(p[0]);
	if (!it->len)
		return -ENOENT;
	if (it->len > it->size - it->at)
		return -EUCLEAN;
	memset(r, 0, sizeof(*r));
	r->type = p[0];
	r->inline_ref = true;
	off = BTK_GET(struct btrfs_extent_inline_ref, p, offset);
	switch (r->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		r->root = off;
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		r->parent = off;
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		r->parent = off;
		r->count = BTK_GET(struct btrfs_shared_data_ref, p + IREF_SZ, count);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		data_ref(p + 1, r);
		break;
	}
	it->next = it->at + it->len;
	return 1;
}

uint32_t btk_keyed_ref_size(uint8_t type)
{
	switch (type) {
	case BTRFS_SHARED_DATA_REF_KEY:
		return SDR_SZ;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return EDR_SZ;
	}
	return 0;
}

int btk_keyed_ref_parse(const struct btk_key *k, const uint8_t *d, uint32_t size,
			struct btk_extent_ref *r)
{
	memset(r, 0, sizeof(*r));
	r->type = k->type;
	switch (k->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		r->root = k->offset;
		return 0;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		r->parent = k->offset;
		return 0;
	case BTRFS_EXTENT_DATA_REF_KEY:
		if (size < btk_keyed_ref_size(k->type))
			return -EUCLEAN;
		data_ref(d, r);
		return 0;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (size < btk_keyed_ref_size(k->type))
			return -EUCLEAN;
		r->parent = k->offset;
		r->count = BTK_GET(struct btrfs_shared_data_ref, d, count);
		return 0;
	}
	return 1;
}

uint32_t btk_inline_ref_write(uint8_t *at, const struct btk_extent_ref *r)
{
	uint32_t len = btk_inline_ref_size(r->type);

	if (!len)
		return 0;
	at[0] = r->type;
	switch (r->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		BTK_PUT(struct btrfs_extent_inline_ref, at, offset, r->root);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		BTK_PUT(struct btrfs_extent_inline_ref, at, offset, r->parent);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		BTK_PUT(struct btrfs_extent_inline_ref, at, offset, r->parent);
		BTK_PUT(struct btrfs_shared_data_ref, at + IREF_SZ, count, r->count);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		BTK_PUT(struct btrfs_extent_data_ref, at + 1, root, r->root);
		BTK_PUT(struct btrfs_extent_data_ref, at + 1, objectid, r->objectid);
		BTK_PUT(struct btrfs_extent_data_ref, at + 1, offset, r->offset);
		BTK_PUT(struct btrfs_extent_data_ref, at + 1, count, r->count);
		break;
	}
	return len;
}

int btk_ref_count_offset(uint8_t type, bool keyed)
{
	switch (type) {
	case BTRFS_SHARED_DATA_REF_KEY:
		return (int)((keyed ? 0 : IREF_SZ) + offsetof(struct btrfs_shared_data_ref, count));
	case BTRFS_EXTENT_DATA_REF_KEY:
		return (int)((keyed ? 0 : 1) + offsetof(struct btrfs_extent_data_ref, count));
	}
	return -1;
}
