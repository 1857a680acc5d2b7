/* SPDX-License-Identifier: MIT */
/* The daemon's shared state: the node it serves, the inode table, the session. */
#ifndef ACCELFS_ACCELFS_H
#define ACCELFS_ACCELFS_H

#include <pthread.h>
#include <stdbool.h>

#include <fuse_lowlevel.h>

#include "core/node.h"
#include "fs/inode.h"

struct fs_notifier;

struct accelfs {
	struct accel_node *node;
	struct fs_inodes *inodes;
	struct fuse_session *se;
	struct fs_notifier *notifier;
	double entry_timeout;
	double attr_timeout;
	bool mounted_with_dev; /* character devices in jobs' dev/ work only on a "dev" mount */
};

extern const struct fuse_lowlevel_ops accelfs_ops;

#endif
