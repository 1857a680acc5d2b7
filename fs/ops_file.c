/* SPDX-License-Identifier: MIT */
/* Open files: generated text (page-cached or read through), vram, poll. */
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
#include "core/driver/proc_files.h"
#include "fs/deferred.h"
#include "fs/notify.h"
#include "fs/openfile.h"
#include "fs/attr.h"
#include "fs/ops_file.h"
#include "fs/request.h"
#include "fs/reader.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/waiters.h"
#include "fs/lock_order.h"

/* ---- files ------------------------------------------------------------ */

static const struct fs_file_ops generated_ops;

static void free_open_file(struct open_file *of)
{
	accel_snapshot_unref(of->opened_in);
	free(of->buf);
	fs_deferred_free(of->pending);
	free(of);
}

/* Forget an open file: its waiter, its place in the list, then the file. */
static void release_open_file(struct accelfs *fs, struct open_file *of)
{
	fs_poll_forget(fs, of);
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	if (of->prev)
		of->prev->next = of->next;
	else
		fs->files = of->next;
	if (of->next)
		of->next->prev = of->prev;
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
	/*
	 * No request of this file is in flight: the kernel sends RELEASE once
	 * the last one has been answered, and none touches of after its reply.
	 */
	pthread_mutex_destroy(&of->lock);
	free_open_file(of);
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct accel_snapshot *snap;
	struct fs_node n;
	struct open_file *of;
	char path[PATH_BUF];
	int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));
	/* The tree is used: the poller keeps its cadence (core/engine/node.h). */
	accel_node_touch(fs->node);

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fs_kind_is_dir(n.kind)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (n.entry && n.entry->open) {
		n.entry->open(req, ino, &n, fi); /* its own handles (vram): answered now, or once the slot is ours */
		accel_snapshot_unref(snap);
		return;
	}
	/* O_TRUNC too: libfuse's atomic_o_trunc hands it to open rather than to setattr. */
	if (((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) &&
	    fs_refuse_read_only(req, "open for writing", path)) {
		accel_snapshot_unref(snap);
		return;
	}
	/* Read-only files refuse writers, root included (mode bits alone would not stop root). */
	if ((fi->flags & O_ACCMODE) != O_RDONLY && !fs_node_is_writable(&n)) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, EACCES);
		return;
	}
	of = calloc(1, sizeof(*of));
	if (!of) {
		accel_snapshot_unref(snap);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	of->h.ops = &generated_ops;
	of->ino = ino;
	of->opener = fuse_req_ctx(req)->pid;
	of->cached = fs_node_cached(&n);
	of->live = fs_node_is_live(&n);
	if (of->live) /* only a live row names processes: other opens spare the reads of /proc */
		fs_reader_of(req, &of->reader);
	of->gen = snap->generation;
	if (of->cached && (fi->flags & O_ACCMODE) == O_RDONLY) {
		/*
		 * Its reader is served from the page cache: the text is rendered
		 * only if a poll() or a read that reaches us wants it, in this
		 * snapshot (fs_open_file_settle).  An open costs no render.
		 */
		of->opened_in = accel_snapshot_ref(snap);
	} else {
		/*
		 * The text is generated now, with no lock held: what the first
		 * read serves, what the handle's size says, and what poll()
		 * compares against (a snapshot row's).  A file that fails to
		 * render (a lost job's devices) opens, and its reads fail.
		 */
		fs_render_at_read(true);
		of->err = fs_render_for(fs->node, snap, &n, of->live ? &of->reader : NULL, &of->buf, &of->len);
		fs_render_at_read(false);
	}
	pthread_mutex_init(&of->lock, NULL);
	/*
	 * close(2) of a generated file has nothing to do: spare the kernel a
	 * FLUSH request.  But a writer of a file written whole (layout, quota):
	 * shells write it a line at a time, and close applies the whole (its
	 * errno is close's; fs/deferred.h).
	 */
	bool deferred = (fi->flags & O_ACCMODE) != O_RDONLY && n.entry && (n.entry->flags & FS_ENTRY_DEFERRED);
	fi->noflush = !deferred;
	if (deferred && (fi->flags & O_TRUNC)) {
		/* `: > file` says "empty": the text starts empty now, and the writer's close applies it. */
		struct fs_write w = { .fs = fs,
			              .req = req,
			              .uid = fuse_req_ctx(req)->uid,
			              .gid = fuse_req_ctx(req)->gid,
			              .buf = "",
			              .pending = &of->pending,
			              .handle_lock = &of->lock };
		ret = n.entry->write ? n.entry->write(&w, &n) : -EACCES;
		if (ret < 0) {
			accel_snapshot_unref(snap);
			pthread_mutex_destroy(&of->lock);
			free_open_file(of);
			fs_notify_check(fs); /* the refusal's last_error */
			fuse_reply_err(req, -ret);
			return;
		}
	}
	accel_snapshot_unref(snap);
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	of->next = fs->files;
	if (of->next)
		of->next->prev = of;
	fs->files = of;
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
	fi->fh = (uint64_t)(uintptr_t)of;
	/*
	 * A writer of a page-cached file (mig/mode) goes around the page cache:
	 * a buffered write holds the page locked until we answer, and what the
	 * write changes invalidates that very page before we do.
	 */
	if (of->cached && (fi->flags & O_ACCMODE) == O_RDONLY)
		fi->keep_cache = 1; /* served from the page cache until fs/notify.c says it changed */
	else
		fi->direct_io = 1; /* its text moves without a snapshot: every read reaches us */
	/* The opener is gone (the request was interrupted): no RELEASE will come for it. */
	if (fuse_reply_open(req, fi))
		release_open_file(fs, of);
}

/*
 * Generate of's text again (0), or the -errno of the file now (-ENOENT: it
 * went away).  The render runs with no lock held (it may be a live row's,
 * which asks the driver): only the swap takes of->lock.
 */
static int regenerate(struct accelfs *fs, struct open_file *of)
{
	struct accel_snapshot *opened_in;
	char *buf = NULL, *old;
	size_t len = 0;
	uint64_t gen = 0;
	int ret;

	accel_node_touch(fs->node); /* a reader starting again uses the tree (core/engine/node.h) */
	fs_render_at_read(true);
	ret = fs_open_file_render(fs, of, NULL, &buf, &len, &gen);
	fs_render_at_read(false);
	fs_lock(&of->lock, FS_LOCK_FILE);
	old = of->buf;
	of->buf = ret ? NULL : buf;
	of->len = ret ? 0 : len;
	of->err = ret;
	of->gen = gen;
	of->seen_valid = false; /* a new text: the first check to compare it stamps it (fs/waiters.c) */
	of->served = false;
	opened_in = of->opened_in; /* what the open left for later is older than this */
	of->opened_in = NULL;
	fs_unlock(&of->lock, FS_LOCK_FILE);
	accel_snapshot_unref(opened_in);
	free(old);
	if (ret)
		free(buf);
	return ret;
}

/* The text the open took is served only while its file is there (0; else -ENOENT).  No lock: ino is fixed. */
static int still_there(struct accelfs *fs, const struct open_file *of)
{
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret = fs_inode_resolve(fs, of->ino, &snap, &n, path, sizeof(path));

	accel_snapshot_unref(snap);
	return ret == -ESTALE ? -ENOENT : ret;
}

static void generated_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	char *out = NULL;
	size_t count = 0;
	bool again, check;
	int ret = 0;

	/*
	 * At offset 0 a reader starts again: it gets the file as it is now,
	 * but for the first read after open, which gets the text the open took
	 * (what lseek and the handle's size said).  A page-cached file reaches
	 * us only for pages the kernel does not have: always the file now.
	 * Decided under the lock, generated outside it (fs/lock_order.h).
	 */
	fs_lock(&of->lock, FS_LOCK_FILE);
	again = (off == 0 && (of->served || of->cached)) || of->err;
	check = !again && !of->served;
	fs_unlock(&of->lock, FS_LOCK_FILE);
	if (again) {
		ret = regenerate(fs, of);
	} else if (check) {
		fs_open_file_settle(fs, of); /* the text the open took, if it left it for later */
		ret = still_there(fs, of);
	}
	fs_lock(&of->lock, FS_LOCK_FILE);
	if (!ret && of->err) /* another read of the handle generated it meanwhile, and failed */
		ret = of->err;
	if (!ret) {
		of->served = true;
		/*
		 * Replied from a copy, after the lock: once the kernel has the data
		 * the reader may close, and its RELEASE free of on another thread
		 * while this one is still returning from the reply.
		 */
		if ((size_t)off < of->len)
			count = of->len - (size_t)off < size ? of->len - (size_t)off : size;
		out = count ? malloc(count) : NULL;
		if (out)
			memcpy(out, of->buf + off, count);
		else if (count)
			ret = -ENOMEM;
	}
	fs_unlock(&of->lock, FS_LOCK_FILE);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, out, count);
	free(out);
}

static void generated_write(fuse_req_t req, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	struct fs_write w = { .fs = fs,
		              .req = req,
		              .uid = fuse_req_ctx(req)->uid,
		              .gid = fuse_req_ctx(req)->gid,
		              .buf = buf,
		              .size = size,
		              .off = off,
		              .pending = &of->pending,
		              .handle_lock = &of->lock };
	char path[PATH_BUF];
	struct accel_snapshot *snap;
	struct fs_node n;
	int ret;

	if (fs_inodes_get(fs->inodes, of->ino, path, sizeof(path), NULL, 0))
		snprintf(path, sizeof(path), "(a file that went away)");
	if (fs_refuse_read_only(req, "write", path)) /* it cannot have opened for writing: never */
		return;
	/* The row's write takes it (n lives in snap); a file without one opened read-only. */
	ret = fs_resolve_ino(fs, of->ino, &snap, &n, path, sizeof(path));
	if (!ret)
		ret = n.entry && n.entry->write ? n.entry->write(&w, &n) : -EACCES;
	accel_snapshot_unref(snap);
	if (w.answered) /* there, perhaps once the die is back (dies/<n>/driver) */
		return;
	/*
	 * What a write changes (a die's enabled or policy, the lease, a
	 * profile's last_error) moves without a snapshot: its waiters are woken
	 * now, so a value written and written back at once is not missed.
	 */
	fs_notify_check(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

/*
 * close(2) of a generated file has nothing to do (it opens with noflush), but
 * a writer's of a file written whole (fs/deferred.h): the close of the process
 * that opened it applies the text, and answers with the apply's errno.  A
 * copy of the descriptor in another process (a child forked mid-write, now
 * exiting) applies nothing: its text may not be whole.
 */
static void generated_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	struct fs_deferred *p = NULL;

	(void)ino;
	fs_lock(&of->lock, FS_LOCK_FILE);
	if (of->pending && of->pending->written && accel_proc_same_process(of->opener, fuse_req_ctx(req)->pid)) {
		p = of->pending;
		of->pending = NULL;
	}
	fs_unlock(&of->lock, FS_LOCK_FILE);
	int ret = fs_deferred_commit(fs, p); /* frees p */
	fs_notify_check(fs);
	fuse_reply_err(req, -ret);
}

/* The last descriptor is gone: a text the opener's close did not take (written after it) is applied now. */
static void generated_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	struct fs_deferred *p = of->pending;

	(void)ino;
	of->pending = NULL;
	release_open_file(fs, of);
	if (p) {
		fs_deferred_commit(fs, p); /* its errno has no caller left: last_error says it */
		fs_notify_check(fs);
	}
	fuse_reply_err(req, 0);
}

void fs_open_files_free(struct accelfs *fs)
{
	fs_lock(&fs->files_lock, FS_LOCK_FILES);
	while (fs->files) {
		struct open_file *of = fs->files;

		fs->files = of->next;
		fs_poll_forget(fs, of);
		/*
		 * No reader is left, but one may have been cancelled holding the
		 * lock (libfuse cancels its workers when the session ends, and a
		 * render reads files: cancellation points): never wait for it.
		 */
		if (pthread_mutex_trylock(&of->lock) == 0) {
			fs_unlock(&of->lock, FS_LOCK_FILE);
			pthread_mutex_destroy(&of->lock);
		}
		free_open_file(of);
	}
	fs_unlock(&fs->files_lock, FS_LOCK_FILES);
}

static void generated_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct accelfs *fs = fs_of(req);
	struct accel_snapshot *flushed = fs_notify_flushed(fs);

	if (fs_poll_file(req, fs, (struct open_file *)(uintptr_t)fi->fh, ph, flushed))
		fs_notify_waiting(fs);
	accel_snapshot_unref(flushed);
}

static const struct fs_file_ops generated_ops = {
	.read = generated_read,
	.write = generated_write,
	.flush = generated_flush,
	.release = generated_release,
	.poll = generated_poll,
};

/* ---- sizes: what copies trust ----------------------------------------------- */

/*
 * The size of a read-through file's handle: its text's, which its reads
 * give.  (A page-cached file's size is the file's now, fs/attr.c: the
 * kernel reads its pages up to it.)  False: not such a handle.
 */
bool fs_open_file_size(struct fuse_file_info *fi, off_t *size)
{
	struct open_file *of;

	if (!fi || !fi->fh || fs_handle_ops(fi) != &generated_ops)
		return false;
	of = (struct open_file *)(uintptr_t)fi->fh;
	if (of->cached)
		return false;
	fs_lock(&of->lock, FS_LOCK_FILE);
	*size = (off_t)of->len;
	fs_unlock(&of->lock, FS_LOCK_FILE);
	return true;
}

/*
 * SEEK_DATA and SEEK_HOLE (the kernel answers SEEK_SET, SEEK_CUR and
 * SEEK_END itself): a generated file is data up to its text's end, vram up
 * to the die's VRAM size; past the end, ENXIO.  cp, tar and the like ask
 * before they copy: a file they took for sparse was cut where the hole
 * began.
 */
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct accelfs *fs = fs_of(req);
	off_t size = 0;

	if (fs_handle_ops(fi) == &generated_ops) {
		struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
		int ret = 0;

		/*
		 * A page-cached file is read as it is now (a snapshot row: never a
		 * live one); a read-through one as its handle's text.  Generated
		 * with no lock held; a live row's failed text is not asked again
		 * here (only a read does).
		 */
		if (of->cached) {
			char *now = NULL;
			size_t len = 0;
			ret = fs_open_file_render(fs, of, NULL, &now, &len, NULL);
			free(now);
			size = (off_t)len;
		} else {
			fs_lock(&of->lock, FS_LOCK_FILE);
			bool again = of->err && !of->live;
			ret = of->err;
			size = (off_t)of->len;
			fs_unlock(&of->lock, FS_LOCK_FILE);
			if (again) {
				ret = regenerate(fs, of);
				fs_lock(&of->lock, FS_LOCK_FILE);
				size = (off_t)of->len;
				fs_unlock(&of->lock, FS_LOCK_FILE);
			}
		}
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	} else {
		char path[PATH_BUF];
		struct accel_snapshot *snap;
		struct fs_node n;
		int ret = fs_resolve_ino(fs, ino, &snap, &n, path, sizeof(path));

		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		if (n.entry && n.entry->size)
			size = (off_t)n.entry->size(&n); /* vram */
		accel_snapshot_unref(snap);
	}
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		fuse_reply_err(req, EINVAL);
	else if (off < 0)
		fuse_reply_err(req, EINVAL);
	else if (off >= size)
		fuse_reply_err(req, ENXIO);
	else
		fuse_reply_lseek(req, whence == SEEK_DATA ? off : size);
}

/* ---- the operations on an open file: its kind's ---------------------------- */

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	fs_handle_ops(fi)->read(req, size, off, fi);
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	fs_handle_ops(fi)->write(req, buf, size, off, fi);
}

void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_handle_ops(fi)->flush(req, ino, fi);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_handle_ops(fi)->release(req, ino, fi);
}

void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	(void)ino;
	fs_handle_ops(fi)->poll(req, fi, ph);
}
