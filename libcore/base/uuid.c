/* uuid.c — derived or random uuids. */
#include "base/uuid.h"
#include "base/csum.h"
#include "format/format.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void random_bytes(uint8_t *u)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, u, 16) : -1;

	if (fd >= 0)
		close(fd);
	if (r != 16) /* no entropy source: still unique enough per process and time */
		for (int i = 0; i < 16; i++)
			u[i] = (uint8_t)(rand() ^ (int)time(NULL) >> (i % 8));
}

void btk_uuid_make(const uint8_t *seed, const char *tag, uint64_t n, uint8_t out[16])
{
	uint8_t in[BTK_FSID_SIZE + 32 + 8] = {0}, sum[BTK_CSUM_MAX];

	if (seed) {
		memcpy(in, seed, BTK_FSID_SIZE);
		strncpy((char *)in + BTK_FSID_SIZE, tag, 31);
		btk_put64(in + BTK_FSID_SIZE + 32, n);
		btk_csum(BTRFS_CSUM_TYPE_SHA256, in, sizeof(in), sum);
		memcpy(out, sum, 16);
	} else {
		random_bytes(out);
	}
	out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
	out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
}

char *btk_uuid_str(const uint8_t u[16], char out[BTK_UUID_STR])
{
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		snprintf(out + k, 3, "%02x", u[i]);
		k += 2;
	}
	out[k] = 0;
	return out;
}
