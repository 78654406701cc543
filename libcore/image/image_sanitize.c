/* image_sanitize.c — names replaced by names of the same length and the same crc32c, so that
 * every DIR_ITEM key, extref key and the kernel's tree-checker still agree with them.
 *
 * For a fixed length and seed, crc32c is affine over GF(2) in the name's bits: two names of
 * one length have the same hash under every seed exactly when the seedless, uninverted crc
 * (btk_crc32c(0, ...), linear) of their bytes is equal. The last four bytes of a name enter
 * that linear map bijectively, so a random printable prefix can always be completed: the
 * suffix is M^-1(L(original) ^ L(prefix, 0000)), with M the map of those four bytes. The
 * prefix comes from a keyed hash of the original name, so one name becomes the same new name
 * wherever it appears (DIR_ITEM, DIR_INDEX, INODE_REF, ROOT_REF...) and cannot be guessed
 * back without the key, which lives only in memory. Names of at most four bytes have no other
 * name with their hash and are kept.
 *
 * Two names with the same crc32c (and length) must not become one name: a directory would
 * then hold two equal entries. The prefix is drawn from a keyed BLAKE2b of the whole name
 * (a crc of it would be equal for both), and every new name is remembered as taken by the
 * name it replaces: a candidate another name took is passed over for the next one, so that
 * the replacement is one to one over the whole dump (unique in every directory) and the
 * same name is always replaced by the same new name (the candidates it passed over stay
 * taken by others).
 */
#include <string.h>
#include <sys/random.h>

#include "base/blake2b.h"
#include "base/csum.h"
#include "base/error.h"
#include "image/image_int.h"

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

/* inv[j]: the suffix (four bytes, little-endian) whose linear crc is bit j alone. */
static void invert_suffix_map(uint32_t inv[32])
{
	uint32_t m[32], id[32];

	for (int j = 0; j < 32; j++) {
		uint8_t x[4];
		btk_put32(x, 1u << j);
		m[j] = btk_crc32c(0, x, 4); /* column j: image of suffix bit j */
		id[j] = 1u << j;
	}
	/* Gauss-Jordan on the columns: reduce m to the identity, applying the same steps to id. */
	for (int bit = 0; bit < 32; bit++) {
		int p = bit;
		while (p < 32 && !(m[p] >> bit & 1))
			p++;
		if (p == 32)
			continue; /* cannot happen: the map is a bijection */
		uint32_t t = m[p];
		m[p] = m[bit], m[bit] = t;
		t = id[p], id[p] = id[bit], id[bit] = t;
		for (int c = 0; c < 32; c++)
			if (c != bit && (m[c] >> bit & 1))
				m[c] ^= m[bit], id[c] ^= id[bit];
	}
	for (int j = 0; j < 32; j++)
		inv[j] = id[j];
}

int btk_sanitizer_init(struct btk_sanitizer *s)
{
	uint32_t inv[32];

	memset(s, 0, sizeof(*s));
	if (getrandom(s->key, sizeof(s->key), 0) != (ssize_t)sizeof(s->key))
		return -1;
	invert_suffix_map(inv);
	for (int b = 0; b < 4; b++)
		for (int v = 0; v < 256; v++)
			for (int j = 0; j < 8; j++)
				if (v >> j & 1)
					s->sfx[b][v] ^= inv[8 * b + j];
	for (int d = 0; d < 2; d++)
		for (int v = 0; v < 256; v++) {
			uint8_t x[6] = {(uint8_t)v};
			s->tail[d][v] = btk_crc32c(0, x, 5 + (size_t)d);
		}
	return 0;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb93fe53a87c3ULL;
	return x ^ (x >> 33);
}

static bool printable(uint8_t c)
{
	return c > 0x20 && c < 0x7f && c != '/';
}

static uint32_t suffix_for(const struct btk_sanitizer *s, uint32_t need)
{
	return s->sfx[0][need & 255] ^ s->sfx[1][need >> 8 & 255] ^ s->sfx[2][need >> 16 & 255] ^
	       s->sfx[3][need >> 24];
}

/* Tries the 64 (or 64 x 64) choices of the one or two bytes before the suffix, from a random
 * start, for a suffix of bytes allowed by ok(); true when one fits (out is then complete). */
static bool complete(const struct btk_sanitizer *s, uint8_t *out, const uint8_t *name, uint32_t len,
		     uint32_t want, uint64_t r, bool (*ok)(uint8_t))
{
	uint32_t n = len - 4, two = len >= 6;
	uint32_t base;

	out[n - 1] = 0;
	if (two)
		out[n - 2] = 0;
	memset(out + n, 0, 4);
	base = want ^ btk_crc32c(0, out, len);
	for (uint32_t t = 0; t < (two ? 4096u : 64u); t++) {
		uint8_t c1 = (uint8_t)alphabet[(t + r) & 63];
		uint8_t c2 = (uint8_t)alphabet[((t >> 6) + (r >> 6)) & 63];
		uint32_t sfx = suffix_for(s, base ^ s->tail[0][c1] ^ (two ? s->tail[1][c2] : 0));
		uint8_t x[4];
		btk_put32(x, sfx);
		if (ok(x[0]) && ok(x[1]) && ok(x[2]) && ok(x[3])) {
			out[n - 1] = c1;
			if (two)
				out[n - 2] = c2;
			memcpy(out + n, x, 4);
			if (memcmp(out, name, len)) /* the original itself is always a solution */
				return true;
		}
	}
	return false;
}

static bool not_nul_slash(uint8_t c)
{
	return c && c != '/';
}

/* A keyed BLAKE2b of name[0..len): 32 bytes that only the dump's key gives. */
static void keyed_hash(const struct btk_sanitizer *s, const uint8_t *name, uint32_t len,
		       uint8_t out[32])
{
	uint8_t buf[sizeof(s->key) + 4 + BTK_NAME_MAX_SAN];

	memcpy(buf, s->key, sizeof(s->key));
	btk_put32(buf + sizeof(s->key), len);
	memcpy(buf + sizeof(s->key) + 4, name, len);
	btk_blake2b_256(buf, sizeof(s->key) + 4 + len, out);
}

/* True when cand may replace the name whose keyed hash is orig: no other name took it
 * (it is then taken), or this one did. */
static bool claim(struct btk_sanitizer *s, uint64_t orig, const uint8_t *cand, uint32_t len)
{
	uint8_t h[32];
	uint64_t out, pair;

	keyed_hash(s, cand, len, h);
	out = btk_le64(h + 16); /* other bytes than orig's: a name is never its own candidate */
	pair = mix(out ^ mix(orig + 0x9e3779b97f4a7c15ULL));
	if (btk_u64set_has(&s->pairs, pair))
		return true;
	if (btk_u64set_has(&s->taken, out))
		return false;
	if (btk_u64set_add(&s->taken, out) < 0 || btk_u64set_add(&s->pairs, pair) < 0) {
		btk_err_clear();
		s->oom = true; /* the dump fails: a name could be repeated */
	}
	return true;
}

void btk_sanitizer_free(struct btk_sanitizer *s)
{
	btk_u64set_free(&s->taken);
	btk_u64set_free(&s->pairs);
}

void btk_sanitize_name(struct btk_sanitizer *s, uint8_t *name, uint32_t len)
{
	uint8_t out[BTK_NAME_MAX_SAN], kh[32];
	uint32_t want, n = len - 4;

	if (len <= 4 || len > sizeof(out))
		return;
	want = btk_crc32c(0, name, len);
	keyed_hash(s, name, len, kh);
	uint64_t orig = btk_le64(kh), h = btk_le64(kh + 8);
	for (uint32_t tries = 0; tries < 256; tries++) {
		uint64_t r = mix(h + tries);
		for (uint32_t i = 0; i < n; i++) {
			if ((i & 7) == 7)
				r = mix(r + i);
			out[i] = (uint8_t)alphabet[(r >> ((i & 7) * 6)) & 63];
		}
		/* printable if it can be had, else any bytes but NUL and '/' */
		if ((complete(s, out, name, len, want, r, printable) ||
		     complete(s, out, name, len, want, r, not_nul_slash)) &&
		    claim(s, orig, out, len)) {
			memcpy(name, out, len);
			return;
		}
	}
	s->kept++; /* no free name of this length and hash was found: the name stays */
}
