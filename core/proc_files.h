/* SPDX-License-Identifier: MIT */
/*
 * Does a process still have a file open?  Read from /proc/<pid>/fd, with
 * statx(AT_STATX_DONT_SYNC): the daemon asks this about its own files while
 * serving a request, and must not make the kernel call back into it.
 */
#ifndef ACCEL_FD_PROBE_H
#define ACCEL_FD_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Some descriptor of pid (any thread id works) refers to the file (dev, ino). */
bool accel_proc_has_file(pid_t pid, dev_t dev, uint64_t ino);
/* Are two thread ids threads of one process?  (One stat, not a read of /proc/<tid>/status.) */
bool accel_proc_same_process(pid_t a, pid_t b);
/* The process (thread group) of a thread id, for display; tid itself if /proc cannot say. */
pid_t accel_proc_tgid(pid_t tid);
/* The device number of the filesystem at path, without asking a FUSE daemon. */
int accel_path_dev(const char *path, dev_t *dev);

#endif
