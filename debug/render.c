/* render.c — output helpers shared by the JSON and text renderers (render_json.c,
 * render_text.c), and renderer set-up. */
#include <inttypes.h>

#include "debug.h"
#include "cli/cli.h"

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

void put_plain(FILE *out, const struct btk_field *f)
{
	char u[CLI_UUID_STR];

	switch (f->kind) {
	case BTK_F_S64:
		fprintf(out, "%" PRId64, f->s);
		break;
	case BTK_F_UUID:
		cli_uuid_format(f->p, u);
		fwrite_unlocked(u, 1, 36, out);
		break;
	case BTK_F_HEX:
		hex_bytes(out, f->p, f->len);
		break;
	default: /* the renderers write the others each in their own way */
		break;
	}
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
