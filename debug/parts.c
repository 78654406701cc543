/* parts.c — btk-debug parts: the partition table of a disk image or disk, and what each
 * partition holds (a btrfs with its label and UUID, or what libblkid names). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "debug.h"
#include "volumes/super.h"

static void holds_of(const char *path, const struct btk_part *p, struct btk_holds *h)
{
	struct btk_dev_opts o = {.where.partition = p->num};
	struct btk_dev *w;

	memset(h, 0, sizeof(*h));
	if (p->extended || p->bad[0] || btk_dev_open_opts(path, &o, &w))
		return;
	(void)btk_dev_holds(w, h);
	btk_dev_close(w);
}

static void print_json(const char *path, const struct btk_ptable *t)
{
	printf("{\"device\":");
	btk_json_cstr(stdout, path);
	printf(",\"table\":\"%s\",\"sector_size\":%u,\"size\":%" PRIu64 ",\"partitions\":[",
	       t->kind, t->sector, t->disk_size);
	for (int i = 0; i < t->n; i++) {
		const struct btk_part *p = &t->p[i];
		struct btk_holds h;
		holds_of(path, p, &h);
		printf("%s{\"number\":%u,\"start\":%" PRIu64 ",\"size\":%" PRIu64
		       ",\"start_sector\":%" PRIu64 ",\"sectors\":%" PRIu64 ",\"type\":",
		       i ? "," : "", p->num, p->start, p->size, p->start / t->sector,
		       p->size / t->sector);
		btk_json_cstr(stdout, p->type);
		printf(",\"type_name\":");
		btk_json_cstr(stdout, p->type_name);
		printf(",\"name\":");
		btk_json_cstr(stdout, p->name);
		printf(",\"logical\":%s,\"extended\":%s,\"problem\":",
		       p->logical ? "true" : "false", p->extended ? "true" : "false");
		if (p->bad[0])
			btk_json_cstr(stdout, p->bad);
		else
			printf("null");
		printf(",\"holds\":");
		if (!h.type[0]) {
			printf("null}");
			continue;
		}
		printf("{\"type\":");
		btk_json_cstr(stdout, h.type);
		printf(",\"label\":");
		btk_json_cstr(stdout, h.label);
		printf(",\"uuid\":");
		btk_json_cstr(stdout, h.uuid);
		printf("}}");
	}
	printf("],\"problem\":");
	if (t->problem[0])
		btk_json_cstr(stdout, t->problem);
	else
		printf("null");
	printf("}\n");
}

static void print_text(const char *path, const struct btk_ptable *t)
{
	char hs[16];

	printf("%s: %s partition table, %" PRIu64 " sectors of %u bytes (%s)\n", path, t->kind,
	       t->disk_size / t->sector, t->sector, cli_human(t->disk_size, hs, sizeof(hs)));
	printf("%4s %12s %12s %12s %10s  %-22s %s\n", "#", "start", "end", "sectors", "size",
	       "type", "holds");
	for (int i = 0; i < t->n; i++) {
		const struct btk_part *p = &t->p[i];
		struct btk_holds h;
		char holds[400], ty[64];
		holds_of(path, p, &h);
		if (p->bad[0])
			snprintf(holds, sizeof(holds), "unusable: %s", p->bad);
		else if (!h.type[0])
			snprintf(holds, sizeof(holds), "%s",
				 p->extended ? "(logical partitions)" : "-");
		else
			snprintf(holds, sizeof(holds), "%s%s%s%s", h.type,
				 h.label[0] ? " label '" : "", h.label, h.label[0] ? "'" : "");
		if (h.uuid[0])
			snprintf(holds + strlen(holds), sizeof(holds) - strlen(holds), " uuid %s",
				 h.uuid);
		snprintf(ty, sizeof(ty), "%s", p->type_name[0] ? p->type_name : p->type);
		char end[24] = "-";
		if (p->size)
			snprintf(end, sizeof(end), "%" PRIu64,
				 (p->start + p->size) / t->sector - 1);
		printf("%4u %12" PRIu64 " %12s %12" PRIu64 " %10s  %-22s %s\n", p->num,
		       p->start / t->sector, end, p->size / t->sector,
		       cli_human(p->size, hs, sizeof(hs)), ty, holds);
	}
}

int cmd_parts(const char *const *devs, int n, bool json)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		struct btk_dev_opts o = {0}; /* the whole device: no --partition here */
		struct btk_ptable t;
		struct btk_dev *dev;
		if (btk_dev_open_opts(devs[i], &o, &dev)) {
			cli_err("%s", btk_errmsg());
			rc = CLI_EXIT_ERROR;
			continue;
		}
		if (btk_dev_ptable(dev, &t)) {
			cli_err_in(devs[i], "%s", btk_errmsg());
			btk_dev_close(dev);
			rc = CLI_EXIT_ERROR;
			continue;
		}
		if (json)
			print_json(devs[i], &t);
		else
			print_text(devs[i], &t);
		/* what could not be read: one line each on stderr (JSON carries them too) */
		for (int k = 0; k < t.n; k++)
			if (t.p[k].bad[0])
				cli_warn("%s: partition %u cannot be used: %s", devs[i], t.p[k].num,
					 t.p[k].bad);
		if (t.problem[0])
			cli_warn("%s: %s", devs[i], t.problem);
		btk_ptable_free(&t);
		btk_dev_close(dev);
	}
	return rc;
}
