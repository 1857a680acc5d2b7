/* SPDX-License-Identifier: MIT */
#include "fs/attached.h"

#include <errno.h>

#include "fs/accelfs.h"

int fs_attached_open(struct accelfs *fs, const char *state_dir, char *err, size_t errlen)
{
	fs->mount.attach = accel_attach_open(state_dir, "/proc", err, errlen);
	if (!fs->mount.attach)
		return -EINVAL;
	if (fs->read_only)
		accel_attach_set_read_only(fs->mount.attach); /* shown as it is, never written */
	return 0;
}

void fs_attached_close(struct accelfs *fs)
{
	accel_attach_close(fs->mount.attach);
	fs->mount.attach = NULL;
}
