/* SPDX-License-Identifier: MIT */
/*
 * A file written whole, a line at a time (<dev>/mig/layout, quota): the
 * text one open file's writes bring, kept by the handle and applied once,
 * at its writer's close (fs/deferred.c).
 *
 * Shells write a line per write(2) (bash's printf, echo in a loop), so a
 * file whose meaning is its whole text cannot be applied at each write: the
 * writes of one open file are one text, from offset 0 in order, and the row
 * that takes them checks each complete line as it comes (the write that
 * brings a bad one fails, and the handle applies nothing).  The text is
 * applied at the close of the process that opened the file (FLUSH from
 * its thread group: close(2) answers with the apply's errno); a copy of the
 * descriptor (a child forked mid-write) that closes applies nothing.  What
 * is left when the last descriptor goes without the opener's close having
 * taken it is applied then (RELEASE), its errno in last_error.  An open
 * with O_TRUNC starts an empty text, applied by the close that follows a
 * write, or else by the last close: `: > file` applies an empty one (a
 * shell closes its first descriptor of the file before anything is written,
 * keeping a copy as its standard output).
 */
#ifndef ACCELFS_DEFERRED_H
#define ACCELFS_DEFERRED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct accelfs;

struct fs_deferred {
	char device[16]; /* <dev>/mig/layout: its device; quota: "" */
	uid_t uid;       /* who wrote it first: a layout's jobs are theirs */
	gid_t gid;
	char *text; /* NUL-terminated, len bytes */
	size_t len;
	bool bad;     /* a write was refused: the close applies nothing */
	bool written; /* a write came: a close may apply it (an O_TRUNC alone waits for the last close) */
	/* Apply the whole text (the row's): 0 or -errno, with its sentence in last_error. */
	int (*commit)(struct accelfs *fs, struct fs_deferred *d);
};

/* A new empty text that commit applies; NULL when out of memory. */
struct fs_deferred *fs_deferred_new(const char *device, int (*commit)(struct accelfs *fs, struct fs_deferred *d));
/*
 * Append a write at off to the text: 0, or -EINVAL (with why; the text is
 * bad from then on) when it is not where the text ends or it would pass max
 * bytes, -ENOMEM.
 */
int fs_deferred_add(struct fs_deferred *d, const char *buf, size_t size, off_t off, size_t max, const char *file,
                    char *why, size_t whylen);
/* The bytes of its complete lines (what a line-at-a-time check may look at). */
size_t fs_deferred_whole(const struct fs_deferred *d);
/* Apply it (d->commit) and free it: 0 or -errno; a bad text applies nothing and answers 0. */
int fs_deferred_commit(struct accelfs *fs, struct fs_deferred *d);
void fs_deferred_free(struct fs_deferred *d);

#endif
