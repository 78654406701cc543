/* ewfread — the EWF reader under test (containers.bats, tsan.bats).
 *
 *   ewfread same E01 RAW THREADS READS SEED   THREADS threads each read READS random ranges of
 *       the E01 (1 byte to 4 chunks long, anywhere; a third of them whole aligned chunks) and
 *       compare them with the same ranges of RAW; the threads share one handle, so its cache
 *       of chunks is filled, evicted and waited for by several readers at once. Exit 0 when
 *       every range matched, 1 at the first that did not (printed) or an error.
 *   ewfread equal E01 A B LEN   prints btk_dev_ranges_equal of the E01's ranges at A and B
 *       (1: known to read alike; 0: read them).
 *
 * The E01 is opened by btk_dev_ewf_open directly (no partition table, no lock), the raw file
 * read by pread(2): tsan.bats builds this with few of libcore's files. A test tool. */
#include "base/error.h"
#include "io/io.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (32u << 10) /* ewfacquire's default chunk: 64 sectors */

struct job {
	struct btk_dev *ewf;
	int raw;
	unsigned reads;
	uint64_t seed;
	int bad;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *reader(void *arg)
{
	struct job *j = arg;
	uint64_t size = j->ewf->size, s = j->seed | 1;
	uint8_t *a = malloc(4 * CHUNK), *b = malloc(4 * CHUNK);

	if (!a || !b) {
		j->bad = -1;
		goto out;
	}
	for (unsigned i = 0; i < j->reads && !j->bad; i++) {
		uint64_t off, len;
		if (next(&s) % 3 == 0) { /* whole chunks, aligned */
			len = CHUNK * (1 + next(&s) % 3);
			off = (next(&s) % (size / CHUNK)) * CHUNK;
		} else {
			len = 1 + next(&s) % (4 * CHUNK);
			off = next(&s) % size;
		}
		if (off + len > size)
			len = size - off;
		if (i % 8 == 7) { /* two ranges said to read alike must read alike */
			/* two thirds further on (containers.bats: the copy of the first third), or
			 * anywhere */
			uint64_t o2 = i % 16 == 7
					  ? (off + size / 3 / CHUNK * CHUNK * 2) % size
					  : (next(&s) % (size / CHUNK)) * CHUNK + off % CHUNK;
			if (o2 + len <= size && btk_dev_ranges_equal(j->ewf, off, o2, len) == 1 &&
			    (pread(j->raw, a, len, (off_t)off) != (ssize_t)len ||
			     pread(j->raw, b, len, (off_t)o2) != (ssize_t)len ||
			     memcmp(a, b, len))) {
				fprintf(stderr,
					"ewfread: %" PRIu64 " and %" PRIu64 " (%" PRIu64
					" bytes) said alike, differ\n",
					off, o2, len);
				j->bad = 1;
			}
		}
		if (btk_dev_read(j->ewf, a, len, off) ||
		    pread(j->raw, b, len, (off_t)off) != (ssize_t)len) {
			fprintf(stderr, "ewfread: read %" PRIu64 "+%" PRIu64 ": %s\n", off, len,
				btk_errmsg());
			j->bad = -1;
		} else if (memcmp(a, b, len)) {
			fprintf(stderr,
				"ewfread: %" PRIu64 "+%" PRIu64 " differs from the raw file\n", off,
				len);
			j->bad = 1;
		}
	}
out:
	free(a);
	free(b);
	return NULL;
}

int main(int argc, char **argv)
{
	struct btk_dev *ewf = NULL;
	int raw;

	if (argc == 6 && !strcmp(argv[1], "equal")) {
		if (btk_dev_ewf_open(argv[2], &ewf)) {
			fprintf(stderr, "ewfread: %s\n", btk_errmsg());
			return 1;
		}
		printf("%d\n", btk_dev_ranges_equal(ewf, strtoull(argv[3], NULL, 0),
						    strtoull(argv[4], NULL, 0),
						    strtoull(argv[5], NULL, 0)));
		btk_dev_close(ewf);
		return 0;
	}
	if (argc != 7 || strcmp(argv[1], "same")) {
		fprintf(stderr,
			"usage: ewfread same E01 RAW THREADS READS SEED | equal E01 A B LEN\n");
		return 2;
	}
	int n = atoi(argv[4]);
	if (n < 1 || n > 64)
		return 2;
	if (btk_dev_ewf_open(argv[2], &ewf)) {
		fprintf(stderr, "ewfread: %s\n", btk_errmsg());
		return 1;
	}
	if ((raw = open(argv[3], O_RDONLY)) < 0 || lseek(raw, 0, SEEK_END) != (off_t)ewf->size ||
	    ewf->size < CHUNK) {
		fprintf(stderr, "ewfread: sizes differ (or are below a chunk)\n");
		return 1;
	}
	struct job jobs[64];
	pthread_t t[64];
	int bad = 0;
	for (int i = 0; i < n; i++) {
		jobs[i] = (struct job){ewf, raw, (unsigned)atoi(argv[5]),
				       strtoull(argv[6], NULL, 0) * 7919 + (uint64_t)i, 0};
		if (pthread_create(&t[i], NULL, reader, &jobs[i])) {
			n = i;
			bad = 1;
			break;
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		bad |= jobs[i].bad != 0;
	}
	btk_dev_close(ewf);
	close(raw);
	return bad;
}
