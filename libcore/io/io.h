/* io.h — device handles (layer 2).
 *
 * A device is an image file, a block device or a buffer in memory behind an ops table, so
 * tests can swap in a fault-injecting backend; nothing above this layer touches a file
 * descriptor. Reads and writes are all-or-nothing: a short transfer is an error (-EIO, with
 * the device and range in btk_errmsg()). Every handle counts calls and bytes.
 */
#ifndef BTK_IO_H
#define BTK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct btk_dev;

/* Device bytes seen in place (btk_dev_view): data points at them until btk_dev_unview. */
struct btk_view {
	const uint8_t *data;
	void *map; /* the backend's mapping to undo, or NULL */
	size_t maplen;
};

/* Backends implement these; callers use the btk_dev_* functions below, which check the
 * handle's mode and bounds first (so ops may assume a writable handle and a range inside the
 * device for everything but pwrite) and count the calls. */
struct btk_dev_ops {
	/* Transfer exactly len bytes at off; 0 or negative errno. */
	int (*pread)(struct btk_dev *dev, void *buf, size_t len, uint64_t off);
	/* NULL: the backend cannot write (it is only opened read-only; a write fails EROFS). */
	int (*pwrite)(struct btk_dev *dev, const void *buf, size_t len, uint64_t off);
	/* NULL: nothing to flush (0). */
	int (*flush)(struct btk_dev *dev);
	/* The range's old contents go: with zero, later reads give zeroes (btk_dev_zeroout);
	 * without, zeroes or the old bytes (btk_dev_discard). NULL: the backend can do neither. */
	int (*clear)(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero);
	/* Sets the size (new bytes read as zeroes); the caller then updates dev->size. */
	int (*truncate)(struct btk_dev *dev, uint64_t size);
	/* A readahead hint; may be NULL. */
	void (*prefetch)(struct btk_dev *dev, uint64_t off, uint64_t len);
	/* Points v at the bytes without copying them (btk_dev_view); may be NULL. */
	int (*view)(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v);
	/* Whether two ranges read alike, told without reading them (btk_dev_ranges_equal); may
	 * be NULL. */
	int (*ranges_equal)(struct btk_dev *dev, uint64_t a, uint64_t b, uint64_t len);
	void (*close)(struct btk_dev *dev);
};

struct btk_io_stats {
	uint64_t reads, read_bytes, writes, write_bytes, flushes;
	uint64_t discards, zeroouts, truncates; /* calls (not counted in writes) */
};

struct btk_dev {
	const struct btk_dev_ops *ops;
	char *path;    /* owned by the handle */
	int fd;	       /* -1 for backends without one */
	uint64_t size; /* bytes */
	bool writable;
	bool is_blockdev;
	struct btk_io_stats stats;
	void *priv;	       /* backend data */
	struct btk_dev *lower; /* wrapped device for stacking backends (faults), or NULL */
	const struct btk_dev_filter *filter; /* with lower: the stacking backend's (stack.c) */
	uint64_t lower_off;		     /* with lower: where byte 0 lies on it (a window) */
	struct btk_lock *lock; /* the writer's lock this handle holds (lock.c), or NULL */
	bool created;	       /* btk_dev_open_opts made the file (o->create): it was not there */
	bool fixed_size;       /* writes never grow it and it cannot be truncated: a block
				  device, a window (a partition), split raw segments, EWF */
};

#define BTK_OPEN_WRITE	1 /* open read-write */
#define BTK_OPEN_CREATE 2 /* create the file if missing (with WRITE) */
#define BTK_OPEN_EXCL	4 /* O_EXCL on block devices: fail if mounted or held */

/* For backends: a new handle named path with ops and priv, no descriptor (fd -1), size 0 and
 * read-only until the caller sets them. 0 or -ENOMEM. */
int btk_dev_new(const char *path, const struct btk_dev_ops *ops, void *priv, struct btk_dev **out);
/* Stacking backends (faults, undo, the repair's view of a commit) are a handle over a lower
 * device that passes every call down to it (stack.c), after asking the backend's filter about
 * each change. A change, as the filter sees it: */
enum btk_dev_change {
	BTK_CHANGE_WRITE,
	BTK_CHANGE_DISCARD,
	BTK_CHANGE_ZEROOUT,
	BTK_CHANGE_TRUNCATE, /* off is the new size, len 0 */
	BTK_CHANGE_FLUSH,    /* off and len 0 */
};
struct btk_dev_filter {
	/* Before a change reaches the lower device ([off, off+len); data: a write's bytes, NULL
	 * for the others): 0 passes it down, 1 takes it as done without passing it down, a
	 * negative errno fails it. */
	int (*change)(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
		      const void *data);
	/* Reads, or NULL to read the lower device; a backend with its own reads has no views
	 * (they would bypass it), the others pass views down. */
	int (*pread)(struct btk_dev *dev, void *buf, size_t len, uint64_t off);
	/* Frees priv, and closes the lower device if the handle owns it. */
	void (*close)(struct btk_dev *dev);
};
/* A new handle over lower with the filter and the backend's priv, taking lower's path, size
 * and flags; its size follows lower's after every write or truncate passed down. 0 or
 * -ENOMEM. */
int btk_dev_stack(struct btk_dev *lower, const struct btk_dev_filter *filter, void *priv,
		  struct btk_dev **out);
/* Tests: fn runs before every change (write, discard, zeroout, truncate) of any handle, so
 * that a test can interrupt a tool at a chosen write (cli's BTK_TEST_SIGINT_AT). One hook per
 * process; NULL (the default) for none. */
void btk_dev_set_change_hook(void (*fn)(void));

/* Opens path; *out is owned by the caller and freed with btk_dev_close(). */
int btk_dev_open(const char *path, int flags, struct btk_dev **out);
int btk_dev_read(struct btk_dev *dev, void *buf, size_t len, uint64_t off);
/* A write past the end grows an image file or a writable memory image (and dev->size). */
int btk_dev_write(struct btk_dev *dev, const void *buf, size_t len, uint64_t off);
int btk_dev_flush(struct btk_dev *dev);
/* Discard (TRIM) of [off, off+len), which must lie inside the device: BLKDISCARD on block
 * devices, a punched hole in files. Afterwards the range reads as zeroes or as its old bytes.
 * -EROFS read-only, -EINVAL outside the device, -EOPNOTSUPP when the device cannot. */
int btk_dev_discard(struct btk_dev *dev, uint64_t off, uint64_t len);
/* Zeroes [off, off+len), which must lie inside the device: BLKZEROOUT, a zeroed range of a
 * file, or written zeroes where neither works. Errors as btk_dev_discard (never -EOPNOTSUPP
 * for files and block devices). */
int btk_dev_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len);
/* Makes an image file or memory image exactly size bytes (extended sparse, reading as
 * zeroes, or cut) and sets dev->size. -EOPNOTSUPP for block devices (their size is fixed),
 * -EROFS read-only. */
int btk_dev_truncate(struct btk_dev *dev, uint64_t size);
/* Hints that [off, off+len) will be read soon (readahead). Never fails. */
void btk_dev_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len);
void btk_dev_close(struct btk_dev *dev);

/* A read-only view of [off, off+len) without a copy: an image file or block device is mapped
 * (mmap, every page faulted in before this returns, so an unreadable page is an error here
 * and never a SIGBUS later), a memory image is pointed into. Counted as a read. The bytes are
 * valid until btk_dev_unview(v) and are the device's current ones (a write to the range
 * meanwhile shows through). Any error — -EOPNOTSUPP (the backend cannot, or the kernel has no
 * MADV_POPULATE_READ), -EIO (a page did not read), -EINVAL (outside the device), -ENOMEM —
 * means: read the range with btk_dev_read instead, which says precisely what failed. */
int btk_dev_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v);
/* Releases a view filled by btk_dev_view (a zeroed view is a no-op). */
void btk_dev_unview(struct btk_view *v);
/* 1 when [a, a+len) and [b, b+len) of dev are known to read alike — the same bytes, or the
 * same failure — at less cost than reading them: an EWF file whose chunks there are stored
 * deflated byte for byte alike (a DUP copy of a tree block and the copy beside it, both
 * compressed by one acquisition), which then need not be inflated twice. 0 when the device
 * cannot tell (most cannot: read both), or either range is not inside it. Never an error. */
int btk_dev_ranges_equal(struct btk_dev *dev, uint64_t a, uint64_t b, uint64_t len);

/* Device identity (identity.c): whether two handles are one device, whatever names they were
 * opened by — the same block device (st_rdev) or the same file (st_dev, st_ino). Wrapped
 * handles (faults) compare by what they wrap. */
bool btk_dev_same(const struct btk_dev *a, const struct btk_dev *b);
/* 0 when no two of the n paths name one device; else -EINVAL, the message naming both
 * ("'z.img' and './z.img' are the same device"). Paths that do not exist are skipped (a
 * caller that creates files compares the handles too, with btk_dev_same). */
int btk_paths_distinct(const char *const *paths, int n);
/* Whether two existing paths name one file or device (false when either does not exist);
 * whether a handle is the file or device open as fd. For tools that read one file and write
 * another: the output must not be an input, by any name. */
bool btk_paths_same(const char *a, const char *b);
bool btk_dev_is_fd(const struct btk_dev *d, int fd);

/* Fault injection for tests: wraps dev (taking ownership); after `allowed` successful
 * changes (writes, discards, zeroouts, truncates) no further change or flush is performed (a
 * power cut at that point): BTK_FAULT_FAIL fails each with -EIO, BTK_FAULT_STOP says it was
 * done (the tool goes on as if the disk had taken it, so nothing it does afterwards — an undo,
 * a cleanup — reaches the disk either). Reads and prefetches pass through. */
/* BTK_FAULT_FLIP is no power cut but a media fault: the change after `allowed` ones, when it
 * is a write of more than 8 KiB (a tree block, not a superblock), reaches the device with bit
 * 0 of its byte 8192 flipped; every other change passes (tests of what re-checks find). */
enum btk_fault_mode { BTK_FAULT_OFF, BTK_FAULT_FAIL, BTK_FAULT_STOP, BTK_FAULT_FLIP };
int btk_dev_faulty(struct btk_dev *dev, uint64_t allowed, struct btk_dev **out);
int btk_dev_faulty_mode(struct btk_dev *dev, enum btk_fault_mode mode, uint64_t allowed,
			struct btk_dev **out);
/* One power supply for several devices: the handles wrapped with it spend one budget of
 * changes, and once it is spent none of them changes anything (one power cut for all). */
struct btk_fault_power {
	uint64_t allowed;
	bool cut;
};
int btk_dev_faulty_power(struct btk_dev *dev, enum btk_fault_mode mode,
			 struct btk_fault_power *power, struct btk_dev **out);
/* Whether a fault-injecting handle in dev's stack has refused a change: the power is cut, and
 * an undo file (undo.h) logs nothing more for dev, as none of its writes would reach a disk. */
bool btk_dev_cut(const struct btk_dev *dev);

/* Undo log (undo.c): wraps dev (taking ownership); before a 4 KiB block is first changed
 * its old bytes are kept (zero blocks as marks), so that btk_dev_undo_rollback can put back
 * every byte the handle changed and give an image file its old size. With path NULL they go
 * to an unlinked temporary file; with a path, to that undo file (undo.h: its format, the
 * order in which it reaches the disk, btk-undo), shared by every handle of this process that
 * names it. Costs a read of each block before its first change (and with a path a flush of
 * the file before each change). -ENOMEM; with a path also -EEXIST (a file that is not empty),
 * -EINVAL (the file is the device), -EIO. */
int btk_dev_undo(struct btk_dev *dev, const char *path, struct btk_dev **out);
/* Restores what the undo-logged handle changed and flushes (again and again: the kept bytes
 * stay). -EINVAL for a handle that is not undo-logged; an io error leaves the rest. */
int btk_dev_undo_rollback(struct btk_dev *dev);
/* A memory image named name (for messages) of len bytes at buf. The handle takes buf, which
 * must come from malloc (NULL with len 0: an empty image), and frees it on close. When
 * writable, writes past the end and btk_dev_truncate grow it (up to BTK_MEM_MAX bytes; more
 * is -EFBIG); discard and zeroout zero the range. -ENOMEM (buf is freed then too). */
#define BTK_MEM_MAX (1ULL << 36)
int btk_dev_mem_open(const char *name, void *buf, size_t len, bool writable, struct btk_dev **out);
/* A read-only memory image over the caller's buffer, which must outlive the handle and is
 * never written or freed by it (no copy: for fuzzing). */
int btk_dev_mem_view(const char *name, const void *buf, size_t len, struct btk_dev **out);
/* The current bytes of a memory image and their count in *len (NULL for other backends);
 * valid until the next change or the close. */
const void *btk_dev_mem_buf(const struct btk_dev *dev, size_t *len);

/* ---- Where a filesystem lives on a device (window.c, ptable.c, where.c) ---- */

/* A window of lower (taking ownership): bytes [off, off+size) of lower seen as a device of
 * size bytes, named name ("disk.img@p2"). Nothing outside the range is ever read or written:
 * an access past the window's end is -ENOSPC (writes) or -EIO (reads) naming the window, and
 * its size is fixed (dev->fixed_size: no truncate, writes never grow it). -EINVAL when the
 * range is not inside lower, -ENOMEM. */
int btk_dev_window(struct btk_dev *lower, uint64_t off, uint64_t size, const char *name,
		   struct btk_dev **out);
/* The window dev's stack puts it in, relative to the bottom device (its file or block
 * device): *off and *size; false when there is no window (then the whole device). */
bool btk_dev_range(const struct btk_dev *dev, uint64_t *off, uint64_t *size);

/* A partition table (ptable.c), read through the handle (so inside split raw and EWF files
 * too): MBR with primary, extended and logical partitions, or GPT (the protective MBR names
 * it; the primary header, else the backup, checked by CRC). Partitions are numbered as sfdisk
 * and mmls number them: MBR slots 1-4 (an empty slot keeps its number), logical partitions
 * from 5 in chain order; GPT entries by index + 1. */
struct btk_part {
	unsigned num;	    /* 1-based */
	uint64_t start;	    /* bytes */
	uint64_t size;	    /* bytes */
	char type[40];	    /* MBR "0x83"; GPT the type GUID, lower-case */
	char type_name[32]; /* "Linux filesystem", "EFI System", "Extended"... or "" */
	char name[80];	    /* GPT partition name (UTF-8), "" for MBR */
	bool extended;	    /* an MBR extended partition (holds logical ones) */
	bool logical;	    /* an MBR logical partition */
	/* why the entry cannot be used ("" when it can): it lies past the end of the disk or
	 * ends before it starts. start and size are then the table's numbers in bytes (size 0
	 * when they make no range); the other partitions stay usable. */
	char bad[128];
};
#define BTK_PTABLE_META 136
struct btk_ptable {
	char kind[8];	    /* "gpt" or "dos" (as libblkid's PTTYPE) */
	unsigned sector;    /* bytes per sector the table counts in (512 or 4096) */
	uint64_t disk_size; /* bytes */
	struct btk_part *p; /* by number */
	int n;
	/* the byte ranges the table itself lies in (the MBR, the EBRs, the GPT headers and
	 * entries, outside GPT's usable range): nothing may be written there */
	struct {
		uint64_t start, size;
	} meta[BTK_PTABLE_META];
	int nmeta;
	/* what of the table could not be read ("" when all of it): a chain of logical partitions
	 * that loops, leaves the extended partition or the disk (the partitions before the break
	 * are listed), a damaged primary GPT whose backup was read */
	char problem[200];
};
/* 0 with the table, -ENOENT when dev holds none (no MBR signature), -EUCLEAN for a table
 * none of which can be read (a protective MBR without a valid GPT; the message says what),
 * -EIO, -ENOMEM. A bad entry (btk_part.bad) or a broken chain of logical partitions
 * (btk_ptable.problem) leaves the rest of the table readable. Free with btk_ptable_free. */
int btk_dev_ptable(struct btk_dev *dev, struct btk_ptable *t);
void btk_ptable_free(struct btk_ptable *t);
/* The partition numbered num of t, or NULL. */
const struct btk_part *btk_ptable_find(const struct btk_ptable *t, unsigned num);
/* Whether p shares a byte with another partition (not an extended one holding it) or with
 * the table itself: true with what it overlaps in why (len bytes). A writer refuses such a
 * partition: a crafted or broken table would make it overwrite the other one. */
bool btk_ptable_overlap(const struct btk_ptable *t, const struct btk_part *p, char *why,
			size_t len);

/* Where the filesystem lies on a device (where.c): a partition or a byte offset. Tools take it
 * from --partition N / --offset BYTES (cli/devopts.c) for every device, or per device from
 * the name: "PATH@pN" (partition N) and "PATH@OFFSET" (bytes, with a k/m/g/t suffix; also
 * "PATH@Ns" in 512-byte sectors); a name is taken whole when a file of that name exists, or
 * when neither it nor PATH does (a new file to make). */
struct btk_dev_where {
	unsigned partition; /* 1-based; 0: none */
	uint64_t offset;    /* bytes from the start (without a partition) */
	uint64_t size;	    /* with offset: bytes (0: to the end) */
};
/* Splits name into the file or device it names (base, len bytes) and where: 1 when name
 * carries an "@" part, 0 when it is taken whole, -EINVAL naming a malformed "@" part of a
 * name that does not exist (-ENAMETOOLONG). */
int btk_dev_name_parse(const char *name, char *base, size_t len, struct btk_dev_where *w);
/* For a tool that hands the device to another library: 0 when base is a plain file or
 * device; -EOPNOTSUPP naming split raw segments or an EWF file (the library reads one plain
 * file), -EROFS for an EWF file and a writer. */
int btk_dev_plain_only(const char *base, bool write);
/* For a tool that hands the device to another library (convert's libext2fs): the file or
 * device name stands for in base (len bytes) and the byte range of the filesystem in it,
 * *off and *size (the whole device without a window); dflt applies to a name without "@".
 * Reads the partition table read-only; write: checks the partition as a writer's. 0 or the
 * errors of btk_dev_plain_only and btk_dev_where_apply. */
int btk_dev_where_resolve(const char *name, const struct btk_dev_where *dflt, bool write,
			  char *base, size_t len, uint64_t *off, uint64_t *size);
/* stat(2) of the file or device name stands for ("disk.img@p2": disk.img); -1 with errno. */
int btk_dev_name_stat(const char *name, struct stat *st);
/* Puts a window on *devp as w says (a partition read from its table; an offset), named
 * "BASE@pN" / "BASE@OFFSET"; nothing when w is empty. -ENOENT "no partition N" (naming the
 * ones there are), -EUCLEAN a bad entry (btk_part.bad), -EINVAL an offset past the end,
 * errors of btk_dev_ptable; for a writer
 * (write), -EUCLEAN a partition that overlaps another one or the table (btk_ptable_overlap).
 * On failure *devp is closed and NULL. */
int btk_dev_where_apply(struct btk_dev **devp, const char *base, const struct btk_dev_where *w,
			bool write);

/* ---- Containers (split.c, ewf.c, container.c) ---- */

/* Split raw segments: when first names the first of a series whose second segment exists
 * ("disk.000" or "disk.001" then "disk.001"/"disk.002", "disk.aa" then "disk.ab", "disk.raw.00"
 * then "disk.raw.01"), every segment in order as one device of their total size (fixed):
 * 0 with *out, 1 when first is no such name, -errno (a segment that does not open, is empty or
 * a block device; -EBUSY when write and one is in use). */
int btk_dev_split_open(const char *first, bool write, struct btk_dev **out);
/* The number of segments of a split raw handle (0 for others). */
int btk_dev_split_count(const struct btk_dev *dev);
/* The file descriptor of segment i of a split raw handle (-1 for others). */
int btk_dev_split_fd(const struct btk_dev *dev, int i);
/* Whether b (len bytes from the start of a file) starts an EWF segment (E01, Ex01). */
bool btk_ewf_magic(const uint8_t *b, size_t len);
/* The EWF evidence file whose first segment is path, read-only, through libewf loaded at run
 * time: -EOPNOTSUPP naming what to do when libewf is not there, -EIO with libewf's message. */
int btk_dev_ewf_open(const char *path, struct btk_dev **out);
/* A disk image or volume format btk does not read, found at the start of dev: what it is and
 * what to do ("a qcow2 image: convert it to raw (qemu-img convert -O raw)..."), or NULL. */
const char *btk_dev_foreign(struct btk_dev *dev);
/* Why dev is not the filesystem looked for, when that can be told: a foreign format, a
 * partition table (give the partition), another filesystem (libblkid). 1 with the words in
 * buf, 0 when nothing is known. */
int btk_dev_explain(struct btk_dev *dev, char *buf, size_t len);

/* ---- The open path (open.c, in_use.c, lock.c): how every tool opens its devices ----
 *
 * A writable open is exclusive: it refuses a device the kernel uses (btk_dev_refuse_in_use),
 * takes the writer's lock (btk_lock_take) before anything is read, opens block devices with
 * O_EXCL, and wraps the handle as the options say (faults below undo). A read-only open takes
 * no lock and refuses nothing (btk_fs_open warns of a read-write mount of a member). */
struct btk_dev_opts {
	bool write;	       /* read-write and exclusive */
	bool create;	       /* with write: create a missing image file */
	bool wait;	       /* with write: wait for another process's lock instead of -EBUSY */
	bool no_clobber;       /* with write: refuse a device that holds a filesystem or partition
				  table (libblkid; mkfs and restore without -f): -EEXIST */
	bool undo;	       /* keep the old bytes of every change (btk_dev_undo) */
	const char *undo_path; /* with write: keep them in this undo file (undo.h), shared by
				  every device opened with it; the file is made at the first
				  change; NULL: none */
	struct {
		enum btk_fault_mode mode; /* tests: a power cut after `after` changes */
		uint64_t after;		  /* (per device, unless power is set) */
		/* the budget every device opened with it spends (after is then unused) */
		struct btk_fault_power *power;
	} fault;
	/* where the filesystem lies on every device whose name has no "@" part (--partition,
	 * --offset): a window over it (btk_dev_where_apply) */
	struct btk_dev_where where;
};
/* Opens path as o says; *out is the caller's (btk_dev_close releases the lock). With
 * o->create, a file that is not there is made, locked before it is named (btk_lock_create:
 * dev->created says this call made it), and removed again when the open fails. */
int btk_dev_open_opts(const char *path, const struct btk_dev_opts *o, struct btk_dev **out);
/* Opens n devices as o says into devs[0..n-1], after checking that no two name one device
 * (btk_paths_distinct, then the handles: new files by two names). All or none: on failure
 * every handle opened is closed, every file made is removed, and devs[] is NULL. */
int btk_devs_open(const char *const *paths, int n, const struct btk_dev_opts *o,
		  struct btk_dev **devs);

/* Whether path is used by the kernel (in_use.c, the one reader of the mount table): mounted
 * itself, a member of a mounted btrfs, a loop device whose backing file is mounted through
 * another loop device, or an image file backing a loop device (compared by device and inode,
 * so any name of the file counts). where (may be NULL) gets the mount point or the loop
 * device. The strongest state wins. */
enum btk_use {
	BTK_USE_FREE,
	BTK_USE_UNKNOWN, /* the mount table is unreadable */
	BTK_USE_LOOP,	 /* an image file attached to a loop device that is not mounted */
	BTK_USE_MOUNTED_RO,
	BTK_USE_MOUNTED_RW
};
enum btk_use btk_dev_in_use(const char *path, char *where, size_t len);
/* The same for the bytes [off, off+size) of path (size 0: to its end): of an image file, only
 * the loop devices whose offset and size limit overlap that range count (a loop device of one
 * partition leaves the others free); a block device counts whole. */
enum btk_use btk_dev_in_use_range(const char *path, uint64_t off, uint64_t size, char *where,
				  size_t len);
/* 0 when a writer may change path; -EBUSY naming the mount point or loop device otherwise. */
int btk_dev_refuse_in_use(const char *path);
int btk_dev_refuse_in_use_range(const char *path, uint64_t off, uint64_t size);
/* 0 when path holds no filesystem or partition table signature that libblkid knows (or it
 * does not exist); -EEXIST naming what was found ("contains a ext4 filesystem (use -f to
 * overwrite)"), -EIO when it cannot be probed. */
int btk_dev_probe_signatures(const char *path);
/* What libblkid finds on path: 1 with its TYPE ("btrfs", "ext4"; "gpt" with *what "partition
 * table", else "filesystem") in found, 0 when nothing (or path is not there), -EIO. */
int btk_dev_signature(const char *path, char *found, size_t len, const char **what);

/* What libblkid finds in the range dev stands for (a partition: its window): 1 with TYPE
 * ("ext4", "btrfs", "swap"...), LABEL and UUID ("" when none) in the buffers (64, 256, 64
 * bytes), 0 when nothing or when the range has no file descriptor under it (split raw, EWF),
 * -EIO. */
int btk_dev_blkid(const struct btk_dev *dev, char type[64], char label[256], char uuid[64]);

/* The writer's lock on path's file (lock.c): exclusive between processes, shared by every
 * holder in this one (counted). -EBUSY "PATH: is being changed by another btk process (pid N)"
 * when another process holds it and !wait. */
struct btk_lock;
int btk_lock_take(const char *path, bool wait, struct btk_lock **out);
/* Creates path (mode, less the umask) already locked when it is not there: *made and *out (the
 * caller's) say so. When path exists, or it was made by name where the system cannot lock a
 * file before naming it, *made tells whether this call made it and *out is NULL: the lock
 * follows at btk_lock_take. */
int btk_lock_create(const char *path, mode_t mode, bool *made, struct btk_lock **out);
void btk_lock_drop(struct btk_lock *l);

/* Plain file descriptors (fdio.c), for files that are no device (dumps, spools, standard
 * output, a copied file): all of len bytes read into or written from buf, at off, or at the
 * file's position when off < 0; EINTR is retried. 0, or -errno; -ENODATA when a read meets
 * the end of the file, -EIO when a write makes no progress. Nothing is recorded with btk_err:
 * the caller says what the file was. */
int btk_fd_read_all(int fd, void *buf, size_t len, int64_t off);
int btk_fd_write_all(int fd, const void *buf, size_t len, int64_t off);

#endif
