/* SPDX-License-Identifier: MIT */
/*
 * An open generated file.  Its text is generated at offset 0 and served
 * from that copy for the rest of the read (as lxcfs does).  The lock is
 * held across a reply: once the kernel has the data the reader may close,
 * and RELEASE may run on another thread while this one is still returning
 * from fuse_reply_buf().
 */
#ifndef ACCELFS_OPENFILE_H
#define ACCELFS_OPENFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/model.h"

#define FS_PATH_BUF 1024

struct open_file {
	pthread_mutex_t lock;
	char path[FS_PATH_BUF];
	char *buf; /* the text last generated for this reader */
	size_t len;
	bool generated;
	/*
	 * The snapshot the reader opened a cached file in: its pages may never
	 * reach us, so this is what "changed since opened" compares against.
	 */
	struct accel_snapshot *opened;
	bool polled; /* registered with fs/waiters.c */
};

#endif
