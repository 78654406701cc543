/* decode_int.h (layer 8) — internals shared by decode*.c: a bounds-checked cursor over one item's
 * bytes and table-driven field emission. Not a public header. */
#ifndef BTK_DECODE_INT_H
#define BTK_DECODE_INT_H

#include "decode/decode.h"

#include <stddef.h>

#define DC_MAX_DEPTH 8

struct dcur {
	const struct btk_sink *s;
	const uint8_t *p; /* the bytes being decoded */
	uint32_t size;	  /* how many */
	const struct btk_decode_env *env;
	const struct btk_key *key; /* the item's key, or NULL */
	int depth;
	bool array[DC_MAX_DEPTH];
	bool failed; /* an error field was emitted: emit nothing more */
};

/* Field types of a table entry. */
enum { T_U, T_S, T_UUID, T_TIME, T_KEY, T_FLAGS, T_ENUM, T_HEX };

typedef const char *(*dc_namefn)(uint64_t v, char *buf, size_t len);

struct fdesc {
	const char *name;
	uint16_t off;	 /* from the table's base */
	uint8_t width;	 /* bytes (FD_SZ: numbers 1, 2, 4, 8; uuids 16, times 12, keys 17) */
	uint8_t type;	 /* T_* */
	uint8_t fmt;	 /* enum btk_field_fmt */
	uint8_t brk;	 /* line break after this field */
	dc_namefn names; /* T_FLAGS / T_ENUM */
};

/* Where a field of an on-disk struct stands and how wide it is, for a table entry; FD_NUM is the
 * entry of a decimal number field (brk: a line break after it). */
#define FD_OFF(type, field) ((uint16_t)offsetof(type, field))
#define FD_SZ(type, field)  ((uint8_t)sizeof(((type *)0)->field))
#define FD_NUM(label, type, field, brk)                                                            \
	{                                                                                          \
		label, FD_OFF(type, field), FD_SZ(type, field), T_U, BTK_FMT_DEC, brk, NULL        \
	}

void dc_init(struct dcur *c, const struct btk_sink *s, const uint8_t *p, uint32_t size,
	     const struct btk_decode_env *env, const struct btk_key *key);
/* Emits an error field (after closing open containers) and stops further output. */
void dc_fail(struct dcur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True if [off, off+len) lies inside the bytes; else fails with "what". */
bool dc_need(struct dcur *c, uint64_t off, uint64_t len, const char *what);
/* Reads little-endian numbers of width 1, 2, 4 or 8 at off (caller checked bounds). */
uint64_t dc_num(const struct dcur *c, uint32_t off, int width);

void dc_emit(struct dcur *c, const struct btk_field *f);
void dc_u64(struct dcur *c, const char *name, uint64_t v);
void dc_u64f(struct dcur *c, const char *name, uint64_t v, enum btk_field_fmt fmt);
void dc_s64(struct dcur *c, const char *name, int64_t v);
void dc_str(struct dcur *c, const char *name, const uint8_t *p, size_t len);
void dc_hex(struct dcur *c, const char *name, const uint8_t *p, size_t len);
void dc_uuid(struct dcur *c, const char *name, const uint8_t *p);
void dc_key(struct dcur *c, const char *name, const struct btk_key *k);
void dc_text(struct dcur *c, enum btk_field_kind kind, const char *name, uint64_t v,
	     const char *text);
void dc_begin(struct dcur *c, const char *name, bool array);
void dc_end(struct dcur *c);
void dc_brk(struct dcur *c);
/* Emits the fields of a table at base (bounds-checked per field). */
void dc_table(struct dcur *c, uint32_t base, const struct fdesc *t, size_t n);

#define DC_TABLE(c, base, t) dc_table((c), (base), (t), sizeof(t) / sizeof((t)[0]))

/* Names of flag bits, usable as dc_namefn (decode_flags.c). */
const char *dc_bg_flags(uint64_t v, char *buf, size_t len);
const char *dc_inode_flags(uint64_t v, char *buf, size_t len);
const char *dc_root_flags(uint64_t v, char *buf, size_t len);
const char *dc_fsi_flags(uint64_t v, char *buf, size_t len);
const char *dc_qgroup_flags(uint64_t v, char *buf, size_t len);
const char *dc_extent_flags(uint64_t v, char *buf, size_t len);
const char *dc_super_flags(uint64_t v, char *buf, size_t len);
const char *dc_header_flags(uint64_t v, char *buf, size_t len);
const char *dc_compat_ro_flags(uint64_t v, char *buf, size_t len);
const char *dc_incompat_flags(uint64_t v, char *buf, size_t len);

/* Per-family decoders (decode_items.c, decode_extent.c, decode_misc.c). */
void dc_inode_item(struct dcur *c, uint32_t base);
/* Inode refs and extrefs, dir, dir index and xattr items (by key type): runs of named entries. */
void dc_named_run(struct dcur *c, uint8_t type);
void dc_file_extent(struct dcur *c);
void dc_extent_item(struct dcur *c, bool metadata);
void dc_chunk(struct dcur *c, uint32_t base);
/* EXTENT_DATA_REF fields (decode_misc.c), as a keyed item and as an inline ref. */
#define DC_DATA_REF_NFIELDS 4
extern const struct fdesc dc_data_ref_fields[DC_DATA_REF_NFIELDS];
/* DEV_ITEM fields, shared by the superblock decoder (decode_misc.c). */
extern const struct fdesc btk_dev_item_fields[];
extern const size_t btk_dev_item_nfields;
void dc_root_item(struct dcur *c);
void dc_root_ref(struct dcur *c);
void dc_csum(struct dcur *c);
void dc_misc(struct dcur *c, uint8_t type);

#endif
