/* SPDX-License-Identifier: MIT */
/*
 * /accel/metrics: the node in the Prometheus text exposition format,
 * version 0.0.4 (what `promtool check metrics` checks and node_exporter's
 * textfile collector reads).  Gauges come from one snapshot (capacity,
 * availability, jobs, modes, refusals) and from the dies' slot; counters
 * and histograms from core/engine/metrics.c.  Nothing in the text depends on the
 * time it was rendered, so the same node renders the same text: the
 * textfile writer rewrites its file only when something changed.
 */
#ifndef ACCELFS_METRICS_TEXT_H
#define ACCELFS_METRICS_TEXT_H

#include <stddef.h>

#include "core/model/model.h"
#include "fs/text.h"

struct fs_dies;

/*
 * accelfs_up: 1 in every text a running daemon renders; 0 in the textfile
 * the crash guard leaves when the daemon dies without stopping.  One HELP
 * for both, as Prometheus wants of one metric.
 */
#define FS_METRICS_UP_HELP                                                                                             \
	"1 while the accelfs daemon serving this node runs; 0 once it died without stopping (its textfile, "           \
	"marked by its guardian: no other series of it is left)."

/* The exposition's Content-Type, for whoever serves it over HTTP. */
#define FS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Write s and dies (fs/dies.h; NULL: no dies/) into t (fs/text.h: out of memory is t's to say). */
struct accel_quota_table;
/* quota: the node's limits (accel_node_quota_table), NULL for none. */
void fs_metrics_text(struct fs_text *t, const struct accel_snapshot *s, const struct fs_dies *dies,
                     const struct accel_quota_table *quota);

#endif
