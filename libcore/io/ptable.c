/* ptable.c — MBR and GPT partition tables, read through a device handle so that a disk image
 * inside split raw segments or an EWF file is read as well as a plain file or block device.
 * Every number read from the disk is bounds-checked: a table may be crafted. Partition
 * numbers follow sfdisk and mmls (io.h). */
#include "io/io.h"
#include "base/error.h"
#include "base/uuid.h"

#include <errno.h>
#include <stdarg.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <zlib.h>

#define MBR_SIG_OFF	      510
#define MBR_TABLE	      446
#define MAX_LOGICAL	      128 /* an EBR chain longer than this is a loop or crafted */
#define GPT_MAX_ENTRIES_BYTES (1U << 20)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static const struct {
	unsigned char code;
	const char *name;
} mbr_types[] = {
    {0x05, "Extended"},
    {0x0f, "W95 Ext'd (LBA)"},
    {0x85, "Linux extended"},
    {0x83, "Linux"},
    {0x82, "Linux swap"},
    {0x07, "HPFS/NTFS/exFAT"},
    {0x0b, "W95 FAT32"},
    {0x0c, "W95 FAT32 (LBA)"},
    {0x0e, "W95 FAT16 (LBA)"},
    {0xef, "EFI (FAT-12/16/32)"},
    {0x8e, "Linux LVM"},
    {0xfd, "Linux raid autodetect"},
    {0xee, "GPT"},
};

static const struct {
	const char *guid, *name;
} gpt_types[] = {
    {"c12a7328-f81f-11d2-ba4b-00a0c93ec93b", "EFI System"},
    {"0fc63daf-8483-4772-8e79-3d69d8477de4", "Linux filesystem"},
    {"0657fd6d-a4ab-43c4-84e5-0933c84b4f4f", "Linux swap"},
    {"21686148-6449-6e6f-744e-656564454649", "BIOS boot"},
    {"ebd0a0a2-b9e5-4433-87c0-68b6b72699c7", "Microsoft basic data"},
    {"e6d6d379-f507-44c2-a23c-238f2a3df928", "Linux LVM"},
    {"a19d880f-05fc-4d3b-a006-743f0f84911e", "Linux RAID"},
    {"4f68bce3-e8cd-4db1-96e7-fbcaf984b709", "Linux root (x86-64)"},
    {"933ac7e1-2eb4-4f13-b844-0e14e2aef915", "Linux home"},
    {"ca7d7ccb-63ed-4c53-861c-1742536059cc", "Linux LUKS"},
};

static bool is_extended(unsigned char type)
{
	return type == 0x05 || type == 0x0f || type == 0x85;
}

/* A range the table lies in (bytes), clipped to the disk; dropped past BTK_PTABLE_META (the
 * EBR chain stops before that). */
static void meta(struct btk_ptable *t, uint64_t start, uint64_t size)
{
	if (start >= t->disk_size || !size || t->nmeta == BTK_PTABLE_META)
		return;
	if (size > t->disk_size - start)
		size = t->disk_size - start;
	t->meta[t->nmeta].start = start;
	t->meta[t->nmeta++].size = size;
}

static int add(struct btk_ptable *t, const struct btk_part *p)
{
	struct btk_part *n = realloc(t->p, (size_t)(t->n + 1) * sizeof(*n));

	if (!n)
		return btk_err(ENOMEM, "out of memory");
	t->p = n;
	t->p[t->n++] = *p;
	return 0;
}

/* The table's first problem, kept for the listing and for a missing partition's message. */
static void problem(struct btk_ptable *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void problem(struct btk_ptable *t, const char *fmt, ...)
{
	va_list ap;

	if (t->problem[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->problem, sizeof(t->problem), fmt, ap);
	va_end(ap);
}

/* Why sectors [first, first+count) cannot be a partition of t's disk, in p->bad ("" when they
 * can); p->start and p->size are set from them when they make a range of bytes. */
static void place(const struct btk_ptable *t, struct btk_part *p, uint64_t first, uint64_t count)
{
	uint64_t sectors = t->disk_size / t->sector;

	if (first <= UINT64_MAX / t->sector &&
	    count <= (UINT64_MAX - first * t->sector) / t->sector) {
		p->start = first * t->sector;
		p->size = count * t->sector;
	}
	if (first >= sectors || count > sectors - first)
		snprintf(p->bad, sizeof(p->bad),
			 "its sectors %llu-%llu lie past the end of the disk (%llu sectors)",
			 (unsigned long long)first, (unsigned long long)(first + count - 1),
			 (unsigned long long)sectors);
}

/* One MBR entry (16 bytes) as a partition numbered num, its sectors relative to base. */
static int mbr_entry(struct btk_ptable *t, const uint8_t *e, unsigned num, uint64_t base,
		     bool logical)
{
	struct btk_part p = {.num = num, .logical = logical, .extended = is_extended(e[4])};

	snprintf(p.type, sizeof(p.type), "0x%02x", e[4]);
	for (size_t i = 0; i < sizeof(mbr_types) / sizeof(mbr_types[0]); i++)
		if (mbr_types[i].code == e[4])
			snprintf(p.type_name, sizeof(p.type_name), "%s", mbr_types[i].name);
	place(t, &p, base + le32(e + 8), le32(e + 12));
	return add(t, &p);
}

/* The logical partitions: a chain of EBRs, each with the logical partition (relative to
 * itself) and the next EBR (relative to the extended partition's start). A chain that loops,
 * leaves the extended partition or the disk, or reaches an EBR without its signature ends
 * there: the partitions before are kept and the table's problem says where it broke. */
static int mbr_logical(struct btk_dev *dev, struct btk_ptable *t, uint64_t ext_start,
		       uint64_t ext_sectors)
{
	uint64_t seen[MAX_LOGICAL];
	uint8_t s[512];
	uint64_t ebr = ext_start;
	unsigned num = 5;
	int ret;

	for (int i = 0; i < MAX_LOGICAL; i++) {
		for (int k = 0; k < i; k++)
			if (seen[k] == ebr) {
				problem(
				    t,
				    "the chain of logical partitions loops back to the extended "
				    "boot record at sector %llu: partitions from %u on are not "
				    "read",
				    (unsigned long long)ebr, num);
				return 0;
			}
		seen[i] = ebr;
		if (ebr < ext_start || ebr - ext_start >= ext_sectors ||
		    ebr >= t->disk_size / t->sector) {
			problem(t,
				"the extended boot record at sector %llu lies outside the %s: "
				"partitions from %u on are not read",
				(unsigned long long)ebr,
				ebr >= t->disk_size / t->sector ? "disk" : "extended partition",
				num);
			return 0;
		}
		if ((ret = btk_dev_read(dev, s, sizeof(s), ebr * t->sector)))
			return ret;
		meta(t, ebr * t->sector, t->sector);
		if (s[MBR_SIG_OFF] != 0x55 || s[MBR_SIG_OFF + 1] != 0xaa) {
			if (i) /* else an empty extended partition */
				problem(t,
					"the extended boot record at sector %llu has no signature: "
					"partitions from %u on are not read",
					(unsigned long long)ebr, num);
			return 0;
		}
		const uint8_t *e0 = s + MBR_TABLE, *e1 = e0 + 16;
		if (e0[4] && le32(e0 + 12) && (ret = mbr_entry(t, e0, num++, ebr, true)))
			return ret;
		if (!e1[4] || !le32(e1 + 12) || !is_extended(e1[4]))
			return 0;
		ebr = ext_start + le32(e1 + 8);
	}
	problem(t, "more than %d logical partitions: partitions from %u on are not read",
		MAX_LOGICAL, num);
	return 0;
}

/* A GPT GUID: its first three fields are little-endian. */
static void guid_str(const uint8_t *g, char out[BTK_UUID_STR])
{
	const uint8_t u[16] = {g[3], g[2], g[1],  g[0],	 g[5],	g[4],  g[7],  g[6],
			       g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]};

	btk_uuid_str(u, out);
}

/* UTF-16LE (72 bytes) to UTF-8, stopping at the first NUL; surrogates become '?'. */
static void utf16_name(const uint8_t *in, char *out, size_t len)
{
	size_t o = 0;

	for (int i = 0; i < 36; i++) {
		unsigned c = in[2 * i] | (unsigned)in[2 * i + 1] << 8;
		if (!c)
			break;
		if (c >= 0xd800 && c < 0xe000)
			c = '?';
		if (c < 0x80 && o + 1 < len)
			out[o++] = (char)c;
		else if (c < 0x800 && o + 2 < len) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c >= 0x800 && o + 3 < len) {
			out[o++] = (char)(0xe0 | c >> 12);
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else
			break;
	}
	out[o] = 0;
}

/* The GPT header at lba: 1 when valid (CRC, sizes), 0 when not, -errno. */
static int gpt_header(struct btk_dev *dev, unsigned sector, uint64_t lba, uint8_t *h)
{
	uint32_t hsize, crc;
	int ret;

	if ((lba + 1) * sector > dev->size)
		return 0;
	if ((ret = btk_dev_read(dev, h, sector, lba * sector)))
		return ret;
	if (memcmp(h, "EFI PART", 8))
		return 0;
	hsize = le32(h + 12);
	if (hsize < 92 || hsize > sector)
		return 0;
	crc = le32(h + 16);
	memset(h + 16, 0, 4);
	if ((uint32_t)crc32(0, h, hsize) != crc)
		return 0;
	if (le64(h + 24) != lba)
		return 0;
	return 1;
}

/* The entries a valid header h (which: "primary" or "backup") names: 0; -EUCLEAN with why
 * (nothing added, no message recorded) when they lie past the end or fail their checksum;
 * -EIO, -ENOMEM. */
static int gpt_entries(struct btk_dev *dev, struct btk_ptable *t, const uint8_t *h,
		       const char *which, char *why, size_t wlen)
{
	uint64_t lba = le64(h + 72);
	uint32_t n = le32(h + 80), esize = le32(h + 84), crc = le32(h + 88);
	uint8_t *buf;
	size_t bytes;
	int ret = 0;

	if (esize < 128 || esize % 8 || (uint64_t)n * esize > GPT_MAX_ENTRIES_BYTES) {
		snprintf(why, wlen, "the %s GPT header names %u entries of %u bytes", which, n,
			 esize);
		return -EUCLEAN;
	}
	bytes = (size_t)n * esize;
	if (lba > dev->size / t->sector || bytes > dev->size - lba * t->sector) {
		snprintf(why, wlen,
			 "the %s GPT header's entries (sector %llu) lie past the end of the disk",
			 which, (unsigned long long)lba);
		return -EUCLEAN;
	}
	if (!(buf = malloc(bytes ? bytes : 1)))
		return btk_err(ENOMEM, "out of memory");
	if ((ret = btk_dev_read(dev, buf, bytes, lba * t->sector)))
		goto out;
	if ((uint32_t)crc32(0, buf, (uInt)bytes) != crc) {
		snprintf(why, wlen, "the %s GPT header's partition entries fail their checksum",
			 which);
		ret = -EUCLEAN;
		goto out;
	}
	/* the header, its entries, the other header and what lies outside the usable range */
	uint64_t self = le64(h + 24), alt = le64(h + 32), first_use = le64(h + 40),
		 last_use = le64(h + 48), sectors = dev->size / t->sector;
	meta(t, self * t->sector, t->sector);
	meta(t, lba * t->sector, bytes);
	if (alt < sectors)
		meta(t, alt * t->sector, t->sector);
	if (first_use < sectors)
		meta(t, 0, first_use * t->sector);
	if (last_use < sectors)
		meta(t, (last_use + 1) * t->sector, (sectors - last_use - 1) * t->sector);
	for (uint32_t i = 0; i < n && !ret; i++) {
		const uint8_t *e = buf + (size_t)i * esize;
		static const uint8_t zero[16];
		struct btk_part p = {.num = i + 1};
		uint64_t first = le64(e + 32), last = le64(e + 40);
		if (!memcmp(e, zero, 16))
			continue;
		_Static_assert(sizeof(p.type) >= BTK_UUID_STR, "room for a GUID");
		guid_str(e, p.type);
		for (size_t k = 0; k < sizeof(gpt_types) / sizeof(gpt_types[0]); k++)
			if (!strcmp(gpt_types[k].guid, p.type))
				snprintf(p.type_name, sizeof(p.type_name), "%s", gpt_types[k].name);
		utf16_name(e + 56, p.name, sizeof(p.name));
		if (last < first || last == UINT64_MAX) {
			place(t, &p, first, 0);
			snprintf(p.bad, sizeof(p.bad),
				 "it ends before it starts (sectors %llu-%llu)",
				 (unsigned long long)first, (unsigned long long)last);
		} else
			place(t, &p, first, last - first + 1);
		ret = add(t, &p);
	}
out:
	free(buf);
	return ret;
}

static int gpt_read(struct btk_dev *dev, struct btk_ptable *t)
{
	static const unsigned sizes[] = {512, 4096};
	uint8_t h[4096];
	char why[200] = "";
	int ret;

	snprintf(t->kind, sizeof(t->kind), "gpt");
	for (size_t i = 0; i < 2; i++) {
		unsigned sector = sizes[i];
		if (t->sector > 512 && sector == 512)
			continue; /* a 4Kn block device */
		t->sector = sector;
		/* the primary header, else the backup at the last sector */
		for (int k = 0; k < 2; k++) {
			const char *which = k ? "backup" : "primary";
			if (k && dev->size < 2 * (uint64_t)sector)
				break;
			if ((ret = gpt_header(dev, sector, k ? dev->size / sector - 1 : 1, h)) < 0)
				return ret;
			if (!ret) {
				if (!why[0])
					snprintf(why, sizeof(why), "the %s GPT header is damaged",
						 which);
				continue;
			}
			char ewhy[160];
			if ((ret = gpt_entries(dev, t, h, which, ewhy, sizeof(ewhy))) != -EUCLEAN) {
				if (!ret && k)
					problem(t, "%s; the backup at the disk's end was read",
						why[0] ? why : "the primary GPT is damaged");
				return ret;
			}
			if (!why[0] || !k)
				snprintf(why, sizeof(why), "%s", ewhy);
		}
	}
	return btk_err(EUCLEAN, "%s: protective MBR but no valid GPT: %s", dev->path,
		       why[0] ? why : "no GPT header");
}

static unsigned bottom_sector(const struct btk_dev *dev)
{
	int ss = 0;

	while (dev->lower)
		dev = dev->lower;
	if (dev->is_blockdev && dev->fd >= 0 && !ioctl(dev->fd, BLKSSZGET, &ss) && ss >= 512 &&
	    ss <= 4096)
		return (unsigned)ss;
	return 512;
}

int btk_dev_ptable(struct btk_dev *dev, struct btk_ptable *t)
{
	uint8_t s[512];
	bool any = false;
	int ret;

	memset(t, 0, sizeof(*t));
	t->disk_size = dev->size;
	t->sector = bottom_sector(dev);
	if (dev->size < sizeof(s))
		return btk_err(ENOENT, "%s: holds no partition table", dev->path);
	if ((ret = btk_dev_read(dev, s, sizeof(s), 0)))
		return ret;
	if (s[MBR_SIG_OFF] != 0x55 || s[MBR_SIG_OFF + 1] != 0xaa)
		return btk_err(ENOENT, "%s: holds no partition table", dev->path);
	meta(t, 0, t->sector);
	for (int i = 0; i < 4; i++) {
		const uint8_t *e = s + MBR_TABLE + 16 * i;
		if ((e[0] != 0 && e[0] != 0x80))
			return btk_err(ENOENT, "%s: holds no partition table", dev->path);
		any |= e[4] != 0;
	}
	if (!any)
		return btk_err(ENOENT, "%s: holds no partition table", dev->path);
	for (int i = 0; i < 4; i++)
		if (s[MBR_TABLE + 16 * i + 4] == 0xee) {
			if ((ret = gpt_read(dev, t)))
				btk_ptable_free(t);
			return ret;
		}
	snprintf(t->kind, sizeof(t->kind), "dos");
	for (int i = 0; i < 4 && !ret; i++) {
		const uint8_t *e = s + MBR_TABLE + 16 * i;
		if (!e[4] || !le32(e + 12))
			continue;
		ret = mbr_entry(t, e, (unsigned)i + 1, 0, false);
	}
	for (int i = 0; i < 4 && !ret; i++) {
		const uint8_t *e = s + MBR_TABLE + 16 * i;
		if (e[4] && le32(e + 12) && is_extended(e[4])) {
			ret = mbr_logical(dev, t, le32(e + 8), le32(e + 12));
			break; /* one extended partition, as every tool reads it */
		}
	}
	if (ret)
		btk_ptable_free(t);
	return ret;
}

void btk_ptable_free(struct btk_ptable *t)
{
	free(t->p);
	t->p = NULL;
	t->n = 0;
}

/* Whether [a, a+as) and [b, b+bs) share a byte (an empty range shares none). */
static bool crosses(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return as && bs && a < b + bs && b < a + as;
}

bool btk_ptable_overlap(const struct btk_ptable *t, const struct btk_part *p, char *why, size_t len)
{
	for (int i = 0; i < t->nmeta; i++)
		if (crosses(p->start, p->size, t->meta[i].start, t->meta[i].size)) {
			snprintf(why, len, "the %s partition table (sectors %llu-%llu)", t->kind,
				 (unsigned long long)(t->meta[i].start / t->sector),
				 (unsigned long long)((t->meta[i].start + t->meta[i].size - 1) /
						      t->sector));
			return true;
		}
	for (int i = 0; i < t->n; i++) {
		const struct btk_part *q = &t->p[i];
		if (q == p || q->num == p->num || q->extended || p->extended ||
		    !crosses(p->start, p->size, q->start, q->size))
			continue;
		snprintf(why, len, "partition %u (sectors %llu-%llu)", q->num,
			 (unsigned long long)(q->start / t->sector),
			 (unsigned long long)((q->start + q->size - 1) / t->sector));
		return true;
	}
	return false;
}

const struct btk_part *btk_ptable_find(const struct btk_ptable *t, unsigned num)
{
	for (int i = 0; i < t->n; i++)
		if (t->p[i].num == num)
			return &t->p[i];
	return NULL;
}
