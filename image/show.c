/* show.c — modes, types, times and symlink targets as ls and stat print them. */
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"

#define SYMLINK_MAX 4096 /* PATH_MAX: the kernel's limit for a target */

void img_mode_str(uint32_t m, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	const char *rwx = "rwxrwxrwx";

	out[0] = types[(m >> 12) & 15];
	for (int i = 0; i < 9; i++)
		out[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		out[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		out[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		out[9] = (m & S_IXOTH) ? 't' : 'T';
	out[10] = 0;
}

const char *img_type_name(uint32_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	}
	return "unknown";
}

void img_time_str(const struct btk_time *t, char out[48])
{
	time_t s = (time_t)t->sec;
	struct tm tm;

	if (!gmtime_r(&s, &tm)) {
		snprintf(out, 48, "@%lld.%09u", (long long)t->sec, t->nsec);
		return;
	}
	size_t n = strftime(out, 48, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(out + n, 48 - n, ".%09u", t->nsec);
}

char *img_symlink_target(struct img_cmd *c, const struct img_node *n, const char *path)
{
	size_t len = n->info.size > SYMLINK_MAX ? SYMLINK_MAX : (size_t)n->info.size, got = 0;
	char *t = malloc(len + 1);

	if (!t) {
		cli_err("out of memory");
		return NULL;
	}
	if (btk_file_pread(c->fs, &n->root, n->ino, &n->info, (uint8_t *)t, len, 0, &got)) {
		cli_err("%s: %s: symlink target: %s", c->img, path, btk_errmsg());
		free(t);
		return NULL;
	}
	t[got] = 0;
	return t;
}

void img_body_line(const char *hash, const char *path, const char *mark, uint64_t root,
		   uint64_t ino, const struct btk_inode_info *i)
{
	char mode[11], ino_s[48];
	char t;

	img_mode_str(i->mode, mode);
	t = mode[0] == '-' ? 'r' : mode[0] == '?' ? '-' : mode[0];
	mode[0] = t;
	/* another subvolume's inode as INO-ROOT, the way TSK qualifies an NTFS entry: mactime
	 * takes digits and dashes only (it drops a line with "ROOT:INO"), plaso reads INO */
	if (root == BTRFS_FS_TREE_OBJECTID)
		snprintf(ino_s, sizeof(ino_s), "%llu", (unsigned long long)ino);
	else
		snprintf(ino_s, sizeof(ino_s), "%llu-%llu", (unsigned long long)ino,
			 (unsigned long long)root);
	printf("%s|", hash && *hash ? hash : "0");
	for (const char *p = path; *p; p++) /* the format has no escape: '|' and newlines go */
		putchar(*p == '|' || *p == '\n' || *p == '\r' ? '?' : *p);
	printf("%s|%s|%c/%s|%u|%u|%llu|%lld|%lld|%lld|%lld\n", mark ? mark : "", ino_s, t, mode,
	       i->uid, i->gid, (unsigned long long)i->size, (long long)i->atime.sec,
	       (long long)i->mtime.sec, (long long)i->ctime.sec, (long long)i->otime.sec);
}
