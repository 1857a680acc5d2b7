/* SPDX-License-Identifier: MIT */
#include "fs/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int fs_text_finish(struct fs_text *t, char **out, size_t *len)
{
	/* Nothing put yet: an empty text is still a string. */
	if (!t->buf && !t->oom && !(t->buf = calloc(1, 1)))
		t->oom = true;
	if (t->oom) {
		fs_text_free(t);
		return -ENOMEM;
	}
	*out = t->buf;
	*len = t->len;
	t->buf = NULL;
	t->len = t->cap = 0;
	return 0;
}

void fs_text_free(struct fs_text *t)
{
	free(t->buf);
	t->buf = NULL;
	t->len = t->cap = 0;
}

/* A Prometheus label, name="value", the value escaped (backslash, double quote, newline). */
void fs_put_label(struct fs_text *t, const char *name, const char *value, bool first)
{
	/* The common case, nothing to escape, in one put: a scrape with many jobs writes many labels. */
	if (!strpbrk(value, "\\\"\n")) {
		fs_put(t, "%s%s=\"%s\"", first ? "" : ",", name, value);
		return;
	}
	fs_put(t, "%s%s=\"", first ? "" : ",", name);
	for (const char *c = value; *c; c++) {
		if (*c == '\\' || *c == '"')
			fs_put(t, "\\%c", *c);
		else if (*c == '\n')
			fs_put(t, "%s", "\\n");
		else
			fs_put(t, "%c", *c);
	}
	fs_put(t, "%c", '"');
}
