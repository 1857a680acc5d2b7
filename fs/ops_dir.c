/* SPDX-License-Identifier: MIT */
/* Directories: listing from one snapshot, and mkdir/rmdir handed to core. */
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
#include "core/engine/metrics.h"
#include "core/policy/place.h"
#include "core/engine/rmdir_guard.h"
#include "fs/accelfs.h"
#include "fs/cache.h"
#include "fs/dies.h"
#include "fs/lock_order.h"
#include "fs/notify.h"
#include "fs/openfile.h"
#include "fs/attr.h"
#include "fs/ops_dir.h"
#include "fs/request.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/waiters.h"

/* ---- directories -------------------------------------------------------- */

struct dir_entry {
	char name[256];
	mode_t mode;
};

struct dir_listing {
	struct dir_entry *e;
	size_t n, cap;
	bool oom;
	struct dir_listing *next, *prev; /* struct accelfs's dirs, under its files_lock */
};

static void free_listing(struct dir_listing *d)
{
	free(d->e);
	free(d);
}

/* Kept on fs->dirs from the open until its RELEASEDIR, which may never come (fs/accelfs.h). */
static void link_listing(struct accelfs *fs, struct dir_listing *d)
{
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	d->next = fs->dirs;
	if (d->next)
		d->next->prev = d;
	fs->dirs = d;
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
}

static void release_listing(struct accelfs *fs, struct dir_listing *d)
{
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	if (d->prev)
		d->prev->next = d->next;
	else
		fs->dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
	free_listing(d);
}

void fs_open_dirs_free(struct accelfs *fs)
{
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	while (fs->dirs) {
		struct dir_listing *d = fs->dirs;

		fs->dirs = d->next;
		free_listing(d);
	}
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
}

static void add_entry(struct dir_listing *d, const char *name, mode_t mode)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct dir_entry *grown = realloc(d->e, cap * sizeof(*grown));
		if (!grown) {
			d->oom = true;
			return;
		}
		d->e = grown;
		d->cap = cap;
	}
	snprintf(d->e[d->n].name, sizeof(d->e[d->n].name), "%s", name);
	d->e[d->n++].mode = mode;
}

static void emit_entry(void *ctx, const char *name, enum fs_kind kind, const struct fs_node *child)
{
	(void)kind;
	add_entry(ctx, name, fs_kind_mode(child) & S_IFMT);
}

/* The listing is taken once, at opendir, so a reader paging through it sees one snapshot. */
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	struct dir_listing *d;
	int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));
	/* The tree is used: the poller keeps its cadence (core/engine/node.h). */
	accel_node_touch(fs->node);

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (!fs_kind_is_dir(n.kind)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	add_entry(d, ".", S_IFDIR);
	add_entry(d, "..", S_IFDIR);
	fs_tree_list(snap, &n, emit_entry, d);
	accel_snapshot_unref(snap);
	if (d->oom) {
		free_listing(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	link_listing(fs, d);
	fi->fh = (uint64_t)(uintptr_t)d;
	/* The opener is gone (the request was interrupted): no RELEASEDIR will come for it. */
	if (fuse_reply_open(req, fi))
		release_listing(fs, d);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dir_listing *d = (struct dir_listing *)(uintptr_t)fi->fh;
	char *buf = malloc(size ? size : 1);
	size_t used = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* An entry's offset is the index of the one after it. */
	for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n; i++) {
		/* Not the inode number (that comes from lookup): any non-zero value, or readdir() skips it. */
		struct stat st = { .st_ino = 0xffffffff, .st_mode = d->e[i].mode };
		size_t need = fuse_add_direntry(req, buf + used, size - used, d->e[i].name, &st, (off_t)i + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_listing *d = (struct dir_listing *)(uintptr_t)fi->fh;

	(void)ino;
	if (d)
		release_listing(fs_of(req), d);
	fuse_reply_err(req, 0);
}

/*
 * mkdir placements/<name>: every legal start is a directory already, so a
 * name spelled as a start (decimal digits) is not a legal one: EINVAL, and
 * last_error lists the legal ones.  Any other name: EPERM, as anywhere else.
 */
static int mkdir_in_placements(struct accelfs *fs, const struct fs_node *n, const char *name)
{
	char why[ACCEL_TEXT_MAX];

	if (!name[0] || strspn(name, "0123456789") != strlen(name))
		return -EPERM;
	for (size_t i = 0; i < n->profile->n_placements; i++) {
		char spelled[16];
		snprintf(spelled, sizeof(spelled), "%u", n->profile->placements[i].start);
		if (!strcmp(spelled, name))
			return -EEXIST;
	}
	accel_placement_not_legal(n->dev->name, n->profile, name, why, sizeof(why));
	log_notice("%s/%s: mkdir placements/%.32s: %s", n->dev->name, n->profile->name, name, why);
	accel_node_report(fs->node, n->dev->name, n->profile->name, false, why);
	accel_metrics_carve(-EINVAL, 0);
	return -EINVAL;
}

/*
 * Who pays for a job (docs/tree.md, "Who pays"): its creator's effective
 * group, unless the creator was let in by the directory's group as a
 * supplementary member (the kernel checked the group bits, not the owner's
 * nor the others'): then that group, which delegated the card, pays and
 * owns the job.  So `chgrp ml /accel/ppu3` and `group:ml slices=8` agree.
 */
static gid_t charged_gid(fuse_req_t req, const struct stat *dir)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[256];
	int n;

	if (!ctx->uid || ctx->uid == dir->st_uid || ctx->gid == dir->st_gid || !(dir->st_mode & S_IWGRP))
		return ctx->gid;
	n = fuse_req_getgroups(req, (int)(sizeof(groups) / sizeof(groups[0])), groups);
	for (int i = 0; i < n && i < (int)(sizeof(groups) / sizeof(groups[0])); i++)
		if (groups[i] == dir->st_gid)
			return dir->st_gid;
	return ctx->gid;
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct accelfs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_BUF], why[ACCEL_TEXT_MAX], device[32], profile[ACCEL_NAME_MAX];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = fs_resolve_ino(fs, parent, &snap, &n, path, sizeof(path));

	(void)mode;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (n.kind == FS_PLACEMENTS) {
		if (fs_refuse_read_only(req, "mkdir", path)) {
			accel_snapshot_unref(snap); /* a read-only mount refuses every directory operation first */
			return;
		}
		ret = mkdir_in_placements(fs, &n, name);
		accel_snapshot_unref(snap);
		fuse_reply_err(req, -ret);
		return;
	}
	if (n.kind != FS_PROFILE && n.kind != FS_NODE_PROFILE && n.kind != FS_PLACEMENT) {
		accel_snapshot_unref(snap);
		if (!fs_refuse_read_only(req, "mkdir", path))
			fuse_reply_err(req, EPERM);
		return;
	}
	struct stat dir;
	fs_fill_attr(fs, snap, path, &n, parent, &dir);
	gid_t gid = charged_gid(req, &dir);
	bool node_level = n.kind == FS_NODE_PROFILE;
	bool at_placement = n.kind == FS_PLACEMENT; /* placements/<start>/: exactly there */
	struct accel_span placement = n.placement;
	snprintf(device, sizeof(device), "%s", node_level ? "" : n.dev->name);
	snprintf(profile, sizeof(profile), "%s", node_level ? n.node_profile : n.profile->name);
	accel_snapshot_unref(snap);
	struct accel_job made;

	memset(&made, 0, sizeof(made));
	if (node_level)
		ret = accel_node_mkdir_any(fs->node, profile, name, ctx->uid, gid, device, sizeof(device), &made, why,
		                           sizeof(why));
	else if (at_placement)
		ret = accel_node_mkdir_at(fs->node, device, profile, name, placement.start, ctx->uid, gid, &made, why,
		                          sizeof(why));
	else
		ret = accel_node_mkdir(fs->node, device, profile, name, ctx->uid, gid, &made, why, sizeof(why));
	/* What the carve changed (available, instances) is what the next read shows. */
	fs_notify_flush(fs);
	/*
	 * last_error moved either way, with no snapshot (a failure) or before
	 * the notifier's check (a success clears it): its waiters are woken
	 * now, so a failure cleared at once by the next success is not missed.
	 */
	fs_notify_check(fs);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	char at[PATH_BUF];
	if (!fs_inodes_path(fs->inodes, parent, at, sizeof(at))) {
		/*
		 * The directory this mkdir was asked in went away while the job was
		 * carved (the mode went off and on: the profile directory was gone
		 * from a snapshot, and its inode with it).  The kernel can take no
		 * entry under it, and answering ENOENT for a job that exists would
		 * leave it with its name and its quota charge: it is removed again,
		 * so that the answer is true.
		 */
		char undo_why[ACCEL_TEXT_MAX], key[ACCEL_LAST_ERROR_KEY_MAX];
		int undo = accel_job_rmdir(fs->node, fs->mount.attach, device, profile, name, made.uuid, undo_why,
		                           sizeof(undo_why));
		if (undo)
			log_error(
				"%s/%s: job %s was carved while its directory went away, and removing it again failed: "
				"%s",
				device, profile, name, undo_why);
		snprintf(why, sizeof(why),
		         "%s/%s changed while job %s was carved (the MIG mode went off and on): %s; mkdir again",
		         device, profile, name,
		         undo ? "removing the job again failed, rmdir it" : "the job was removed again");
		accel_last_error_key(key, sizeof(key), node_level ? NULL : device, profile);
		accel_node_set_last_error(fs->node, key, why);
		fs_notify_flush(fs);
		fs_notify_check(fs);
		fuse_reply_err(req, undo ? EIO : ENOENT);
		return;
	}
	/*
	 * The entry is built from what the carve produced, not from a later
	 * snapshot: once the job is recorded, mkdir has succeeded, whatever a
	 * concurrent rmdir or a failed re-read does next.
	 */
	memset(&n, 0, sizeof(n));
	n.kind = node_level ? FS_NODE_JOB : at_placement ? FS_PLACEMENT_JOB : FS_JOB;
	n.job = &made;
	n.via_node = node_level;
	n.via_placement = at_placement;
	n.placement = placement;
	n.mount = &fs->mount;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	fs_reply_entry(req, fs, NULL, parent, name, path, &n);
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct accelfs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_BUF], why[ACCEL_TEXT_MAX], device[32], profile[ACCEL_NAME_MAX], key[ACCEL_LAST_ERROR_KEY_MAX],
		uuid[ACCEL_UUID_MAX];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = fs_resolve_ino(fs, parent, &snap, &n, path, sizeof(path));

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	if (fs_tree_resolve(snap, &fs->mount, path, &n)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n.kind != FS_JOB && n.kind != FS_NODE_JOB && n.kind != FS_PLACEMENT_JOB) {
		accel_snapshot_unref(snap);
		if (!fs_kind_is_dir(n.kind) || !fs_refuse_read_only(req, "rmdir", path))
			fuse_reply_err(req, fs_kind_is_dir(n.kind) ? EPERM : ENOTDIR);
		return;
	}
	snprintf(device, sizeof(device), "%s", n.dev->name);
	snprintf(profile, sizeof(profile), "%s", n.profile->name);
	snprintf(uuid, sizeof(uuid), "%s", n.job->uuid); /* the job this rmdir found, not a later one of its name */
	accel_snapshot_unref(snap);
	if (fs->read_only) {
		/* Core refuses (EROFS) before the attachments are even looked at: nothing is touched. */
		ret = accel_node_rmdir(fs->node, device, profile, name, why, sizeof(why));
		accel_node_report(fs->node, device, profile, false, why);
	} else {
		/* EBUSY while containers hold it */
		ret = accel_job_rmdir(fs->node, fs->mount.attach, device, profile, name, uuid, why, sizeof(why));
	}
	fs_notify_flush(fs); /* capacity back before rmdir returns: `available` says so at once */
	if (n.via_node) {
		/* The failure belongs to the directory the user worked in too. */
		accel_last_error_key(key, sizeof(key), NULL, profile);
		accel_node_set_last_error(fs->node, key, ret ? why : "");
	}
	if (!ret && (n.via_node || n.via_placement)) {
		/*
		 * Removed through mig/<profile>/ or placements/<start>/: the
		 * device's own entry for the job may be cached (for long): drop it
		 * before answering, so a script never sees it after rmdir returns.
		 * One direction only: this request holds the node-level or the
		 * placement's directory and waits for the device's profile
		 * directory; a device-level rmdir never waits for either (its
		 * entries there are revalidated at every lookup, fs/cache.c), and
		 * neither waits for the other, so no two rmdirs through the views
		 * can wait for each other.  The entry is found by its directory,
		 * which stays: the flush above has already killed the job's own
		 * inode (its path is gone), and the notifier deletes the entry only
		 * later, after this answer.
		 */
		char dir[PATH_BUF];
		uint64_t dir_ino, unused;
		snprintf(dir, sizeof(dir), "%s/mig/%s", device, profile);
		dir_ino = fs_inodes_ino(fs->inodes, dir, &unused);
		if (dir_ino) /* else the kernel has never looked there: it holds no entry to drop */
			fuse_lowlevel_notify_inval_entry(fs->se, dir_ino, name, strlen(name));
	}
	if (!ret) /* core said what was removed; who asked is the request's to say */
		log_info("%s/%s: job %s removed by uid %u (pid %d)", device, profile, name, (unsigned)ctx->uid,
		         (int)ctx->pid);
	fs_notify_check(fs); /* last_error moved, with the snapshot or without it (mkdir's, above) */
	fuse_reply_err(req, -ret);
}
