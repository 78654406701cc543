/* csum.c — crc32c (SSE4.2 when the CPU has it), xxhash64, sha256, blake2b-256. */
#include "base/csum.h"
#include "base/blake2b.h"
#include "base/error.h"
#include "format/format.h"

#include <errno.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

static uint32_t crc_table[8][256];
static bool crc_hw;
/* the tables are set up once, before any thread reads them */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static void lane_shift_init(void);
#endif

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (int t = 1; t < 8; t++)
		for (int i = 0; i < 256; i++)
			crc_table[t][i] =
			    (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
	crc_hw = __builtin_cpu_supports("sse4.2");
	if (crc_hw)
		lane_shift_init();
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint64_t v = btk_le64(p) ^ crc;
		crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
		      crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
		      crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
		      crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
/* The crc32 instruction takes 3 cycles but can start one every cycle: three independent runs
 * over three neighbouring lanes of LANE bytes go 3x as fast as one. The lanes are then joined
 * by linearity: crc(c, A B) = crc(c, A) advanced over |B| zero bytes, xor crc(0, B); advancing
 * a crc over LANE zero bytes is linear in its 32 bits, so four 256-entry tables do it. */
#define LANE 1360 /* 3 lanes = 4080 bytes: a 4 KiB sector is one round and 16 bytes */
static uint32_t lane_shift[4][256];

__attribute__((target("sse4.2"))) static uint64_t crc_hw_serial(uint64_t c, const uint8_t *p,
								size_t n)
{
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; n; p++, n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p);
	return c;
}

static void lane_shift_init(void)
{
	static const uint8_t zero[LANE];
	uint32_t bit[32];

	for (int i = 0; i < 32; i++)
		bit[i] = (uint32_t)crc_hw_serial(1u << i, zero, LANE);
	for (int t = 0; t < 4; t++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int j = 0; j < 8; j++)
				if (b & (1u << j))
					v ^= bit[8 * t + j];
			lane_shift[t][b] = v;
		}
}

static uint32_t lane_advance(uint32_t c)
{
	return lane_shift[0][c & 0xff] ^ lane_shift[1][(c >> 8) & 0xff] ^
	       lane_shift[2][(c >> 16) & 0xff] ^ lane_shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw_run(uint32_t crc, const uint8_t *p,
							     size_t len)
{
	uint64_t c = crc;

	for (; len >= 3 * LANE; p += 3 * LANE, len -= 3 * LANE) {
		uint64_t a = c, b = 0, d = 0;
		/* the next round's bytes: the hardware prefetcher stops at page boundaries, and
		 * bytes from memory arrive 2-3x slower than the crc instruction takes them */
		for (size_t i = 3 * LANE; i < 6 * LANE && i < len; i += 64)
			__builtin_prefetch(p + i);
		for (size_t i = 0; i < LANE; i += 8) {
			uint64_t x, y, z;
			memcpy(&x, p + i, 8);
			memcpy(&y, p + LANE + i, 8);
			memcpy(&z, p + 2 * LANE + i, 8);
			a = __builtin_ia32_crc32di(a, x);
			b = __builtin_ia32_crc32di(b, y);
			d = __builtin_ia32_crc32di(d, z);
		}
		c = lane_advance(lane_advance((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
	}
	return (uint32_t)crc_hw_serial(c, p, len);
}
#endif

uint32_t btk_crc32c(uint32_t seed, const void *data, size_t len)
{
	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_hw)
		return crc_hw_run(seed, data, len);
#endif
	return crc_sw(seed, data, len);
}

int btk_csum_size(int type)
{
	switch (type) {
	case BTRFS_CSUM_TYPE_CRC32:
		return 4;
	case BTRFS_CSUM_TYPE_XXHASH:
		return 8;
	case BTRFS_CSUM_TYPE_SHA256:
	case BTRFS_CSUM_TYPE_BLAKE2:
		return 32;
	}
	return 0;
}

const char *btk_csum_name(int type)
{
	static const char *const names[] = {"crc32c", "xxhash64", "sha256", "blake2b"};

	return type >= 0 && type < 4 ? names[type] : NULL;
}

int btk_csum_parse(const char *name, int *type)
{
	static const struct {
		const char *name;
		int type;
	} tab[] = {{"crc32c", 0}, {"crc32", 0},	 {"xxhash", 1}, {"xxhash64", 1},
		   {"sha256", 2}, {"blake2", 3}, {"blake2b", 3}};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcasecmp(name, tab[i].name)) {
			*type = tab[i].type;
			return 0;
		}
	return btk_err(EINVAL, "unknown checksum type '%s'", name);
}

int btk_csum(int type, const void *data, size_t len, uint8_t out[BTK_CSUM_MAX])
{
	memset(out, 0, BTK_CSUM_MAX);
	switch (type) {
	case BTRFS_CSUM_TYPE_CRC32:
		btk_put32(out, ~btk_crc32c(~0u, data, len));
		return 0;
	case BTRFS_CSUM_TYPE_XXHASH:
		btk_put64(out, XXH64(data, len, 0));
		return 0;
	case BTRFS_CSUM_TYPE_SHA256:
		SHA256(data, len, out);
		return 0;
	case BTRFS_CSUM_TYPE_BLAKE2:
		btk_blake2b_256(data, len, out);
		return 0;
	}
	return btk_err(EINVAL, "unknown checksum type %d", type);
}

uint32_t btk_name_hash(const void *name, size_t len)
{
	return btk_crc32c(BTK_NAME_HASH_SEED, name, len);
}

uint32_t btk_extref_hash(uint64_t parent, const void *name, size_t len)
{
	return btk_crc32c(btk_extref_hash_seed(parent), name, len);
}

uint64_t btk_data_ref_hash(uint64_t root, uint64_t ino, uint64_t offset)
{
	uint8_t le[8];
	uint32_t high, low;

	btk_put64(le, root);
	high = btk_crc32c(BTK_DATA_REF_HASH_SEED, le, 8);
	btk_put64(le, ino);
	low = btk_crc32c(BTK_DATA_REF_HASH_SEED, le, 8);
	btk_put64(le, offset);
	low = btk_crc32c(low, le, 8);
	return btk_data_ref_hash_join(high, low);
}
