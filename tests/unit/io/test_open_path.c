/* The open path (io/open.c, io/lock.c): a writer's lock is shared by the handles of one
 * process and refused to another process (a child here) until the last handle closes; --wait
 * waits; one file named twice is refused, new files by two names too; fault STOP drops changes
 * and says they were done, FAIL says -EIO (undo files: test_undo_file.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "io/io.h"

static char dir[64];
static char img[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/btk-test-open-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/a.img", dir);
	int fd = open(img, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20))
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

/* In a child: the result of a writable open of path (0 or -errno), the handle closed. */
static int child_open(const char *path, bool wait)
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		struct btk_dev_opts o = {.write = true, .wait = wait};
		struct btk_dev *d;
		int ret = btk_dev_open_opts(path, &o, &d);
		if (!ret)
			btk_dev_close(d);
		_exit(ret == 0 ? 0 : ret == -EBUSY ? 1 : 2);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st) == 0 ? 0 : WEXITSTATUS(st) == 1 ? -EBUSY : -EIO;
}

static void test_lock_between_processes(void **state)
{
	struct btk_dev_opts w = {.write = true};
	struct btk_dev *a, *b;
	char hard[128];
	(void)state;

	assert_int_equal(btk_dev_open_opts(img, &w, &a), 0);
	/* this process opens it again: the lock is shared, not taken twice */
	assert_int_equal(btk_dev_open_opts(img, &w, &b), 0);
	/* another process: refused, by a hard link too */
	assert_int_equal(child_open(img, false), -EBUSY);
	snprintf(hard, sizeof(hard), "%s/hard.img", dir);
	assert_int_equal(link(img, hard), 0);
	assert_int_equal(child_open(hard, false), -EBUSY);
	btk_dev_close(a);
	/* b still holds it */
	assert_int_equal(child_open(img, false), -EBUSY);
	btk_dev_close(b);
	assert_int_equal(child_open(hard, false), 0);
	unlink(hard);
	/* a read-only open takes no lock: a reader never waits */
	struct btk_dev_opts r = {0};
	assert_int_equal(btk_dev_open_opts(img, &r, &a), 0);
	assert_int_equal(child_open(img, false), 0);
	btk_dev_close(a);
}

static void test_lock_wait(void **state)
{
	int fd = open(img, O_RDONLY), go[2];
	pid_t pid;
	int st;
	char c;
	(void)state;

	/* another holder (flock(1) would be the same) that lets go 0.3 s after the parent's
	 * word: a holder that slept from its start could let go before the refusal was tried */
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	if (!pid) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		usleep(300000);
		_exit(0); /* the child's copy of fd: the parent closes its own below */
	}
	close(go[0]);
	close(fd); /* the lock stays while the child holds the descriptor */
	assert_int_equal(child_open(img, false), -EBUSY);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	assert_int_equal(child_open(img, true), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_same_file_twice(void **state)
{
	struct btk_dev_opts w = {.write = true, .create = true};
	struct btk_dev *devs[2];
	char rel[128], n1[128], n2[128];
	(void)state;

	snprintf(rel, sizeof(rel), "%s/./a.img", dir);
	const char *p[2] = {img, rel};
	assert_int_equal(btk_devs_open(p, 2, &w, devs), -EINVAL);
	assert_null(devs[0]);
	assert_non_null(strstr(btk_errmsg(), "same device"));
	/* two names of a file that does not exist yet: created once, then refused */
	snprintf(n1, sizeof(n1), "%s/new.img", dir);
	snprintf(n2, sizeof(n2), "%s/./new.img", dir);
	const char *q[2] = {n1, n2};
	assert_int_equal(btk_devs_open(q, 2, &w, devs), -EINVAL);
	assert_null(devs[1]);
	assert_int_equal(access(n1, F_OK), -1); /* made by the failed open: removed */
	/* a file made and locked by another process: refused, and left where it is */
	int fd = open(n1, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	pid_t pid = fork();
	if (!pid) {
		struct btk_dev *d;
		_exit(btk_dev_open_opts(n1, &w, &d) == -EBUSY && access(n1, F_OK) == 0 ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	assert_int_equal(access(n1, F_OK), 0);
	unlink(n1);
}

static void test_faults(void **state)
{
	struct btk_dev_opts o = {.write = true, .fault = {BTK_FAULT_STOP, 1}};
	uint8_t buf[512], got[512];
	struct btk_dev *d;
	(void)state;

	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	assert_int_equal(btk_dev_write(d, buf, sizeof(buf), 0), 0);
	assert_int_equal(btk_dev_write(d, buf, sizeof(buf), 4096), 0); /* said done... */
	assert_int_equal(btk_dev_flush(d), 0);
	assert_int_equal(btk_dev_read(d, got, sizeof(got), 4096), 0); /* ...not done */
	assert_int_equal(got[0], 0);
	btk_dev_close(d);
	o.fault.mode = BTK_FAULT_FAIL;
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	assert_int_equal(btk_dev_write(d, buf, sizeof(buf), 8192), 0);
	assert_int_equal(btk_dev_write(d, buf, sizeof(buf), 12288), -EIO);
	btk_dev_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lock_between_processes),
	    cmocka_unit_test(test_lock_wait),
	    cmocka_unit_test(test_same_file_twice),
	    cmocka_unit_test(test_faults),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
