/* SPDX-License-Identifier: MIT */
/*
 * The text of a generated file: its row's render function (fs/tree.h) run
 * into a text buffer (fs/text.h).  Pure formatting: nothing here decides
 * anything, and nothing here knows which file it renders.
 */
#ifndef ACCELFS_RENDER_H
#define ACCELFS_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/engine/node.h"
#include "fs/text.h"
#include "fs/tree.h"

/*
 * Render file n into a malloc'd buffer.  Returns 0, or -errno: -ENODEV for
 * a lost job's devices and cdi.json (a lost job fails closed), -ENOMEM,
 * -EISDIR for what has no text (a directory, vram).  A row without a render
 * function (a file only written) has an empty text.
 */
int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out,
              size_t *len);
/* The same, for a reader (the opener's credentials): what a live row naming processes shows them (fs/text.h). */
int fs_render_for(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n,
                  const struct accel_viewer *reader, char **out, size_t *len);
/*
 * An open or a read generates its file's text on this thread (on), or is
 * done (off): the only place a live row (fs/tree.h) may be rendered, which
 * debug builds assert.  Lookup, stat, the notifier and poll never render one.
 */
void fs_render_at_read(bool on);
/* Is this thread's render an open's or a read's (a snapshot row may then ask for fresher published state)? */
bool fs_render_is_at_read(void);

#endif
