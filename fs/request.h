/* SPDX-License-Identifier: MIT */
/*
 * What every operation handler (fs/ops.c, fs/ops_dir.c, fs/ops_file.c,
 * fs/attr.c) asks of its request: the daemon it is for, whether it may
 * change anything, and how long a path it may name.  Apart from the table
 * (fs/ops.c) so that the handlers need nothing of it: the table calls the
 * handlers, never the other way.
 */
#ifndef ACCELFS_REQUEST_H
#define ACCELFS_REQUEST_H

#include <errno.h>
#include <stdbool.h>

#include <fuse_lowlevel.h>

#include "core/model/log.h"
#include "fs/accelfs.h"
#include "fs/openfile.h"

#define PATH_BUF FS_PATH_BUF

static inline struct accelfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * --read-only: every write and directory operation answers EROFS.  The
 * mount is read-only in the kernel, which refuses first; these are for a
 * mount remounted read-write.  what and path go to the debug log.
 */
static inline bool fs_refuse_read_only(fuse_req_t req, const char *what, const char *path)
{
	if (!fs_of(req)->read_only)
		return false;
	log_debug("%s /%s: EROFS: accelfs runs --read-only", what, path);
	fuse_reply_err(req, EROFS);
	return true;
}

#endif
