/* SPDX-License-Identifier: MIT */
/*
 * Why the session ended, said in the log.
 *
 * A FUSE session ends four ways, and a reader of the mount sees two of
 * them alike: a stop asked of accelfs (SIGTERM or SIGINT), an unmount
 * (umount, fusermount3 -u: the kernel answers the daemon ENODEV), a
 * connection aborted under a tree still mounted (its fusectl abort file
 * written, umount -f, a request past the kernel's bound on an answer: the
 * kernel answers the daemon ENODEV too, and the readers in flight
 * ECONNABORTED), and a death (the guardian's line,
 * fs/crashguard.h).  Without this the first three all logged "unmounted",
 * so a test that lost its daemon (a read answering "software caused
 * connection abort") could not tell a stop it did not ask for, or an
 * abort from outside, from a normal end.
 *
 * fs_stop_reason_arm records the sender of a stop signal (chained before
 * libfuse's handler, which ends the loop); fs_stop_reason_log tells the
 * three apart once the loop has returned, before accelfs unmounts.
 */
#ifndef ACCELFS_STOP_REASON_H
#define ACCELFS_STOP_REASON_H

/* After fuse_set_signal_handlers: 0, or -errno. */
int fs_stop_reason_arm(void);

/*
 * Before fuse_remove_signal_handlers: libfuse's handlers back, so that it
 * finds its own and resets them (a signal during the exit then ends the
 * process, as before).  Nothing if not armed.
 */
void fs_stop_reason_disarm(void);

/*
 * loop: what fuse_session_loop_mt returned (a signal's number, 0, -errno);
 * the mountpoint and the connection's number that fs_crashguard_arm found
 * (0: unknown); the kernel's bound on an answer for that connection
 * (fs/request_timeout.h; 0: none), which aborts it too.  Logs one line:
 * notice for a stop or an unmount, error for a connection aborted from
 * outside or a session that failed.
 */
void fs_stop_reason_log(int loop, const char *mountpoint, unsigned conn, unsigned request_timeout_s);

#endif
