/* SPDX-License-Identifier: MIT */
/* A file written whole, a line at a time (fs/deferred.h). */
#include "fs/deferred.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fs_deferred *fs_deferred_new(const char *device, int (*commit)(struct accelfs *fs, struct fs_deferred *d))
{
	struct fs_deferred *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	snprintf(d->device, sizeof(d->device), "%s", device);
	d->commit = commit;
	return d;
}

int fs_deferred_add(struct fs_deferred *d, const char *buf, size_t size, off_t off, size_t max, const char *file,
                    char *why, size_t whylen)
{
	char *grown;

	if (off < 0 || (size_t)off != d->len || d->len + size > max) {
		d->bad = true;
		snprintf(why, whylen, "write %s from its start, in order, at most %zu bytes: nothing applied", file,
		         max);
		return -EINVAL;
	}
	grown = realloc(d->text, d->len + size + 1);
	if (!grown) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	d->text = grown;
	if (size)
		memcpy(d->text + d->len, buf, size);
	d->len += size;
	d->text[d->len] = '\0';
	d->written |= size > 0;
	return 0;
}

size_t fs_deferred_whole(const struct fs_deferred *d)
{
	size_t whole = d->len;

	while (whole && d->text[whole - 1] != '\n')
		whole--;
	return whole;
}

int fs_deferred_commit(struct accelfs *fs, struct fs_deferred *d)
{
	int ret = 0;

	if (!d)
		return 0;
	if (!d->bad && d->commit)
		ret = d->commit(fs, d);
	fs_deferred_free(d);
	return ret;
}

void fs_deferred_free(struct fs_deferred *d)
{
	if (d)
		free(d->text);
	free(d);
}
