/* SPDX-License-Identifier: MIT */
/*
 * The cache of fs/job_lines.h: a slot per (device name, kind), holding the
 * view it was rendered from (a reference, so its address names that view
 * and no later one) and the text.  A leaf lock (FS_LOCK_LEAF), held for
 * the lookup and the copy alone: the render, and the release of a
 * replaced view, run outside it.
 */
#include "fs/job_lines.h"

#include <stdlib.h>
#include <string.h>

#include "fs/lock_order.h"

#define SLOTS 128 /* a node's cards, twice: more only costs renders, never a wrong text */

static struct slot {
	struct accel_device *view; /* referenced; NULL: free */
	enum fs_job_lines kind;
	char *text;
	size_t len;
} slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned next_victim;

/* The slot holding (d, k)'s text, or NULL (lock held). */
static struct slot *find(const struct accel_device *d, enum fs_job_lines k)
{
	for (size_t i = 0; i < SLOTS; i++)
		if (slots[i].view == d && slots[i].kind == k)
			return &slots[i];
	return NULL;
}

/* The slot for (d, k): the one of an older view of the same device, a free one, or the next in turn. */
static struct slot *slot_for(const struct accel_device *d, enum fs_job_lines k)
{
	struct slot *free_slot = NULL;

	for (size_t i = 0; i < SLOTS; i++) {
		if (slots[i].view && slots[i].kind == k && !strcmp(slots[i].view->name, d->name))
			return &slots[i];
		if (!slots[i].view && !free_slot)
			free_slot = &slots[i];
	}
	return free_slot ? free_slot : &slots[next_victim++ % SLOTS];
}

void fs_job_lines(struct fs_text *t, struct accel_device *d, enum fs_job_lines k,
                  void (*render)(struct fs_text *t, const struct accel_device *d))
{
	struct fs_text fresh = { 0 };
	struct accel_device *old_view = NULL;
	char *old_text = NULL, *text;
	struct slot *sl;
	size_t len;

	fs_lock(&lock, FS_LOCK_LEAF);
	sl = find(d, k);
	if (sl)
		fs_put_mem(t, sl->text, sl->len); /* t is the caller's own: no lock inside */
	fs_unlock(&lock, FS_LOCK_LEAF);
	if (sl)
		return;
	render(&fresh, d);
	if (fs_text_finish(&fresh, &text, &len)) {
		t->oom = true;
		return;
	}
	fs_put_mem(t, text, len);
	fs_lock(&lock, FS_LOCK_LEAF);
	if (!find(d, k)) { /* another scrape may have put it meanwhile: then keep that */
		sl = slot_for(d, k);
		old_view = sl->view;
		old_text = sl->text;
		sl->view = accel_device_ref(d);
		sl->kind = k;
		sl->text = text;
		sl->len = len;
		text = NULL;
	}
	fs_unlock(&lock, FS_LOCK_LEAF);
	free(text);
	free(old_text);
	accel_device_unref(old_view);
}
