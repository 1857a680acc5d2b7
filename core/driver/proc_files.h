/* SPDX-License-Identifier: MIT */
/*
 * The one reader of what /proc says of a process: its stat (state, start
 * time), the files its descriptors are open on, its thread group.  The
 * descriptors are read with statx(AT_STATX_DONT_SYNC): the daemon asks this
 * about its own files while serving a request, and must not make the kernel
 * call back into it.  Used by the attachments (core/state/attach_watch.c), the
 * holders scan (core/driver/holders.c), proc_life.c and the dies (fs/dies*.c).
 */
#ifndef ACCEL_PROC_FILES_H
#define ACCEL_PROC_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * <dir>/stat (dir: "<proc_root>/<pid>", or a thread's "…/task/<tid>"): its
 * state letter (R, S, D, Z, X...) and start time in clock ticks since boot
 * (0 where the line is cut short).  0, or -ENOENT (no such process), -EINVAL.
 */
int accel_proc_stat(const char *dir, char *state, unsigned long long *start);
/*
 * How many descriptors of process pid (a directory name under proc_root)
 * are open on a file match(ctx, what it is open on) accepts; first_only:
 * stop at the first.  -1 when the process is gone or exiting.
 */
int accel_proc_count_files(const char *proc_root, const char *pid, bool (*match)(void *ctx, const struct stat *st),
                           void *ctx, bool first_only);
/* Some descriptor of pid (any thread id works) refers to the file (dev, ino). */
bool accel_proc_has_file(pid_t pid, dev_t dev, uint64_t ino);
/* Are two thread ids threads of one process?  (One stat, not a read of /proc/<tid>/status.) */
bool accel_proc_same_process(pid_t a, pid_t b);
/* /proc/<pid>/comm without its newline into buf (len bytes): "" when there is no such process here. */
void accel_proc_comm(pid_t pid, char *buf, size_t len);
/* The process (thread group) of a thread id, for display; tid itself if /proc cannot say. */
pid_t accel_proc_tgid(pid_t tid);
/* The device number of the filesystem at path, without asking a FUSE daemon. */
int accel_path_dev(const char *path, dev_t *dev);

#endif
