/* check_report.c — the checker's reporting: the problem and message tables of problems.def,
 * rendering a message from the values a check passes, counting, the callbacks.
 *
 * A message row's three texts are templates: "{N}" is value N (decimal, or the string),
 * "{N:x}" and "{N:o}" value N in hex and octal, "{m}" the problem's own message. Rendering
 * happens here, into buffers of the report, from values the caller passes: no text is
 * formatted ahead at a call site and no buffer outlives the callback.
 */
#include "check/check_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[BTK_CHK_KIND_COUNT] = {
    [BTK_CHK_SUPER] = "super",
    [BTK_CHK_CHUNK] = "chunk",
    [BTK_CHK_DEV_EXTENT] = "dev-extent",
    [BTK_CHK_DEVICE] = "device",
    [BTK_CHK_BLOCK_GROUP] = "block-group",
    [BTK_CHK_TREE_BLOCK] = "tree-block",
    [BTK_CHK_EXTENT] = "extent",
    [BTK_CHK_BACKREF] = "backref",
    [BTK_CHK_FREE_SPACE] = "free-space",
    [BTK_CHK_ROOT] = "root",
    [BTK_CHK_INODE] = "inode",
    [BTK_CHK_NAME] = "name",
    [BTK_CHK_FILE_EXTENT] = "file-extent",
    [BTK_CHK_CSUM] = "csum",
    [BTK_CHK_DATA_CSUM] = "data-csum",
};

const char *btk_check_kind_name(enum btk_check_kind kind)
{
	if ((unsigned)kind >= BTK_CHK_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

static const struct btk_check_problem_info problems[BTK_P_COUNT] = {
#define BTK_PROBLEM(id, code_, name_, kind_, sev, repair, msg)                                     \
	[BTK_P_##id] = {.code = code_,                                                             \
			.name = name_,                                                             \
			.kind = BTK_CHK_##kind_,                                                   \
			.severity = BTK_SEV_##sev,                                                 \
			.repairable = repair,                                                      \
			.message = msg},
#include "check/problems.def"
};

const struct btk_check_problem_info *btk_check_problem_info(enum btk_check_problem_id id)
{
	if ((unsigned)id >= BTK_P_COUNT)
		return NULL;
	return &problems[id];
}

static const struct chk_message messages[CHK_M_COUNT] = {
#define BTK_MESSAGE(id, problem_, what_, expected_, found_)                                        \
	[CHK_M_##id] = {                                                                           \
	    .problem = BTK_P_##problem_, .what = what_, .expected = expected_, .found = found_},
#include "check/problems.def"
};

const struct chk_message *chk_message(enum chk_message_id id)
{
	if ((unsigned)id >= CHK_M_COUNT)
		return NULL;
	return &messages[id];
}

static const char *const parts[CHK_PART_COUNT] = {
#define BTK_PART(id, problem, text) [CHK_PART_##id] = text,
#include "check/problems.def"
};

const char *chk_part_text(enum chk_part_id id)
{
	if ((unsigned)id >= CHK_PART_COUNT)
		return "";
	return parts[id];
}

struct out {
	char *p;
	size_t len, cap; /* cap >= 1; p[len] is kept 0 */
};

static void put(struct out *o, const char *s, size_t n)
{
	size_t room = o->cap - 1 - o->len;

	if (n > room)
		n = room;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = 0;
}

static void put_val(struct out *o, const struct chk_val *v, char conv)
{
	char num[40];
	int n;

	switch (v->type) {
	case CHK_VT_S:
		if (!v->s)
			return;
		put(o, v->s, v->len == SIZE_MAX ? strlen(v->s) : v->len);
		return;
	case CHK_VT_UUID: {
		const uint8_t *u = (const uint8_t *)v->s;
		char *q = num;
		for (int i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				*q++ = '-';
			*q++ = "0123456789abcdef"[u[i] >> 4];
			*q++ = "0123456789abcdef"[u[i] & 15];
		}
		put(o, num, (size_t)(q - num));
		return;
	}
	case CHK_VT_I:
		n = snprintf(num, sizeof(num), "%" PRId64, v->i);
		break;
	default:
		n = snprintf(num, sizeof(num),
			     conv == 'x'   ? "%" PRIx64
			     : conv == 'o' ? "%" PRIo64
					   : "%" PRIu64,
			     v->u);
		break;
	}
	put(o, num, (size_t)n);
}

/* A placeholder at s ("{N}", "{N:x}", "{N:o}", "{m}"): its length, with *idx (-1 for {m}) and
 * *conv; 0 when s does not start one (the brace is then plain text). */
static size_t placeholder(const char *s, long *idx, char *conv)
{
	size_t i = 1;

	*conv = 0;
	if (s[1] == 'm' && s[2] == '}') {
		*idx = -1;
		return 3;
	}
	if (s[i] < '0' || s[i] > '9')
		return 0;
	*idx = 0;
	while (s[i] >= '0' && s[i] <= '9' && *idx < 1000)
		*idx = *idx * 10 + (s[i++] - '0');
	if (s[i] == ':' && (s[i + 1] == 'x' || s[i + 1] == 'o')) {
		*conv = s[i + 1];
		i += 2;
	}
	return s[i] == '}' ? i + 1 : 0;
}

size_t chk_render(char *buf, size_t cap, const char *tmpl, const char *msg,
		  const struct chk_val *vals, size_t n)
{
	struct out o = {buf, 0, cap};

	if (!cap)
		return 0;
	buf[0] = 0;
	for (const char *s = tmpl ? tmpl : ""; *s;) {
		const char *brace = strchr(s, '{');
		size_t plen = 0;
		long idx;
		char conv;

		if (!brace) {
			put(&o, s, strlen(s));
			break;
		}
		put(&o, s, (size_t)(brace - s));
		plen = placeholder(brace, &idx, &conv);
		if (!plen) {
			put(&o, "{", 1);
			s = brace + 1;
			continue;
		}
		if (idx < 0)
			put(&o, msg ? msg : "", msg ? strlen(msg) : 0);
		else if ((size_t)idx < n)
			put_val(&o, &vals[idx], conv);
		else
			put(&o, "{?}", 3); /* a value the call did not pass: seen, never a crash */
		s = brace + plen;
	}
	return o.len;
}

void chk_count_more(struct chk *c, enum chk_message_id mid, uint64_t n)
{
	const struct btk_check_problem_info *info =
	    btk_check_problem_info(chk_message(mid)->problem);

	if (info->severity == BTK_SEV_WARN) {
		c->sum->warnings += n;
	} else {
		c->sum->errors += n;
		c->sum->errors_by_kind[info->kind] += n;
	}
}

void chk_report_problem(struct chk *c, enum chk_message_id mid, const struct btk_check_problem *p)
{
	chk_count_more(c, mid, 1);
	chk_rec_problem(c, mid, p);
	if (!c->opts->report)
		return;
	if (c->opts->max_reports && c->reported >= c->opts->max_reports)
		return;
	c->reported++;
	c->opts->report(c->opts->ctx, p);
}

void chk_report(struct chk *c, enum chk_message_id mid, uint64_t tree, uint64_t bytenr,
		const struct btk_key *key, const struct chk_val *vals, size_t n)
{
	const struct chk_message *m = chk_message(mid);
	const struct btk_check_problem_info *info = btk_check_problem_info(m->problem);
	char what[CHK_TEXT_MAX], expected[CHK_TEXT_MAX], found[CHK_TEXT_MAX];

	if (!c->opts->record &&
	    (!c->opts->report || (c->opts->max_reports && c->reported >= c->opts->max_reports))) {
		chk_count_more(c, mid, 1);
		return;
	}
	chk_render(what, sizeof(what), m->what ? m->what : "{m}", info->message, vals, n);
	chk_render(expected, sizeof(expected), m->expected, info->message, vals, n);
	chk_render(found, sizeof(found), m->found, info->message, vals, n);
	struct btk_check_problem p = {
	    .id = m->problem,
	    .info = info,
	    .kind = info->kind,
	    .tree = tree,
	    .bytenr = bytenr,
	    .has_key = key != NULL,
	    .what = what,
	    .expected = expected,
	    .found = found,
	};
	if (key)
		p.key = *key;
	for (size_t i = 0; i < n && i < BTK_CHECK_VALS; i++, p.nvals++)
		p.vals[i] = vals[i].type == CHK_VT_U   ? vals[i].u
			    : vals[i].type == CHK_VT_I ? (uint64_t)vals[i].i
						       : 0;
	chk_report_problem(c, mid, &p);
}
