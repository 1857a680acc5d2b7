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
 * Which connection the number conn names now: the inode number of its
 * fusectl directory, 0 when there is none.  A number is not an identity:
 * it is the device number of the connection's superblock, which the kernel
 * gives to the next mount (any FUSE mount: sshfs, lxcfs, another accelfs)
 * once the superblock is gone, and an unmount, umount -l included, frees it
 * while the daemon that served it may still be dying.  fusectl makes a new
 * directory, with an inode number of its own, for every connection, so a
 * recorded id tells the connection from a later one of the same number.
 * (Mounting fusectl again makes new inodes for the connections there: a
 * recorded id then matches nothing, which leaves the connection alone.)
 */
unsigned long fs_fusectl_id(unsigned conn);

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
