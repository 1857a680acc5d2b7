/* SPDX-License-Identifier: MIT */
/*
 * An open generated file.  Its text is generated at offset 0 and served
 * from that copy for the rest of the read (as lxcfs does).  No handler
 * touches a handle after its reply: once the kernel has the answer the
 * caller may close, and RELEASE may free the handle on another thread while
 * this one is still returning from fuse_reply_*().  So a read copies what
 * it answers under the lock and replies from its copy, and whatever a
 * handler needs after replying it takes before.
 */
#ifndef ACCELFS_OPENFILE_H
#define ACCELFS_OPENFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "core/model.h"

#define FS_PATH_BUF 1024

/*
 * What a kind of open file does.  Every handle (fi->fh) begins with its
 * kind's table, so each FUSE operation on an open file dispatches once:
 * generated files (fs/ops_file.c) and dies/<n>/vram (fs/dies.c) so far.
 */
struct fs_file_ops {
	void (*read)(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
	void (*write)(fuse_req_t req, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
	void (*flush)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*release)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*poll)(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
};

struct fs_handle {
	const struct fs_file_ops *ops;
};

static inline const struct fs_file_ops *fs_handle_ops(const struct fuse_file_info *fi)
{
	return ((const struct fs_handle *)(uintptr_t)fi->fh)->ops;
}

struct open_file {
	struct fs_handle h; /* first: its ops are the generated files' */
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
	bool polled;                   /* registered with fs/waiters.c */
	struct open_file *next, *prev; /* struct accelfs's list, under its files_lock */
};

struct accelfs;
/* At exit, once the session is gone: free the open files the kernel never released. */
void fs_open_files_free(struct accelfs *fs);

#endif
