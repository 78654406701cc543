/* getfattr.c — btk-image getfattr [-n NAME | -d] [-m RE] [-e ENC] IMG PATH, as getfattr(1)
 * prints: "# file: PATH", then NAME=VALUE lines (text in quotes, 0x hex, 0s base64). */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"

enum enc { ENC_AUTO, ENC_TEXT, ENC_HEX, ENC_BASE64 };

struct gf {
	const char *path;
	enum enc enc;
	regex_t re;
	int shown;
};

/* getfattr's rule for choosing text: printable bytes (a trailing NUL allowed). */
static bool is_text(const uint8_t *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isprint(v[i]) && !isspace(v[i]) && !(i == len - 1 && !v[i]))
			return false;
	return true;
}

static void print_value(enum enc e, const uint8_t *v, size_t len)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	if (e == ENC_AUTO)
		e = is_text(v, len) ? ENC_TEXT : ENC_BASE64;
	if (e == ENC_TEXT) {
		putchar('"');
		for (size_t i = 0; i < len; i++) {
			if (i == len - 1 && !v[i])
				break;
			if (v[i] == '"' || v[i] == '\\' || !isprint(v[i]))
				printf("\\%03o", v[i]);
			else
				putchar(v[i]);
		}
		putchar('"');
	} else if (e == ENC_HEX) {
		printf("0x");
		for (size_t i = 0; i < len; i++)
			printf("%02x", v[i]);
	} else {
		printf("0s");
		for (size_t i = 0; i < len; i += 3) {
			uint32_t w = (uint32_t)v[i] << 16 | (i + 1 < len ? v[i + 1] << 8 : 0) |
				     (i + 2 < len ? v[i + 2] : 0);
			putchar(b64[w >> 18 & 63]);
			putchar(b64[w >> 12 & 63]);
			putchar(i + 1 < len ? b64[w >> 6 & 63] : '=');
			putchar(i + 2 < len ? b64[w & 63] : '=');
		}
	}
}

static void print_one(struct gf *g, const char *name, size_t nlen, const uint8_t *v, size_t vlen)
{
	if (!g->shown)
		printf("# file: %s\n", g->path);
	printf("%.*s=", (int)nlen, name);
	print_value(g->enc, v, vlen);
	putchar('\n');
	g->shown++;
}

/* The attributes that match, copied, to be printed sorted by name as getfattr(1) does. */
struct attr {
	char name[256];
	uint8_t *value;
	size_t len;
};

BTK_VEC(attr_list, struct attr);

struct attrs {
	struct gf *g;
	struct attr_list l;
};

static int dump_cb(void *ctx, const char *name, uint16_t nlen, const uint8_t *v, uint16_t vlen)
{
	struct attrs *a = ctx;
	struct attr one, *x;

	snprintf(one.name, sizeof(one.name), "%.*s", (int)nlen, name);
	if (regexec(&a->g->re, one.name, 0, NULL, 0))
		return 0;
	if (!(one.value = malloc(vlen ? vlen : 1)))
		return btk_err(ENOMEM, "xattr value");
	memcpy(one.value, v, vlen);
	one.len = vlen;
	if (!(x = btk_vec_push(&a->l))) {
		free(one.value);
		return btk_err(ENOMEM, "xattr list");
	}
	*x = one;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct attr *)a)->name, ((const struct attr *)b)->name);
}

static int dump_all(struct gf *g, struct img_cmd *c, const struct img_node *n)
{
	struct attrs a = {.g = g};
	int ret = btk_xattr_for_each(c->fs, &n->root, n->ino, dump_cb, &a);

	btk_vec_sort(&a.l, by_name);
	for (size_t i = 0; i < a.l.n; i++) {
		struct attr *x = btk_vec_at(&a.l, i);
		if (!ret)
			print_one(g, x->name, strlen(x->name), x->value, x->len);
		free(x->value);
	}
	btk_vec_free(&a.l);
	return ret;
}

static int parse_enc(const char *s, enum enc *e)
{
	if (!s)
		return 0;
	if (!strcmp(s, "text"))
		*e = ENC_TEXT;
	else if (!strcmp(s, "hex"))
		*e = ENC_HEX;
	else if (!strcmp(s, "base64"))
		*e = ENC_BASE64;
	else
		return -1;
	return 0;
}

int verb_getfattr(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct gf g = {0};
	char *name = NULL, *match = NULL, *enc = NULL;
	int dump = 0;
	struct poptOption opts[] = {
	    {"name", 'n', POPT_ARG_STRING, &name, 0, "the value of attribute NAME", "NAME"},
	    {"dump", 'd', POPT_ARG_NONE, &dump, 0, "every attribute matching -m (default ^user\\.)",
	     NULL},
	    {"match", 'm', POPT_ARG_STRING, &match, 0,
	     "names matching the regular expression RE "
	     "(- : all)",
	     "RE"},
	    {"encoding", 'e', POPT_ARG_STRING, &enc, 0, "values as text, hex or base64", "ENC"},
	    IMG_OPT_DEVICE(&c),
	    CLI_ROOT_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	int rc = img_parse(&c, argc, argv, opts, "[-n NAME | -d [-m RE]] [-e ENC] IMG PATH", 2, 2);
	struct img_node n;
	bool re_made = false;

	if (!rc && parse_enc(enc, &g.enc)) {
		cli_err("-e: '%s': use text, hex or base64", enc);
		rc = CLI_EXIT_USAGE;
	}
	if (!rc && name && (dump || match)) {
		cli_err("-n and -d/-m do not go together");
		rc = CLI_EXIT_USAGE;
	}
	if (!rc && !name) {
		const char *re = !match ? "^user\\." : strcmp(match, "-") ? match : "";
		if (regcomp(&g.re, re, REG_EXTENDED | REG_NOSUB)) {
			cli_err("-m: '%s': not a regular expression", match);
			rc = CLI_EXIT_USAGE;
		} else {
			re_made = true;
		}
	}
	if (!rc)
		rc = img_open_path(&c, &n);
	if (!rc) {
		const char *p = c.args[1];
		g.path = p + strspn(p, "/"); /* as getfattr(1) prints absolute names */
		if (!*g.path)
			g.path = "/";
		if (name) {
			uint8_t *v = NULL;
			size_t vlen = 0;
			int ret =
			    btk_xattr_get(c.fs, &n.root, n.ino, name, strlen(name), &v, &vlen);
			if (!ret)
				print_one(&g, name, strlen(name), v, vlen);
			else if (ret == -ENODATA)
				cli_err("%s: %s: No such attribute", p, name);
			else
				cli_err("%s: %s", p, btk_errmsg());
			free(v);
			rc = ret ? CLI_EXIT_ERROR : 0;
		} else if (dump_all(&g, &c, &n)) {
			cli_err("%s: %s", p, btk_errmsg());
			rc = CLI_EXIT_ERROR;
		}
		if (g.shown)
			putchar('\n');
	}
	if (re_made)
		regfree(&g.re);
	free(name), free(match), free(enc);
	return img_done(&c, rc);
}
