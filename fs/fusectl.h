/* SPDX-License-Identifier: MIT */
/*
 * The kernel's FUSE control filesystem (fusectl, /sys/fs/fuse/connections):
 * one directory per connection, named by its number, whose `abort` file
 * ends every request in flight with ECONNABORTED and fails the ones after.
 * It is the only way to free a connection whose daemon is dying but still
 * holds /dev/fuse open (docs/architecture.md, "When the daemon dies").
 * Mounted on demand: Debian does not mount it by default.
 */
#ifndef ACCELFS_FUSECTL_H
#define ACCELFS_FUSECTL_H

#include <stdbool.h>
#include <stddef.h>

#define FS_FUSECTL_DIR "/sys/fs/fuse/connections"

/* Whether connection conn exists now (fusectl is mounted first if it is not and we may). */
bool fs_fusectl_exists(unsigned conn);

/*
 * An open descriptor on connection conn's abort file (close-on-exec), or
 * -1 with a sentence in err.  Writing "1" to it aborts that connection and
 * no other: the file is tied to the connection, so a number reused later
 * by another mount is never reached through it.
 */
int fs_fusectl_open_abort(unsigned conn, char *err, size_t len);

/* Abort connection conn now; 0, or -1 with a sentence in err. */
int fs_fusectl_abort(unsigned conn, char *err, size_t len);

#endif
