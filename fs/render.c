/* SPDX-License-Identifier: MIT */
#include "fs/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/dies.h"
#include "fs/jobctl.h"

void fs_put(struct fs_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->buf && (size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap ? t->cap * 2 : 256) + (size_t)n;
		char *grown = realloc(t->buf, cap);
		if (!grown) {
			t->oom = true;
			return;
		}
		t->buf = grown;
		t->cap = cap;
	}
}

int fs_text_adopt(struct fs_text *t, char *text, size_t len)
{
	if (!text)
		return -ENOMEM;
	free(t->buf);
	t->buf = text;
	t->len = t->cap = len;
	return 0;
}

int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out, size_t *len)
{
	struct fs_text t = { 0 };
	int ret;

	if (n->entry && n->entry->render)
		ret = n->entry->render(&t, node, s, n);
	else if (n->kind == FS_JOB_HOLDERS || n->kind == FS_JOB_CONTAINERS || n->kind == FS_JOB_RECLAIM) {
		char *text = fs_jobctl_render(n);
		ret = fs_text_adopt(&t, text, text ? strlen(text) : 0);
	} else if (n->kind == FS_DIES_SLOT || n->kind == FS_DIES_LEASE || n->kind == FS_DIE_INFO ||
	           n->kind == FS_DIE_ENABLED || n->kind == FS_DIE_DRIVER || n->kind == FS_DIE_POLICY)
		/* fs/dies_render.c: the slot moves on its own */
		return fs_dies_render(n->mount->dies, n->kind, n->die, out, len);
	else
		return -EISDIR;
	if (!ret && t.oom)
		ret = -ENOMEM;
	if (ret) {
		free(t.buf);
		return ret;
	}
	*out = t.buf;
	*len = t.len;
	return 0;
}
