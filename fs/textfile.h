/* SPDX-License-Identifier: MIT */
/*
 * --metrics-textfile=DIR: the text of /accel/metrics kept in
 * DIR/accelfs.prom for node_exporter's textfile collector, for sites that
 * scrape node_exporter rather than a file of the mount.  The file is
 * replaced atomically (a temporary file renamed over it: the collector
 * reads *.prom only, and never half a file) whenever the text changes: at
 * once after a published change or a counter moving, and within
 * FS_TEXTFILE_TICK_MS for what moves on its own (the dies' slot), and at
 * least every FS_TEXTFILE_HEARTBEAT_MS however quiet the node is.  Its last
 * series, FS_TEXTFILE_WRITE_TIME, says when it was written, so a reader
 * tells a quiet daemon (a recent time) from a stuck one (an old time); it
 * is the one series /accel/metrics has not.  It is removed when the daemon
 * stops, so a stopped daemon is absent, not stale; a daemon that dies
 * without stopping (kill -9, the OOM killer, a crash) has its guardian
 * replace it with accelfs_up 0 and the time of death (fs/crashguard.h).
 *
 * The writer is the daemon's (struct accelfs holds it): kicks may come
 * from any thread until fs_textfile_free, which comes once nothing can
 * kick any more (the node stopped, the metrics listener cleared); a kick
 * after fs_textfile_stop does nothing.
 */
#ifndef ACCELFS_TEXTFILE_H
#define ACCELFS_TEXTFILE_H

#include <stddef.h>

#include "core/engine/node.h"

struct fs_dies;

#define FS_TEXTFILE_NAME "accelfs.prom"
#define FS_TEXTFILE_TICK_MS 1000
#define FS_TEXTFILE_HEARTBEAT_MS 5000
#define FS_TEXTFILE_WRITE_TIME "accelfs_textfile_write_timestamp_seconds"
#define FS_TEXTFILE_WRITE_TIME_HELP                                                                                    \
	"When accelfs last wrote this file (Unix time): at least every 5 s while it runs, and when it died."

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
