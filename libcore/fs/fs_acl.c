/* fs_acl.c — what a new inode inherits from its directory's default POSIX ACL, as the
 * kernel's posix_acl_create gives it (the ACL xattr format: a le32 version 2, then entries of
 * le16 tag, le16 permission bits, le32 id). */
#include "fs/fs_edit.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dir_item.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ACL_ACCESS  "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
#define ACL_VERSION 2
#define ACL_HEAD    4
#define ACL_ENTRY   8
#define ACL_MAX	    4096

enum {
	TAG_USER_OBJ = 1,
	TAG_USER = 2,
	TAG_GROUP_OBJ = 4,
	TAG_GROUP = 8,
	TAG_MASK = 0x10,
	TAG_OTHER = 0x20
};

/* The value of xattr name of ino as the transaction sees it, into buf (cap bytes): its length,
 * 0 when absent (an empty value reads as absent too: no ACL is empty), or a negative errno. */
static int xattr_read(struct btk_trans *t, uint64_t root, uint64_t ino, const char *name,
		      uint8_t *buf, size_t cap)
{
	uint16_t len = (uint16_t)strlen(name);
	struct btk_key k = {ino, BTRFS_XATTR_ITEM_KEY, btk_name_hash(name, len)};
	struct btk_dir_iter it;
	struct btk_dir_ent e;
	uint32_t size;
	uint8_t *d;
	int ret = btk_fs_item_get(t, root, &k, &d, &size);

	if (ret)
		return ret < 0 ? ret : 0;
	btk_dir_iter_init(&it, d, size);
	ret = 0;
	while (btk_dir_next(&it, &e) == 1)
		if (e.name_len == len && !memcmp(e.name, name, len)) {
			if (e.data_len > cap)
				ret = btk_err(E2BIG, "inode %llu: %s of %u bytes",
					      (unsigned long long)ino, name, e.data_len);
			else
				memcpy(buf, e.data, e.data_len), ret = e.data_len;
			break;
		}
	free(d);
	return ret;
}

/* Whether v (len bytes) is a well-formed ACL: version 2 and whole entries. */
static bool acl_ok(const uint8_t *v, int len)
{
	return len >= ACL_HEAD && (len - ACL_HEAD) % ACL_ENTRY == 0 && btk_le32(v) == ACL_VERSION;
}

/* posix_acl_create_masq: the ACL v (a copy of the directory's default) masked by the mode
 * asked for, and the mode by the ACL; returns whether the ACL says more than the mode (named
 * users or groups, or a mask). */
static bool create_masq(uint8_t *v, int len, uint32_t *mode)
{
	uint8_t *group_obj = NULL, *mask_obj = NULL;
	uint32_t m = *mode;
	bool not_equiv = false;

	for (int at = ACL_HEAD; at + ACL_ENTRY <= len; at += ACL_ENTRY) {
		uint8_t *e = v + at;
		uint16_t perm = btk_le16(e + 2);
		switch (btk_le16(e)) {
		case TAG_USER_OBJ:
			perm &= (m >> 6) | ~07;
			m &= ((uint32_t)perm << 6) | ~0700u;
			break;
		case TAG_USER:
		case TAG_GROUP:
			not_equiv = true;
			break;
		case TAG_GROUP_OBJ:
			group_obj = e;
			break;
		case TAG_OTHER:
			perm &= m | ~07;
			m &= perm | ~07u;
			break;
		case TAG_MASK:
			mask_obj = e;
			not_equiv = true;
			break;
		}
		btk_put16(e + 2, perm);
	}
	uint8_t *g = mask_obj ? mask_obj : group_obj;
	if (g) {
		uint16_t perm = btk_le16(g + 2) & ((m >> 3) | ~07);
		btk_put16(g + 2, perm);
		m &= ((uint32_t)perm << 3) | ~070u;
	}
	*mode = m;
	return not_equiv;
}

int btk_acl_default(struct btk_trans *t, uint64_t root, uint64_t dir, bool *has)
{
	uint8_t v[ACL_MAX];
	int len = dir == BTK_STUB_INO ? 0 : xattr_read(t, root, dir, ACL_DEFAULT, v, sizeof(v));

	*has = len > 0 && acl_ok(v, len);
	return len < 0 ? len : 0;
}

int btk_acl_inherit(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t ino, bool keep_own)
{
	uint8_t def[ACL_MAX], acl[ACL_MAX], own[ACL_MAX];
	struct btk_inode_info in;
	int dlen = xattr_read(t, root, dir, ACL_DEFAULT, def, sizeof(def)), ret;

	if (dlen <= 0)
		return dlen;
	if (!acl_ok(def, dlen))
		return btk_err(EUCLEAN, "directory %llu: %s is malformed (%d bytes)",
			       (unsigned long long)dir, ACL_DEFAULT, dlen);
	if ((ret = btk_inode_get(t, root, ino, &in)))
		return ret;
	if (S_ISLNK(in.mode))
		return 0; /* symlinks have no ACLs */
	if (S_ISDIR(in.mode) &&
	    (!keep_own || !(ret = xattr_read(t, root, ino, ACL_DEFAULT, own, sizeof(own)))) &&
	    (ret = btk_xattr_replace(t, root, ino, ACL_DEFAULT, (uint16_t)strlen(ACL_DEFAULT), def,
				     (uint16_t)dlen)))
		return ret;
	if (ret < 0)
		return ret;
	if (keep_own && (ret = xattr_read(t, root, ino, ACL_ACCESS, own, sizeof(own))))
		return ret < 0 ? ret : 0; /* its own access ACL (copied with it) stays */
	uint32_t mode = in.mode & 07777;
	memcpy(acl, def, (size_t)dlen);
	bool more = create_masq(acl, dlen, &mode);
	struct btk_inode_change c = {.set_mode = true, .mode = mode};
	if (mode != (in.mode & 07777) && (ret = btk_inode_change(t, root, ino, &c, NULL)))
		return ret;
	return more ? btk_xattr_replace(t, root, ino, ACL_ACCESS, (uint16_t)strlen(ACL_ACCESS), acl,
					(uint16_t)dlen)
		    : 0;
}

int btk_acl_inherit_tree(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t top)
{
	uint32_t cap = btk_trans_fs(t)->nodesize, size;
	uint8_t *b = malloc(cap);
	uint64_t *st = NULL;
	size_t n = 0, scap = 0;
	struct btk_inode_info in;
	int ret;

	if (!b)
		return btk_err(ENOMEM, "out of memory");
	if ((ret = btk_acl_inherit(t, root, dir, top, true)) ||
	    (ret = btk_inode_get(t, root, top, &in)))
		goto out;
	if (S_ISDIR(in.mode)) {
		uint64_t *slot = btk_array_push(st, n, scap);
		if (!slot) {
			ret = btk_err(ENOMEM, "out of memory");
			goto out;
		}
		*slot = top;
	}
	while (!ret && n) { /* each directory's entries after the directory itself */
		uint64_t cur = st[--n];
		struct btk_key k = {cur, BTRFS_DIR_INDEX_KEY, 0};
		while ((ret = btk_item_next(t, root, &k, b, cap, &size)) == 0 &&
		       k.objectid == cur && k.type == BTRFS_DIR_INDEX_KEY) {
			struct btk_dir_iter it;
			struct btk_dir_ent e;
			struct btk_key loc;
			btk_dir_iter_init(&it, b, size > cap ? 0 : size);
			if (btk_dir_next(&it, &e) != 1) {
				ret =
				    btk_err(EUCLEAN, "directory %llu: bad index entry %llu",
					    (unsigned long long)cur, (unsigned long long)k.offset);
				break;
			}
			btk_dir_ent_location(&e, &loc);
			if (loc.type == BTRFS_INODE_ITEM_KEY) {
				if ((ret = btk_acl_inherit(t, root, cur, loc.objectid, true)))
					break;
				if (e.type == BTRFS_FT_DIR) {
					uint64_t *slot = btk_array_push(st, n, scap);
					if (!slot) {
						ret = btk_err(ENOMEM, "out of memory");
						break;
					}
					*slot = loc.objectid;
				}
			}
			if (k.offset == UINT64_MAX)
				break;
			k.offset++;
		}
		if (ret == 1)
			ret = 0;
		if (ret == 0 && (ret = btk_trans_writeback(t, 16ULL << 20)))
			break;
	}
out:
	free(st);
	free(b);
	return ret < 0 ? ret : 0;
}

int btk_acl_chmod(struct btk_trans *t, uint64_t root, uint64_t ino, uint32_t mode)
{
	uint8_t acl[ACL_MAX];
	int len = xattr_read(t, root, ino, ACL_ACCESS, acl, sizeof(acl));
	uint8_t *group_obj = NULL, *mask_obj = NULL;

	if (len <= 0)
		return len;
	if (!acl_ok(acl, len))
		return btk_err(EUCLEAN, "inode %llu: %s is malformed (%d bytes)",
			       (unsigned long long)ino, ACL_ACCESS, len);
	for (int at = ACL_HEAD; at + ACL_ENTRY <= len; at += ACL_ENTRY) {
		uint8_t *e = acl + at;
		switch (btk_le16(e)) {
		case TAG_USER_OBJ:
			btk_put16(e + 2, (uint16_t)((mode >> 6) & 07));
			break;
		case TAG_GROUP_OBJ:
			group_obj = e;
			break;
		case TAG_MASK:
			mask_obj = e;
			break;
		case TAG_OTHER:
			btk_put16(e + 2, (uint16_t)(mode & 07));
			break;
		}
	}
	if (mask_obj || group_obj)
		btk_put16((mask_obj ? mask_obj : group_obj) + 2, (uint16_t)((mode >> 3) & 07));
	return btk_xattr_replace(t, root, ino, ACL_ACCESS, (uint16_t)strlen(ACL_ACCESS), acl,
				 (uint16_t)len);
}
