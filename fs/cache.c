/* SPDX-License-Identifier: MIT */
#include "fs/cache.h"

bool fs_kind_cached(enum fs_kind kind)
{
	switch (kind) {
	case FS_DEVICE_INFO:
	case FS_MIG_MODE:
	case FS_MIG_INSTANCES:
	case FS_MIG_MAP:
	case FS_PROFILE_INFO:
	case FS_PROFILE_AVAILABLE:
	case FS_JOB_STATUS:
	case FS_JOB_DEVICES:
	case FS_JOB_CDI:
	case FS_NODE_PROFILE_INFO:
	case FS_NODE_PROFILE_AVAILABLE:
		return true;
	default:
		/*
		 * holders and last_error change with no new snapshot; the dies are
		 * live; metrics and node.json carry counters and the dies too.
		 */
		return false;
	}
}

double fs_kind_timeout(enum fs_kind kind)
{
	switch (kind) {
	case FS_DIES:
	case FS_DIES_SLOT:
	case FS_DIE:
	case FS_DIE_INFO:
	case FS_DIE_ENABLED:
	case FS_DIE_VRAM:
	case FS_DIE_DRIVER:
	case FS_DIE_POLICY:
	case FS_DIES_LEASE:
		return FS_VOLATILE_TIMEOUT; /* the slot changes without a snapshot */
	case FS_NODE_JOB:
		/*
		 * A job seen through mig/<profile>/ is removed through the
		 * device's directory too, and that rmdir cannot wait to drop this
		 * entry (fs/ops_dir.c): the kernel asks again at every lookup.
		 */
		return 0;
	default:
		/* Everything else exists and looks as the snapshot says; fs/notify.c drops what changes. */
		return FS_CACHE_TIMEOUT;
	}
}

bool fs_node_cached(const struct fs_node *n)
{
	if ((n->kind == FS_JOB_DEVICES || n->kind == FS_JOB_CDI) && n->job && n->job->state != ACCEL_JOB_READY)
		return false;
	return fs_kind_cached(n->kind);
}
