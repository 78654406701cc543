/* container.c — what a device holds when it is not the filesystem a tool looked for: disk
 * image and volume formats btk does not read (named with what to do), a partition table, or
 * another filesystem. For the one-line error instead of "not a btrfs filesystem". */
#include "io/io.h"
#include "base/error.h"

#include <stdio.h>
#include <string.h>

static const struct {
	uint64_t off;
	const char *magic;
	size_t len;
	const char *what;
} formats[] = {
    {0, "QFI\xfb", 4,
     "a qcow2 image: convert it to raw (qemu-img convert -O raw) or attach it "
     "(qemu-nbd --connect) and give the device"},
    {0, "KDMV", 4,
     "a VMDK image: convert it to raw (qemu-img convert -O raw) or attach it "
     "(qemu-nbd --connect)"},
    {0, "# Disk DescriptorFile", 21,
     "a VMDK descriptor: convert the image to raw (qemu-img convert -O raw)"},
    {0, "vhdxfile", 8,
     "a VHDX image: convert it to raw (qemu-img convert -O raw) or attach it "
     "(qemu-nbd --connect)"},
    {0, "conectix", 8,
     "a VHD image: convert it to raw (qemu-img convert -O raw) or attach it "
     "(qemu-nbd --connect)"},
    {64, "\x7f\x10\xda\xbe", 4,
     "a VirtualBox VDI image: convert it to raw (qemu-img convert -O "
     "raw or VBoxManage clonehd --format RAW)"},
    {0, "AFF10\r\n", 7,
     "an AFF evidence file: convert it to raw (affconvert -r) or mount it "
     "(affuse) and give the raw file"},
    {0, "EVF\x09\x0d\x0a\xff", 7, "an EWF evidence file (E01)"},
    {0, "LUKS\xba\xbe", 6,
     "a LUKS encrypted volume: open it (cryptsetup open) and give the "
     "mapped device (/dev/mapper/NAME)"},
    {0, "SKUL\xba\xbe", 6,
     "a LUKS encrypted volume: open it (cryptsetup open) and give the "
     "mapped device"},
    {512, "LABELONE", 8,
     "an LVM physical volume: activate it (vgchange -ay) and give the logical "
     "volume (/dev/VG/LV)"},
    {4096, "\xfc\x4e\x2b\xa9", 4,
     "an md RAID member: assemble the array (mdadm --assemble) and "
     "give the md device"},
};

const char *btk_dev_foreign(struct btk_dev *dev)
{
	uint8_t b[4100];
	size_t n = dev->size < sizeof(b) ? (size_t)dev->size : sizeof(b);

	if (!n || btk_dev_read(dev, b, n, 0))
		return NULL;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].off + formats[i].len <= n &&
		    !memcmp(b + formats[i].off, formats[i].magic, formats[i].len))
			return formats[i].what;
	return NULL;
}

int btk_dev_explain(struct btk_dev *dev, char *buf, size_t len)
{
	const char *f = btk_dev_foreign(dev);
	char type[64], label[256], uuid[64];
	struct btk_ptable t;

	if (f) {
		snprintf(buf, len, "%s", f);
		return 1;
	}
	if (!btk_dev_ptable(dev, &t)) {
		snprintf(
		    buf, len,
		    "a disk image with a %s partition table (%d partitions): give the partition "
		    "(%s@pN or --partition N; btk-debug parts %s lists them)",
		    !strcmp(t.kind, "dos") ? "DOS (MBR)" : "GPT", t.n, dev->path, dev->path);
		btk_ptable_free(&t);
		return 1;
	}
	if (btk_dev_blkid(dev, type, label, uuid) > 0 && strcmp(type, "btrfs")) {
		snprintf(buf, len, "holds a%s %s %s, not btrfs%s",
			 strchr("aeiou", type[0]) ? "n" : "", type,
			 !strcmp(type, "gpt") || !strcmp(type, "dos") ? "partition table"
								      : "filesystem",
			 !strncmp(type, "ext", 3) ? " (btk-convert converts it)" : "");
		return 1;
	}
	return 0;
}
