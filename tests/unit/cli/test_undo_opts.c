/* The undo options every writer shares (cli/devopts.c): -z/--undo FILE reaches the open path's
 * undo_path; an empty FILE is a usage error; with --no-undo and cli_undo_default (a writer
 * that keeps an undo file by default: btk-fsck --repair) the default name is DEV.undo beside
 * an image file, DEV.1.undo when that is taken, PROG-NAME.undo in the current directory for
 * a device; --no-undo keeps none; -z with --no-undo is refused. Each case parses in a child
 * (popt's tables are the process's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

static char dir[64], img[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/btk-test-undoopt-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	int fd = open(img, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* In a child: parses argv (NULL-ended) as btk-fsck would, then cli_undo_default for dev when
 * with_default; 0 when the result is rc, buf equals want and undo_path is want or NULL ("").
 */
static int parse(const char **argv, const char *dev, bool with_default, int rc, const char *want)
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		struct poptOption opts[] = {CLI_WRITE_OPTIONS, CLI_NO_UNDO_OPTION, POPT_TABLEEND};
		struct btk_dev_opts o = {0};
		char buf[4096] = "";
		poptContext pc;
		int argc = 0, r;
		while (argv[argc])
			argc++;
		cli_init("btk-fsck");
		if (chdir(dir) || cli_popt_start(&pc, "btk-fsck", argc, argv, opts, "DEV"))
			_exit(3);
		r = cli_dev_opts(&o);
		if (!r && with_default)
			r = cli_undo_default(&o, dev, buf, sizeof(buf));
		else if (!r)
			snprintf(buf, sizeof(buf), "%s", o.undo_path ? o.undo_path : "");
		if (r != rc)
			_exit(1);
		if (!r && (strcmp(buf, want) ||
			   (want[0] ? !o.undo_path || strcmp(o.undo_path, want) : !!o.undo_path))) {
			fprintf(stderr, "got '%s' (undo_path '%s'), want '%s'\n", buf,
				o.undo_path ? o.undo_path : "(null)", want);
			_exit(2);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void test_options(void **state)
{
	char want[160];
	(void)state;

	const char *z[] = {"btk-fsck", "-z", "x.undo", NULL};
	assert_int_equal(parse(z, img, false, 0, "x.undo"), 0);
	assert_int_equal(parse(z, img, true, 0, "x.undo"), 0);
	const char *zl[] = {"btk-fsck", "--undo=y.undo", NULL};
	assert_int_equal(parse(zl, img, false, 0, "y.undo"), 0);
	const char *none[] = {"btk-fsck", NULL};
	assert_int_equal(parse(none, img, false, 0, ""), 0);
	const char *empty[] = {"btk-fsck", "-z", "", NULL};
	assert_int_equal(parse(empty, img, false, -1, ""), 0);
	const char *both[] = {"btk-fsck", "-z", "x", "--no-undo", NULL};
	assert_int_equal(parse(both, img, true, -1, ""), 0);
	const char *no[] = {"btk-fsck", "--no-undo", NULL};
	assert_int_equal(parse(no, img, true, 0, ""), 0);
	/* the default: beside the image, then numbered */
	snprintf(want, sizeof(want), "%s.undo", img);
	assert_int_equal(parse(none, img, true, 0, want), 0);
	int fd = open(want, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(want, sizeof(want), "%s.1.undo", img);
	assert_int_equal(parse(none, img, true, 0, want), 0);
	/* a device: in the current directory */
	assert_int_equal(parse(none, "/dev/null", true, 0, "btk-fsck-null.undo"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_options)};
	return cmocka_run_group_tests(tests, setup, teardown);
}
