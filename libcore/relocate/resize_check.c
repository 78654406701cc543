/* resize_check.c — states of a filesystem that a resize must not write to. */
#include "relocate/relocate.h"
#include "base/error.h"
#include "fs/fs_edit.h"
#include "fs/fs_read.h"
#include "tree/tree.h"

#include <errno.h>

int btk_resize_refusals(struct btk_fs *fs, bool force)
{
	enum btk_unfinished what;
	int ret;

	if ((ret = btk_fs_unfinished(fs, &what)))
		return ret;
	switch (what) {
	case BTK_UNFINISHED_LOG:
		return btk_err(EOPNOTSUPP, "the filesystem has a log tree to replay: run btk-fsck "
					   "--rescue replay-log (or mount it once) first");
	case BTK_UNFINISHED_BALANCE:
		return btk_err(EBUSY, "a balance is in progress: mount the filesystem to finish it "
				      "(or btrfs balance cancel) first");
	case BTK_UNFINISHED_RELOC_TREES:
		return btk_err(EBUSY,
			       "an interrupted relocation left relocation trees (no balance "
			       "item): mount the filesystem once so that the kernel finishes "
			       "it, then resize");
	case BTK_UNFINISHED_RELOC_INODE:
		return btk_err(EBUSY,
			       "an interrupted relocation left its data inode in the data "
			       "reloc tree: mount the filesystem once so that the kernel drops "
			       "it, then resize");
	case BTK_UNFINISHED_NONE:
		break;
	}
	return btk_convert_guard(fs, 0, 0, false, force, "resizing");
}
