/* SPDX-License-Identifier: MIT */
#include "core/state/state_file.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/state/fileio.h"

char *accel_state_json_text(json_t *o)
{
	char *s;

	if (!o)
		return NULL;
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

bool accel_state_json_uint(json_t *o, const char *key, unsigned long long max, unsigned *out)
{
	json_t *v = json_object_get(o, key);
	json_int_t i;

	if (!json_is_integer(v))
		return false;
	i = json_integer_value(v);
	if (i < 0 || (unsigned long long)i > max)
		return false;
	*out = (unsigned)i;
	return true;
}

int accel_state_file_write(const char *dir, const char *path, char *text, const char *what, char *why, size_t whylen)
{
	int ret;

	if (!text) {
		snprintf(why, whylen, "out of memory serializing %s", what);
		return -ENOMEM;
	}
	/* The card's directory exists after its first job: create it only when the write says it is missing. */
	ret = accel_durable_write(path, text, strlen(text), 0600);
	if (ret == -ENOENT || ret == -ENOTDIR) {
		ret = accel_mkdirs(dir, 0700);
		if (ret) {
			free(text);
			snprintf(why, whylen, "cannot create %s: %s", dir, strerror(-ret));
			return ret;
		}
		ret = accel_durable_write(path, text, strlen(text), 0600);
	}
	free(text);
	if (ret)
		snprintf(why, whylen, "cannot write %s %s: %s", what, path, strerror(-ret));
	return ret;
}

int accel_state_file_remove(const char *path, bool durable, const char *what, char *why, size_t whylen)
{
	/* Once the unlink is done, a failed directory sync only weakens durability. */
	int ret = durable ? accel_durable_unlink(path) : unlink(path) ? -errno : 0;

	if (ret && ret != -ENOENT) {
		snprintf(why, whylen, "cannot remove %s %s: %s", what, path, strerror(-ret));
		return ret;
	}
	return 0;
}

char *accel_state_file_read(const char *path, size_t max, int *err, char *why, size_t whylen)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	*err = f ? 0 : -errno;
	buf = f ? malloc(max + 1) : NULL;
	if (f && !buf)
		*err = -ENOMEM;
	if (buf) {
		n = fread(buf, 1, max, f);
		if (ferror(f)) {
			*err = -EIO;
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	if (f)
		fclose(f);
	if (!buf)
		snprintf(why, whylen, "cannot read: %s", strerror(-*err));
	return buf;
}

/* Append one item of size bytes to *items: false when out of memory. */
static bool append(void **items, size_t *n, const void *item, size_t size)
{
	char *grown = realloc(*items, (*n + 1) * size);

	if (!grown)
		return false;
	memcpy(grown + *n * size, item, size);
	*items = grown;
	(*n)++;
	return true;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a > b && !strcmp(s + a - b, tail);
}

int accel_state_files_load(const char *dir, const char *suffix, size_t item_size, accel_state_file_load_fn load,
                           void *ctx, void **items, size_t *n_items, struct accel_record_bad **bad, size_t *n_bad)
{
	char tmp[32];
	struct dirent *de;
	void *item = calloc(1, item_size);
	DIR *d;
	int ret = 0;

	if (!item)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), "%s.tmp.", suffix); /* accel_durable_write's temporaries */
	d = opendir(dir);
	if (!d) {
		free(item);
		return errno == ENOENT ? 0 : -errno;
	}
	while ((de = readdir(d))) {
		struct accel_record_bad b;

		if (de->d_name[0] == '.')
			continue;
		if (strstr(de->d_name, tmp)) { /* an interrupted write: it never was a file of the kind */
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
			continue;
		}
		if (!ends_with(de->d_name, suffix))
			continue;
		memset(item, 0, item_size);
		memset(&b, 0, sizeof(b));
		if (!load(dir, de->d_name, item, ctx, b.why, sizeof(b.why))) {
			if (!append(items, n_items, item, item_size)) {
				ret = -ENOMEM;
				break;
			}
			continue;
		}
		snprintf(b.path, sizeof(b.path), "%s/%s", dir, de->d_name);
		struct accel_record_bad *grown = realloc(*bad, (*n_bad + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		*bad = grown;
		grown[(*n_bad)++] = b;
	}
	closedir(d);
	free(item);
	return ret;
}
