/* SPDX-License-Identifier: MIT */
#include "fs/cache.h"

bool fs_node_cacheable(const struct fs_node *n)
{
	/* Rows say (fs/tree_files.c): holders and last_error change with no new snapshot, the dies live. */
	return n->entry && (n->entry->flags & FS_ENTRY_CACHED);
}

double fs_node_timeout(const struct fs_node *n)
{
	if (n->live)
		return FS_VOLATILE_TIMEOUT; /* dies/: the slot changes without a snapshot */
	switch (n->kind) {
	case FS_NODE_JOB:
	case FS_PLACEMENT_JOB:
		/*
		 * A job seen through mig/<profile>/ or placements/<start>/ is
		 * removed through the device's directory too, and that rmdir
		 * cannot wait to drop this entry (fs/ops_dir.c): the kernel asks
		 * again at every lookup.
		 */
		return 0;
	default:
		/* Everything else exists and looks as the snapshot says; fs/notify.c drops what changes. */
		return FS_CACHE_TIMEOUT;
	}
}

bool fs_node_cached(const struct fs_node *n)
{
	if (n->entry && (n->entry->flags & FS_ENTRY_JOB_READY) && n->job && n->job->state != ACCEL_JOB_READY)
		return false;
	return fs_node_cacheable(n);
}

double fs_node_attr_timeout(const struct fs_node *n)
{
	bool generated = n->entry && n->entry->render;

	return generated && !fs_node_cached(n) ? 0 : fs_node_timeout(n);
}
