/* super.c — `btk-debug super`: every superblock field decoded, like dump-super -f. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "debug.h"
#include "cli/cli.h"
#include "base/error.h"
#include "io/io.h"
#include "format/dev_items.h"
#include "volumes/super.h"
#include "volumes/volumes.h"

static void print_copy(const char *path, const struct btk_super_copy *c, bool json)
{
	struct render r;
	struct btk_sink s;

	render_init(&r, &s, stdout, json);
	if (json) {
		fputs("{\"device\":", stdout);
		btk_json_str(stdout, (const uint8_t *)path, strlen(path));
		printf(",\"mirror\":%d,\"offset\":%" PRIu64 ",\"valid\":%s", c->mirror, c->offset,
		       c->valid ? "true" : "false");
		if (!c->valid) {
			fputs(",\"why\":", stdout);
			btk_json_str(stdout, (const uint8_t *)c->why, strlen(c->why));
		}
		fputs(",\"super\":{", stdout);
		btk_decode_super(&c->sb, &s);
		fputs("}}\n", stdout);
		return;
	}
	r.super_mode = true;
	r.base_indent = 2;
	printf("superblock: bytenr=%" PRIu64 ", device=%s, mirror=%d\n", c->offset, path,
	       c->mirror);
	printf("---------------------------------------------------------\n");
	if (!c->valid)
		printf("INVALID: %s\n", c->why);
	btk_decode_super(&c->sb, &s);
	render_finish(&r);
	putchar('\n');
}

/* One device: the chosen copy, or with all every copy the device is large enough to hold,
 * valid or not (a zeroed copy decodes as zeros, after its INVALID line). */
static int super_dev(const char *path, bool all, bool json)
{
	struct btk_super_copy copies[BTK_SUPER_MIRRORS];
	struct btk_dev *dev;
	int best, ret = 0;

	struct btk_dev_opts o = {0};

	if (cli_dev_where(&o))
		return CLI_EXIT_USAGE;
	if (btk_dev_open_opts(path, &o, &dev)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	best = btk_super_read_all(dev, copies);
	if (best < 0 && !all) {
		cli_err("%s", btk_errmsg());
		btk_dev_close(dev);
		return CLI_EXIT_ERROR;
	}
	if (best > 0 && copies[0].present && !copies[0].valid)
		cli_warn("%s: primary superblock invalid (%s); using mirror %d", path,
			 copies[0].why, best);
	if (best >= 0) {
		struct btk_dev_item_ent di;
		btk_dev_item_parse(copies[best].sb.dev_item, BTK_DEV_ITEM_SIZE, &di);
		btk_dev_size_check(dev, di.devid, di.total_bytes, false);
	}
	for (int i = 0; i < BTK_SUPER_MIRRORS; i++) {
		if (!copies[i].present || (!all && i != best))
			continue;
		if (all && !copies[i].valid) {
			cli_err("%s: superblock mirror %d at %" PRIu64 ": %s", path, i,
				copies[i].offset, copies[i].why);
			ret = 1; /* still shown: --all prints every copy as it is on disk */
		}
		print_copy(path, &copies[i], json);
	}
	if (best < 0)
		cli_err("%s", btk_errmsg());
	btk_dev_close(dev);
	return best < 0 ? 1 : ret;
}

int cmd_super(const char *const *devs, int n, bool all, bool json)
{
	int ret = 0;

	for (int i = 0; i < n; i++)
		ret |= super_dev(devs[i], all, json);
	if (cli_stdout_check())
		ret = 1;
	return ret;
}
