/* SPDX-License-Identifier: MIT */
/*
 * What the kernel may cache.  Files drawn from the snapshot alone are served
 * from the page cache, with exact sizes, and entries and attributes of the
 * MIG tree are kept for long: fs/notify.c invalidates exactly what changes.
 * Files whose content moves without the snapshot (holders, last_error, the
 * dies) are read through every time (direct_io), with short timeouts.
 */
#ifndef ACCELFS_CACHE_H
#define ACCELFS_CACHE_H

#include <stdbool.h>

#include "fs/tree.h"

/* How long the kernel keeps what fs/notify.c invalidates when it changes (seconds). */
#define FS_CACHE_TIMEOUT 3600.0
/* And what nothing invalidates. */
#define FS_VOLATILE_TIMEOUT 1.0

/* Is this generated file, by its row, a function of the snapshot alone (page cache, exact size)? */
bool fs_node_cacheable(const struct fs_node *n);
/*
 * Is this very file served from the page cache?  A cacheable one, unless it
 * answers an error now (a lost job's devices and cdi.json fail closed with
 * ENODEV at every read, which only a read-through file can do).
 */
bool fs_node_cached(const struct fs_node *n);
/* The entry timeout for this node. */
double fs_node_timeout(const struct fs_node *n);
/*
 * And its attributes': the entry's, but 0 for a read-through file, whose
 * size is its text's now (fs/attr.c): the kernel asks at every stat.
 */
double fs_node_attr_timeout(const struct fs_node *n);

#endif
