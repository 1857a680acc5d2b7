/* SPDX-License-Identifier: MIT */
/*
 * What an inode and an open file stand for, now: the thing they were looked
 * up as (fs/inode.h), resolved in the current snapshot, or nothing.  Shared
 * by the operation table (fs/attr.c, fs/ops_file.c) and the waiters
 * (fs/waiters.c).
 */
#include "fs/openfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/accelfs.h"
#include "fs/lock_order.h"
#include "fs/render.h"
#include "fs/tree.h"

int fs_inode_resolve_in(struct accelfs *fs, uint64_t ino, const struct accel_snapshot *snap, struct fs_node *n,
                        char *path, size_t len)
{
	char was[FS_IDENT_MAX], is[FS_IDENT_MAX];
	uint64_t gen = snap ? snap->generation : 0;
	int ret = fs_inodes_recall(fs->inodes, ino, gen, path, len, was, sizeof(was), n, sizeof(*n));

	if (ret == 1)
		return 0; /* resolved in this very snapshot before: its pointers are this snapshot's */
	if (ret)
		return ret == -ENAMETOOLONG ? -ENOENT : ret;
	if (!snap || fs_tree_resolve(snap, &fs->mount, path, n))
		return -ENOENT;
	/* A job made again under the name is not the one this inode was: that went away. */
	fs_node_identity(n, is, sizeof(is));
	if (strcmp(was, is))
		return -ENOENT;
	/*
	 * Resolved again only in another snapshot: nothing else a resolution
	 * reads moves between publications (the mount's rows are fixed), but
	 * for dies/, which follows the slot.
	 */
	if (!n->live)
		fs_inodes_remember(fs->inodes, ino, gen, n, sizeof(*n));
	return 0;
}

int fs_inode_resolve(struct accelfs *fs, uint64_t ino, struct accel_snapshot **snap, struct fs_node *n, char *path,
                     size_t len)
{
	int ret;

	*snap = accel_node_snapshot(fs->node);
	ret = fs_inode_resolve_in(fs, ino, *snap, n, path, len);
	if (ret) {
		accel_snapshot_unref(*snap);
		*snap = NULL;
	}
	return ret;
}

int fs_open_file_render(struct accelfs *fs, const struct open_file *of, const struct accel_snapshot *in, char **out,
                        size_t *len, uint64_t *gen)
{
	char path[FS_PATH_BUF];
	struct accel_snapshot *snap = in ? NULL : accel_node_snapshot(fs->node);
	const struct accel_snapshot *s = in ? in : snap;
	struct fs_node n;
	int ret = fs_inode_resolve_in(fs, of->ino, s, &n, path, sizeof(path));

	*out = NULL;
	*len = 0;
	if (gen)
		*gen = s ? s->generation : 0;
	if (!ret)
		ret = fs_render_for(fs->node, s, &n, of->live ? &of->reader : NULL, out, len);
	accel_snapshot_unref(snap);
	return ret == -ESTALE ? -ENOENT : ret;
}

void fs_open_file_settle(struct accelfs *fs, struct open_file *of)
{
	struct accel_snapshot *snap;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	fs_lock(&of->lock, FS_LOCK_FILE);
	snap = accel_snapshot_ref(of->opened_in);
	fs_unlock(&of->lock, FS_LOCK_FILE);
	if (!snap)
		return;
	/* A snapshot row's render: pure, so two settling at once render the same text, and the first keeps it. */
	fs_render_at_read(true);
	ret = fs_open_file_render(fs, of, snap, &buf, &len, NULL);
	fs_render_at_read(false);
	fs_lock(&of->lock, FS_LOCK_FILE);
	if (of->opened_in == snap) {
		of->buf = ret ? NULL : buf;
		of->len = ret ? 0 : len;
		of->err = ret;
		of->opened_in = NULL;
		buf = NULL;
		accel_snapshot_unref(snap); /* the handle's: the caller's own is dropped below */
	}
	fs_unlock(&of->lock, FS_LOCK_FILE);
	free(buf);
	accel_snapshot_unref(snap);
}
