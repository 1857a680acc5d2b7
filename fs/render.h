/* SPDX-License-Identifier: MIT */
/*
 * The text of every file in the tree, generated from one snapshot (and, for
 * last_error and holders, from the node's live answers).  Pure formatting:
 * nothing here decides anything.
 */
#ifndef ACCELFS_RENDER_H
#define ACCELFS_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/node.h"
#include "fs/tree.h"

/* A growing text buffer: what a row's render function (fs/tree.h) writes into. */
struct fs_text {
	char *buf;
	size_t len, cap;
	bool oom; /* a put failed: the render answers -ENOMEM */
};

__attribute__((format(printf, 2, 3))) void fs_put(struct fs_text *t, const char *fmt, ...);
/* Make a whole malloc'd text (NULL: out of memory) t's, for modules that render on their own: 0 or -ENOMEM. */
int fs_text_adopt(struct fs_text *t, char *text, size_t len);

/*
 * Render file n into a malloc'd buffer.  Returns 0, or -errno: -ENODEV for
 * a lost job's devices and cdi.json (a lost job fails closed), -ENOMEM.
 */
int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out,
              size_t *len);

#endif
