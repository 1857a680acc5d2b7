/* SPDX-License-Identifier: MIT */
#include "core/state/delegation.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/record.h"

struct accel_delegation {
	pthread_mutex_t lock;
	char path[PATH_MAX];
	json_t *map; /* path -> {uid, gid, mode} */
};

struct accel_delegation *accel_delegation_load(const char *state_dir, char *err, size_t errlen)
{
	struct accel_delegation *d = calloc(1, sizeof(*d));
	json_error_t jerr;

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	snprintf(d->path, sizeof(d->path), "%s/delegation.json", state_dir);
	d->map = json_load_file(d->path, JSON_REJECT_DUPLICATES, &jerr);
	if (!d->map) {
		FILE *f = fopen(d->path, "r");
		if (f) {
			fclose(f);
			snprintf(err, errlen, "%s is unreadable (%s, line %d): fix or remove it", d->path, jerr.text,
			         jerr.line);
			accel_delegation_free(d);
			return NULL;
		}
		d->map = json_object();
	}
	if (!json_is_object(d->map)) {
		snprintf(err, errlen, "%s is not a JSON object: fix or remove it", d->path);
		accel_delegation_free(d);
		return NULL;
	}
	return d;
}

void accel_delegation_free(struct accel_delegation *d)
{
	if (!d)
		return;
	json_decref(d->map);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

bool accel_delegation_get(struct accel_delegation *d, const char *path, struct accel_perm *out)
{
	json_t *e;
	bool found = false;

	if (!d)
		return false;
	pthread_mutex_lock(&d->lock);
	e = json_object_get(d->map, path);
	if (json_is_object(e) && json_is_integer(json_object_get(e, "uid")) &&
	    json_is_integer(json_object_get(e, "gid")) && json_is_integer(json_object_get(e, "mode"))) {
		out->uid = (uid_t)json_integer_value(json_object_get(e, "uid"));
		out->gid = (gid_t)json_integer_value(json_object_get(e, "gid"));
		out->mode = (mode_t)json_integer_value(json_object_get(e, "mode")) & 07777;
		found = true;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

int accel_delegation_set(struct accel_delegation *d, const char *path, const struct accel_perm *perm)
{
	json_t *e = json_pack("{s:I, s:I, s:I}", "uid", (json_int_t)perm->uid, "gid", (json_int_t)perm->gid, "mode",
	                      (json_int_t)(perm->mode & 07777));
	char *text;
	int ret;

	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	json_object_set_new(d->map, path, e);
	text = json_dumps(d->map, JSON_INDENT(2) | JSON_SORT_KEYS);
	ret = text ? accel_durable_write(d->path, text, strlen(text), 0644) : -ENOMEM;
	pthread_mutex_unlock(&d->lock);
	free(text);
	return ret;
}
