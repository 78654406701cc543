/* hash.c — a file's content hash (md5, sha1, sha256) for ls/stat --hash and body files. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"

int img_hash_opt(int rc, char *arg, const char **hash)
{
	static const char *const ok[] = {"md5", "sha1", "sha256"};
	size_t i = 0;

	while (i < 3 && arg && strcmp(arg, ok[i]))
		i++;
	if (!rc && arg && i == 3) {
		cli_err("--hash: '%s': expected md5, sha1 or sha256", arg);
		rc = CLI_EXIT_USAGE;
	} else if (!rc && arg) {
		*hash = ok[i];
	}
	free(arg);
	return rc;
}

static int feed(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	static const uint8_t zeros[65536];

	(void)off;
	if (data)
		return EVP_DigestUpdate(ctx, data, len) ? 0 : -EIO;
	while (len) { /* a hole reads as zeros */
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		if (!EVP_DigestUpdate(ctx, zeros, n))
			return -EIO;
		len -= n;
	}
	return 0;
}

int img_file_hash(struct img_cmd *c, const struct img_node *n, const char *algo,
		  char out[IMG_HASH_HEX])
{
	static const struct btk_file_read_ops ops = {.data = feed};
	const EVP_MD *md = EVP_get_digestbyname(algo);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t dig[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int ret;

	out[0] = 0;
	if (!md || !ctx || !EVP_DigestInit_ex(ctx, md, NULL)) {
		EVP_MD_CTX_free(ctx);
		return btk_err(ENOMEM, "%s: no such hash", algo);
	}
	ret = btk_file_read(c->fs, &n->root, n->ino, &n->info, 0, UINT64_MAX, &ops, ctx);
	if (!ret && !EVP_DigestFinal_ex(ctx, dig, &len))
		ret = btk_err(EIO, "%s failed", algo);
	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; !ret && i < len && 2 * i + 2 < IMG_HASH_HEX; i++)
		snprintf(out + 2 * i, 3, "%02x", dig[i]);
	return ret;
}
