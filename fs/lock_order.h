/* SPDX-License-Identifier: MIT */
/*
 * fs/'s locks, in the order a thread may take them, never the other way
 * round (debug builds assert it, core/engine/lock_check.h, as core's own order in
 * core/engine/node_internal.h):
 *
 *   1. FS_LOCK_FILES    the open files' and directories' lists (struct accelfs's files_lock)
 *   2. FS_LOCK_FLUSH    the notifier's flush_lock: one flush at a time
 *   3. FS_LOCK_POLLERS  the waiters in poll() (fs/waiters.c)
 *   4. FS_LOCK_FILE     an open file's lock: its text, what its writer keeps
 *   5. FS_LOCK_LEAF     the inode table, the notifier's queue: nothing inside
 *
 * All of them come after the node's long locks (topo, a card's lock, names,
 * publish, view): one may be taken while the node holds those (the
 * notifier's queue, from a publish), never the other way round.  So no fs/
 * lock is held across a call that takes a node lock, and no open file's
 * lock waits for a card: a render runs with none of them held (a snapshot
 * row's takes no node lock at all; a live row's only at open and read).
 */
#ifndef ACCELFS_LOCK_ORDER_H
#define ACCELFS_LOCK_ORDER_H

#include <pthread.h>

#include "core/engine/lock_check.h"

enum fs_lock_rank {
	FS_LOCK_FILES = 1,
	FS_LOCK_FLUSH,
	FS_LOCK_POLLERS,
	FS_LOCK_FILE,
	FS_LOCK_LEAF = ACCEL_OUTER_LEAF,
};

static inline void fs_lock(pthread_mutex_t *m, enum fs_lock_rank rank)
{
	accel_outer_lock_take((unsigned)rank);
	pthread_mutex_lock(m);
}

static inline void fs_unlock(pthread_mutex_t *m, enum fs_lock_rank rank)
{
	pthread_mutex_unlock(m);
	accel_outer_lock_drop((unsigned)rank);
}

#endif
