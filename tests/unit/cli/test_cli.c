/* cli/: size, resize-argument and uuid parsing; messages and the --json error object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static void test_size_suffixes(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
	    {"0", 0},
	    {"1", 1},
	    {"4096", 4096},
	    {"4k", 4096},
	    {"4K", 4096},
	    {"4KiB", 4096},
	    {"4kib", 4096},
	    {"4kb", 4096},
	    {"3m", 3ULL << 20},
	    {"3M", 3ULL << 20},
	    {"2g", 2ULL << 30},
	    {"2G", 2ULL << 30},
	    {"5t", 5ULL << 40},
	    {"5T", 5ULL << 40},
	    {"6p", 6ULL << 50},
	    {"6P", 6ULL << 50},
	    {"7e", 7ULL << 60},
	    {"7E", 7ULL << 60},
	    {"18446744073709551615", UINT64_MAX},
	    {"15e", 15ULL << 60},
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 12345;
		assert_int_equal(cli_parse_size(NULL, ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
}

static void test_size_rejects(void **state)
{
	static const char *bad[] = {"",	   "k",	   "1.5g", "-1",   "+1", " 1",	"1 ", "1x",
				    "1kk", "1gbb", "1bi",  "0x10", "g1", "1e1", NULL};
	uint64_t v = 77;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		assert_int_equal(cli_parse_size(NULL, bad[i], &v), -EINVAL);
		assert_true(v == 77);
	}
	assert_int_equal(cli_parse_size(NULL, "16e", &v), -ERANGE);
	assert_int_equal(cli_parse_size(NULL, "18446744073709551616", &v), -ERANGE);
	assert_int_equal(cli_parse_size(NULL, NULL, &v), -EINVAL);
}

/* What fn wrote to stderr and stdout while it ran. */
struct captured {
	char err[8192], out[1024];
};

static void capture(struct captured *c, void (*fn)(void *), void *arg)
{
	char errname[] = "/tmp/btk-cli-err-XXXXXX", outname[] = "/tmp/btk-cli-out-XXXXXX";
	int ef = mkstemp(errname), of = mkstemp(outname), save_err = dup(2), save_out = dup(1);
	ssize_t n;

	assert_true(ef >= 0 && of >= 0);
	fflush(stdout), fflush(stderr);
	dup2(ef, 2), dup2(of, 1);
	fn(arg);
	fflush(stdout), fflush(stderr);
	dup2(save_err, 2), dup2(save_out, 1);
	close(save_err), close(save_out);
	memset(c, 0, sizeof(*c));
	n = pread(ef, c->err, sizeof(c->err) - 1, 0);
	assert_true(n >= 0);
	n = pread(of, c->out, sizeof(c->out) - 1, 0);
	assert_true(n >= 0);
	close(ef), close(of);
	unlink(errname), unlink(outname);
}

struct size_call {
	const char *opt, *s;
	uint64_t v;
	int ret;
};

static void call_parse_size(void *arg)
{
	struct size_call *c = arg;

	c->ret = cli_parse_size(c->opt, c->s, &c->v);
}

static void test_size_messages(void **state)
{
	struct size_call sc = {.opt = "-b/--byte-count", .s = "0"};
	struct captured c;

	(void)state;
	cli_init("btk-test");
	capture(&c, call_parse_size, &sc);
	assert_int_equal(sc.ret, -1);
	assert_string_equal(c.err, "btk-test: -b/--byte-count: invalid size 0\n");
	sc.s = "1.5g";
	capture(&c, call_parse_size, &sc);
	assert_int_equal(sc.ret, -1);
	assert_non_null(strstr(c.err, "-b/--byte-count"));
	assert_non_null(strstr(c.err, "'1.5g'"));
	assert_null(strchr(c.err, '\n') + 1 == c.err + strlen(c.err) ? NULL : "one line");
	sc.s = "100M";
	capture(&c, call_parse_size, &sc);
	assert_int_equal(sc.ret, 0);
	assert_true(sc.v == 100ULL << 20);
	assert_string_equal(c.err, "");
}

static void err_then_err(void *arg)
{
	(void)arg;
	printf("before\n");
	cli_err("first \"one\"");
	cli_err("second");
}

static void test_json_error_object(void **state)
{
	struct captured c;

	(void)state;
	cli_init("btk-test");
	cli_json_on(true);
	capture(&c, err_then_err, NULL);
	cli_json_on(false);
	/* stdout keeps what came before, then exactly one object, for the first error */
	assert_string_equal(c.out, "before\n{\"error\": \"first \\\"one\\\"\"}\n");
	assert_string_equal(c.err, "btk-test: first \"one\"\nbtk-test: second\n");
}

struct resize_case {
	const char *s;
	uint64_t devid;
	enum cli_resize_op op;
	uint64_t size;
};

static void call_resize_bad(void *arg)
{
	struct cli_resize r;
	const char **s = arg;

	for (; *s; s++)
		assert_int_equal(cli_parse_resize_arg(*s, &r), -1);
}

static void test_resize_arg(void **state)
{
	static const struct resize_case ok[] = {
	    {"+2g", 0, CLI_RESIZE_GROW, 2ULL << 30},
	    {"-4g", 0, CLI_RESIZE_SHRINK, 4ULL << 30},
	    {"20g", 0, CLI_RESIZE_SET, 20ULL << 30},
	    {"20G", 0, CLI_RESIZE_SET, 20ULL << 30},
	    {"max", 0, CLI_RESIZE_MAX, 0},
	    {"2:max", 2, CLI_RESIZE_MAX, 0},
	    {"3:+1m", 3, CLI_RESIZE_GROW, 1ULL << 20},
	    {"1:-512k", 1, CLI_RESIZE_SHRINK, 512ULL << 10},
	    {"7:100M", 7, CLI_RESIZE_SET, 100ULL << 20},
	    {"123456789", 0, CLI_RESIZE_SET, 123456789},
	};
	static const char *bad[] = {"",	      "0",    "+0",   "-0",   "1.5g", "x",
				    "2:",     ":1g",  "0:1g", "a:1g", "max1", "+max",
				    "1:2:3g", "--1g", "+-1g", "16e",  NULL};
	struct cli_resize r;
	struct captured c;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(cli_parse_resize_arg(ok[i].s, &r), 0);
		assert_true(r.devid == ok[i].devid);
		assert_int_equal(r.op, ok[i].op);
		assert_true(r.size == ok[i].size);
	}
	cli_init("btk-test");
	capture(&c, call_resize_bad, bad);
	/* one line per bad value, each naming it */
	int lines = 0;
	for (char *p = c.err; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 16);
	assert_non_null(strstr(c.err, "'1.5g'"));
	assert_non_null(strstr(c.err, "'a'"));
}

static void test_uuid(void **state)
{
	static const uint8_t u[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
				      0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	char s[CLI_UUID_STR];
	uint8_t back[16];

	(void)state;
	cli_uuid_format(u, s);
	assert_string_equal(s, "12345678-9abc-def0-0123-456789abcdef");
	assert_int_equal(cli_uuid_parse(s, back), 0);
	assert_memory_equal(back, u, 16);
	assert_int_equal(cli_uuid_parse("123456789ABCDEF0 0123456789abcdef", back), -1);
	assert_int_equal(cli_uuid_parse("123456789ABCDEF00123456789abcdef", back), 0);
	assert_memory_equal(back, u, 16);
	assert_int_equal(cli_uuid_parse("12345678-9abcdef0-0123-456789abcdef", back), -1);
	assert_int_equal(cli_uuid_parse("12345678-9abc-def0-0123-456789abcde", back), -1);
	assert_int_equal(cli_uuid_parse("12345678-9abc-def0-0123-456789abcdef0", back), -1);
	assert_int_equal(cli_uuid_parse("g2345678-9abc-def0-0123-456789abcdef", back), -1);
}

/* typos within a third of the word's letters (one or two edits) are suggested, others not */
static void test_suggest(void **state)
{
	static const char *const verbs[] = {"snapshot", "subvol", "setfattr", "restore", "rm"};
	static const struct poptOption inner[] = {
	    {"recursive", 'R', POPT_ARG_NONE, NULL, 0, NULL, NULL},
	    {"hidden", 0, POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, NULL, 0, NULL, NULL},
	    POPT_TABLEEND};
	static const struct poptOption table[] = {
	    {"label", 'L', POPT_ARG_STRING, NULL, 0, NULL, NULL},
	    {NULL, 0, POPT_ARG_INCLUDE_TABLE, (void *)inner, 0, NULL, NULL},
	    POPT_TABLEEND};
	(void)state;
	assert_string_equal(cli_suggest("snapshop", verbs, 5), "snapshot");
	assert_string_equal(cli_suggest("sbuvol", verbs, 5), "subvol"); /* a swap is one edit */
	assert_string_equal(cli_suggest("restroe", verbs, 5), "restore");
	assert_null(cli_suggest("zzz", verbs, 5));
	assert_null(cli_suggest("ls", verbs, 5)); /* two edits from rm: too far for two letters */
	assert_string_equal(cli_suggest_option("--lable", table), "label");
	assert_string_equal(cli_suggest_option("--lable=x", table), "label");
	assert_string_equal(cli_suggest_option("--recusive", table), "recursive"); /* included */
	assert_null(cli_suggest_option("--hiden", table)); /* hidden options stay hidden */
	assert_null(cli_suggest_option("-x", table));
	assert_null(cli_suggest_option("--bogus", table));
}

static void test_human_u64(void **state)
{
	char b[16];
	uint64_t v;

	(void)state;
	assert_string_equal(cli_human(512, b, sizeof(b)), "512B");
	assert_string_equal(cli_human(1536, b, sizeof(b)), "1.50KiB");
	assert_string_equal(cli_human(128ULL << 20, b, sizeof(b)), "128.00MiB");
	assert_string_equal(cli_human(UINT64_MAX, b, sizeof(b)), "16.00EiB");
	assert_true(cli_parse_u64("0x10", &v) && v == 16);
	assert_true(cli_parse_u64("42", &v) && v == 42);
	assert_false(cli_parse_u64("-1", &v));
	assert_false(cli_parse_u64("abc", &v));
	assert_false(cli_parse_u64("12a", &v));
	assert_false(cli_parse_u64("", &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_size_suffixes), cmocka_unit_test(test_size_rejects),
	    cmocka_unit_test(test_size_messages), cmocka_unit_test(test_json_error_object),
	    cmocka_unit_test(test_resize_arg),	  cmocka_unit_test(test_uuid),
	    cmocka_unit_test(test_human_u64),	  cmocka_unit_test(test_suggest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
