/* SPDX-License-Identifier: MIT */
#include "fs/render.h"

#include <assert.h>
#include <errno.h>

#include "core/engine/lock_check.h"
#include "fs/shown.h"

static __thread unsigned at_read; /* an open or a read is generating its text on this thread */

void fs_render_at_read(bool on)
{
	if (on)
		at_read++;
	else
		at_read--;
}

bool fs_render_is_at_read(void)
{
	return at_read != 0;
}

int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out, size_t *len)
{
	return fs_render_for(node, s, n, NULL, out, len);
}

int fs_render_for(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n,
                  const struct accel_viewer *reader, char **out, size_t *len)
{
	struct fs_text t = { .reader = reader };
	struct fs_view v = { .n = n, .s = s, .shown = fs_shown_of(node) };
	bool live;
	int ret;

	if (!n->entry || n->entry->kind != FS_FILE || n->entry->open)
		return -EISDIR;
	live = n->entry->fresh == FS_FRESH_LIVE;
	if (live)
		v.live = node; /* a snapshot row reads what is published, and nothing else (fs/tree.h) */
	/*
	 * A live row asks the driver or /proc: at open and read only, with no
	 * fs/ lock held.  A snapshot row copies pointers: its render taking a
	 * node lock is a bug (core/engine/lock_check.h).
	 */
	assert((!live || at_read) && "a live row rendered outside open and read (at lookup, stat, notify or poll)");
	assert((!live || !accel_outer_locks_held()) && "a live row rendered with an fs/ lock held");
	if (!live)
		accel_render_enter();
	/* A file only written (no render) reads empty. */
	ret = n->entry->render ? n->entry->render(&t, &v) : 0;
	if (!live)
		accel_render_leave();
	if (ret) {
		fs_text_free(&t);
		return ret;
	}
	return fs_text_finish(&t, out, len);
}
