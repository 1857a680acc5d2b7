/* SPDX-License-Identifier: MIT */
/*
 * What the files of the operation table share (fs/ops.c, fs/ops_dir.c,
 * fs/ops_file.c, fs/attr.c).  Nothing outside them includes this.
 */
#ifndef ACCELFS_OPS_INTERNAL_H
#define ACCELFS_OPS_INTERNAL_H

#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "core/model/log.h"
#include "core/model/model.h"
#include "fs/accelfs.h"
#include "fs/openfile.h"
#include "fs/tree.h"

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

/* fs/attr.c.  The mode bits of a node, before delegation. */
mode_t fs_kind_mode(const struct fs_node *n);
/* A node's attributes in a snapshot (snap may be NULL for nodes whose size needs none). */
void fs_fill_attr(struct accelfs *fs, const struct accel_snapshot *snap, const char *path, const struct fs_node *n,
                  uint64_t ino, struct stat *st);
/*
 * Resolve an inode in the current snapshot, as what it was looked up as
 * (fs_inode_resolve, fs/openfile.h); the caller unrefs *snap.  0, -ESTALE
 * or -ENOENT.
 */
int fs_resolve_ino(struct accelfs *fs, fuse_ino_t ino, struct accel_snapshot **snap, struct fs_node *n, char *path,
                   size_t len);
/* Where a node-level job's `device` link points; its length when buf is NULL. */
int fs_link_target(const struct fs_node *n, char *buf, size_t len);
/*
 * Answer a lookup (or mkdir) with the entry of parent/name, taking one
 * lookup reference for the inode standing for n (snap: the snapshot n was
 * resolved in, NULL for what a mkdir made).  Should the path name
 * something else by the time the reply is out (a job removed and made
 * again meanwhile), the entry is dropped again at once (fs_notify_gone).
 */
void fs_reply_entry(fuse_req_t req, struct accelfs *fs, const struct accel_snapshot *snap, fuse_ino_t parent,
                    const char *name, const char *path, const struct fs_node *n);

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
/* The size of an open read-through file, as its reads give it (fs/ops_file.c); false: fi is not one. */
bool fs_open_file_size(struct fuse_file_info *fi, off_t *size);

#endif
