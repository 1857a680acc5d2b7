/* SPDX-License-Identifier: MIT */
/*
 * --metrics-textfile=DIR: the text of /accel/metrics kept in
 * DIR/accelfs.prom for node_exporter's textfile collector, for sites that
 * scrape node_exporter rather than a file of the mount.  The file is
 * replaced atomically (a temporary file renamed over it: the collector
 * reads *.prom only, and never half a file) whenever the text changes: at
 * once after a published change or a counter moving, and within
 * FS_TEXTFILE_TICK_MS for what moves on its own (the dies' slot).  It is
 * removed when the daemon stops, so a stopped daemon is absent, not stale.
 *
 * One writer per process (a daemon serves one node): the functions act on
 * it, and fs_textfile_kick may be called from any thread at any time.
 */
#ifndef ACCELFS_TEXTFILE_H
#define ACCELFS_TEXTFILE_H

#include <stddef.h>

#include "core/node.h"

struct fs_dies;

#define FS_TEXTFILE_NAME "accelfs.prom"
#define FS_TEXTFILE_TICK_MS 1000

/*
 * Write DIR/accelfs.prom now, then keep it current from a thread: the
 * metrics of node and of the mount's dies (NULL: none), which must outlive
 * the writer.  0, or -errno with a message (the first write failed: the
 * directory is missing or not writable), and nothing started.
 */
int fs_textfile_start(struct accel_node *node, struct fs_dies *dies, const char *dir, char *err, size_t errlen);
/* Something changed: rewrite soon.  Never blocks for long; a no-op when not started. */
void fs_textfile_kick(void);
/* Stop the thread and remove the file, before the dies it renders are freed.  A later kick is a no-op. */
void fs_textfile_stop(void);

#endif
