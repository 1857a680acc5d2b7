/* SPDX-License-Identifier: MIT */
/*
 * What jobs use (core/driver/usage.h), for /accel/metrics and node.json: sampled
 * as they are read (a scrape never waits for a window: it measures the one
 * since the previous scrape, core/engine/node_usage.c).  Not part of the textfile
 * copy of the metrics (fs/textfile.h), which the daemon writes without
 * anyone asking: an idle daemon samples nothing.
 */
#ifndef ACCELFS_USAGE_TEXT_H
#define ACCELFS_USAGE_TEXT_H

#include <jansson.h>

#include "core/model/model.h"
#include "fs/text.h"

struct fs_shown;

/*
 * The live per-job gauges (accelfs_job_*), labelled with the job's key
 * alone (job, device): what identifies the job (profile, gi, ci, uuid,
 * owner, and UUID and GPU_I_ID as DCGM exporter labels its per-MIG series)
 * is accelfs_job_info's, once per job, joined on the key.  A scrape of a
 * hundred jobs stays small and shows the last readings (one wake-up of the
 * sampler for them all, core/engine/node_usage.c).
 */
void fs_usage_metrics(struct fs_text *t, const struct fs_shown *shown, const struct accel_snapshot *s);
/*
 * accelfs_job_info, one per job with the same labels: drawn from the
 * snapshot alone, so in the textfile copy too (fs/metrics_text.c).
 */
void fs_usage_info_metrics(struct fs_text *t, const struct accel_snapshot *s);

/* node.json's "utilization" of job j of d (NULL: the card's), or null where nothing was read or j is not ready. */
json_t *fs_usage_json(const struct fs_shown *shown, const struct accel_snapshot *s, const struct accel_device *d,
                      const struct accel_job *j);

#endif
