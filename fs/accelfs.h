/* SPDX-License-Identifier: MIT */
/* The daemon's shared state: the node it serves, the inode table, the session. */
#ifndef ACCELFS_ACCELFS_H
#define ACCELFS_ACCELFS_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include <fuse_lowlevel.h>

#include "core/engine/node.h"
#include "fs/inode.h"
#include "fs/tree.h"

struct fs_notifier;
struct fs_reclaimer;
struct fs_textfile;
struct accel_delegation;
struct open_file;
struct dir_listing;

struct accelfs {
	struct accel_node *node;
	struct accel_delegation *deleg;
	struct fs_inodes *inodes;
	struct fuse_session *se;
	struct fs_notifier *notifier;
	struct fs_reclaimer *reclaimer; /* NULL on a read-only mount (fs/reclaimer.h) */
	struct fs_textfile *textfile;   /* --metrics-textfile's writer, or NULL (fs/textfile.h) */
	struct fs_pollers *pollers;     /* readers waiting in poll() (fs/waiters.c) */
	struct fs_mount mount;          /* dies/ and the attachment registry (fs/tree.h) */
	/*
	 * Every open generated file (fs/ops_file.c) and directory listing
	 * (fs/ops_dir.c).  The kernel sends RELEASE and RELEASEDIR after
	 * close(2) returns, and not at all for a close that races an unmount
	 * or a connection aborted: what it never released is freed at exit.
	 */
	pthread_mutex_t files_lock;
	struct open_file *files;
	struct dir_listing *dirs;
	/*
	 * Grows with every change a render shows that neither the snapshot nor
	 * the node's shown generation counts (a layout's status, a cordon, a
	 * metrics counter, a delegation): fs_side_moved(), fs/waiters.h.
	 */
	uint64_t side_gen;
	time_t started;        /* the timestamps of everything that is not a job */
	bool mounted_with_dev; /* character devices in jobs' dev/ work only on a "dev" mount */
	bool read_only;        /* --read-only: every write and directory operation answers EROFS */
};

extern const struct fuse_lowlevel_ops accelfs_ops;

#endif
