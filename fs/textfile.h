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
 * The writer is the daemon's (struct accelfs holds it): kicks may come
 * from any thread until fs_textfile_free, which comes once nothing can
 * kick any more (the node stopped, the metrics listener cleared); a kick
 * after fs_textfile_stop does nothing.
 */
#ifndef ACCELFS_TEXTFILE_H
#define ACCELFS_TEXTFILE_H

#include <stddef.h>

#include "core/node.h"

struct fs_dies;

#define FS_TEXTFILE_NAME "accelfs.prom"
#define FS_TEXTFILE_TICK_MS 1000

struct fs_textfile;

/*
 * Write DIR/accelfs.prom now, then keep it current from a thread: the
 * metrics of node and of the mount's dies (NULL: none), which must outlive
 * the writer.  NULL with a message (the first write failed: the directory
 * is missing or not writable), and nothing started.
 */
struct fs_textfile *fs_textfile_start(struct accel_node *node, struct fs_dies *dies, const char *dir, char *err,
                                      size_t errlen);
/* Something changed: rewrite soon.  Never blocks for long; NULL: no writer. */
void fs_textfile_kick(struct fs_textfile *tf);
/* Stop the thread and remove the file, before the dies it renders are freed. */
void fs_textfile_stop(struct fs_textfile *tf);
/* Free it (stopping it first if need be), once nothing can kick it. */
void fs_textfile_free(struct fs_textfile *tf);

#endif
