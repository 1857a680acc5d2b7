/* SPDX-License-Identifier: MIT */
/*
 * Who sends a request, as /proc's hidepid check would see them: the
 * filesystem uid and gid FUSE hands over, the supplementary groups, and
 * whether the process may look at every other one (CAP_SYS_PTRACE, or root).
 * What a live file naming processes (holders, processes) shows them follows
 * from it (core/driver/proc_view.h).
 */
#ifndef ACCELFS_READER_H
#define ACCELFS_READER_H

#include "core/driver/proc_view.h"

struct fuse_req;

/* Called at open, in the request's thread, before any reply. */
void fs_reader_of(struct fuse_req *req, struct accel_viewer *out);

#endif
