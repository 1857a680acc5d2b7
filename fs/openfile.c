/* SPDX-License-Identifier: MIT */
/*
 * What an inode and an open file stand for, now: the thing they were looked
 * up as (fs/inode.h), resolved in the current snapshot, or nothing.  Shared
 * by the operation table (fs/attr.c, fs/ops_file.c) and the waiters
 * (fs/waiters.c).
 */
#include "fs/openfile.h"

#include <errno.h>
#include <string.h>

#include "fs/accelfs.h"
#include "fs/render.h"
#include "fs/tree.h"

int fs_inode_resolve_in(struct accelfs *fs, uint64_t ino, const struct accel_snapshot *snap, struct fs_node *n,
                        char *path, size_t len)
{
	char was[FS_IDENT_MAX], is[FS_IDENT_MAX];
	int ret = fs_inodes_get(fs->inodes, ino, path, len, was, sizeof(was));

	if (ret)
		return ret == -ENAMETOOLONG ? -ENOENT : ret;
	if (!snap || fs_tree_resolve(snap, &fs->mount, path, n))
		return -ENOENT;
	/* A job made again under the name is not the one this inode was: that went away. */
	fs_node_identity(n, is, sizeof(is));
	return strcmp(was, is) ? -ENOENT : 0;
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
