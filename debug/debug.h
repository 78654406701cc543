/* debug.h — btk-debug internals: renderers for the decoder's field sink and the commands. */
#ifndef BTK_DEBUG_H
#define BTK_DEBUG_H

#include <stdbool.h>
#include <stdio.h>

#include "decode/decode.h"
#include "base/json.h"
#include "volumes/volumes.h"

#define RENDER_MAX_DEPTH 16

/* A renderer: human text modelled on dump-tree / dump-super, or JSON.
 *
 * JSON strings are written by btk_json_str() (json.h): valid UTF-8 passes through, bytes
 * that are not valid UTF-8 become \udcXX, and json.loads(line) followed by
 * s.encode("utf-8", "surrogateescape") gives back the exact bytes. */
struct render {
	FILE *out;
	bool json;
	bool super_mode; /* text: one "name<TAB>value" per line at top level (dump-super) */
	int base_indent; /* text: tabs before item fields */
	/* state */
	int depth;
	bool first[RENDER_MAX_DEPTH];	 /* json: nothing written yet at this depth */
	bool is_array[RENDER_MAX_DEPTH]; /* this depth is an array */
	int count[RENDER_MAX_DEPTH];	 /* elements so far (arrays) */
	const char *name[RENDER_MAX_DEPTH];
	bool line_start; /* text: at the start of a line */
	int errors;	 /* error fields seen */
};

/* Initialises r and the sink s that feeds it. */
void render_init(struct render *r, struct btk_sink *s, FILE *out, bool json);
/* Resets per-item state: JSON starts a fresh object body (the caller printed "{"), text
 * starts at the beginning of a line with base_indent tabs. */
void render_reset(struct render *r);
/* Ends a text item (newline if a line is open). */
void render_finish(struct render *r);

/* JSON helpers (strings: btk_json_str, json.h). */
void json_key(FILE *out, const struct btk_key *k);
void put_u64(FILE *out, uint64_t v);
/* Text helpers. */
void text_string(FILE *out, const uint8_t *p, size_t len);
/* A key as dump-tree prints it: "(256 INODE_ITEM 0)". */
void text_key(FILE *out, const struct btk_key *k);

/* Sink callbacks (render_json.c, render_text.c) and shared output helpers. */
void json_field(void *ctx, const struct btk_field *f);
void json_begin(void *ctx, const char *name, bool array);
void json_end(void *ctx, bool array);
void text_field(void *ctx, const struct btk_field *f);
void text_begin(void *ctx, const char *name, bool array);
void text_end(void *ctx, bool array);
void text_brk(void *ctx);
void hex_bytes(FILE *out, const uint8_t *p, size_t len);
/* The values both renderers write alike (JSON quotes the uuid and the hex bytes): a signed
 * number, a uuid, hex bytes; nothing for the other kinds. */
void put_plain(FILE *out, const struct btk_field *f);

/* Commands: return the exit status (0 ok, 1 error). */
int cmd_super(const char *const *devs, int n, bool all, bool json);
int cmd_tree(const char *const *devs, int n, const char *tree, const char *block, bool json);
int cmd_stats(const char *const *devs, int n, bool json);
/* btk-debug parts: the partition table of each device and what each partition holds. */
int cmd_parts(const char *const *devs, int n, bool json);

/* Opens the filesystem; prints a one-line error naming the device on failure. */
int debug_open(const char *const *devs, int n, struct btk_fs **fs);

#endif
