/* SPDX-License-Identifier: MIT */
#include "fs/render.h"

#include <errno.h>

int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out, size_t *len)
{
	struct fs_text t = { 0 };
	int ret;

	if (!n->entry || n->entry->kind != FS_FILE || n->entry->open)
		return -EISDIR;
	/* A file only written (no render) reads empty. */
	ret = n->entry->render ? n->entry->render(&t, node, s, n) : 0;
	if (ret) {
		fs_text_free(&t);
		return ret;
	}
	return fs_text_finish(&t, out, len);
}
