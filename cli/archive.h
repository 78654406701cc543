/* archive.h — archives (tar: ustar, pax, GNU; cpio; compressed with gzip, xz, zstd, bzip2...)
 * read with libarchive, member by member, into libcore's populate stream: the one adapter
 * between libarchive and btk (btk-mkfs --rootdir, btk-image put). Nothing is extracted: each
 * member's data goes from libarchive's buffers to the stream. */
#ifndef BTK_CLI_ARCHIVE_H
#define BTK_CLI_ARCHIVE_H

#include <stdbool.h>
#include "fs/populate.h"

/* Whether path names an archive rather than a directory: "-" (standard input) or anything
 * that is not a directory (a regular file, a pipe). */
bool cli_archive_source(const char *path);

/* Loads libarchive (libarchive.so.13, with dlopen: only a run that reads an archive pays for
 * it), once. 0, or -ENOSYS with the message in btk_errmsg(). cli_archive_read calls it; a tool
 * calls it first to refuse before it writes anything. */
int cli_archive_load(void);

/* Reads every member of path ("-": standard input) into s. 0, or -errno with the message in
 * btk_errmsg() (naming the archive and the member). */
int cli_archive_read(const char *path, struct btk_stream *s);

/* What an archive file holds, from a first pass over its headers (the data of an
 * uncompressed file is skipped by seeking; a compressed one is decompressed): members, st_size
 * of its regular files, and the data the copy writes at the least (btk_mkfs_opts'
 * fill_min_data: files past 4096 bytes, sparse ones by what they hold, a hard link's target
 * once). Not for standard input, which can be read once only. */
struct cli_archive_size {
	uint64_t members, file_bytes, data_min;
};
int cli_archive_measure(const char *path, struct cli_archive_size *sz);

/* The warnings a stream left, one line each kind, once (btk_warn: a tool prints them, libbtk
 * gives them to its caller). */
void cli_archive_report(const char *path, const struct btk_stream_stats *st);

#endif
