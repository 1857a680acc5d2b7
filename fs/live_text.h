/* SPDX-License-Identifier: MIT */
/*
 * Texts outside the snapshot: what runs on a job (its driver's
 * running-process query, core/driver/processes.h), the live row processes, asked at
 * open and read only; and dies/last_error (the node's store, a snapshot row).
 */
#ifndef ACCELFS_LIVE_TEXT_H
#define ACCELFS_LIVE_TEXT_H

#include <stdint.h>

#include "fs/tree.h"

/* A job's processes file (a row's render): -ENODEV for a job not ready, -ENOENT for one gone since s. */
int fs_job_processes_text(struct fs_text *t, const struct fs_view *v);
/*
 * A job's utilization, or a device's (n->job NULL): sampled while read
 * (core/engine/node_usage.c); -ENODEV for a job not ready.  Its size is 0 (fs_usage_size).
 */
int fs_usage_text(struct fs_text *t, const struct fs_view *v);
uint64_t fs_usage_size(const struct fs_node *n);
/* The row of a utilization file (a device's, flags 0; a job's, FS_ENTRY_JOB_READY). */
#define FS_USAGE_ROW(row_flags)                                                                                        \
	{                                                                                                              \
		.name = "utilization", .kind = FS_FILE, .fresh = FS_FRESH_LIVE, .flags = (row_flags),                  \
		.render = fs_usage_text, .size = fs_usage_size                                                         \
	}
/* dies/last_error (a row's render): as a profile directory's last_error. */
int fs_dies_last_error_text(struct fs_text *t, const struct fs_view *v);

#endif
