/* render_text.c — text rendering of the decoder's field stream, laid out like dump-tree
 * (items) and dump-super (superblocks). */
#include <inttypes.h>
#include <time.h>

#include "debug.h"
#include "cli/cli.h"

void text_brk(void *ctx)
{
	struct render *r = ctx;

	if (!r->line_start) {
		putc('\n', r->out);
		r->line_start = true;
	}
}

static int text_indent(const struct render *r)
{
	int arrays = 0;

	for (int i = 1; i <= r->depth; i++)
		arrays += r->is_array[i];
	return r->base_indent + (arrays > 1 ? arrays - 1 : 0);
}

/* Starts a field: indentation at the start of a line, else a separating space. */
static void text_lead(struct render *r)
{
	if (r->line_start) {
		for (int i = text_indent(r); i > 0; i--)
			putc_unlocked('\t', r->out);
		r->line_start = false;
	} else {
		putc_unlocked(' ', r->out);
	}
}

static void text_time(FILE *o, uint64_t sec, uint32_t nsec)
{
	/* inodes of one image share few distinct seconds: format each once */
	static char ts[64];
	static uint64_t last;
	static bool have;
	time_t t = (time_t)sec;
	struct tm tm;

	if (!have || sec != last) {
		have = true;
		last = sec;
		snprintf(ts, sizeof(ts), "?");
		if ((int64_t)sec >= 0 && localtime_r(&t, &tm))
			strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	}
	put_u64(o, sec);
	putc_unlocked('.', o);
	put_u64(o, nsec);
	fputs_unlocked(" (", o);
	fputs_unlocked(ts, o);
	putc_unlocked(')', o);
}

static void put_hex(FILE *o, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char buf[18];
	int i = sizeof(buf);

	do {
		buf[--i] = hex[v & 15];
		v >>= 4;
	} while (v);
	buf[--i] = 'x';
	buf[--i] = '0';
	fwrite_unlocked(buf + i, 1, sizeof(buf) - (size_t)i, o);
}

/* dump-tree's key format; the common case (inode numbers, plain offsets) without printf */
void text_key(FILE *o, const struct btk_key *k)
{
	char buf[96];
	const char *tn = btk_key_type_name(k->type);

	if (!btk_key_format_plain(k)) {
		fputs_unlocked(btk_key_format(k, buf, sizeof(buf)), o);
		return;
	}
	putc_unlocked('(', o);
	put_u64(o, k->objectid);
	putc_unlocked(' ', o);
	fputs_unlocked(tn, o);
	putc_unlocked(' ', o);
	put_u64(o, k->offset);
	putc_unlocked(')', o);
}

static void text_value(struct render *r, const struct btk_field *f)
{
	FILE *o = r->out;
	char buf[40];

	switch (f->kind) {
	case BTK_F_U64:
		if (f->fmt == BTK_FMT_OCT)
			fprintf(o, "%" PRIo64, f->u);
		else if (f->fmt == BTK_FMT_HEX)
			put_hex(o, f->u);
		else if (f->fmt == BTK_FMT_OBJID)
			fputs(btk_objectid_str(f->u, 0, buf, sizeof(buf)), o);
		else
			put_u64(o, f->u);
		break;
	case BTK_F_S64:
	case BTK_F_UUID:
	case BTK_F_HEX:
		put_plain(o, f);
		break;
	case BTK_F_STR:
		text_string(o, f->p, f->len);
		break;
	case BTK_F_TIME:
		text_time(o, f->u, f->nsec);
		break;
	case BTK_F_FLAGS:
		if (f->fmt == BTK_FMT_HEX) {
			put_hex(o, f->u);
			putc_unlocked('(', o);
			fputs_unlocked(f->text, o);
			putc_unlocked(')', o);
		} else {
			fputs_unlocked(f->text[0] ? f->text : "none", o);
		}
		break;
	case BTK_F_ENUM:
		if (f->fmt == BTK_FMT_NAME)
			fputs_unlocked(f->text, o);
		else
			fprintf(o, "%" PRIu64 " (%s)", f->u, f->text);
		break;
	case BTK_F_KEY:
		fputs_unlocked("key ", o);
		text_key(o, &f->key);
		break;
	case BTK_F_ERROR:
		fprintf(o, "%s", f->text);
		break;
	}
}

/* dump-super style: "name<TAB...>value" on its own line, values aligned at column 24. */
static void super_line(struct render *r, const struct btk_field *f)
{
	char name[96];
	int len;

	if (r->depth > 0 && r->name[r->depth])
		len = snprintf(name, sizeof(name), "%s.%s", r->name[r->depth], f->name);
	else
		len = snprintf(name, sizeof(name), "%s", f->name);
	fputs(name, r->out);
	for (int col = len; col < 24; col = (col / 8 + 1) * 8)
		putc('\t', r->out);
	if (len >= 24)
		putc('\t', r->out);
	text_value(r, f);
	putc('\n', r->out);
	r->line_start = true;
}

static bool in_array_scope(const struct render *r)
{
	for (int i = 1; i <= r->depth; i++)
		if (r->is_array[i])
			return true;
	return false;
}

void text_field(void *ctx, const struct btk_field *f)
{
	struct render *r = ctx;

	if (f->kind == BTK_F_ERROR)
		r->errors++;
	if (r->super_mode && !in_array_scope(r) && f->name) {
		super_line(r, f);
		return;
	}
	if (!f->name && r->is_array[r->depth]) {
		/* a scalar array element: "name v v v", 8 to a line */
		int n = r->count[r->depth]++;

		if (n % 8 == 0) {
			text_brk(r);
			text_lead(r);
			fputs(r->name[r->depth] ? r->name[r->depth] : "-", r->out);
		}
		text_lead(r);
		text_value(r, f);
		return;
	}
	text_lead(r);
	if (f->kind == BTK_F_ERROR)
		fputs("ERROR: ", r->out);
	else if (!(f->kind == BTK_F_KEY && !strcmp(f->name, "key"))) {
		fputs_unlocked(f->name, r->out);
		putc_unlocked(' ', r->out);
	}
	text_value(r, f);
}

void text_begin(void *ctx, const char *name, bool array)
{
	struct render *r = ctx;
	bool elem = r->is_array[r->depth];
	int n = elem ? r->count[r->depth]++ : 0;

	if (r->depth + 1 >= RENDER_MAX_DEPTH)
		return;
	if (elem) {
		text_brk(r);
		if (r->super_mode && r->depth == 1) {
			/* dump-super's headings */
			const char *h =
			    r->name[1] && !strcmp(r->name[1], "backup_roots") ? "backup" : "item";
			fprintf(r->out, "\t%s %d:\n", h, n);
			r->line_start = true;
		}
	} else if (name && (array || r->super_mode)) {
		text_brk(r);
		if (r->super_mode && r->depth == 0 && array)
			fprintf(r->out, "%s:\n", name);
	} else if (name) {
		text_lead(r);
		fputs(name, r->out);
	}
	r->depth++;
	r->is_array[r->depth] = array;
	r->count[r->depth] = 0;
	r->name[r->depth] = name;
}

void text_end(void *ctx, bool array)
{
	struct render *r = ctx;

	if (r->depth == 0)
		return;
	r->depth--;
	if (array || r->is_array[r->depth])
		text_brk(r);
}
