/* SPDX-License-Identifier: MIT */
/*
 * Keeping the kernel's caches true.
 *
 * Files drawn from the snapshot alone (fs/cache.c says which) live in the
 * page cache and entries and attributes are cached for long: what makes
 * that safe is this file.  A flush compares the snapshot the kernel's
 * caches were last checked against (base) with the current one: only the
 * devices whose view changed (a pointer comparison, views are shared) are
 * looked at, with what they show under the node-level mig/ (their jobs
 * there, each by its own path, and their profiles' files), and of the
 * inodes the kernel knows there, exactly those whose rendering differs are
 * invalidated (fuse_lowlevel_notify_inval_inode: pages and attributes).  A
 * flush costs what the changed devices hold, not what the node holds.
 *
 * mkdir and rmdir flush before they answer, in their own thread: a script
 * that reads `available` right after mkdir sees the carve.  Only inode
 * invalidations happen there; they take no directory lock, so a flush
 * inside a request cannot deadlock against it.  Entries whose path is gone
 * are deleted (fuse_lowlevel_notify_delete, which takes the parent
 * directory's lock) by the notifier thread, outside any request, as are the
 * changes the poller publishes.
 */
#include "fs/notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/log.h"
#include "core/model/timed_wait.h"
#include "fs/accelfs.h"
#include "fs/attach_stale.h"
#include "fs/cache.h"
#include "fs/waiters.h"
#include "fs/render.h"
#include "fs/tree.h"
#include "fs/lock_order.h"

struct gone {
	uint64_t parent;
	uint64_t ino;
	char name[256];
};

struct fs_notifier {
	struct accelfs *fs;
	pthread_t thread;
	pthread_mutex_t lock; /* pending, attrs, stopping, the deletion queue */
	pthread_cond_t cond;
	bool pending;
	bool attrs;               /* also invalidate the attributes of every known inode */
	bool waiting;             /* someone waits in poll(): the rechecks run */
	bool waiting_since_check; /* a waiter came since the last check began */
	bool stopping;
	struct gone *gone;
	size_t n_gone;

	pthread_mutex_t flush_lock;         /* one flush at a time */
	struct accel_snapshot *base;        /* guarded by flush_lock */
	struct accel_attach_view *attached; /* guarded by flush_lock: the registry's view base was checked with */
};

/* The notifier, once started (NULL before and after): the node's threads look while main sets it. */
static struct fs_notifier *notifier_of(struct accelfs *fs)
{
	return __atomic_load_n(&fs->notifier, __ATOMIC_ACQUIRE);
}

/* ---- what changed ------------------------------------------------------ */

struct compare {
	struct accelfs *fs;
	const struct accel_snapshot *base, *cur;
	uint64_t *inval;
	size_t n_inval, cap_inval;
	struct gone *gone;
	size_t n_gone, cap_gone;
};

static bool same_rendering(struct accelfs *fs, const struct accel_snapshot *a, const struct accel_snapshot *b,
                           const char *path, const struct fs_node *nb)
{
	struct fs_node na;
	char *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	bool same;

	if (fs_tree_resolve(a, &fs->mount, path, &na) || na.kind != nb->kind || na.entry != nb->entry)
		return false;
	if (fs_render(fs->node, a, &na, &ta, &la) || fs_render(fs->node, b, nb, &tb, &lb)) {
		free(ta);
		free(tb);
		return false;
	}
	same = la == lb && !memcmp(ta, tb, la);
	free(ta);
	free(tb);
	return same;
}

static void push_inval(struct compare *c, uint64_t ino)
{
	if (c->n_inval == c->cap_inval) {
		size_t cap = c->cap_inval ? c->cap_inval * 2 : 32;
		uint64_t *grown = realloc(c->inval, cap * sizeof(*grown));
		if (!grown)
			return;
		c->inval = grown;
		c->cap_inval = cap;
	}
	c->inval[c->n_inval++] = ino;
}

static void push_gone(struct compare *c, uint64_t parent, uint64_t ino, const char *name)
{
	if (c->n_gone == c->cap_gone) {
		size_t cap = c->cap_gone ? c->cap_gone * 2 : 16;
		struct gone *grown = realloc(c->gone, cap * sizeof(*grown));
		if (!grown)
			return;
		c->gone = grown;
		c->cap_gone = cap;
	}
	c->gone[c->n_gone].parent = parent;
	c->gone[c->n_gone].ino = ino;
	snprintf(c->gone[c->n_gone].name, sizeof(c->gone[c->n_gone].name), "%s", name);
	c->n_gone++;
}

/*
 * An inode whose path is gone, or names another job or device now (a job
 * removed and made again under its name), is gone: the kernel's entry is
 * deleted, its pages dropped (a reader's next read reaches us, and fails),
 * and the inode table kills it (fs_inodes_kill, once the comparing is
 * done) so that the path gets a new number.
 */
static void compare_one(struct compare *c, uint64_t ino, uint64_t parent, const char *path, const char *name,
                        const char *ident)
{
	char now[FS_IDENT_MAX];
	struct fs_node n;
	bool gone = fs_tree_resolve(c->cur, &c->fs->mount, path, &n) != 0;

	if (!gone) {
		fs_node_identity(&n, now, sizeof(now));
		gone = strcmp(now, ident ? ident : "") != 0;
	}
	if (gone) {
		push_gone(c, parent, ino, name);
		push_inval(c, ino);
		return;
	}
	if (fs_node_cacheable(&n) && !same_rendering(c->fs, c->base, c->cur, path, &n))
		push_inval(c, ino);
}

/* Under the inode table's lock: rendering is pure, nothing here calls back into the table. */
static void compare_inode(void *ctx, const struct fs_inode *in)
{
	compare_one(ctx, in->ino, in->parent, in->path, in->name, in->ident);
}

/*
 * The inodes to compare, copied out of the table: rendering them twice takes
 * a while, and every lookup and open of the mount needs the table's lock
 * meanwhile (a reader's p99 doubled during a carve storm on another card).
 */
struct known {
	uint64_t ino, parent;
	char *path;
	size_t name_at; /* the last component's offset in path */
	char *ident;    /* NULL: none */
};

struct known_list {
	struct known *v;
	size_t n, cap;
	bool failed; /* out of memory: compare under the lock instead */
};

static void copy_known(void *ctx, const struct fs_inode *in)
{
	struct known_list *l = ctx;
	char *path, *ident;

	if (l->failed)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct known *grown = realloc(l->v, cap * sizeof(*grown));
		if (!grown) {
			l->failed = true;
			return;
		}
		l->v = grown;
		l->cap = cap;
	}
	path = strdup(in->path);
	ident = in->ident ? strdup(in->ident) : NULL;
	if (!path || (in->ident && !ident)) {
		free(path);
		free(ident);
		l->failed = true;
		return;
	}
	l->v[l->n++] = (struct known){ in->ino, in->parent, path, (size_t)(in->name - in->path), ident };
}

/* Compare every inode the kernel knows that each (fs_inodes_each_under or _below) visits for where. */
static void compare_known(struct compare *c,
                          void (*each)(struct fs_inodes *, const char *, void (*)(void *, const struct fs_inode *),
                                       void *),
                          const char *where)
{
	struct known_list l = { 0 };

	each(c->fs->inodes, where, copy_known, &l);
	if (!l.failed)
		for (size_t i = 0; i < l.n; i++)
			compare_one(c, l.v[i].ino, l.v[i].parent, l.v[i].path, l.v[i].path + l.v[i].name_at,
			            l.v[i].ident);
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].path);
		free(l.v[i].ident);
	}
	free(l.v);
	if (l.failed)
		each(c->fs->inodes, where, compare_inode, c);
}

/* One path, if the kernel knows it. */
static void compare_path(struct compare *c, const char *path)
{
	uint64_t parent, ino = fs_inodes_ino(c->fs->inodes, path, &parent);
	const char *name = strrchr(path, '/');
	char at[FS_PATH_BUF], ident[FS_IDENT_MAX];

	if (ino && !fs_inodes_get(c->fs->inodes, ino, at, sizeof(at), ident, sizeof(ident)))
		compare_one(c, ino, parent, path, name ? name + 1 : path, ident);
}

/* Profiles whose node-level files were compared in this flush (a few: those of the changed devices). */
struct profiles_done {
	const char *v[64];
	size_t n;
};

/*
 * What a change to device d (its view in base or in cur) can change under
 * the node-level mig/: its jobs there (mig/<profile>/<job> and below, each
 * found by its own path) and the files of its profiles (mig/<profile>/ and
 * its rows).  The node-level jobs of other devices render from their own,
 * unchanged views: they are not looked at, however many there are.
 */
static void compare_node_level(struct compare *c, const struct accel_device *d, const struct accel_device *seen,
                               struct profiles_done *done)
{
	const struct fs_entry *rows = fs_tree_files(FS_NODE_PROFILE);
	char path[512];

	for (size_t k = 0; d && k < d->n_jobs; k++) {
		const struct accel_job *j = &d->jobs[k], *same = seen ? accel_device_job(seen, j->name) : NULL;
		if (same && !strcmp(same->profile, j->profile))
			continue; /* compared already, with the jobs of seen (the device's other view) */
		snprintf(path, sizeof(path), "mig/%s/%s", j->profile, j->name);
		compare_known(c, fs_inodes_each_below, path);
	}
	for (size_t q = 0; d && q < d->n_profiles; q++) {
		const char *p = d->profiles[q].name;
		size_t i = 0;

		while (i < done->n && strcmp(done->v[i], p))
			i++;
		if (i < done->n)
			continue;
		if (done->n < sizeof(done->v) / sizeof(done->v[0]))
			done->v[done->n++] = p;
		snprintf(path, sizeof(path), "mig/%s", p);
		compare_path(c, path);
		for (size_t r = 0; rows && rows[r].name; r++) {
			snprintf(path, sizeof(path), "mig/%s/%s", p, rows[r].name);
			compare_path(c, path);
		}
	}
}

/* A device of that name in s: where it was in the other snapshot first (the order of cards holds), O(1) then. */
static const struct accel_device *device_named(const struct accel_snapshot *s, size_t hint, const char *name)
{
	if (s && hint < s->n_devices && !strcmp(s->devices[hint]->name, name))
		return s->devices[hint];
	for (size_t i = 0; s && i < s->n_devices; i++)
		if (!strcmp(s->devices[i]->name, name))
			return s->devices[i];
	return NULL;
}

static void stale_status(void *ctx, uint64_t ino)
{
	push_inval(ctx, ino);
}

void fs_notify_flush(struct accelfs *fs)
{
	struct fs_notifier *n = notifier_of(fs);
	struct accel_snapshot *cur;
	struct accel_attach_view *attached;
	struct profiles_done done = { .n = 0 };
	struct compare c;
	bool moved;

	if (!n || !fs->se)
		return;
	fs_lock(&n->flush_lock, FS_LOCK_FLUSH);
	cur = accel_node_snapshot(fs->node);
	attached = accel_attach_view(fs->mount.attach);
	/* The registry's containers and policies show in status with no new snapshot: its generation says. */
	moved = attached && (!n->attached || attached->generation != n->attached->generation);
	if (!cur || (cur == n->base && !moved)) {
		fs_unlock(&n->flush_lock, FS_LOCK_FLUSH);
		accel_snapshot_unref(cur);
		accel_attach_view_unref(attached);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.fs = fs;
	c.base = n->base;
	c.cur = cur;
	if (moved)
		fs_attach_stale(fs->inodes, cur, n->attached, attached, stale_status, &c);
	accel_attach_view_unref(n->attached);
	n->attached = attached;
	/*
	 * A device whose view object is the same shows the same: only changed
	 * ones are looked at, with what they change under the node-level mig/.
	 */
	for (size_t i = 0; i < cur->n_devices; i++) {
		const struct accel_device *was;

		if (n->base && i < n->base->n_devices && n->base->devices[i] == cur->devices[i])
			continue; /* the same view where it was: one pointer comparison per unchanged device */
		was = device_named(n->base, i, cur->devices[i]->name);
		if (was == cur->devices[i])
			continue;
		compare_known(&c, fs_inodes_each_under, cur->devices[i]->name);
		compare_node_level(&c, cur->devices[i], NULL, &done);
		compare_node_level(&c, was, cur->devices[i], &done);
	}
	for (size_t i = 0; n->base && i < n->base->n_devices; i++)
		if ((i >= cur->n_devices || n->base->devices[i] != cur->devices[i]) &&
		    !device_named(cur, i, n->base->devices[i]->name)) {
			compare_known(&c, fs_inodes_each_under, n->base->devices[i]->name);
			compare_node_level(&c, n->base->devices[i], NULL, &done);
		}
	/* Before anything is told: from now on a lookup of a gone path gets a new inode number. */
	for (size_t i = 0; i < c.n_gone; i++)
		fs_inodes_kill(fs->inodes, c.gone[i].ino);
	for (size_t i = 0; i < c.n_inval; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, c.inval[i], 0, 0);
	accel_snapshot_unref(n->base);
	n->base = cur;
	fs_unlock(&n->flush_lock, FS_LOCK_FLUSH);
	free(c.inval);

	if (c.n_gone || c.n_inval) {
		/* Entry deletions take directory locks: the notifier thread does them, outside any request. */
		/* ... and wakes the readers waiting in poll(). */
		fs_lock(&n->lock, FS_LOCK_LEAF);
		struct gone *grown = c.n_gone ? realloc(n->gone, (n->n_gone + c.n_gone) * sizeof(*grown)) : NULL;
		if (grown) {
			memcpy(grown + n->n_gone, c.gone, c.n_gone * sizeof(*grown));
			n->gone = grown;
			n->n_gone += c.n_gone;
		}
		n->pending = true;
		pthread_cond_signal(&n->cond);
		fs_unlock(&n->lock, FS_LOCK_LEAF);
	}
	free(c.gone);
}

/* ---- the notifier thread ------------------------------------------------- */

static void collect_ino(void *ctx, const struct fs_inode *in)
{
	struct compare *c = ctx;

	push_inval(c, in->ino);
}

static void delete_entries(struct accelfs *fs, struct gone *gone, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		/* notify_delete also tells inotify watchers the entry is gone. */
		int ret = fuse_lowlevel_notify_delete(fs->se, gone[i].parent, gone[i].ino, gone[i].name,
		                                      strlen(gone[i].name));
		if (ret && ret != -ENOENT)
			fuse_lowlevel_notify_inval_entry(fs->se, gone[i].parent, gone[i].name, strlen(gone[i].name));
	}
}

static void *notifier_main(void *arg)
{
	struct fs_notifier *n = arg;

	fs_lock(&n->lock, FS_LOCK_LEAF);
	while (!n->stopping) {
		while (!n->pending && !n->stopping) {
			if (!n->waiting) {
				pthread_cond_wait(&n->cond, &n->lock);
				continue;
			}
			/* Someone waits in poll() on a file that may change with no snapshot: look again soon. */
			struct timespec at = accel_deadline_in_ms(FS_POLL_TICK_MS);
			if (pthread_cond_timedwait(&n->cond, &n->lock, &at) == ETIMEDOUT)
				break;
		}
		if (n->stopping)
			break;
		bool attrs = n->attrs;
		n->pending = false;
		n->attrs = false;
		fs_unlock(&n->lock, FS_LOCK_LEAF);

		fs_notify_flush(n->fs); /* what the poller published */
		fs_lock(&n->lock, FS_LOCK_LEAF);
		struct gone *gone = n->gone;
		size_t n_gone = n->n_gone;
		n->gone = NULL;
		n->n_gone = 0;
		fs_unlock(&n->lock, FS_LOCK_LEAF);
		delete_entries(n->fs, gone, n_gone);
		free(gone);
		if (attrs) {
			/* A delegation changed: every inode's owner and mode may follow from it. */
			struct compare c;
			memset(&c, 0, sizeof(c));
			fs_inodes_each(n->fs->inodes, collect_ino, &c);
			for (size_t i = 0; i < c.n_inval; i++)
				fuse_lowlevel_notify_inval_inode(n->fs->se, c.inval[i], -1, 0);
			free(c.inval);
		}
		struct accel_snapshot *flushed = fs_notify_flushed(n->fs);
		size_t waiting = fs_poll_check(n->fs, flushed);
		accel_snapshot_unref(flushed);
		fs_lock(&n->lock, FS_LOCK_LEAF);
		/* A waiter that came during the check said so (fs_notify_waiting): it stays true. */
		n->waiting = n->waiting_since_check || waiting;
		n->waiting_since_check = false;
	}
	fs_unlock(&n->lock, FS_LOCK_LEAF);
	return NULL;
}

struct fs_notifier *fs_notifier_start(struct accelfs *fs)
{
	struct fs_notifier *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->fs = fs;
	pthread_mutex_init(&n->lock, NULL);
	pthread_mutex_init(&n->flush_lock, NULL);
	accel_cond_init_monotonic(&n->cond);
	/* Nothing is cached before the mount: the first flush compares against what is published now. */
	n->base = accel_node_snapshot(fs->node);
	n->attached = accel_attach_view(fs->mount.attach);
	if (pthread_create(&n->thread, NULL, notifier_main, n)) {
		accel_snapshot_unref(n->base);
		accel_attach_view_unref(n->attached);
		free(n);
		return NULL;
	}
	pthread_setname_np(n->thread, "notifier"); /* tests find it by this name */
	return n;
}

void fs_notifier_stop(struct fs_notifier *n)
{
	if (!n)
		return;
	fs_lock(&n->lock, FS_LOCK_LEAF);
	n->stopping = true;
	pthread_cond_signal(&n->cond);
	fs_unlock(&n->lock, FS_LOCK_LEAF);
	pthread_join(n->thread, NULL);
	accel_snapshot_unref(n->base);
	accel_attach_view_unref(n->attached);
	free(n->gone);
	pthread_mutex_destroy(&n->lock);
	pthread_mutex_destroy(&n->flush_lock);
	pthread_cond_destroy(&n->cond);
	free(n);
}

void fs_notify_attrs_changed(struct accelfs *fs)
{
	struct fs_notifier *n = notifier_of(fs);

	fs_side_moved(fs); /* a delegation: what it shows, the waiters' files are rendered again */
	if (!n)
		return;
	fs_lock(&n->lock, FS_LOCK_LEAF);
	n->pending = true;
	n->attrs = true;
	pthread_cond_signal(&n->cond);
	fs_unlock(&n->lock, FS_LOCK_LEAF);
}

struct accel_snapshot *fs_notify_flushed(struct accelfs *fs)
{
	struct fs_notifier *n = notifier_of(fs);
	struct accel_snapshot *s;

	if (!n || !fs->se)
		return accel_node_snapshot(fs->node);
	fs_lock(&n->flush_lock, FS_LOCK_FLUSH);
	s = accel_snapshot_ref(n->base);
	fs_unlock(&n->flush_lock, FS_LOCK_FLUSH);
	return s;
}

void fs_notify_check(struct accelfs *fs)
{
	struct accel_snapshot *flushed;

	fs_side_moved(fs);   /* what moved with no snapshot: the waiters' files are rendered again */
	fs_notify_flush(fs); /* a job's containers or reclaim policy may be in a page-cached status */
	if (!fs->pollers)
		return;
	flushed = fs_notify_flushed(fs);
	fs_poll_check(fs, flushed);
	accel_snapshot_unref(flushed);
}

void fs_notify_gone(struct accelfs *fs, uint64_t parent, uint64_t ino, const char *name)
{
	struct fs_notifier *n = notifier_of(fs);
	struct gone *grown;

	fs_inodes_kill(fs->inodes, ino);
	if (!n || !fs->se)
		return;
	fs_lock(&n->lock, FS_LOCK_LEAF);
	grown = realloc(n->gone, (n->n_gone + 1) * sizeof(*grown));
	if (grown) {
		n->gone = grown;
		n->gone[n->n_gone].parent = parent;
		n->gone[n->n_gone].ino = ino;
		snprintf(n->gone[n->n_gone].name, sizeof(n->gone[n->n_gone].name), "%s", name);
		n->n_gone++;
	}
	n->pending = true;
	pthread_cond_signal(&n->cond);
	fs_unlock(&n->lock, FS_LOCK_LEAF);
}

void fs_notify_waiting(struct accelfs *fs)
{
	struct fs_notifier *n = notifier_of(fs);

	if (!n)
		return;
	fs_lock(&n->lock, FS_LOCK_LEAF);
	n->waiting_since_check = true;
	if (!n->waiting) {
		n->waiting = true;
		pthread_cond_signal(&n->cond); /* out of its untimed wait, into the rechecks */
	}
	fs_unlock(&n->lock, FS_LOCK_LEAF);
}

void fs_notify_changed(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap)
{
	struct accelfs *fs = ctx;
	struct fs_notifier *n = notifier_of(fs);

	(void)old_snap;
	(void)new_snap;
	if (!n || !fs->se)
		return; /* before the mount is up there is nothing cached */
	fs_lock(&n->lock, FS_LOCK_LEAF);
	n->pending = true;
	pthread_cond_signal(&n->cond);
	fs_unlock(&n->lock, FS_LOCK_LEAF);
}
