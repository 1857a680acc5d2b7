/* SPDX-License-Identifier: MIT */
#include "fs/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL (false: out of memory, said by t->oom). */
static bool room_for(struct fs_text *t, size_t n)
{
	size_t cap;
	char *grown;

	if (t->oom)
		return false;
	if (t->buf && t->cap - t->len > n)
		return true;
	cap = (t->cap ? t->cap * 2 : 256) + n;
	grown = realloc(t->buf, cap);
	if (!grown) {
		t->oom = true;
		return false;
	}
	t->buf = grown;
	t->cap = cap;
	return true;
}

void fs_text_reserve(struct fs_text *t, size_t n)
{
	(void)room_for(t, n); /* grows only when there is not room already */
}

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
		if (!room_for(t, (size_t)n))
			return;
	}
}

void fs_put_mem(struct fs_text *t, const char *s, size_t n)
{
	if (!room_for(t, n))
		return;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

void fs_put_again(struct fs_text *t, size_t from, size_t n)
{
	if (!room_for(t, n)) /* may move t->buf: from is an offset for that */
		return;
	memcpy(t->buf + t->len, t->buf + from, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

void fs_put_str(struct fs_text *t, const char *s)
{
	fs_put_mem(t, s, strlen(s));
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
	/* No format to parse: a scrape of many jobs writes many labels. */
	if (!first)
		fs_put_mem(t, ",", 1);
	fs_put_str(t, name);
	fs_put_mem(t, "=\"", 2);
	for (const char *c = value; *c;) {
		size_t plain = strcspn(c, "\\\"\n");

		fs_put_mem(t, c, plain);
		c += plain;
		if (!*c)
			break;
		fs_put_mem(t, *c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "\\\\", 2);
		c++;
	}
	fs_put_mem(t, "\"", 1);
}
