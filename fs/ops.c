/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level operation table: thin.  Each handler turns an inode
 * into a path, resolves it in the current snapshot (fs/tree.c), and either
 * renders (fs/render.c) or hands a decision to core (mkdir, rmdir).
 * Anything the tree does not support answers EPERM, as a kernel
 * pseudo-filesystem would.  Here: the table, lookup and attributes, and
 * the refusals; directories are fs/ops_dir.c, open files fs/ops_file.c,
 * what a node looks like to stat fs/attr.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/state/delegation.h"
#include "core/model/log.h"
#include "fs/accelfs.h"
#include "fs/cache.h"
#include "fs/dies.h"
#include "fs/notify.h"
#include "fs/openfile.h"
#include "fs/attr.h"
#include "fs/ops_dir.h"
#include "fs/ops_file.h"
#include "fs/request.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/waiters.h"

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	size_t plen;
	int ret = fs_inodes_get(fs->inodes, parent, path, sizeof(path), NULL, 0);
	/* The tree is used: the poller keeps its cadence (core/engine/node.h). */
	accel_node_touch(fs->node);

	if (ret) {
		fuse_reply_err(req, ret == -ENAMETOOLONG ? ENOENT : -ret); /* a parent that went away holds nothing */
		return;
	}
	plen = strlen(path);
	if (strlen(name) > 255) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (plen + strlen(name) + 2 > sizeof(path)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	snprintf(path + plen, sizeof(path) - plen, "%s%s", plen ? "/" : "", name);
	snap = accel_node_snapshot(fs->node);
	if (fs_tree_resolve(snap, &fs->mount, path, &n)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOENT);
		return;
	}
	fs_reply_entry(req, fs, snap, parent, name, path, &n);
	accel_snapshot_unref(snap);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_inodes_forget(fs_of(req)->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_inodes_forget(fs_of(req)->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	struct stat st;
	off_t size;
	bool open_size;
	int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));
	/* The tree is used: the poller keeps its cadence (core/engine/node.h). */
	accel_node_touch(fs->node);

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/*
	 * Asked through an open read-through file (a read, lseek SEEK_END, the
	 * fstat of a reader sizing its buffer): the size its reads give, with
	 * no render of the file's text again (no snapshot: fs_fill_attr sizes
	 * nothing).
	 */
	open_size = fs_open_file_size(fi, &size);
	fs_fill_attr(fs, open_size ? NULL : snap, path, &n, ino, &st);
	accel_snapshot_unref(snap);
	if (open_size) {
		st.st_size = size;
		st.st_blocks = (size + 511) / 512;
	}
	fuse_reply_attr(req, &st, fs_node_attr_timeout(&n));
}

/*
 * Only chown and chmod of a delegatable directory change anything; the
 * kernel has already checked that the caller may (default_permissions).
 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	const int allowed = FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_CTIME;
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	struct accel_perm perm;
	struct stat st;
	int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	(void)fi;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fs_refuse_read_only(req, "setattr", path)) {
		accel_snapshot_unref(snap);
		return;
	}
	if (!fs_kind_is_delegatable(n.kind) || (to_set & ~allowed)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EPERM);
		return;
	}
	fs_fill_attr(fs, snap, path, &n, ino, &st);
	perm.uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : st.st_uid;
	perm.gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : st.st_gid;
	perm.mode = (to_set & FUSE_SET_ATTR_MODE) ? (attr->st_mode & 07777) : (st.st_mode & 07777);
	ret = accel_delegation_set(fs->deleg, path, &perm);
	if (ret) {
		log_error("cannot record the delegation of /%s: %s", path, strerror(-ret));
		accel_snapshot_unref(snap);
		fuse_reply_err(req, -ret);
		return;
	}
	log_info("/%s delegated: owner %u:%u mode %04o", path, (unsigned)perm.uid, (unsigned)perm.gid,
	         (unsigned)perm.mode);
	fs_fill_attr(fs, snap, path, &n, ino, &st);
	accel_snapshot_unref(snap);
	/* Children inherit: let the kernel re-ask for their attributes. */
	fs_notify_attrs_changed(fs);
	fuse_reply_attr(req, &st, fs_node_attr_timeout(&n));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF], target[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (n.kind != FS_JOB_LINK) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EINVAL);
		return;
	}
	fs_link_target(&n, target, sizeof(target));
	accel_snapshot_unref(snap);
	fuse_reply_readlink(req, target);
}

/* ---- everything the tree does not do ------------------------------------ */

/* EPERM, as a kernel pseudo-filesystem says; EROFS on a read-only mount, as the kernel says there. */
static void refuse(fuse_req_t req, const char *what, const char *name)
{
	if (!fs_refuse_read_only(req, what, name))
		fuse_reply_err(req, EPERM);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)mode;
	(void)rdev;
	refuse(req, "mknod", name);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)mode;
	(void)fi;
	refuse(req, "create", name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	refuse(req, "unlink", name);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
	(void)parent;
	(void)newparent;
	(void)newname;
	(void)flags;
	refuse(req, "rename", name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	refuse(req, "symlink", name);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newparent;
	refuse(req, "link", newname);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	(void)ino;
	memset(&st, 0, sizeof(st));
	st.f_bsize = 4096;
	st.f_frsize = 4096;
	st.f_namemax = 255;
	fuse_reply_statfs(req, &st);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Writes must fail synchronously with our errno: no writeback cache. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	fs_dies_tune(conn);
}

const struct fuse_lowlevel_ops accelfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = op_unlink,
	.rmdir = fs_op_rmdir,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.rename = op_rename,
	.link = op_link,
	.open = fs_op_open,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.release = fs_op_release,
	.poll = fs_op_poll,
	.lseek = fs_op_lseek,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.releasedir = fs_op_releasedir,
	.statfs = op_statfs,
	.create = op_create,
};
