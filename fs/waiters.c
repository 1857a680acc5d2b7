/* SPDX-License-Identifier: MIT */
#include "fs/waiters.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/node.h"
#include "core/state/attach.h"
#include "fs/accelfs.h"
#include "fs/dies.h"
#include "fs/lock_order.h"

struct waiter {
	struct open_file *of;
	struct fuse_pollhandle *ph;
	/*
	 * Its file moves with nobody telling the notifier (last_error, the
	 * dies, node.json's slot): the rechecks run while it waits.  A
	 * page-cached or a live row's waiter is woken by the flushes alone.
	 */
	bool recheck;
};

/*
 * The waiters.  A check renders their files without holding lock: it pins
 * each file it looks at (open_file.pins, under lock), and a RELEASE of a
 * pinned file waits (unpinned) for the check to let go before the file is
 * freed.
 */
struct fs_pollers {
	pthread_mutex_t lock; /* taken before an open_file's lock, never inside one */
	pthread_cond_t unpinned;
	struct waiter *w;
	size_t n;
};

struct fs_pollers *fs_pollers_new(void)
{
	struct fs_pollers *p = calloc(1, sizeof(*p));

	if (p) {
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->unpinned, NULL);
	}
	return p;
}

void fs_pollers_free(struct fs_pollers *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		fuse_pollhandle_destroy(p->w[i].ph);
	free(p->w);
	pthread_cond_destroy(&p->unpinned);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/*
 * Has the file changed since the reader last saw it?  What it saw: the text
 * it last read, else the file as it was when it opened it (fs/openfile.h).
 * A file that went away (removed, or its name another job's now) has
 * changed: the reader's next read fails.
 *
 * Compared in the snapshot the kernel's caches were last made true against
 * (fs_notify_flushed): a waiter woken by a change the notifier has not yet
 * told the kernel about would read the old pages, or a file gone in the
 * tree but not yet in the kernel.  Never in one older than what the reader
 * saw: that difference is no change.
 *
 * Rendered with no lock held (fs/lock_order.h), compared under of->lock.  A
 * live row (processes, holders) is never rendered here: only its going away
 * is a change poll() reports.
 */
static bool changed(struct accelfs *fs, struct open_file *of, const struct accel_snapshot *flushed)
{
	size_t now_len = 0;
	char *now = NULL;
	uint64_t gen, side = 0;
	int err;
	bool differs, stamped = false, same = false;

	if (!of->live) {
		fs_open_file_settle(fs, of);        /* what the reader saw: the file as it opened it */
		stamped = fs_side_stamp(fs, &side); /* before the render it stands for */
	}
	fs_lock(&of->lock, FS_LOCK_FILE);
	gen = of->gen;
	/* Nothing it shows moved since it was last known to say what the reader saw. */
	same = stamped && flushed && of->seen_valid && of->seen_gen == flushed->generation && of->seen_side == side;
	fs_unlock(&of->lock, FS_LOCK_FILE);
	if (!flushed || flushed->generation < gen || same)
		return false; /* the flush to come checks again */
	if (of->live) {
		char path[FS_PATH_BUF];
		struct fs_node n;
		err = fs_inode_resolve_in(fs, of->ino, flushed, &n, path, sizeof(path));
		return err != 0;
	}
	err = fs_open_file_render(fs, of, flushed, &now, &now_len, NULL);

	/* A failure is content too: a lost job's devices (ENODEV) that then goes away (ENOENT) changed. */
	fs_lock(&of->lock, FS_LOCK_FILE);
	differs = err != of->err || (!err && (now_len != of->len || memcmp(now, of->buf, now_len)));
	if (!differs && stamped) {
		/* What buf holds, it still says at this generation and count: the next check with both renders nothing. */
		of->seen_gen = flushed->generation;
		of->seen_side = side;
		of->seen_valid = true;
	}
	fs_unlock(&of->lock, FS_LOCK_FILE);
	free(now);
	return differs;
}

bool fs_poll_file(fuse_req_t req, struct accelfs *fs, struct open_file *of, struct fuse_pollhandle *ph,
                  const struct accel_snapshot *flushed)
{
	unsigned revents = POLLIN | POLLRDNORM;
	struct fs_pollers *p = fs->pollers;
	bool moved, waits = false;
	size_t count;

	moved = changed(fs, of, flushed);
	if (moved) {
		revents |= POLLPRI | POLLERR;
	} else if (ph && p) {
		/*
		 * One waiter per open file: a newer handle replaces an older one.
		 * A change between the check above and this is seen by the next
		 * fs_poll_check (at the latest one tick later).
		 */
		fs_lock(&p->lock, FS_LOCK_POLLERS);
		size_t i = 0;
		while (i < p->n && p->w[i].of != of)
			i++;
		if (i < p->n) {
			fuse_pollhandle_destroy(p->w[i].ph);
			p->w[i].ph = ph;
			ph = NULL;
		} else {
			struct waiter *grown = realloc(p->w, (p->n + 1) * sizeof(*grown));
			if (grown) {
				p->w = grown;
				p->w[p->n++] = (struct waiter){ of, ph, !of->cached && !of->live };
				of->polled = true;
				ph = NULL;
			}
		}
		waits = ph == NULL && !of->cached && !of->live;
		count = p->n;
		fs_unlock(&p->lock, FS_LOCK_POLLERS);
		accel_node_watching(fs->node, count); /* the poller keeps its cadence while anyone waits */
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, revents);
	return waits;
}

void fs_poll_forget(struct accelfs *fs, struct open_file *of)
{
	struct fs_pollers *p = fs->pollers;
	size_t n;

	if (!p)
		return;
	/* Not under of->lock: the checker takes p->lock, then each file's lock. */
	fs_lock(&p->lock, FS_LOCK_POLLERS);
	while (of->pins) /* a check is rendering it: of is freed only once it has let go */
		pthread_cond_wait(&p->unpinned, &p->lock);
	for (size_t i = 0; of->polled && i < p->n; i++)
		if (p->w[i].of == of) {
			fuse_pollhandle_destroy(p->w[i].ph);
			p->w[i] = p->w[--p->n];
			of->polled = false;
			break;
		}
	n = p->n;
	fs_unlock(&p->lock, FS_LOCK_POLLERS);
	accel_node_watching(fs->node, (unsigned)n);
}

bool fs_side_stamp(struct accelfs *fs, uint64_t *out)
{
	struct accel_attach_view *attached = accel_attach_view(fs->mount.attach);
	struct fs_dies_status *st;

	/* Counts that only grow: their sum moves exactly when one of them does. */
	*out = accel_node_shown_generation(fs->node) + __atomic_load_n(&fs->side_gen, __ATOMIC_ACQUIRE) +
	       (attached ? attached->generation : 0);
	accel_attach_view_unref(attached);
	if (!fs->mount.dies)
		return true;
	/* The slot moves under other processes with nobody counting: what it says now, as a fingerprint. */
	if (fs_dies_status(fs->mount.dies, &st))
		return false;
	*out = fs_dies_fingerprint(st, *out);
	free(st);
	return true;
}

void fs_side_moved(struct accelfs *fs)
{
	__atomic_add_fetch(&fs->side_gen, 1, __ATOMIC_RELEASE);
}

size_t fs_poll_check(struct accelfs *fs, const struct accel_snapshot *flushed)
{
	struct fs_pollers *p = fs->pollers;
	struct open_file **check;
	bool *moved;
	size_t n, left;

	if (!p)
		return 0;
	/* The files to check, pinned: a RELEASE of one waits until it is unpinned below. */
	fs_lock(&p->lock, FS_LOCK_POLLERS);
	n = p->n;
	check = n ? calloc(n, sizeof(*check)) : NULL;
	moved = n ? calloc(n, sizeof(*moved)) : NULL;
	if (n && (!check || !moved)) {
		fs_unlock(&p->lock, FS_LOCK_POLLERS);
		free(check);
		free(moved);
		return n; /* out of memory: the next check tries again */
	}
	for (size_t i = 0; i < n; i++) {
		check[i] = p->w[i].of;
		check[i]->pins++;
	}
	fs_unlock(&p->lock, FS_LOCK_POLLERS);
	/* Rendered without p->lock: a new poll(), a RELEASE of another file, do not wait for them. */
	for (size_t i = 0; i < n; i++)
		moved[i] = changed(fs, check[i], flushed);
	fs_lock(&p->lock, FS_LOCK_POLLERS);
	for (size_t i = 0; i < n; i++) {
		check[i]->pins--;
		for (size_t k = 0; moved[i] && k < p->n; k++)
			if (p->w[k].of == check[i]) {
				fuse_lowlevel_notify_poll(p->w[k].ph);
				fuse_pollhandle_destroy(p->w[k].ph);
				check[i]->polled = false;
				p->w[k] = p->w[--p->n];
				break;
			}
	}
	left = 0;
	for (size_t k = 0; k < p->n; k++)
		left += p->w[k].recheck;
	n = p->n;
	pthread_cond_broadcast(&p->unpinned);
	fs_unlock(&p->lock, FS_LOCK_POLLERS);
	accel_node_watching(fs->node, (unsigned)n);
	free(check);
	free(moved);
	return left;
}
