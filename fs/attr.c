/* SPDX-License-Identifier: MIT */
/*
 * What a node looks like to stat(2) and to the kernel's caches: its mode,
 * owner (delegation), size (exact for page-cached files), and the entry a
 * lookup answers with.  Shared by every file of the operation table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "core/state/cdi.h"
#include "core/state/delegation.h"
#include "fs/accelfs.h"
#include "fs/cache.h"
#include "fs/notify.h"
#include "fs/openfile.h"
#include "fs/attr.h"
#include "fs/request.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/layout_files.h"

mode_t fs_kind_mode(const struct fs_node *n)
{
	switch (n->kind) {
	case FS_PROFILE:
	case FS_NODE_PROFILE:
	case FS_PLACEMENTS:
	case FS_PLACEMENT:
		/* mkdir here carves (root's unless delegated); sticky: only a job's owner removes it */
		return S_IFDIR | S_ISVTX | 0755;
	case FS_JOB:
	case FS_NODE_JOB:
	case FS_PLACEMENT_JOB:
		return S_IFDIR | 0755;
	case FS_JOB_DEV_NODE:
		return S_IFCHR | ACCEL_JOB_NODE_MODE; /* what the CDI specs give containers */
	case FS_JOB_LINK:
		return S_IFLNK | 0777;
	default:
		if (n->entry && n->entry->mode)
			return (fs_kind_is_dir(n->kind) ? S_IFDIR : S_IFREG) | n->entry->mode;
		return fs_kind_is_dir(n->kind) ? (S_IFDIR | 0555) : (S_IFREG | 0444);
	}
}

/*
 * A delegatable directory's owner and mode: its own setting, else the
 * nearest ancestor's (so chown of ppu3/ delegates every profile of ppu3,
 * chown of /accel the whole node).  Profile directories stay sticky.
 */
/* dies/<n>/vram: the one row whose handles are its own (fs/tree_files.c), in a die's directory. */
static bool is_vram(const struct fs_node *n)
{
	return n->entry && n->entry->open && !strcmp(n->entry->name, "vram");
}

static void delegated_attr(struct accelfs *fs, const char *path, const struct fs_node *n, struct stat *st)
{
	bool die = n->kind == FS_DIES || n->kind == FS_DIE || is_vram(n);
	char p[PATH_BUF];
	struct accel_perm perm;

	snprintf(p, sizeof(p), "%s", path);
	if (is_vram(n)) /* dies/<n>/vram is its directory's */
		*strrchr(p, '/') = '\0';
	for (;;) {
		/* The node's delegation (of /accel) is about carving: dies/ is delegated on its own. */
		if (die && !p[0])
			return;
		if (accel_delegation_get(fs->deleg, p, &perm)) {
			st->st_uid = perm.uid;
			st->st_gid = perm.gid;
			st->st_mode = (st->st_mode & S_IFMT) | (perm.mode & 07777);
			if (n->kind == FS_PROFILE || n->kind == FS_NODE_PROFILE || n->kind == FS_PLACEMENTS ||
			    n->kind == FS_PLACEMENT)
				st->st_mode |= S_ISVTX;
			/* vram: the directory's read and write bits, never execute, set-id or sticky ones */
			if (is_vram(n))
				st->st_mode = S_IFREG | (perm.mode & 0666);
			return;
		}
		if (!p[0])
			return;
		char *slash = strrchr(p, '/');
		if (slash)
			*slash = '\0';
		else
			p[0] = '\0';
	}
}

/*
 * Where a job's device link points: from mig/<profile>/<job>/ up to the root,
 * then down to the device's job; from <dev>/mig/<profile>/placements/<start>/<job>/
 * up to the profile directory, where the job is.
 */
int fs_link_target(const struct fs_node *n, char *buf, size_t len)
{
	if (n->via_placement)
		return snprintf(buf, len, "../../../%s", n->job->name);
	return snprintf(buf, len, "../../../%s/mig/%s/%s", n->dev->name, n->job->profile, n->job->name);
}

/*
 * The exact length of a generated file now: a page-cached file is read up
 * to it, and copies (cp, tar, shutil.copyfile) trust it for every file.
 * An open read-through file's is its handle's text (fs_open_file_size).  A
 * live row is not asked at stat (fs/tree.h): 0, as /proc's files, and its
 * handle's size once open.
 */
static off_t text_size(struct accelfs *fs, const struct accel_snapshot *snap, const struct fs_node *n)
{
	char *buf = NULL;
	size_t len = 0;

	if (!snap || fs_node_is_live(n) || fs_render(fs->node, snap, n, &buf, &len))
		return 0;
	free(buf);
	return (off_t)len;
}

void fs_fill_attr(struct accelfs *fs, const struct accel_snapshot *snap, const char *path, const struct fs_node *n,
                  uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = fs_kind_mode(n);
	st->st_nlink = fs_kind_is_dir(n->kind) ? 2 : 1;
	if (n->entry && n->entry->size)
		st->st_size = (off_t)n->entry->size(n); /* a file of its own handles: vram */
	else if (S_ISREG(st->st_mode))
		st->st_size = text_size(fs, snap, n);
	st->st_blksize = 4096;
	if (n->job) {
		/* A job and everything in it belong to whoever made it. */
		st->st_uid = n->job->uid;
		st->st_gid = n->job->gid;
		st->st_mtime = st->st_ctime = st->st_atime = (time_t)n->job->created;
	}
	if (n->kind == FS_JOB_DEV_NODE)
		st->st_rdev = makedev(n->devnode->major, n->devnode->minor);
	if (n->kind == FS_JOB_LINK)
		st->st_size = (off_t)fs_link_target(n, NULL, 0);
	/* No file is sparse: a copier that takes one for sparse asks SEEK_HOLE (fs_op_lseek). */
	st->st_blocks = (st->st_size + 511) / 512;
	if (!n->job)
		st->st_mtime = st->st_ctime = st->st_atime = fs->started;
	if (fs_kind_takes_delegation(n->kind) || is_vram(n))
		delegated_attr(fs, path, n, st);
	/* A card's layout, cordon and mode: the card's delegate writes them too (fs/layout_files.c). */
	if (n->dev && (fs_layout_writes(n) || fs_layout_deferred(n))) {
		uid_t uid;
		gid_t gid;
		if (fs_layout_owner(fs, n->dev->name, &uid, &gid)) {
			st->st_uid = uid;
			st->st_gid = gid;
		}
	}
}

/* Resolve an inode in the current snapshot; the caller unrefs *snap. */
int fs_resolve_ino(struct accelfs *fs, fuse_ino_t ino, struct accel_snapshot **snap, struct fs_node *n, char *path,
                   size_t len)
{
	return fs_inode_resolve(fs, ino, snap, n, path, len);
}

/* Does path still name what ident says, now?  (A lookup resolved in an older snapshot may not.) */
static bool still_names(struct accelfs *fs, const struct accel_snapshot *snap, const char *path, const char *ident)
{
	struct accel_snapshot *cur = accel_node_snapshot(fs->node);
	char now[FS_IDENT_MAX];
	struct fs_node n;
	bool same = cur == snap;

	if (!same && cur && !fs_tree_resolve(cur, &fs->mount, path, &n)) {
		fs_node_identity(&n, now, sizeof(now));
		same = !strcmp(now, ident);
	}
	accel_snapshot_unref(cur);
	return same;
}

void fs_reply_entry(fuse_req_t req, struct accelfs *fs, const struct accel_snapshot *snap, fuse_ino_t parent,
                    const char *name, const char *path, const struct fs_node *n)
{
	struct fuse_entry_param e;
	char ident[FS_IDENT_MAX];

	memset(&e, 0, sizeof(e));
	fs_node_identity(n, ident, sizeof(ident));
	e.ino = fs_inodes_lookup(fs->inodes, parent, name, ident);
	if (!e.ino) {
		char at[PATH_BUF];
		/* Out of memory, or the parent went away meanwhile. */
		fuse_reply_err(req, fs_inodes_path(fs->inodes, parent, at, sizeof(at)) ? ENOMEM : ENOENT);
		return;
	}
	e.attr_timeout = fs_node_attr_timeout(n);
	e.entry_timeout = fs_node_timeout(n);
	fs_fill_attr(fs, snap, path, n, e.ino, &e.attr);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		fs_inodes_forget(fs->inodes, e.ino, 1); /* the request was interrupted */
		return;
	}
	/*
	 * Once the inode is in the table, a flush sees it; before, it could not.
	 * A change published in between (the job removed, or made again) left
	 * it standing for what is gone: drop it now, after the reply (the
	 * kernel holds the parent's lock until the entry is in place).
	 */
	if (!still_names(fs, snap, path, ident))
		fs_notify_gone(fs, parent, e.ino, name);
}
