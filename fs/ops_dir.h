/* SPDX-License-Identifier: MIT */
/* Directories (fs/ops_dir.c): listing from one snapshot, and mkdir/rmdir handed to core; fs/ops.c's table calls them. */
#ifndef ACCELFS_OPS_DIR_H
#define ACCELFS_OPS_DIR_H

#include <sys/types.h>

#include <fuse_lowlevel.h>

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

#endif
