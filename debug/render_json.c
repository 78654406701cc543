/* render_json.c — JSON rendering of the decoder's field stream (one object body). */

#include "debug.h"

static void json_sep(struct render *r, const char *name)
{
	if (!r->first[r->depth])
		putc_unlocked(',', r->out);
	r->first[r->depth] = false;
	if (name && !r->is_array[r->depth]) {
		/* field names are the decoder's identifiers: no escaping needed */
		putc_unlocked('"', r->out);
		fputs_unlocked(name, r->out);
		fputs_unlocked("\":", r->out);
	}
}

void json_field(void *ctx, const struct btk_field *f)
{
	struct render *r = ctx;
	FILE *o = r->out;

	json_sep(r, f->name);
	switch (f->kind) {
	case BTK_F_U64:
		put_u64(o, f->u);
		break;
	case BTK_F_S64:
		put_plain(o, f);
		break;
	case BTK_F_STR:
		btk_json_str(o, f->p, f->len);
		break;
	case BTK_F_UUID:
	case BTK_F_HEX: /* strings of safe characters */
		putc_unlocked('"', o);
		put_plain(o, f);
		putc_unlocked('"', o);
		break;
	case BTK_F_TIME:
		fputs_unlocked("{\"sec\":", o);
		put_u64(o, f->u);
		fputs_unlocked(",\"nsec\":", o);
		put_u64(o, f->nsec);
		putc_unlocked('}', o);
		break;
	case BTK_F_FLAGS:
	case BTK_F_ENUM:
		put_u64(o, f->u);
		if (f->name && !r->is_array[r->depth]) {
			fputs_unlocked(",\"", o);
			fputs_unlocked(f->name, o);
			fputs_unlocked("_str\":", o);
			btk_json_str(o, (const uint8_t *)f->text, strlen(f->text));
		}
		break;
	case BTK_F_KEY:
		json_key(o, &f->key);
		break;
	case BTK_F_ERROR:
		r->errors++;
		btk_json_str(o, (const uint8_t *)f->text, strlen(f->text));
		break;
	}
}

void json_begin(void *ctx, const char *name, bool array)
{
	struct render *r = ctx;

	json_sep(r, name);
	putc(array ? '[' : '{', r->out);
	if (r->depth + 1 >= RENDER_MAX_DEPTH)
		return; /* the decoder nests at most 8 deep */
	r->depth++;
	r->first[r->depth] = true;
	r->is_array[r->depth] = array;
}

void json_end(void *ctx, bool array)
{
	struct render *r = ctx;

	putc(array ? ']' : '}', r->out);
	if (r->depth > 0)
		r->depth--;
}
