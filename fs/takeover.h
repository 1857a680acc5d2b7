/* SPDX-License-Identifier: MIT */
/*
 * Taking over from a daemon that died without letting go.
 *
 * A daemon killed while one of its threads is blocked on its own mount can
 * stay half-dead: its main thread gone, the process still holding the
 * state lock and /dev/fuse, every caller of the mount (and any stat() of
 * it) waiting for good (fs/crashguard.h says how; its guardian normally
 * ends that at once).  If the guardian could not (it was killed too, or
 * the daemon died before arming it), the next daemon does it: before it
 * looks at the mountpoint (which would hang), it reads the state lock's
 * holder and, when /proc says that process is dead or dying (not
 * kill(pid, 0), which a zombie passes), aborts the FUSE connection the
 * holder recorded, waits for the process to go and its lock with it, and
 * carries on as after any crash (the dead mount is then detached).
 *
 * A live holder whose recorded connection is gone has been unmounted and
 * is exiting: the start waits for it to let go of the lock (the same
 * bound), so that `umount /accel; accelfs ...` starts instead of being
 * refused for a daemon that is stopping.
 */
#ifndef ACCELFS_TAKEOVER_H
#define ACCELFS_TAKEOVER_H

#include <stdbool.h>
#include <stddef.h>

/*
 * For state_dir (the lock need not exist).  Returns 0 to go on (nothing to
 * take over, a live holder, which the lock refuses later with its own
 * message, or a holder now gone), or STARTUP_REFUSED when a dying holder
 * did not go within the bound, having said why on stderr.  What was done
 * is said on stderr as it happens and summed up in note ("" if nothing),
 * for the log file, which is opened only later.  *routine says whether the
 * note tells of an ordinary stop (a holder that had unmounted and exited
 * while we waited: a notice) rather than of a death (a warning).
 */
int takeover_dead_holder(const char *state_dir, char *note, size_t len, bool *routine);

#endif
