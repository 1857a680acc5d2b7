/* SPDX-License-Identifier: MIT */
/*
 * Small whole-file writes that a crash cannot leave half done.  Records and
 * delegations are durable (the data and the directory entry reach the disk
 * before the call returns); runtime files such as the CDI spec only need to
 * be replaced atomically, since a reboot empties their directory anyway.
 */
#ifndef ACCEL_FILEIO_H
#define ACCEL_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* tmp, fsync, rename, fsync of the directory.  0 or -errno. */
int accel_durable_write(const char *path, const void *data, size_t len, mode_t mode);
/* tmp, rename: readers see the old or the new content, never a mix.  0 or -errno. */
int accel_atomic_write(const char *path, const void *data, size_t len, mode_t mode);
/* unlink, then fsync of the directory.  0 or -errno (-ENOENT when absent). */
int accel_durable_unlink(const char *path);
/* mkdir -p.  0 or -errno. */
int accel_mkdirs(const char *path, mode_t mode);

#endif
