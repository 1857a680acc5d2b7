/* SPDX-License-Identifier: MIT */
#include "fs/attached.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/node.h"
#include "fs/accelfs.h"
#include "fs/notify.h"

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

void fs_attached_report(struct accelfs *fs, const char *device, const char *profile, bool via_node, const char *why)
{
	char key[160];

	snprintf(key, sizeof(key), "%s/%s", device[0] ? device : "mig", profile);
	accel_node_set_last_error(fs->node, key, why);
	if (via_node && device[0]) {
		snprintf(key, sizeof(key), "mig/%s", profile);
		accel_node_set_last_error(fs->node, key, why);
	}
}

int fs_attached_rmdir(struct accelfs *fs, const char *device, const char *profile, const char *job, const char *uuid,
                      char *why, size_t whylen)
{
	struct accel_attach *reg = fs->mount.attach;
	int ret;

	if (reg) {
		ret = accel_attach_rmdir_begin(reg, job, uuid, why, whylen);
		if (ret) {
			fs_attached_report(fs, device, profile, false, why);
			/* The user's own command met a job in use: a notice, and a reclaim that failed as busy. */
			log_notice("%s/%s: rmdir %s refused: %s", device, profile, job, why);
			accel_metrics_reclaim(ret, 0);
			return ret;
		}
	}
	ret = accel_node_rmdir_instance(fs->node, device, profile, job, uuid, why, whylen);
	if (reg)
		accel_attach_rmdir_end(reg, job, uuid, ret == 0);
	return ret;
}

/* ---- keeping the kernel's copy of status true ------------------------------ */

struct stale {
	char paths[2][1024];
	uint64_t ino[8];
	size_t n;
};

static void match(void *ctx, const struct fs_inode *in)
{
	struct stale *s = ctx;

	for (size_t i = 0; i < 2; i++)
		if (!strcmp(in->path, s->paths[i]) && s->n < 8)
			s->ino[s->n++] = in->ino;
}

void fs_attached_changed(struct accelfs *fs, const char *job)
{
	const struct accel_device *d;
	const struct accel_job *j;
	struct accel_snapshot *snap;
	struct stale s;
	char top[16] = "";

	if (!fs || !fs->inodes || !fs->se)
		return;
	memset(&s, 0, sizeof(s));
	snap = accel_node_snapshot(fs->node);
	j = accel_snapshot_job(snap, job, &d);
	if (j) {
		snprintf(top, sizeof(top), "%s", d->name);
		snprintf(s.paths[0], sizeof(s.paths[0]), "%s/mig/%s/%s/status", top, j->profile, job);
		snprintf(s.paths[1], sizeof(s.paths[1]), "mig/%s/%s/status", j->profile, job);
	}
	accel_snapshot_unref(snap);
	if (!top[0])
		return;
	/* status is served from the page cache (fs/cache.c): the attachments in it move without a snapshot. */
	fs_inodes_each_under(fs->inodes, top, match, &s);
	fs_inodes_each_under(fs->inodes, "mig", match, &s);
	for (size_t i = 0; i < s.n; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, s.ino[i], 0, 0);
	fs_notify_check(fs);
}
