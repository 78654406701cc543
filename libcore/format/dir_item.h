/* dir_item.h — entries packed in one name item (layer 0): the one walk over them.
 *
 * DIR_ITEM, DIR_INDEX and XATTR_ITEM bodies are a run of entries, each a struct btrfs_dir_item
 * (location key, transid, data_len, name_len, type), then name_len bytes of name, then
 * data_len bytes of data (an xattr's value; nothing for directory entries). A DIR_ITEM or
 * XATTR_ITEM holds more than one entry when names collide in the hash.
 * INODE_REF bodies are a run of {index u64, name_len u16, name}; INODE_EXTREF bodies a run of
 * {parent u64, index u64, name_len u16, name}. ROOT_REF and ROOT_BACKREF bodies hold one
 * {dirid u64, sequence u64, name_len u16, name}.
 * The walks below trust nothing in the item: every length is checked against the item's size.
 * Pure functions over caller-owned bytes: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_DIR_ITEM_H
#define BTK_FORMAT_DIR_ITEM_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

#define BTK_DIR_ENTRY_HEAD    ((uint32_t)sizeof(struct btrfs_dir_item))
#define BTK_INODE_REF_HEAD    ((uint32_t)sizeof(struct btrfs_inode_ref))
#define BTK_INODE_EXTREF_HEAD ((uint32_t)offsetof(struct btrfs_inode_extref, name))
#define BTK_ROOT_REF_HEAD     ((uint32_t)sizeof(struct btrfs_root_ref))

/* One entry of a DIR_ITEM, DIR_INDEX or XATTR_ITEM. */
struct btk_dir_ent {
	const uint8_t *head; /* its struct btrfs_dir_item (location, transid: btk_dir_ent_*) */
	const char *name;    /* name_len bytes, not NUL-terminated */
	const uint8_t *data; /* data_len bytes */
	uint16_t name_len, data_len;
	uint8_t type; /* BTRFS_FT_* */
};

/* A walk over the entries of one item (INODE_REF and INODE_EXTREF walks too); the bytes stay
 * the caller's. */
struct btk_dir_iter {
	const uint8_t *d;
	uint32_t size;
	uint32_t at;   /* offset of the entry last returned, or of the bad one */
	uint32_t next; /* where the next one starts */
};

static inline void btk_dir_iter_init(struct btk_dir_iter *it, const uint8_t *d, uint32_t size)
{
	it->d = d;
	it->size = size;
	it->at = it->next = 0;
}

/* The first step of every walk: the entry at it->next becomes the one at it->at. 0 at the end
 * of the item, -EUCLEAN when fewer than head bytes are left, else 1 with *h the entry and
 * *left its bytes to the end of the item. */
static inline int btk_dir_iter_step(struct btk_dir_iter *it, uint32_t head, const uint8_t **h,
				    uint32_t *left)
{
	*left = it->size - it->next;
	*h = it->d + it->next;
	it->at = it->next;
	if (it->next >= it->size)
		return 0;
	return *left < head ? -EUCLEAN : 1;
}

/* 1: *e holds the next entry (at it->at); 0: the end of the item; -EUCLEAN: the entry at
 * it->at overruns the item (its header or its name and data). After an error the iterator
 * stays on the bad entry. */
static inline int btk_dir_next(struct btk_dir_iter *it, struct btk_dir_ent *e)
{
	const uint8_t *h;
	uint32_t left;
	int ret = btk_dir_iter_step(it, BTK_DIR_ENTRY_HEAD, &h, &left);

	if (ret <= 0)
		return ret;
	e->name_len = BTK_GET(struct btrfs_dir_item, h, name_len);
	e->data_len = BTK_GET(struct btrfs_dir_item, h, data_len);
	if ((uint32_t)e->name_len + e->data_len > left - BTK_DIR_ENTRY_HEAD)
		return -EUCLEAN;
	e->head = h;
	e->name = (const char *)h + BTK_DIR_ENTRY_HEAD;
	e->data = h + BTK_DIR_ENTRY_HEAD + e->name_len;
	e->type = BTK_GET(struct btrfs_dir_item, h, type);
	it->next += BTK_DIR_ENTRY_HEAD + e->name_len + e->data_len;
	return 1;
}

/* The entry's size in the item (header, name and data). */
static inline uint32_t btk_dir_ent_size(const struct btk_dir_ent *e)
{
	return BTK_DIR_ENTRY_HEAD + e->name_len + e->data_len;
}

/* The key the entry points at: an INODE_ITEM or a subvolume's ROOT_ITEM. */
static inline void btk_dir_ent_location(const struct btk_dir_ent *e, struct btk_key *loc)
{
	btk_disk_to_key(
	    (const struct btk_disk_key *)(e->head + offsetof(struct btrfs_dir_item, location)),
	    loc);
}

/* Rewrites, in place, the location key of the entry whose header is at head (a subvolume's
 * "default" entry pointed at another root). */
static inline void btk_dir_ent_set_location(uint8_t *head, const struct btk_key *loc)
{
	btk_key_to_disk(loc,
			(struct btk_disk_key *)(head + offsetof(struct btrfs_dir_item, location)));
}

static inline uint64_t btk_dir_ent_transid(const struct btk_dir_ent *e)
{
	return BTK_GET(struct btrfs_dir_item, e->head, transid);
}

/* True when an entry of the item holds exactly this name (entries before a bad one count). */
bool btk_dir_item_has_name(const uint8_t *d, uint32_t size, const char *name, uint16_t len);

/* Writes one entry (header, name, data) at dst: BTK_DIR_ENTRY_HEAD + nlen + dlen bytes. A NULL
 * loc writes a zero location (xattrs). */
void btk_dir_ent_write(uint8_t *dst, const struct btk_key *loc, uint64_t transid, uint8_t type,
		       const char *name, uint16_t nlen, const void *data, uint16_t dlen);

/* One back reference of an INODE_REF (parent in the key offset) or INODE_EXTREF. */
struct btk_ref_ent {
	uint64_t parent; /* INODE_EXTREF: from the entry; INODE_REF: the key offset */
	uint64_t index;	 /* the DIR_INDEX offset in the parent */
	const char *name;
	uint16_t name_len;
};

/* A walk over the entries of one INODE_REF or INODE_EXTREF item. */
struct btk_ref_iter {
	struct btk_dir_iter pos; /* pos.at: the entry last returned, or the bad one */
	bool extref;
	uint64_t key_offset;
};

/* k is the item's key: its type says which of the two, its offset is an INODE_REF's parent. */
static inline void btk_ref_iter_init(struct btk_ref_iter *it, const struct btk_key *k,
				     const uint8_t *d, uint32_t size)
{
	btk_dir_iter_init(&it->pos, d, size);
	it->extref = k->type == BTRFS_INODE_EXTREF_KEY;
	it->key_offset = k->offset;
}

/* 1: *r holds the next reference (at it->pos.at); 0: the end; -EUCLEAN: the entry at
 * it->pos.at overruns the item. After an error the iterator stays on the bad entry. */
static inline int btk_ref_next(struct btk_ref_iter *it, struct btk_ref_ent *r)
{
	uint32_t hdr = it->extref ? BTK_INODE_EXTREF_HEAD : BTK_INODE_REF_HEAD;
	const uint8_t *e;
	uint32_t left;
	int ret = btk_dir_iter_step(&it->pos, hdr, &e, &left);

	if (ret <= 0)
		return ret;
	if (it->extref) {
		r->parent = BTK_GET(struct btrfs_inode_extref, e, parent_objectid);
		r->index = BTK_GET(struct btrfs_inode_extref, e, index);
		r->name_len = BTK_GET(struct btrfs_inode_extref, e, name_len);
	} else {
		r->parent = it->key_offset;
		r->index = BTK_GET(struct btrfs_inode_ref, e, index);
		r->name_len = BTK_GET(struct btrfs_inode_ref, e, name_len);
	}
	if (r->name_len > left - hdr)
		return -EUCLEAN;
	r->name = (const char *)e + hdr;
	it->pos.next += hdr + r->name_len;
	return 1;
}

/* Writes one INODE_REF entry (parent unused: it is the key offset) or, with extref, one
 * INODE_EXTREF entry at dst. Returns its size: the head and len bytes of name. */
uint32_t btk_ref_ent_write(uint8_t *dst, bool extref, uint64_t parent, uint64_t index,
			   const char *name, uint16_t len);

/* A ROOT_REF (parent, ROOT_REF, child) or ROOT_BACKREF (child, ROOT_BACKREF, parent) body. */
struct btk_root_ref_ent {
	uint64_t dirid;	   /* the directory in the parent that holds the subvolume's entry */
	uint64_t sequence; /* that entry's DIR_INDEX offset */
	const char *name;
	uint16_t name_len;
};

/* 0, or -EUCLEAN when the size bytes at d are shorter than the header and the name. */
static inline int btk_root_ref_parse(const uint8_t *d, uint32_t size, struct btk_root_ref_ent *r)
{
	if (size < BTK_ROOT_REF_HEAD)
		return -EUCLEAN;
	r->name_len = BTK_GET(struct btrfs_root_ref, d, name_len);
	if (r->name_len > size - BTK_ROOT_REF_HEAD)
		return -EUCLEAN;
	r->dirid = BTK_GET(struct btrfs_root_ref, d, dirid);
	r->sequence = BTK_GET(struct btrfs_root_ref, d, sequence);
	r->name = (const char *)d + BTK_ROOT_REF_HEAD;
	return 0;
}

/* Writes a ROOT_REF / ROOT_BACKREF body at dst; returns its size (head and name). */
uint32_t btk_root_ref_write(uint8_t *dst, uint64_t dirid, uint64_t sequence, const char *name,
			    uint16_t len);

#endif
