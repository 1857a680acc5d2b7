/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level operation table: thin.  Each handler turns an inode
 * into a path, resolves it in the current snapshot (fs/tree.c), and either
 * renders (fs/render.c) or hands a decision to core (mkdir, rmdir).
 * Anything the tree does not support answers EPERM, as a kernel
 * pseudo-filesystem would.
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

#include "core/delegation.h"
#include "core/log.h"
#include "fs/accelfs.h"
#include "fs/cache.h"
#include "fs/dies.h"
#include "fs/notify.h"
#include "fs/openfile.h"
#include "fs/waiters.h"
#include "fs/render.h"
#include "fs/tree.h"

#define PATH_BUF FS_PATH_BUF

static struct accelfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static mode_t kind_mode(const struct fs_node *n)
{
	switch (n->kind) {
	case FS_PROFILE:
	case FS_NODE_PROFILE:
		/* mkdir here carves (root's unless delegated); sticky: only a job's owner removes it */
		return S_IFDIR | S_ISVTX | 0755;
	case FS_JOB:
	case FS_NODE_JOB:
		return S_IFDIR | 0755;
	case FS_JOB_DEV_NODE:
		return S_IFCHR | 0660;
	case FS_JOB_LINK:
		return S_IFLNK | 0777;
	case FS_DIE_VRAM:
		return S_IFREG | 0600;
	case FS_DIE_ENABLED:
		return S_IFREG | 0644;
	default:
		return fs_kind_is_dir(n->kind) ? (S_IFDIR | 0555) : (S_IFREG | 0444);
	}
}

/*
 * A delegatable directory's owner and mode: its own setting, else the
 * nearest ancestor's (so chown of ppu3/ delegates every profile of ppu3,
 * chown of /accel the whole node).  Profile directories stay sticky.
 */
static void delegated_attr(struct accelfs *fs, const char *path, const struct fs_node *n, struct stat *st)
{
	char p[PATH_BUF];
	struct accel_perm perm;

	snprintf(p, sizeof(p), "%s", path);
	for (;;) {
		if (accel_delegation_get(fs->deleg, p, &perm)) {
			st->st_uid = perm.uid;
			st->st_gid = perm.gid;
			st->st_mode = (st->st_mode & S_IFMT) | (perm.mode & 07777);
			if (n->kind == FS_PROFILE || n->kind == FS_NODE_PROFILE)
				st->st_mode |= S_ISVTX;
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

/* Where mig/<profile>/<job>/device points: up to the root, then down to the device's job. */
static int link_target(const struct fs_node *n, char *buf, size_t len)
{
	return snprintf(buf, len, "../../../%s/mig/%s/%s", n->dev->name, n->job->profile, n->job->name);
}

/* The exact length of a cached file: the kernel serves reads from its page cache up to it. */
static off_t cached_size(struct accelfs *fs, const struct accel_snapshot *snap, const struct fs_node *n)
{
	char *buf = NULL;
	size_t len = 0;

	if (!snap || fs_render(fs->node, snap, n, &buf, &len))
		return 0;
	free(buf);
	return (off_t)len;
}

static void fill_attr(struct accelfs *fs, const struct accel_snapshot *snap, const char *path, const struct fs_node *n,
		      uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = kind_mode(n);
	st->st_nlink = fs_kind_is_dir(n->kind) ? 2 : 1;
	/* Other generated files: the size is a hint; reads run until EOF (direct_io). */
	st->st_size = S_ISREG(st->st_mode) ? 4096 : 0;
	if (fs_node_cached(n))
		st->st_size = cached_size(fs, snap, n);
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
		st->st_size = (off_t)link_target(n, NULL, 0);
	if (n->kind == FS_DIE_VRAM)
		st->st_size = (off_t)fs_dies_vram_size(n->die);
	if (!n->job)
		st->st_mtime = st->st_ctime = st->st_atime = fs->started;
	if (fs_kind_is_delegatable(n->kind))
		delegated_attr(fs, path, n, st);
}

/* Resolve an inode in the current snapshot; the caller unrefs *snap. */
static int resolve_ino(struct accelfs *fs, fuse_ino_t ino, struct accel_snapshot **snap, struct fs_node *n,
		       char *path, size_t len)
{
	if (!fs_inodes_path(fs->inodes, ino, path, len))
		return -ESTALE;
	*snap = accel_node_snapshot(fs->node);
	if (fs_tree_resolve(*snap, path, n)) {
		accel_snapshot_unref(*snap);
		*snap = NULL;
		return -ENOENT;
	}
	return 0;
}

static void reply_entry(fuse_req_t req, struct accelfs *fs, const struct accel_snapshot *snap, fuse_ino_t parent,
			const char *name, const char *path, const struct fs_node *n)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = fs_inodes_lookup(fs->inodes, parent, name);
	if (!e.ino) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	e.attr_timeout = fs_kind_timeout(n->kind);
	e.entry_timeout = fs_kind_timeout(n->kind);
	fill_attr(fs, snap, path, n, e.ino, &e.attr);
	if (fuse_reply_entry(req, &e) == -ENOENT)
		fs_inodes_forget(fs->inodes, e.ino, 1); /* the request was interrupted */
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	size_t plen;

	if (!fs_inodes_path(fs->inodes, parent, path, sizeof(path))) {
		fuse_reply_err(req, ESTALE);
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
	if (fs_tree_resolve(snap, path, &n)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, fs, snap, parent, name, path, &n);
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
	int ret = resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	(void)fi;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fill_attr(fs, snap, path, &n, ino, &st);
	accel_snapshot_unref(snap);
	fuse_reply_attr(req, &st, fs_kind_timeout(n.kind));
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
	int ret = resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	(void)fi;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (!fs_kind_is_delegatable(n.kind) || (to_set & ~allowed)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(fs, snap, path, &n, ino, &st);
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
	fill_attr(fs, snap, path, &n, ino, &st);
	accel_snapshot_unref(snap);
	/* Children inherit: let the kernel re-ask for their attributes. */
	fs_notify_attrs_changed(fs);
	fuse_reply_attr(req, &st, fs_kind_timeout(n.kind));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF], target[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (n.kind != FS_JOB_LINK) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EINVAL);
		return;
	}
	link_target(&n, target, sizeof(target));
	accel_snapshot_unref(snap);
	fuse_reply_readlink(req, target);
}

/* ---- directories -------------------------------------------------------- */

struct dir_entry {
	char name[256];
	mode_t mode;
};

struct dir_listing {
	struct dir_entry *e;
	size_t n, cap;
	bool oom;
};

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
	add_entry(ctx, name, kind_mode(child) & S_IFMT);
}

/* The listing is taken once, at opendir, so a reader paging through it sees one snapshot. */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	struct dir_listing *d;
	int ret = resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

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
		free(d->e);
		free(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
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

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_listing *d = (struct dir_listing *)(uintptr_t)fi->fh;

	(void)ino;
	if (d) {
		free(d->e);
		free(d);
	}
	fuse_reply_err(req, 0);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct accelfs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_BUF], why[ACCEL_TEXT_MAX], device[32], profile[ACCEL_NAME_MAX];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = resolve_ino(fs, parent, &snap, &n, path, sizeof(path));

	(void)mode;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (n.kind != FS_PROFILE && n.kind != FS_NODE_PROFILE) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EPERM);
		return;
	}
	bool node_level = n.kind == FS_NODE_PROFILE;
	snprintf(device, sizeof(device), "%s", node_level ? "" : n.dev->name);
	snprintf(profile, sizeof(profile), "%s", node_level ? n.node_profile : n.profile->name);
	accel_snapshot_unref(snap);

	struct accel_job made;

	memset(&made, 0, sizeof(made));
	if (node_level)
		ret = accel_node_mkdir_any(fs->node, profile, name, ctx->uid, ctx->gid, device, sizeof(device), &made,
					   why, sizeof(why));
	else
		ret = accel_node_mkdir(fs->node, device, profile, name, ctx->uid, ctx->gid, &made, why, sizeof(why));
	/* What the carve changed (available, instances) is what the next read shows. */
	fs_notify_flush(fs);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/*
	 * The entry is built from what the carve produced, not from a later
	 * snapshot: once the job is recorded, mkdir has succeeded, whatever a
	 * concurrent rmdir or a failed re-read does next.
	 */
	memset(&n, 0, sizeof(n));
	n.kind = node_level ? FS_NODE_JOB : FS_JOB;
	n.job = &made;
	n.via_node = node_level;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	reply_entry(req, fs, NULL, parent, name, path, &n);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct accelfs *fs = fs_of(req);
	char path[PATH_BUF], why[ACCEL_TEXT_MAX], device[32], profile[ACCEL_NAME_MAX], key[160];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = resolve_ino(fs, parent, &snap, &n, path, sizeof(path));

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	if (fs_tree_resolve(snap, path, &n)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n.kind != FS_JOB && n.kind != FS_NODE_JOB) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, fs_kind_is_dir(n.kind) ? EPERM : ENOTDIR);
		return;
	}
	snprintf(device, sizeof(device), "%s", n.dev->name);
	snprintf(profile, sizeof(profile), "%s", n.profile->name);
	accel_snapshot_unref(snap);
	ret = accel_node_rmdir(fs->node, device, profile, name, why, sizeof(why));
	fs_notify_flush(fs); /* capacity back before rmdir returns: `available` says so at once */
	if (n.via_node) {
		/* The failure belongs to the directory the user worked in too. */
		snprintf(key, sizeof(key), "mig/%s", profile);
		accel_node_set_last_error(fs->node, key, ret ? why : "");
	}
	if (!ret) {
		/*
		 * The job also had an entry in the other view (device or node
		 * level), maybe cached: drop it before answering, so a script
		 * never sees it after rmdir returns.  Its parent is not the
		 * directory this rmdir holds, so the kernel can take its lock.
		 */
		char other[PATH_BUF];
		uint64_t parent_ino;
		if (n.via_node)
			snprintf(other, sizeof(other), "%s/mig/%s/%s", device, profile, name);
		else
			snprintf(other, sizeof(other), "mig/%s/%s", profile, name);
		if (fs_inodes_find(fs->inodes, other, &parent_ino))
			fuse_lowlevel_notify_inval_entry(fs->se, parent_ino, name, strlen(name));
	}
	fuse_reply_err(req, -ret);
}

/* ---- files ------------------------------------------------------------ */

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct accel_snapshot *snap;
	struct fs_node n;
	struct open_file *of;
	char path[PATH_BUF];
	int ret = resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	accel_snapshot_unref(snap);
	if (fs_kind_is_dir(n.kind)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (n.kind == FS_DIE_VRAM) {
		fs_dies_open(req, ino, n.die, fi); /* answered now, or once the slot is ours */
		return;
	}
	/* Read-only files refuse writers, root included (mode bits alone would not stop root). */
	if ((fi->flags & O_ACCMODE) != O_RDONLY && !fs_kind_is_writable(n.kind)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	of = calloc(1, sizeof(*of));
	if (!of) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&of->lock, NULL);
	snprintf(of->path, sizeof(of->path), "%s", path);
	fi->fh = (uint64_t)(uintptr_t)of;
	if (fs_node_cached(&n)) {
		fi->keep_cache = 1; /* served from the page cache until fs/notify.c says it changed */
		of->opened = accel_node_snapshot(fs->node); /* what poll() compares against */
	}
	else
		fi->direct_io = 1; /* the size is not known in advance; every read reaches us */
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	(void)ino;
	if (fs_dies_is_vram(fi)) {
		fs_dies_read(req, size, off, fi);
		return;
	}
	pthread_mutex_lock(&of->lock);
	if (off == 0 || !of->generated) {
		struct accel_snapshot *snap = accel_node_snapshot(fs->node);
		struct fs_node n;
		char *buf = NULL;
		size_t len = 0;
		int ret = fs_tree_resolve(snap, of->path, &n) ? -ENOENT : fs_render(fs->node, snap, &n, &buf, &len);

		accel_snapshot_unref(snap);
		if (ret) {
			fuse_reply_err(req, -ret);
			pthread_mutex_unlock(&of->lock);
			return;
		}
		free(of->buf);
		of->buf = buf;
		of->len = len;
		of->generated = true;
	}
	if ((size_t)off >= of->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, of->buf + off, of->len - (size_t)off < size ? of->len - (size_t)off : size);
	pthread_mutex_unlock(&of->lock);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret;

	(void)ino;
	if (fs_dies_is_vram(fi)) {
		fs_dies_write(req, buf, size, off, fi);
		return;
	}
	/* Besides vram, dies/<n>/enabled is the one writable file: the whole value in one write. */
	snap = accel_node_snapshot(fs->node);
	ret = fs_tree_resolve(snap, of->path, &n) ? -ENOENT : n.kind != FS_DIE_ENABLED ? -EACCES : off ? -EINVAL : 0;
	accel_snapshot_unref(snap);
	if (!ret)
		ret = fs_dies_write_enabled(n.die, buf, size);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fs_dies_is_vram(fi)) {
		fs_dies_flush(req, ino, fi); /* close(2) of a vram handle gives the slot back now */
		return;
	}
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	(void)ino;
	if (fs_dies_is_vram(fi)) {
		fs_dies_release(req, fi);
		return;
	}
	if (of) {
		fs_poll_forget(fs_of(req), of);
		/* Wait out a read still returning from its reply. */
		pthread_mutex_lock(&of->lock);
		pthread_mutex_unlock(&of->lock);
		pthread_mutex_destroy(&of->lock);
		accel_snapshot_unref(of->opened);
		free(of->buf);
		free(of);
	}
	fuse_reply_err(req, 0);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	(void)ino;
	if (fs_dies_is_vram(fi)) {
		/* Memory is always ready; nothing to wait for. */
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
		return;
	}
	fs_poll_file(req, fs_of(req), (struct open_file *)(uintptr_t)fi->fh, ph);
}

/* ---- everything the tree does not do ------------------------------------ */

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EPERM);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EPERM);
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
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.poll = op_poll,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.create = op_create,
};
