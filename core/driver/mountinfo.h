/* SPDX-License-Identifier: MIT */
/*
 * What the kernel says is mounted at a path, from /proc/self/mountinfo: the
 * filesystem type and the device number of the topmost mount there.  Read
 * without touching the mount itself, so it answers even for a FUSE mount
 * whose daemon no longer serves requests (a stat() there would hang), and
 * the filesystem's own options (/proc's hidepid: core/driver/proc_view.c).
 */
#ifndef ACCEL_MOUNTINFO_H
#define ACCEL_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>

struct accel_mount_entry {
	char type[64];      /* "fuse.accelfs", "ext4", ...; "" when nothing is mounted at the path */
	unsigned dev_major; /* the mount's st_dev, as "major:minor" in mountinfo */
	unsigned dev_minor;
	char options[256]; /* the filesystem's own options ("rw,hidepid=invisible,gid=27"), cut at 255 bytes */
};

/* The topmost mount at exactly path (absolute, as mountinfo spells it); false when there is none. */
bool accel_mount_at(const char *path, struct accel_mount_entry *out);

/*
 * The number of the FUSE connection serving a mount of that device: the
 * name of its directory in /sys/fs/fuse/connections (the kernel's dev_t).
 */
unsigned accel_mount_fuse_conn(const struct accel_mount_entry *m);

#endif
