/* SPDX-License-Identifier: MIT */
/* Open files (fs/ops_file.c): open, read, write, close, poll and seek; fs/ops.c's table calls them. */
#ifndef ACCELFS_OPS_FILE_H
#define ACCELFS_OPS_FILE_H

#include <stdbool.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
/* The size of an open read-through file, as its reads give it; false: fi is not one. */
bool fs_open_file_size(struct fuse_file_info *fi, off_t *size);

#endif
