/* SPDX-License-Identifier: MIT */
/*
 * The kernel's bound on a FUSE answer (Linux 6.14 and later).
 *
 * A request left unanswered longer than the bound aborts the whole
 * connection, as a write to its fusectl abort file does: every caller in
 * flight gets ECONNABORTED, every later one ENOTCONN, and the tree is dead
 * until accelfs starts again.  A daemon may name its own bound at
 * FUSE_INIT; accelfs names none (libfuse 3.14 cannot), so the node's
 * sysctls decide, once, when the connection is made:
 * fs.fuse.default_request_timeout, capped by fs.fuse.max_request_timeout
 * (which alone also sets it).  The kernel looks every 15 s, so a request
 * is aborted between the bound and 15 s after it.
 *
 * accelfs answers at once, or within its driver's calls, but for two waits
 * that are theirs to take: an open of dies/<n>/vram queued for the slot
 * and a write to a lent die's driver file waiting for the die to come back
 * (docs/dies.md).  Under a bound, those are answered ETIMEDOUT a margin
 * before it (fs/dies_wait_limit.c), so that one caller fails and not the
 * mount; a driver call that hangs past the bound still ends it, so a start
 * under a bound says so in the log, and so does the end of a session whose
 * connection was aborted (fs/stop_reason.h).
 */
#ifndef ACCELFS_REQUEST_TIMEOUT_H
#define ACCELFS_REQUEST_TIMEOUT_H

#include <stdbool.h>

#define FS_FUSE_SYSCTL_DIR "/proc/sys/fs/fuse"

/* The bound, in seconds, a connection made now gets from the sysctls in dir; 0: none (or no such sysctls). */
unsigned fs_request_timeout_s(const char *dir);

/*
 * Said once the mount is up: what the bound (the kernel's sysctls read
 * now) means for mountpoint, at warning level where dies/ can make a
 * request wait (has_dies), else at notice.  Returns the bound.
 */
unsigned fs_request_timeout_note(const char *mountpoint, bool has_dies);

#endif
