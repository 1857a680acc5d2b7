/* SPDX-License-Identifier: MIT */
#include "core/state/health_store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/fileio.h"

static int path_of(const char *state_dir, const char *card_uuid, char *path, size_t len)
{
	int n = snprintf(path, len, "%s/health/%s.json", state_dir, card_uuid);

	return n < 0 || (size_t)n >= len || strchr(card_uuid, '/') ? -ENAMETOOLONG : 0;
}

static json_t *health_json(const struct accel_health *h)
{
	json_t *counts = json_array();

	for (size_t i = 0; counts && i < ACCEL_HEALTH_XIDS && h->counts[i].events; i++)
		json_array_append_new(
			counts, json_pack("[I,I]", (json_int_t)h->counts[i].xid, (json_int_t)h->counts[i].events));
	return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:o*}", "state", (int)h->state, "xid", (json_int_t)h->xid,
	                 "action", (json_int_t)h->action, "gi", (json_int_t)h->gi, "ci", (json_int_t)h->ci, "since",
	                 (json_int_t)h->since, "why", h->why, "touched", h->touched, "counts", counts);
}

static int health_from(json_t *o, struct accel_health *h)
{
	json_int_t state, xid, action, gi, ci, since;
	const char *why, *touched;
	json_t *counts = NULL, *c;
	size_t i;

	memset(h, 0, sizeof(*h));
	if (json_unpack(o, "{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s?o}", "state", &state, "xid", &xid, "action", &action,
	                "gi", &gi, "ci", &ci, "since", &since, "why", &why, "touched", &touched, "counts", &counts) ||
	    state < ACCEL_HEALTH_OK || state > ACCEL_HEALTH_FAILED)
		return -EINVAL;
	h->state = (enum accel_health_state)state;
	/* Unknown is never stored as a fault: it is said again by whoever watches the card now. */
	if (h->state == ACCEL_HEALTH_UNKNOWN)
		h->state = ACCEL_HEALTH_OK;
	h->xid = (unsigned)xid;
	h->action = (unsigned)action;
	h->gi = (unsigned)gi;
	h->ci = (unsigned)ci;
	h->since = since;
	snprintf(h->why, sizeof(h->why), "%s", why);
	snprintf(h->touched, sizeof(h->touched), "%s", touched);
	json_array_foreach(counts, i, c)
	{
		json_int_t x, n;

		if (i < ACCEL_HEALTH_XIDS && !json_unpack(c, "[I,I]", &x, &n)) {
			h->counts[i].xid = (unsigned)x;
			h->counts[i].events = (unsigned long long)n;
		}
	}
	return 0;
}

int accel_health_store_save(const char *state_dir, const char *card_uuid, const struct accel_health_book *b, char *why,
                            size_t whylen)
{
	char path[PATH_MAX], dir[PATH_MAX];
	json_t *jobs = json_array(), *doc;
	char *text;
	int ret;

	if (path_of(state_dir, card_uuid, path, sizeof(path))) {
		snprintf(why, whylen, "the card's UUID makes no file name under %s/health", state_dir);
		json_decref(jobs);
		return -ENAMETOOLONG;
	}
	for (size_t i = 0; jobs && i < b->n_jobs; i++)
		json_array_append_new(jobs, json_pack("{s:s,s:s,s:o}", "job", b->jobs[i].job, "uuid", b->jobs[i].uuid,
		                                      "health", health_json(&b->jobs[i].h)));
	doc = json_pack("{s:i,s:o,s:o*}", "format", 1, "device", health_json(&b->device), "jobs", jobs);
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!text) {
		snprintf(why, whylen, "out of memory writing the health of card %s", card_uuid);
		return -ENOMEM;
	}
	snprintf(dir, sizeof(dir), "%s/health", state_dir);
	ret = accel_mkdirs(dir, 0755);
	if (!ret)
		ret = accel_durable_write(path, text, strlen(text), 0644);
	if (ret)
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(-ret));
	free(text);
	return ret;
}

int accel_health_store_load(const char *state_dir, const char *card_uuid, struct accel_health_book *b, char *why,
                            size_t whylen)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *doc, *dev, *jobs, *j;
	size_t i;
	int ret = 0;

	if (path_of(state_dir, card_uuid, path, sizeof(path))) {
		snprintf(why, whylen, "the card's UUID makes no file name under %s/health", state_dir);
		return -ENAMETOOLONG;
	}
	doc = json_load_file(path, 0, &jerr);
	if (!doc) {
		FILE *f = fopen(path, "r");

		if (!f)
			return 0; /* never written: nothing happened yet */
		fclose(f);
		snprintf(why, whylen, "%s is not readable JSON (%s, line %d): its faults are forgotten", path,
		         jerr.text, jerr.line);
		return -EINVAL;
	}
	dev = json_object_get(doc, "device");
	jobs = json_object_get(doc, "jobs");
	if (!dev || health_from(dev, &b->device))
		ret = -EINVAL;
	json_array_foreach(jobs, i, j)
	{
		const char *job, *uuid;
		json_t *h;
		struct accel_health_entry *e;

		if (json_unpack(j, "{s:s,s:s,s:o}", "job", &job, "uuid", &uuid, "health", &h)) {
			ret = -EINVAL;
			continue;
		}
		e = accel_health_book_entry(b, job, uuid);
		if (!e) {
			ret = -ENOMEM;
			break;
		}
		if (health_from(h, &e->h))
			ret = -EINVAL;
	}
	json_decref(doc);
	if (ret)
		snprintf(why, whylen, "%s: %s; what could be read is kept", path,
		         ret == -ENOMEM ? "out of memory" : "an entry is not a health record");
	return ret;
}
