/* btk-walk.c — libbtk's example: lists every name of a filesystem image with its mode, size
 * and link target, and copies every regular file's data into OUTDIR (if given), through the
 * public API only. Build: cc btk-walk.c $(pkg-config --cflags --libs btk)
 * Usage: btk-walk IMG [OUTDIR [TOP]] (TOP: the folder to start from, "/" by default; OUTDIR
 * "-": read every file's data, write nothing) */
#include <btk/btk.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* a name as ls -b shows it: control bytes and backslashes escaped, so one line per name */
static void put_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\\')
			fputs("\\\\", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\%03o", c);
		else
			putchar(c);
	}
}

static int copy(btkfs *fs, const char *path, const char *out)
{
	static char buf[1 << 20];
	btkfs_file *f;
	uint64_t off = 0;
	ssize_t n;
	int fd = -1, ret = btkfs_file_open(fs, path, &f);

	if (ret)
		return ret;
	if (out && (fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) {
		btkfs_file_close(f);
		return -errno;
	}
	while ((n = btkfs_file_pread(f, buf, sizeof(buf), off)) > 0) {
		if (fd >= 0 && write(fd, buf, (size_t)n) != n) {
			n = -EIO;
			break;
		}
		off += (uint64_t)n;
	}
	if (fd >= 0)
		close(fd);
	btkfs_file_close(f);
	return n < 0 ? (int)n : 0;
}

static int walk(btkfs *fs, const char *dir, const char *outdir)
{
	struct btkfs_dirent e;
	btkfs_dir *d;
	int ret = btkfs_opendir(fs, dir, &d);

	while (!ret && (ret = btkfs_readdir(d, &e)) == 1) {
		char path[8192], out[8192], target[4096] = "";
		struct btkfs_stat st;

		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", e.name);
		if ((ret = btkfs_stat(fs, path, &st)))
			break;
		if (S_ISLNK(st.mode)) {
			ssize_t n = btkfs_readlink(fs, path, target, sizeof(target) - 1);
			if (n < 0) {
				ret = (int)n;
				break;
			}
			target[n < (ssize_t)sizeof(target) ? n : (ssize_t)sizeof(target) - 1] = 0;
		}
		put_escaped(path);
		printf("\t%o\t%llu\t", st.mode, (unsigned long long)st.size);
		put_escaped(target);
		putchar('\n');
		snprintf(out, sizeof(out), "%s%s", outdir ? outdir : "", path);
		if (S_ISDIR(st.mode)) {
			if (outdir && strcmp(outdir, "-"))
				mkdir(out, 0700);
			ret = walk(fs, path, outdir);
		} else if (S_ISREG(st.mode) && outdir) {
			ret = copy(fs, path, strcmp(outdir, "-") ? out : NULL);
		}
		if (ret)
			fprintf(stderr, "btk-walk: %s: %s\n", path, btkfs_errmsg());
	}
	btkfs_closedir(d);
	return ret < 0 ? ret : 0;
}

int main(int argc, char **argv)
{
	const char *img = argc > 1 ? argv[1] : NULL;
	btkfs *fs;
	int ret;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: btk-walk IMG [OUTDIR [TOP]]\n");
		return 2;
	}
	if ((ret = btkfs_open(&img, 1, NULL, &fs))) {
		fprintf(stderr, "btk-walk: %s\n", btkfs_errmsg());
		return 1;
	}
	ret = walk(fs, argc > 3 ? argv[3] : "/", argc > 2 ? argv[2] : NULL);
	btkfs_close(fs);
	return ret ? 1 : 0;
}
