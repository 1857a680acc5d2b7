/* SPDX-License-Identifier: MIT */
/*
 * An open generated file.  Its text is generated when it is opened (a
 * page-cached one's when first wanted, in the snapshot it was opened in:
 * its reads are the kernel's), served by the first read and generated
 * again by every later read at offset 0, and served from that copy for the
 * rest of the read (as lxcfs does): what
 * the handle's size says (lseek SEEK_END, SEEK_DATA, SEEK_HOLE) is what its
 * reads give.  No handler touches a handle after its reply: once the kernel
 * has the answer the caller may close, and RELEASE may free the handle on
 * another thread while this one is still returning from fuse_reply_*().  So
 * a read copies what it answers under the lock and replies from its copy,
 * and whatever a handler needs after replying it takes before.
 */
#ifndef ACCELFS_OPENFILE_H
#define ACCELFS_OPENFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "core/model/model.h"
#include "core/driver/proc_view.h"

#define FS_PATH_BUF 1024

/*
 * What a kind of open file does.  Every handle (fi->fh) begins with its
 * kind's table, so each FUSE operation on an open file dispatches once:
 * generated files (fs/ops_file.c) and dies/<n>/vram (fs/dies.c) so far.
 */
struct fs_file_ops {
	void (*read)(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
	void (*write)(fuse_req_t req, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
	void (*flush)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*release)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*poll)(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
};

struct fs_handle {
	const struct fs_file_ops *ops;
};

static inline const struct fs_file_ops *fs_handle_ops(const struct fuse_file_info *fi)
{
	return ((const struct fs_handle *)(uintptr_t)fi->fh)->ops;
}

struct open_file {
	struct fs_handle h; /* first: its ops are the generated files' */
	pthread_mutex_t lock;
	uint64_t ino; /* the file it was opened on: a file that went away stays gone for it (fs/inode.h) */
	/*
	 * The text last generated for this reader, at open or at its last read
	 * at offset 0: also what poll() compares against (the pages of a
	 * cached file may never reach us, so what it was when opened counts).
	 */
	char *buf;
	size_t len;
	int err;      /* 0: buf holds the text; else the -errno its last rendering failed with */
	uint64_t gen; /* the generation of the snapshot it was rendered in: poll() compares in no older one */
	/*
	 * Where the file was last known to say what buf holds: rendered again
	 * by a check and found the same, in the snapshot of generation
	 * seen_gen with fs_side_stamp() seen_side (fs/waiters.h).  A check
	 * that finds both the same renders nothing: a reader waiting in poll()
	 * on node.json costs a comparison a tick, not a render.  Stamped by the
	 * checks alone, never at open or read: a reader that never waits pays
	 * nothing for it (false: the next check renders, and stamps).
	 */
	uint64_t seen_gen, seen_side;
	bool seen_valid;
	/*
	 * A page-cached file opened for reading: the snapshot it was opened in,
	 * its text not yet rendered (NULL once it is).  Its reader is served
	 * from the page cache, so the text is wanted only by a poll() or a read
	 * that reaches us, if ever: fs_open_file_settle() renders it then, in
	 * this snapshot, as the open would have.  The handle holds a reference
	 * meanwhile (the card views it shares with newer snapshots cost nothing
	 * more; a reader that never reads nor polls keeps an old one alive).
	 */
	struct accel_snapshot *opened_in;
	bool served;   /* a read has been answered from buf: the next read at offset 0 generates again */
	bool cached;   /* served from the page cache (keep_cache): a read at offset 0 always generates */
	bool live;     /* a live row's (fs/tree.h): generated at open and read only, poll() never renders it */
	bool polled;   /* registered with fs/waiters.c */
	unsigned pins; /* under the pollers' lock: checks rendering it now (fs/waiters.c) */
	/* A text being written (layout, quota): applied whole when its writer closes (fs/deferred.h) */
	struct fs_deferred *pending;
	pid_t opener;                  /* the thread that opened it: its process's close is the writer's */
	struct accel_viewer reader;    /* who opened it: what a live row shows of others' processes (fs/text.h) */
	struct open_file *next, *prev; /* struct accelfs's list, under its files_lock */
};

struct accelfs;
struct fs_node;
struct fs_deferred;
/* At exit, once the session is gone: free the open files the kernel never released. */
void fs_open_files_free(struct accelfs *fs);
/* The same for directory listings (fs/ops_dir.c). */
void fs_open_dirs_free(struct accelfs *fs);

/*
 * Resolve inode ino in the current snapshot as what it was looked up as
 * (fs/openfile.c): 0, -ESTALE (the kernel forgot it), or -ENOENT (it went
 * away, or its path names another job or device now).  path (len bytes)
 * gets its path; the caller unrefs *snap on success.
 */
int fs_inode_resolve(struct accelfs *fs, uint64_t ino, struct accel_snapshot **snap, struct fs_node *n, char *path,
                     size_t len);
/* The same in a given snapshot (nothing to unref). */
int fs_inode_resolve_in(struct accelfs *fs, uint64_t ino, const struct accel_snapshot *snap, struct fs_node *n,
                        char *path, size_t len);
/*
 * The text of of's file (malloc'd) in snapshot in (NULL: the current one):
 * 0, -ENOENT once the file it was opened on went away, or the render's
 * -errno.  *gen (when not NULL) gets the snapshot's generation.
 */
int fs_open_file_render(struct accelfs *fs, const struct open_file *of, const struct accel_snapshot *in, char **out,
                        size_t *len, uint64_t *gen);
/*
 * The text a page-cached file's open left for later (of->opened_in), rendered
 * now in the snapshot it was opened in, with no lock held; nothing to do once
 * it is there.  Callers that read of->buf, of->len or of->err call it first.
 */
void fs_open_file_settle(struct accelfs *fs, struct open_file *of);

#endif
