/* SPDX-License-Identifier: MIT */
/*
 * The per-job lines of /accel/metrics drawn from a device's view alone
 * (accelfs_job_info, accelfs_job_health): a view is immutable and shared by
 * every snapshot that shows the device unchanged, so its jobs' lines are
 * rendered once per view and copied at every later scrape.  A scrape of a
 * hundred jobs then formats only what moves (docs/performance.md,
 * "Utilization").
 */
#ifndef ACCELFS_JOB_LINES_H
#define ACCELFS_JOB_LINES_H

#include "core/model/model.h"
#include "fs/text.h"

enum fs_job_lines { FS_JOB_LINES_INFO, FS_JOB_LINES_HEALTH, FS_JOB_LINES_N };

/* d's jobs' lines of kind k into t: render's text (a pure function of d), from the cache when d was seen. */
void fs_job_lines(struct fs_text *t, struct accel_device *d, enum fs_job_lines k,
                  void (*render)(struct fs_text *t, const struct accel_device *d));

#endif
