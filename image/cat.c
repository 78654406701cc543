/* cat.c — btk-image cat IMG PATH: a file's bytes on stdout (holes as zeros). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"

static int out_data(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	static const uint8_t zeros[65536];

	(void)ctx, (void)off;
	if (data)
		return cli_stdout_write(data, len);
	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		int ret = cli_stdout_write(zeros, n);
		if (ret)
			return ret;
		len -= n;
	}
	return 0;
}

int verb_cat(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct poptOption opts[] = {IMG_OPT_DEVICE(&c), CLI_ROOT_OPTIONS,
				    CLI_STD_OPTIONS POPT_TABLEEND};
	int rc = img_parse(&c, argc, argv, opts, "IMG PATH", 2, 2);
	struct img_node n;

	if (!rc)
		rc = img_open_path(&c, &n);
	if (rc)
		return img_done(&c, rc);
	if (!S_ISREG(n.info.mode)) {
		cli_err("%s: %s: %s", c.img, c.args[1],
			S_ISDIR(n.info.mode) ? "is a directory" : "not a regular file");
		return img_done(&c, CLI_EXIT_ERROR);
	}
	/* no bad(): the first unreadable range stops cat with its reason */
	static const struct btk_file_read_ops ops = {out_data, NULL};
	int ret = btk_file_read(c.fs, &n.root, n.ino, &n.info, 0, UINT64_MAX, &ops, NULL);
	if (ret == -EPIPE)
		return img_done(&c, CLI_EXIT_ERROR);
	if (ret < 0 && ret != -EIO && ret != -EUCLEAN && ret != -ENOMEM)
		cli_err("%s: %s: writing stdout: %s", c.img, c.args[1], strerror(-ret));
	else if (ret)
		cli_err("%s: %s: %s", c.img, c.args[1], btk_errmsg());
	return img_done(&c, ret ? CLI_EXIT_ERROR : CLI_EXIT_OK);
}
