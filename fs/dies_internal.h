/* SPDX-License-Identifier: MIT */
/*
 * dies/ inside: the handles of vram files and the mount's fs_dies (reached
 * through the request or the node the tree resolved), shared by fs/dies.c
 * (open, close, I/O), fs/dies_attr.c (the writable files: enabled, driver,
 * policy, lease_ms) and fs/dies_render.c (what slot and info say).
 */
#ifndef ACCELFS_DIES_INTERNAL_H
#define ACCELFS_DIES_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "fs/dies.h"
#include "fs/openfile.h"

struct fs_vram {
	struct fs_handle h; /* first: fi->fh points here, and h.ops is fs_vram_ops */
	struct fs_dies *d;
	uint32_t die;
	fuse_ino_t ino;
	uint64_t size;
	pid_t opener; /* the thread that opened it */
	/* under d->lock: */
	bool held;
	uint64_t epoch;
	int revoked;                 /* the hold was taken away (ENODEV, ETIME): every I/O fails so; reopen */
	bool lender;                 /* this handle lent the die: its last close returns it (pinned policy) */
	struct fs_vram *next, *prev; /* every open handle */
};

/*
 * A request parked on the arbiter (an open queued for the slot, a return
 * waiting for a lent die) as the wait limit lists it (fs/dies_wait_limit.c).
 */
struct fs_dies_parked {
	struct fs_dies_parked *next, *prev; /* under parked_lock; NULL while not listed */
	struct bs_waiter *w;
	uint64_t deadline_ns; /* accel_metrics_now()'s clock */
	bool timed_out;       /* the limit withdrew it (read through fs_dies_park_unlist) */
	/* Answer it ETIMEDOUT, on the limit's thread: it is out of the arbiter's queue, and no one else answers it. */
	void (*expire)(struct fs_dies_parked *p);
};

struct fs_dies {
	struct bs_arbiter *arb;
	const char *backend;
	bool read_only;
	pthread_mutex_t lock; /* handles, and each handle's held/epoch/revoked/lender */
	struct fs_vram handles;
	dev_t dev; /* the mount's device number */
	bool dev_known;
	/*
	 * The wait limit (fs/dies_wait_limit.c).  wait_limit_ms is set once,
	 * before the mount serves, and read without a lock after: 0, a parked
	 * request waits as long as it takes (no list, no thread); else the
	 * limiter thread runs until fs_dies_stop_limiting.
	 */
	uint32_t wait_limit_ms;
	pthread_mutex_t parked_lock;  /* the list, limiter_stopping; before the arbiter's lock */
	pthread_cond_t parked_cond;   /* a first request listed, or the stop */
	struct fs_dies_parked parked; /* sentinel: the parked requests, oldest first */
	bool limiter_stopping;
	pthread_t limiter;
};

/* What a vram handle does (fs/dies.c), and its reads and writes (fs/dies_io.c). */
extern const struct fs_file_ops fs_vram_ops;
void fs_dies_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void fs_dies_write(fuse_req_t req, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);

static inline struct fs_vram *fs_vram_of(const struct fuse_file_info *fi)
{
	return (struct fs_vram *)(uintptr_t)fi->fh;
}

/*
 * Under d->lock: a current hold on die of a handle the process pid holds
 * (opened it, or has a descriptor on it: a child of the shell that opened
 * it), or NULL.  Reads /proc for other processes.
 */
struct fs_vram *fs_dies_holder_of(struct fs_dies *d, uint32_t die, pid_t pid);

/* A request parked until the arbiter answers it (an open, a return). */
struct fs_dies_park;
void fs_dies_return_answered(struct bs_waiter *w, int err);

/*
 * List p (about to park w) for the wait limit, if there is one: before the
 * hold or the return, since its answer may come on another thread at once.
 */
void fs_dies_park_list(struct fs_dies *d, struct fs_dies_parked *p, struct bs_waiter *w,
                       void (*expire)(struct fs_dies_parked *p));
/* Unlist p before it is answered or freed; true when the limit withdrew it (an -EINTR is then ETIMEDOUT). */
bool fs_dies_park_unlist(struct fs_dies *d, struct fs_dies_parked *p);
/* Stop the limit's thread (fs_dies_free, before the arbiter answers what is left ESHUTDOWN). */
void fs_dies_stop_limiting(struct fs_dies *d);

#endif
