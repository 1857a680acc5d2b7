/* SPDX-License-Identifier: MIT */
/*
 * What the daemon checks before it touches anything: the mountpoint, and
 * that no other accelfs serves the same state directory.  Two daemons on
 * one state directory would both reconcile the same records against the
 * same driver, each seeing the other's jobs as orphans to reclaim; the lock
 * makes that impossible rather than unlikely.
 *
 * Every function prints its own message (to stderr, or the log once open)
 * saying what to do, and returns the exit status accelfs should end with:
 * 0 to go on, STARTUP_REFUSED or STARTUP_USAGE.
 */
#ifndef ACCELFS_STARTUP_H
#define ACCELFS_STARTUP_H

#include <limits.h>
#include <stdbool.h>

#define STARTUP_REFUSED 1 /* something is in the way: another daemon, a mount */
#define STARTUP_USAGE 2   /* the command line is wrong */

struct startup_mountpoint {
	char path[PATH_MAX]; /* absolute, as /proc/self/mountinfo spells it */
	bool stale;          /* a dead accelfs mount is on it: detach before mounting */
	bool live;           /* a running accelfs is mounted on it: refuse (startup_refuse_live) */
};

/*
 * The mountpoint must be an existing directory (else STARTUP_USAGE).  A
 * running accelfs on it is noted in mp->live, a dead one (its daemon was
 * killed) in mp->stale; neither is touched here: detaching is a side
 * effect, done only once the state directory's lock is held.
 */
int startup_check_mountpoint(const char *arg, struct startup_mountpoint *mp);

/*
 * A running accelfs is mounted where we were asked to mount: say which
 * daemon is in the way.  If it is the one holding state_dir (not created
 * if missing), name its pid as a second daemon on that state directory
 * would; otherwise say the mountpoint is taken.  Returns STARTUP_REFUSED.
 */
int startup_refuse_live(const char *state_dir, const struct startup_mountpoint *mp);

/* Detach the dead mount startup_check_mountpoint found (with a log line); 0 or STARTUP_REFUSED. */
int startup_detach_stale(struct startup_mountpoint *mp);

/*
 * Take STATE_DIR/accelfs.lock (flock, exclusive, non-blocking) and write
 * this process's pid and the mountpoint in it.  The descriptor is
 * close-on-exec and must stay open for the daemon's life; a fork shares the
 * lock (it belongs to the open file, not the process), so the parent of a
 * daemon going to the background may exit without releasing it.  Returns 0
 * with *fd, or STARTUP_REFUSED naming the holder's pid and mountpoint.
 */
int startup_lock_state_dir(const char *state_dir, const char *mountpoint, int *fd);

/*
 * What the lock file says of its holder:
 * "<pid>\n<mountpoint>\n<conn>\n<conn_id>\n", conn being the FUSE
 * connection of its mount (0 until it has mounted) and conn_id which one
 * that number named then (fs_fusectl_id; 0 if unknown, as in the three
 * lines an older accelfs wrote), so that a successor can abort it if the
 * holder dies, and nothing else of that number (fs/takeover.h).
 */
struct startup_lock_holder {
	int pid;
	char mountpoint[PATH_MAX];
	unsigned conn;
	unsigned long conn_id;
};

/* Rewrite the lock file: the serving process (after the fork), then its connection (after the mount). */
void startup_lock_note(int fd, const char *mountpoint, unsigned conn, unsigned long conn_id);

/* Read what the holder wrote; 0, or -1 when it names no pid (it is still starting). */
int startup_lock_read(int fd, struct startup_lock_holder *h);

/* On a clean exit: empty the lock file and let it go. */
void startup_lock_release(int fd);

#endif
