/* SPDX-License-Identifier: MIT */
/*
 * When the daemon dies, its mount's connection is aborted at once, so that
 * nothing waits for an answer that will never come.
 *
 * The kernel aborts a FUSE connection when the last descriptor on
 * /dev/fuse is closed, which happens when the daemon's last thread exits.
 * A thread blocked in the kernel on the mount itself keeps that from ever
 * happening: the notifier thread deleting an entry waits for the parent
 * directory's lock, which a caller's mkdir holds while it waits for the
 * daemon's answer.  Killed, the daemon cannot answer, the notifier cannot
 * return, /dev/fuse stays open, and the callers, the mount and the state
 * lock stay stuck for good (docs/architecture.md, "When the daemon dies").
 *
 * Two things cut that knot, both writing to the connection's fusectl abort
 * file (fs/fusectl.h), opened while the daemon is healthy:
 *   - a handler for every catchable signal whose default action ends the
 *     process (SIGSEGV, SIGABRT, ...) aborts the connection and then lets
 *     the signal take its course (the core dump included, or the previous
 *     handler, such as a sanitizer's);
 *   - a guardian process, forked from the main thread, that the kernel
 *     signals when the main thread exits (PR_SET_PDEATHSIG); it aborts the
 *     connection and goes.  SIGKILL and the OOM killer reach it this way.
 * A daemon starting after a crash does the same for a predecessor both
 * missed (fs/takeover.h).
 *
 * The guardian also tells a stop from a death: a daemon that stops says so
 * first (fs_crashguard_stopping).  One that died without saying so has its
 * metrics textfile, if it left one, replaced by accelfs_up 0 and the time
 * of death (fs/textfile.h: no series of a dead daemon looks current), and a
 * line in its log naming it, once every thread of it is gone.
 */
#ifndef ACCELFS_CRASHGUARD_H
#define ACCELFS_CRASHGUARD_H

#include <stddef.h>

/* What the guardian reports a death in: each NULL for none. */
struct fs_crashguard_files {
	const char *log;          /* the daemon's log file: a line is appended */
	const char *textfile_dir; /* --metrics-textfile's directory: its accelfs.prom is marked down */
};

/*
 * Arm both for the FUSE mount now at mountpoint (call from the main
 * thread, after mounting).  Sets *conn to the connection's number (the
 * state lock records it for a successor).  Returns 0, or -1 with a
 * sentence in err: the daemon serves anyway, unguarded.
 */
int fs_crashguard_arm(const char *mountpoint, const struct fs_crashguard_files *files, unsigned *conn, char *err,
                      size_t len);

/* The daemon is stopping, not dying: call once it has cleaned up, before main returns. */
void fs_crashguard_stopping(void);

#endif
