/* SPDX-License-Identifier: MIT */
/*
 * A growing text buffer: the one way the daemon builds the text of a file.
 * Every renderer writes into one (fs_put); nothing here knows what the
 * text says or which file it is.
 */
#ifndef ACCELFS_TEXT_H
#define ACCELFS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

struct accel_viewer;

struct fs_text {
	char *buf;
	size_t len, cap;
	bool oom; /* a put failed: finishing answers -ENOMEM */
	/*
	 * For whom (a live row's text, at open and read): a file naming other
	 * processes shows each one's details only where /proc would show them
	 * to this reader (core/driver/proc_view.h).  NULL: nobody in particular.
	 */
	const struct accel_viewer *reader;
};

__attribute__((format(printf, 2, 3))) void fs_put(struct fs_text *t, const char *fmt, ...);
/* s (n bytes of it) as it is, with no format to parse: what a text of many lines writes most. */
void fs_put_str(struct fs_text *t, const char *s);
void fs_put_mem(struct fs_text *t, const char *s, size_t n);
/* n bytes of t's own text from offset from, put again (a line's start that several lines share). */
void fs_put_again(struct fs_text *t, size_t from, size_t n);
/*
 * Hand t's text over: 0 with *out (malloc'd, NUL-terminated, never NULL)
 * and *len, or -ENOMEM when a put failed (t's buffer is freed either way).
 */
int fs_text_finish(struct fs_text *t, char **out, size_t *len);
/* Room for n more bytes at once (a text about as long as its last render: no copy as it grows). */
void fs_text_reserve(struct fs_text *t, size_t n);
/* Drop t's text (a render that failed). */
void fs_text_free(struct fs_text *t);
/* A Prometheus label into t: name="value", the value escaped; a comma first unless first. */
void fs_put_label(struct fs_text *t, const char *name, const char *value, bool first);

#endif
