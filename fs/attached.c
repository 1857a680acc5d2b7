/* SPDX-License-Identifier: MIT */
#include "fs/attached.h"

#include <errno.h>
#include <stdlib.h>

#include "core/state/attach.h"
#include "core/engine/node.h"
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

static bool refusal_of(const char *text, void *job)
{
	return accel_attach_is_refusal(text, job);
}

void fs_attached_gone(struct accelfs *fs, const char *job)
{
	struct accel_snapshot *snap = accel_node_snapshot(fs->node);
	const struct accel_device *d;
	const struct accel_job *j = accel_snapshot_job(snap, job, &d);
	bool attached = false;

	if (j && fs->mount.attach) {
		struct accel_attachment *c;
		size_t n;
		if (accel_attach_list(fs->mount.attach, j->name, j->uuid, &c, &n))
			attached = true; /* cannot tell: keep what was said */
		else
			attached = n > 0, free(c);
	}
	accel_snapshot_unref(snap);
	/* A refusal that named the job's containers has lost its cause with the last of them. */
	if (!attached)
		accel_node_drop_last_errors(fs->node, refusal_of, (void *)job);
}
