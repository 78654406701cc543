/* decode.c — the item decoder's cursor, key formatting and the dispatch by key type.
 * The per-type decoders live in decode_items.c, decode_extent.c and decode_misc.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "decode/decode_int.h"

void dc_init(struct dcur *c, const struct btk_sink *s, const uint8_t *p, uint32_t size,
	     const struct btk_decode_env *env, const struct btk_key *key)
{
	static const struct btk_decode_env none;

	memset(c, 0, sizeof(*c));
	c->s = s;
	c->p = p;
	c->size = size;
	c->env = env ? env : &none;
	c->key = key;
}

void dc_emit(struct dcur *c, const struct btk_field *f)
{
	if (!c->failed && c->s->field)
		c->s->field(c->s->ctx, f);
}

void dc_begin(struct dcur *c, const char *name, bool array)
{
	if (c->failed)
		return;
	if (c->depth >= DC_MAX_DEPTH) {
		dc_fail(c, "nesting too deep");
		return;
	}
	c->array[c->depth++] = array;
	if (c->s->begin)
		c->s->begin(c->s->ctx, name, array);
}

void dc_end(struct dcur *c)
{
	if (c->failed || c->depth == 0)
		return;
	c->depth--;
	if (c->s->end)
		c->s->end(c->s->ctx, c->array[c->depth]);
}

void dc_brk(struct dcur *c)
{
	if (!c->failed && c->s->brk)
		c->s->brk(c->s->ctx);
}

void dc_fail(struct dcur *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	struct btk_field f = {.kind = BTK_F_ERROR, .name = "error", .text = msg};

	if (c->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	while (c->depth > 0)
		dc_end(c);
	dc_emit(c, &f);
	c->failed = true;
}

bool dc_need(struct dcur *c, uint64_t off, uint64_t len, const char *what)
{
	if (c->failed)
		return false;
	if (off <= c->size && len <= c->size - off)
		return true;
	dc_fail(c, "%s: needs %" PRIu64 " bytes at offset %" PRIu64 ", item has %u", what, len, off,
		c->size);
	return false;
}

uint64_t dc_num(const struct dcur *c, uint32_t off, int width)
{
	switch (width) {
	case 8:
		return btk_le64(c->p + off);
	case 4:
		return btk_le32(c->p + off);
	case 2:
		return btk_le16(c->p + off);
	default:
		return c->p[off];
	}
}

void dc_u64f(struct dcur *c, const char *name, uint64_t v, enum btk_field_fmt fmt)
{
	struct btk_field f = {.kind = BTK_F_U64, .fmt = fmt, .name = name, .u = v};

	dc_emit(c, &f);
}

void dc_u64(struct dcur *c, const char *name, uint64_t v)
{
	dc_u64f(c, name, v, BTK_FMT_DEC);
}

void dc_s64(struct dcur *c, const char *name, int64_t v)
{
	struct btk_field f = {.kind = BTK_F_S64, .name = name, .s = v};

	dc_emit(c, &f);
}

void dc_str(struct dcur *c, const char *name, const uint8_t *p, size_t len)
{
	struct btk_field f = {.kind = BTK_F_STR, .name = name, .p = p, .len = len};

	dc_emit(c, &f);
}

void dc_hex(struct dcur *c, const char *name, const uint8_t *p, size_t len)
{
	struct btk_field f = {.kind = BTK_F_HEX, .name = name, .p = p, .len = len};

	dc_emit(c, &f);
}

void dc_uuid(struct dcur *c, const char *name, const uint8_t *p)
{
	struct btk_field f = {.kind = BTK_F_UUID, .name = name, .p = p, .len = 16};

	dc_emit(c, &f);
}

void dc_key(struct dcur *c, const char *name, const struct btk_key *k)
{
	struct btk_field f = {.kind = BTK_F_KEY, .name = name, .key = *k};

	dc_emit(c, &f);
}

void dc_text(struct dcur *c, enum btk_field_kind kind, const char *name, uint64_t v,
	     const char *text)
{
	struct btk_field f = {.kind = kind, .name = name, .u = v, .text = text};

	if (kind == BTK_F_FLAGS)
		f.fmt = BTK_FMT_HEX;
	dc_emit(c, &f);
}

static void dc_one(struct dcur *c, uint32_t at, const struct fdesc *d)
{
	struct btk_field f = {.name = d->name, .fmt = d->fmt};
	struct btk_key k;
	char buf[160];

	switch (d->type) {
	case T_U:
		f.kind = BTK_F_U64;
		f.u = dc_num(c, at, d->width);
		break;
	case T_S:
		f.kind = BTK_F_S64;
		f.s = (int64_t)dc_num(c, at, d->width);
		break;
	case T_UUID:
		dc_uuid(c, d->name, c->p + at);
		return;
	case T_HEX:
		dc_hex(c, d->name, c->p + at, d->width);
		return;
	case T_TIME:
		f.kind = BTK_F_TIME;
		f.u = btk_le64(c->p + at);
		f.nsec = btk_le32(c->p + at + 8);
		break;
	case T_KEY:
		btk_disk_to_key((const struct btk_disk_key *)(c->p + at), &k);
		dc_key(c, d->name, &k);
		return;
	case T_FLAGS:
	case T_ENUM:
		f.kind = d->type == T_FLAGS ? BTK_F_FLAGS : BTK_F_ENUM;
		f.u = dc_num(c, at, d->width);
		f.text = d->names ? d->names(f.u, buf, sizeof(buf)) : "";
		break;
	}
	dc_emit(c, &f);
}

void dc_table(struct dcur *c, uint32_t base, const struct fdesc *t, size_t n)
{
	for (size_t i = 0; i < n && !c->failed; i++) {
		if (!dc_need(c, (uint64_t)base + t[i].off, t[i].width, t[i].name))
			return;
		dc_one(c, base + t[i].off, &t[i]);
		if (t[i].brk)
			dc_brk(c);
	}
}

/* ---- names ---- */

const char *btk_key_type_str(uint64_t objectid, uint8_t type, char *buf, size_t len)
{
	const char *n = btk_key_type_name(type);

	if (type == 0 && objectid == BTRFS_FREE_SPACE_OBJECTID)
		return "UNTYPED";
	if (n)
		return n;
	snprintf(buf, len, "UNKNOWN.%u", type);
	return buf;
}

const char *btk_objectid_str(uint64_t id, uint8_t type, char *buf, size_t len)
{
	const char *n;

	switch (type) {
	case BTRFS_PERSISTENT_ITEM_KEY:
		if (id == BTRFS_DEV_STATS_OBJECTID)
			return "DEV_STATS";
		goto number;
	case BTRFS_DEV_EXTENT_KEY:
		goto number;
	case BTRFS_QGROUP_RELATION_KEY:
		snprintf(buf, len, "%" PRIu64 "/%" PRIu64, id >> 48,
			 id & (uint64_t)0xffffffffffffULL);
		return buf;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		snprintf(buf, len, "0x%016" PRIx64, id);
		return buf;
	}
	if (id == BTRFS_DEV_ITEMS_OBJECTID && type == BTRFS_DEV_ITEM_KEY)
		return "DEV_ITEMS";
	if (id == BTRFS_FIRST_CHUNK_TREE_OBJECTID && type == BTRFS_CHUNK_ITEM_KEY)
		return "FIRST_CHUNK_TREE";
	n = btk_objectid_name(id);
	if (n)
		return n;
number:
	snprintf(buf, len, "%" PRIu64, id);
	return buf;
}

const char *btk_key_format(const struct btk_key *k, char *buf, size_t len)
{
	char ob[32], tb[32], offb[48];
	const char *off = offb;

	switch (k->type) {
	case BTRFS_QGROUP_RELATION_KEY:
	case BTRFS_QGROUP_INFO_KEY:
	case BTRFS_QGROUP_LIMIT_KEY:
		snprintf(offb, sizeof(offb), "%" PRIu64 "/%" PRIu64, k->offset >> 48,
			 k->offset & (uint64_t)0xffffffffffffULL);
		break;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		snprintf(offb, sizeof(offb), "0x%016" PRIx64, k->offset);
		break;
	case BTRFS_ROOT_ITEM_KEY:
		if (k->objectid == BTRFS_TREE_RELOC_OBJECTID)
			off = btk_objectid_str(k->offset, k->type, offb, sizeof(offb));
		else
			snprintf(offb, sizeof(offb), "%" PRIu64, k->offset);
		break;
	default:
		if (k->offset == (uint64_t)-1)
			off = "-1";
		else
			snprintf(offb, sizeof(offb), "%" PRIu64, k->offset);
	}
	snprintf(buf, len, "(%s %s %s)", btk_objectid_str(k->objectid, k->type, ob, sizeof(ob)),
		 btk_key_type_str(k->objectid, k->type, tb, sizeof(tb)), off);
	return buf;
}

bool btk_key_format_plain(const struct btk_key *k)
{
	/* object ids below 256 and near -1 have names; these types format their offset */
	return btk_key_type_name(k->type) && k->objectid >= 256 && k->objectid < (uint64_t)-256 &&
	       k->offset != (uint64_t)-1 && k->type != BTRFS_CHUNK_ITEM_KEY &&
	       k->type != BTRFS_QGROUP_RELATION_KEY && k->type != BTRFS_QGROUP_INFO_KEY &&
	       k->type != BTRFS_QGROUP_LIMIT_KEY && k->type != BTRFS_UUID_KEY_SUBVOL &&
	       k->type != BTRFS_UUID_KEY_RECEIVED_SUBVOL && k->type != BTRFS_PERSISTENT_ITEM_KEY;
}

/* ---- dispatch ---- */

int btk_decode_item(const struct btk_decode_env *env, const struct btk_key *key,
		    const uint8_t *data, uint32_t size, const struct btk_sink *sink)
{
	struct dcur c;

	dc_init(&c, sink, data, size, env, key);
	if (key->type == 0 && key->objectid == BTRFS_FREE_SPACE_OBJECTID) {
		dc_misc(&c, 0);
		return c.failed ? -EUCLEAN : 0;
	}
	switch (key->type) {
	case BTRFS_INODE_ITEM_KEY:
		dc_inode_item(&c, 0);
		break;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		dc_named_run(&c, key->type);
		break;
	case BTRFS_EXTENT_DATA_KEY:
		dc_file_extent(&c);
		break;
	case BTRFS_EXTENT_ITEM_KEY:
		dc_extent_item(&c, false);
		break;
	case BTRFS_METADATA_ITEM_KEY:
		dc_extent_item(&c, true);
		break;
	case BTRFS_CHUNK_ITEM_KEY:
		dc_chunk(&c, 0);
		break;
	case BTRFS_ROOT_ITEM_KEY:
		dc_root_item(&c);
		break;
	case BTRFS_ROOT_REF_KEY:
	case BTRFS_ROOT_BACKREF_KEY:
		dc_root_ref(&c);
		break;
	case BTRFS_EXTENT_CSUM_KEY:
		dc_csum(&c);
		break;
	default:
		dc_misc(&c, key->type);
		break;
	}
	return c.failed ? -EUCLEAN : 0;
}

int btk_decode_chunk(const uint8_t *data, uint32_t size, const struct btk_sink *sink)
{
	struct dcur c;

	dc_init(&c, sink, data, size, NULL, NULL);
	dc_chunk(&c, 0);
	return c.failed ? -EUCLEAN : 0;
}
