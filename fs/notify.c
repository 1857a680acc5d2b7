/* SPDX-License-Identifier: MIT */
#include "fs/notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fs/accelfs.h"
#include "fs/tree.h"

struct stale {
	uint64_t parent;
	uint64_t ino;
	char name[256];
};

struct fs_notifier {
	struct accelfs *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool pending;
	bool attrs; /* also invalidate the attributes of every known inode */
	bool stopping;
};

struct collect {
	const struct accel_snapshot *snap;
	struct stale *list;
	size_t n, cap;
	uint64_t *live; /* inodes whose attributes to drop */
	size_t n_live, cap_live;
	bool attrs;
};

static void collect_stale(void *ctx, const struct fs_inode *in)
{
	struct collect *c = ctx;
	struct fs_node node;

	if (fs_tree_resolve(c->snap, in->path, &node) == 0) {
		if (c->attrs && c->n_live < c->cap_live)
			c->live[c->n_live++] = in->ino;
		else if (c->attrs) {
			size_t cap = c->cap_live ? c->cap_live * 2 : 64;
			uint64_t *grown = realloc(c->live, cap * sizeof(*grown));
			if (grown) {
				c->live = grown;
				c->cap_live = cap;
				c->live[c->n_live++] = in->ino;
			}
		}
		return;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct stale *grown = realloc(c->list, cap * sizeof(*grown));
		if (!grown)
			return;
		c->list = grown;
		c->cap = cap;
	}
	c->list[c->n].parent = in->parent;
	c->list[c->n].ino = in->ino;
	snprintf(c->list[c->n].name, sizeof(c->list[c->n].name), "%s", in->name);
	c->n++;
}

static void pass(struct accelfs *fs, bool attrs)
{
	struct collect c = { 0 };

	c.attrs = attrs;
	c.snap = accel_node_snapshot(fs->node);
	if (!c.snap)
		return;
	fs_inodes_each(fs->inodes, collect_stale, &c);
	accel_snapshot_unref((struct accel_snapshot *)c.snap);
	for (size_t i = 0; i < c.n; i++) {
		/* notify_delete also tells inotify watchers the entry is gone. */
		int ret = fuse_lowlevel_notify_delete(fs->se, c.list[i].parent, c.list[i].ino, c.list[i].name,
						      strlen(c.list[i].name));
		if (ret && ret != -ENOENT)
			fuse_lowlevel_notify_inval_entry(fs->se, c.list[i].parent, c.list[i].name,
							 strlen(c.list[i].name));
	}
	for (size_t i = 0; i < c.n_live; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, c.live[i], -1, 0);
	free(c.list);
	free(c.live);
}

static void *notifier_main(void *arg)
{
	struct fs_notifier *n = arg;

	pthread_mutex_lock(&n->lock);
	while (!n->stopping) {
		while (!n->pending && !n->stopping)
			pthread_cond_wait(&n->cond, &n->lock);
		if (n->stopping)
			break;
		bool attrs = n->attrs;
		n->pending = false;
		n->attrs = false;
		pthread_mutex_unlock(&n->lock);
		pass(n->fs, attrs);
		pthread_mutex_lock(&n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

struct fs_notifier *fs_notifier_start(struct accelfs *fs)
{
	struct fs_notifier *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->fs = fs;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->cond, NULL);
	if (pthread_create(&n->thread, NULL, notifier_main, n)) {
		free(n);
		return NULL;
	}
	return n;
}

void fs_notifier_stop(struct fs_notifier *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	pthread_cond_signal(&n->cond);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->cond);
	free(n);
}

void fs_notify_attrs_changed(struct accelfs *fs)
{
	struct fs_notifier *n = fs->notifier;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->pending = true;
	n->attrs = true;
	pthread_cond_signal(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

void fs_notify_changed(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap)
{
	struct accelfs *fs = ctx;
	struct fs_notifier *n = fs->notifier;

	(void)old_snap;
	(void)new_snap;
	if (!n || !fs->se)
		return; /* before the mount is up there is nothing cached */
	pthread_mutex_lock(&n->lock);
	n->pending = true;
	pthread_cond_signal(&n->cond);
	pthread_mutex_unlock(&n->lock);
}
