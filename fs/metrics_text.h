/* SPDX-License-Identifier: MIT */
/*
 * /accel/metrics: the node in the Prometheus text exposition format,
 * version 0.0.4 (what `promtool check metrics` checks and node_exporter's
 * textfile collector reads).  Gauges come from one snapshot (capacity,
 * availability, jobs, modes, refusals) and from the dies' slot; counters
 * and histograms from core/metrics.c.  Nothing in the text depends on the
 * time it was rendered, so the same node renders the same text: the
 * textfile writer rewrites its file only when something changed.
 */
#ifndef ACCELFS_METRICS_TEXT_H
#define ACCELFS_METRICS_TEXT_H

#include <stddef.h>

#include "core/model.h"

struct fs_dies;

/* The exposition's Content-Type, for whoever serves it over HTTP. */
#define FS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Render s and dies (fs/dies.h; NULL: no dies/) into a malloc'd buffer: 0, or -ENOMEM. */
int fs_metrics_render(const struct accel_snapshot *s, const struct fs_dies *dies, char **out, size_t *len);

#endif
