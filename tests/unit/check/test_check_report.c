/* The checker's reporting (check_report.c): rendering a message of problems.def from the
 * values a check passes, the message table's own rules, counting and the max_reports cut,
 * and JSON escaping of what a report carries (the bytes of a name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "check/check_priv.h"
#include "base/json.h"

#define RENDER(buf, tmpl, msg, ...)                                                                \
	chk_render(buf, sizeof(buf), tmpl, msg, (const struct chk_val[]){{0}, __VA_ARGS__} + 1,    \
		   sizeof((const struct chk_val[]){{0}, __VA_ARGS__}) / sizeof(struct chk_val) -   \
		       1)

static void test_render_values(void **state)
{
	char b[128];
	static const uint8_t uuid[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
					 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};

	(void)state;
	assert_int_equal(RENDER(b, "a {0} b {1} c {2}", NULL, CHK_U(18446744073709551615ULL),
				CHK_I(-5), CHK_S("str")),
			 strlen("a 18446744073709551615 b -5 c str"));
	assert_string_equal(b, "a 18446744073709551615 b -5 c str");
	RENDER(b, "0x{0:x} 0{0:o} {0}", NULL, CHK_U(0x1ed));
	assert_string_equal(b, "0x1ed 0755 493");
	/* a value used twice, out of order, and a string of a given length (not NUL-ended) */
	RENDER(b, "{1}/{0}/{1} '{2}'", NULL, CHK_U(1), CHK_U(2), CHK_SN("abcdef", 3));
	assert_string_equal(b, "2/1/2 'abc'");
	RENDER(b, "uuid {0}", NULL, CHK_UUID(uuid));
	assert_string_equal(b, "uuid 01234567-89ab-cdef-fedc-ba9876543210");
	RENDER(b, "root {0}: {m}", "inode item too small", CHK_U(5));
	assert_string_equal(b, "root 5: inode item too small");
}

static void test_render_edges(void **state)
{
	char b[128], small[8];

	(void)state;
	/* a placeholder the call did not pass a value for is visible, never read */
	RENDER(b, "x {0} {3} y", NULL, CHK_U(7));
	assert_string_equal(b, "x 7 {?} y");
	/* braces that are no placeholder stay text */
	RENDER(b, "{a} {0:q} { {9", NULL, CHK_U(1));
	assert_string_equal(b, "{a} {0:q} { {9");
	/* NULL template, NULL string value */
	assert_int_equal(chk_render(b, sizeof(b), NULL, NULL, NULL, 0), 0);
	assert_string_equal(b, "");
	RENDER(b, "[{0}]", NULL, CHK_S(NULL));
	assert_string_equal(b, "[]");
	/* cut at the buffer's end, NUL-terminated, the length is what was written */
	assert_int_equal(RENDER(small, "{0} and more", NULL, CHK_U(123456789)), 7);
	assert_string_equal(small, "1234567");
	assert_int_equal(RENDER(small, "abc{0}", NULL, CHK_S("defghijk")), 7);
	assert_string_equal(small, "abcdefg");
}

/* Highest placeholder index + 1 in t (0 when none); -1 for a malformed placeholder. */
static int nvals(const char *t)
{
	int n = 0;

	for (const char *s = t ? t : ""; (s = strchr(s, '{')); s++) {
		if (!strncmp(s, "{m}", 3))
			continue;
		char *end;
		long i = strtol(s + 1, &end, 10);
		if (end == s + 1)
			return -1;
		if (*end == ':')
			end += 2;
		if (*end != '}')
			return -1;
		if (i + 1 > n)
			n = (int)i + 1;
	}
	return n;
}

static bool uses(const char *t, int i)
{
	char want[16];

	snprintf(want, sizeof(want), "{%d", i);
	return t && strstr(t, want);
}

/* Every message names a problem; its placeholders are well formed and use the values 0..n-1
 * without a gap; a message never repeats its problem's text (it says {m} or NULL instead). */
static void test_message_table(void **state)
{
	bool has_message[BTK_P_COUNT] = {0};

	(void)state;
	assert_null(chk_message(CHK_M_COUNT));
	for (int i = 0; i < CHK_M_COUNT; i++) {
		const struct chk_message *m = chk_message(i);
		assert_non_null(m);
		const struct btk_check_problem_info *p = btk_check_problem_info(m->problem);
		assert_non_null(p);
		has_message[m->problem] = true;
		const char *t[3] = {m->what, m->expected, m->found};
		int n = 0;
		for (int j = 0; j < 3; j++) {
			int k = nvals(t[j]);
			if (k < 0)
				fail_msg("message %d: malformed placeholder in '%s'", i, t[j]);
			if (k > n)
				n = k;
		}
		for (int v = 0; v < n; v++)
			if (!uses(m->what, v) && !uses(m->expected, v) && !uses(m->found, v))
				fail_msg("message %d ('%s'): value %d unused", i, m->what, v);
		if (m->what && strstr(m->what, p->message))
			fail_msg("message %d repeats its problem's text: '%s'", i, m->what);
	}
	for (int i = 0; i < CHK_PART_COUNT; i++)
		assert_true(nvals(chk_part_text(i)) >= 0);
	assert_string_equal(chk_part_text(CHK_PART_COUNT), "");
	/* the problems that are listed but never reported (see problems.def) have no message */
	for (int i = 0; i < BTK_P_COUNT; i++)
		if (!has_message[i])
			fail_msg("problem E%04u has no message", btk_check_problem_info(i)->code);
}

struct seen {
	int n;
	struct btk_check_problem last;
	char what[CHK_TEXT_MAX], expected[CHK_TEXT_MAX], found[CHK_TEXT_MAX];
};

static void on_problem(void *ctx, const struct btk_check_problem *p)
{
	struct seen *s = ctx;

	s->n++;
	s->last = *p;
	/* the texts live only during the call: keep copies */
	snprintf(s->what, sizeof(s->what), "%s", p->what);
	snprintf(s->expected, sizeof(s->expected), "%s", p->expected);
	snprintf(s->found, sizeof(s->found), "%s", p->found);
}

static void test_report(void **state)
{
	struct seen seen = {0};
	struct btk_check_opts opts = {.report = on_problem, .ctx = &seen, .max_reports = 2};
	struct btk_check_summary sum = {0};
	struct chk c = {.opts = &opts, .sum = &sum};
	struct btk_key k = {257, BTRFS_INODE_ITEM_KEY, 0};

	(void)state;
	chk_rep(&c, CHK_M_INODE_NLINK, 5, 30408704, &k, CHK_U(5), CHK_U(1), CHK_U(2));
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.last.id, BTK_P_INODE_NLINK);
	assert_int_equal(seen.last.info->code, 1111);
	assert_int_equal(seen.last.kind, BTK_CHK_INODE);
	assert_int_equal(seen.last.tree, 5);
	assert_int_equal(seen.last.bytenr, 30408704);
	assert_true(seen.last.has_key);
	assert_int_equal(seen.last.key.objectid, 257);
	assert_string_equal(seen.what, "root 5: inode nlink wrong");
	assert_string_equal(seen.expected, "nlink 1 (names found)");
	assert_string_equal(seen.found, "nlink 2");
	/* a message whose what is the problem's own text, without key or values */
	chk_rep(&c, CHK_M_SUPER_ERROR_FLAG, 0, 0, NULL);
	assert_int_equal(seen.n, 2);
	assert_false(seen.last.has_key);
	assert_string_equal(seen.what, "the kernel marked the filesystem as having errors");
	assert_string_equal(seen.expected, "");
	assert_string_equal(seen.found, "ERROR flag");
	/* past max_reports: counted, not passed on; a warning counts as a warning */
	chk_rep(&c, CHK_M_ROOT_TREE_BACKUP, 1, 0, NULL);
	chk_rep(&c, CHK_M_DIR_LINKS, 5, 0, NULL, CHK_U(5), CHK_U(3));
	assert_int_equal(seen.n, 2);
	assert_int_equal(sum.errors, 3);
	assert_int_equal(sum.warnings, 1);
	assert_int_equal(sum.errors_by_kind[BTK_CHK_INODE], 2);
	assert_int_equal(sum.errors_by_kind[BTK_CHK_SUPER], 1);
	/* no callback: only counted */
	opts.report = NULL;
	chk_rep(&c, CHK_M_DIR_LINKS, 5, 0, NULL, CHK_U(5), CHK_U(3));
	assert_int_equal(sum.errors, 4);
}

/* A name's raw bytes (a quote, a newline, a byte that is not UTF-8) go into a report as they
 * are, and the JSON a tool writes of it escapes them so that the bytes come back. */
static void test_report_json(void **state)
{
	static const char name[] = "a\"b\nc\xff";
	struct seen seen = {0};
	struct btk_check_opts opts = {.report = on_problem, .ctx = &seen};
	struct btk_check_summary sum = {0};
	struct chk c = {.opts = &opts, .sum = &sum};
	struct btk_key k = {256, BTRFS_DIR_ITEM_KEY, 99};
	char json[256] = "";

	(void)state;
	chk_rep(&c, CHK_M_NAME_DUPLICATE_ITEM, 5, 4096, &k, CHK_U(5),
		CHK_SN(name, sizeof(name) - 1));
	assert_string_equal(seen.found, "'a\"b\nc\xff' twice");
	FILE *f = fmemopen(json, sizeof(json) - 1, "w");
	assert_non_null(f);
	btk_json_cstr(f, seen.found);
	fclose(f);
	assert_string_equal(json, "\"'a\\\"b\\nc\\udcff' twice\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_render_values), cmocka_unit_test(test_render_edges),
	    cmocka_unit_test(test_message_table), cmocka_unit_test(test_report),
	    cmocka_unit_test(test_report_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
