/* render.c — output helpers shared by the JSON and text renderers (render_json.c,
 * render_text.c), and renderer set-up. */
#include <inttypes.h>

#include "debug.h"

void uuid_format(const uint8_t *u, char out[37])
{
	static const char hex[] = "0123456789abcdef";
	int o = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
	}
	out[o] = 0;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes are not one. Rejects
 * overlong forms, surrogates and code points past U+10FFFF. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint8_t b = p[0];
	size_t len;
	uint32_t cp, min;

	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf) {
		len = 2, cp = b & 0x1f, min = 0x80;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3, cp = b & 0x0f, min = 0x800;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4, cp = b & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Writes bytes in runs: stdio calls per character dominate the run time otherwise. */
void json_string(FILE *out, const uint8_t *p, size_t len)
{
	size_t run = 0, i = 0;

	putc_unlocked('"', out);
	while (i < len) {
		uint8_t b = p[i];
		size_t l =
		    b >= 0x20 && b < 0x7f && b != '"' && b != '\\' ? 1 : utf8_len(p + i, len - i);

		if (l && (b >= 0x80 || (b >= 0x20 && b != 0x7f && b != '"' && b != '\\'))) {
			i += l;
			continue;
		}
		fwrite_unlocked(p + run, 1, i - run, out);
		if (l == 0)
			fprintf(out, "\\udc%02x", b);
		else if (b == '"' || b == '\\')
			fprintf(out, "\\%c", b);
		else if (b == '\n')
			fputs_unlocked("\\n", out);
		else if (b == '\t')
			fputs_unlocked("\\t", out);
		else
			fprintf(out, "\\u%04x", b);
		i++;
		run = i;
	}
	fwrite_unlocked(p + run, 1, i - run, out);
	putc_unlocked('"', out);
}

/* Decimal without printf. */
void put_u64(FILE *out, uint64_t v)
{
	char buf[24];
	int i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite_unlocked(buf + i, 1, sizeof(buf) - (size_t)i, out);
}

void json_key(FILE *out, const struct btk_key *k)
{
	char tb[32];
	const char *t = btk_key_type_str(k->objectid, k->type, tb, sizeof(tb));

	fputs_unlocked("{\"objectid\":", out);
	put_u64(out, k->objectid);
	fputs_unlocked(",\"type\":\"", out);
	fputs_unlocked(t, out); /* key type names need no escaping */
	fputs_unlocked("\",\"offset\":", out);
	put_u64(out, k->offset);
	putc_unlocked('}', out);
}

/* Text: printable bytes as they are (UTF-8 included), control bytes as \xNN. */
void text_string(FILE *out, const uint8_t *p, size_t len)
{
	size_t run = 0;

	for (size_t i = 0; i < len; i++) {
		if (p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\')
			continue;
		fwrite_unlocked(p + run, 1, i - run, out);
		fprintf(out, "\\x%02x", p[i]);
		run = i + 1;
	}
	fwrite_unlocked(p + run, 1, len - run, out);
}

void hex_bytes(FILE *out, const uint8_t *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char buf[256];
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		buf[o++] = hex[p[i] >> 4];
		buf[o++] = hex[p[i] & 15];
		if (o == sizeof(buf)) {
			fwrite_unlocked(buf, 1, o, out);
			o = 0;
		}
	}
	fwrite_unlocked(buf, 1, o, out);
}

void render_reset(struct render *r)
{
	r->depth = 0;
	r->first[0] = true;
	r->is_array[0] = false;
	r->count[0] = 0;
	r->name[0] = NULL;
	r->line_start = true;
}

void render_finish(struct render *r)
{
	if (!r->json)
		text_brk(r);
}

void render_init(struct render *r, struct btk_sink *s, FILE *out, bool json)
{
	memset(r, 0, sizeof(*r));
	r->out = out;
	r->json = json;
	r->base_indent = 2;
	render_reset(r);
	s->ctx = r;
	s->field = json ? json_field : text_field;
	s->begin = json ? json_begin : text_begin;
	s->end = json ? json_end : text_end;
	s->brk = json ? NULL : text_brk;
}
