/* SPDX-License-Identifier: MIT */
/*
 * What a node looks like to lookup and stat (fs/attr.c), for the
 * operation handlers (fs/ops.c, fs/ops_dir.c, fs/ops_file.c).
 */
#ifndef ACCELFS_ATTR_H
#define ACCELFS_ATTR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "core/model/model.h"
#include "fs/accelfs.h"
#include "fs/tree.h"

/* The mode bits of a node, before delegation. */
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

#endif
