/* SPDX-License-Identifier: MIT */
#include "core/state/intent.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/state/fileio.h"
#include "core/state/intent_slots.h"
#include "core/state/state_file.h"

char *accel_intent_to_json(const struct accel_intent *in)
{
	json_t *o = json_pack("{s:i, s:s, s:i, s:{s:i, s:i}, s:I, s:s, s:I}", "version", ACCEL_INTENT_VERSION, "job",
	                      in->job, "profile_id", (int)in->profile_id, "placement", "start",
	                      (int)in->placement.start, "size", (int)in->placement.size, "gi",
	                      in->gi == UINT_MAX ? (json_int_t)-1 : (json_int_t)in->gi, "uuid", in->uuid, "created",
	                      (json_int_t)in->created);

	if (o && in->boot[0] && json_object_set_new(o, "boot", json_string(in->boot))) {
		json_decref(o);
		return NULL;
	}
	return accel_state_json_text(o);
}

/* UINT_MAX is no id: an intent's gi says -1 for "not yet known". */
static bool get_uint(json_t *o, const char *key, unsigned *out)
{
	return accel_state_json_uint(o, key, 0xfffffffeULL, out);
}

int accel_intent_parse(const char *text, const char *expect_job, long expect_start, struct accel_intent *out, char *why,
                       size_t whylen)
{
	json_error_t jerr;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr), *v, *pl, *boot;
	const char *bad = NULL;
	unsigned version;

	memset(out, 0, sizeof(*out));
	if (!o) {
		snprintf(why, whylen, "not JSON: %s (line %d)", jerr.text, jerr.line);
		return -EINVAL;
	}
	if (!json_is_object(o) || !get_uint(o, "version", &version) || version != ACCEL_INTENT_VERSION)
		bad = "missing or unknown version";
	else if (!json_is_string(v = json_object_get(o, "job")) || !*json_string_value(v) ||
	         strlen(json_string_value(v)) >= sizeof(out->job))
		bad = "missing job";
	else if (!get_uint(o, "profile_id", &out->profile_id))
		bad = "missing profile_id";
	else if (!json_is_object(pl = json_object_get(o, "placement")) ||
	         !get_uint(pl, "start", &out->placement.start) || !get_uint(pl, "size", &out->placement.size) ||
	         !out->placement.size)
		bad = "missing or empty placement";
	else if (!json_is_integer(v = json_object_get(o, "gi")) || json_integer_value(v) < -1 ||
	         json_integer_value(v) > 0xfffffffeLL)
		bad = "missing gi";
	else if (!json_is_string(json_object_get(o, "uuid")) ||
	         strlen(json_string_value(json_object_get(o, "uuid"))) >= sizeof(out->uuid))
		bad = "missing uuid";
	else if (!json_is_integer(json_object_get(o, "created")))
		bad = "missing created";
	else if ((boot = json_object_get(o, "boot")) &&
	         (!json_is_string(boot) || strlen(json_string_value(boot)) >= sizeof(out->boot)))
		bad = "a boot that is not a boot id";
	if (!bad) {
		snprintf(out->job, sizeof(out->job), "%s", json_string_value(json_object_get(o, "job")));
		out->gi = json_integer_value(v) < 0 ? UINT_MAX : (unsigned)json_integer_value(v);
		snprintf(out->uuid, sizeof(out->uuid), "%s", json_string_value(json_object_get(o, "uuid")));
		out->created = json_integer_value(json_object_get(o, "created"));
		if (boot)
			snprintf(out->boot, sizeof(out->boot), "%s", json_string_value(boot));
		if ((expect_job && strcmp(out->job, expect_job)) ||
		    (expect_start >= 0 && (long)out->placement.start != expect_start))
			bad = "job or placement does not match the file name";
	}
	json_decref(o);
	if (bad) {
		snprintf(why, whylen, "%s", bad);
		return -EINVAL;
	}
	return 0;
}

/* '@' is never in a job name (accel_job_name_check): the file name says both. */
static int intent_path(char *buf, size_t len, const char *state_dir, const char *family, const char *card_uuid,
                       const char *job, unsigned start)
{
	char dir[PATH_MAX];
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);

	if (ret)
		return ret;
	return snprintf(buf, len, "%s/%s@%u.intent", dir, job, start) >= (int)len ? -ENAMETOOLONG : 0;
}

/* The card's slots file (core/state/intent_slots.h) and an intent's key there: "<job>@<start>", as a file's name. */
static int slots_of(char *buf, size_t len, char *key, size_t keylen, const char *state_dir, const char *family,
                    const char *card_uuid, const char *job, unsigned start)
{
	char dir[PATH_MAX];
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);

	if (ret)
		return ret;
	if (snprintf(key, keylen, "%s@%u", job, start) >= (int)keylen)
		return -ENAMETOOLONG;
	return snprintf(buf, len, "%s/%s", dir, ACCEL_SLOTS_FILE) >= (int)len ? -ENAMETOOLONG : 0;
}

int accel_intent_write(const char *state_dir, const char *family, const char *card_uuid, const struct accel_intent *in,
                       char *why, size_t whylen)
{
	char dir[PATH_MAX], path[PATH_MAX], slots[PATH_MAX], key[ACCEL_JOB_NAME_MAX + 16];
	char *json;
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);

	if (!ret)
		ret = intent_path(path, sizeof(path), state_dir, family, card_uuid, in->job, in->placement.start);
	if (!ret)
		ret = slots_of(slots, sizeof(slots), key, sizeof(key), state_dir, family, card_uuid, in->job,
		               in->placement.start);
	if (ret) {
		snprintf(why, whylen, "intent path too long");
		return ret;
	}
	json = accel_intent_to_json(in);
	if (!json) {
		snprintf(why, whylen, "out of memory serializing the intent");
		return -ENOMEM;
	}
	/* A slot of the card's file, written in place, not synced: bound to the boot (intent.h). */
	ret = accel_slots_put(slots, key, json);
	if (ret == -ENOENT || ret == -ENOTDIR) {
		ret = accel_mkdirs(dir, 0700);
		if (!ret)
			ret = accel_slots_put(slots, key, json);
	}
	/* No slot free (a card that has kept 64 intents) or too long for one: a file of its own, as ever. */
	if (ret == -ENOSPC) {
		ret = accel_durable_write(path, json, strlen(json), 0600);
		if (ret)
			snprintf(why, whylen, "cannot write the intent %s: %s", path, strerror(-ret));
	} else if (ret) {
		snprintf(why, whylen, "cannot write the intent into %s: %s", slots, strerror(-ret));
	}
	free(json);
	return ret;
}

int accel_intent_remove(const char *state_dir, const char *family, const char *card_uuid, const char *job,
                        unsigned start, bool durable, char *why, size_t whylen)
{
	char path[PATH_MAX], slots[PATH_MAX], key[ACCEL_JOB_NAME_MAX + 16];
	int ret = intent_path(path, sizeof(path), state_dir, family, card_uuid, job, start);

	if (!ret)
		ret = slots_of(slots, sizeof(slots), key, sizeof(key), state_dir, family, card_uuid, job, start);
	if (ret) {
		snprintf(why, whylen, "intent path too long");
		return ret;
	}
	ret = accel_slots_clear(slots, key, durable);
	if (ret && ret != -ENOENT) {
		snprintf(why, whylen, "cannot remove the intent %s from %s: %s", key, slots, strerror(-ret));
		return ret;
	}
	if (!ret)
		return 0;
	/* Not in a slot: a file of its own (no slot was free, or an accelfs before slots wrote it). */
	return accel_state_file_remove(path, durable, "the intent", why, whylen);
}

static int load_one(const char *dir, const char *name, struct accel_intent *out, char *why, size_t whylen)
{
	char path[PATH_MAX], job[ACCEL_JOB_NAME_MAX + 1], *text, *end;
	const char *at = strchr(name, '@');
	size_t len = at ? (size_t)(at - name) : 0;
	long start = at ? strtol(at + 1, &end, 10) : -1;
	int ret;

	if (len == 0 || len >= sizeof(job) || start < 0 || strcmp(end, ".intent")) {
		snprintf(why, whylen, "not an intent file name (<job>@<start>.intent)");
		return -EINVAL;
	}
	memcpy(job, name, len);
	job[len] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = accel_state_file_read(path, 4095, &ret, why, whylen);
	if (!text)
		return ret;
	ret = accel_intent_parse(text, job, start, out, why, whylen);
	free(text);
	return ret;
}

static int add_bad(struct accel_record_bad **bad, size_t *n_bad, const char *path, const char *why)
{
	struct accel_record_bad *n = realloc(*bad, (*n_bad + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	*bad = n;
	snprintf(n[*n_bad].path, sizeof(n[*n_bad].path), "%s", path);
	snprintf(n[*n_bad].why, sizeof(n[*n_bad].why), "%s", why);
	(*n_bad)++;
	return 0;
}

struct slots_load {
	const char *dir;
	struct accel_intent **out;
	size_t *n_out;
	struct accel_record_bad **bad;
	size_t *n_bad;
};

/* One whole slot: its key says the job and the start, as a file's name does. */
static int load_slot(void *ctx, const char *key, const char *text)
{
	struct slots_load *l = ctx;
	char job[ACCEL_JOB_NAME_MAX + 1], why[256], where[PATH_MAX + 96], *end;
	const char *at = strchr(key, '@');
	size_t len = at ? (size_t)(at - key) : 0;
	long start = at ? strtol(at + 1, &end, 10) : -1;
	struct accel_intent in;
	int ret = -EINVAL;

	snprintf(where, sizeof(where), "%s/%s (%s)", l->dir, ACCEL_SLOTS_FILE, key);
	if (len == 0 || len >= sizeof(job) || start < 0 || *end) {
		snprintf(why, sizeof(why), "not an intent's key (<job>@<start>)");
	} else {
		memcpy(job, key, len);
		job[len] = '\0';
		ret = accel_intent_parse(text, job, start, &in, why, sizeof(why));
	}
	if (ret)
		return add_bad(l->bad, l->n_bad, where, why);
	struct accel_intent *n = realloc(*l->out, (*l->n_out + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	*l->out = n;
	n[(*l->n_out)++] = in;
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a > b && !strcmp(s + a - b, tail);
}

int accel_intent_load_card(const char *state_dir, const char *family, const char *card_uuid, struct accel_intent **out,
                           size_t *n_out, struct accel_record_bad **bad, size_t *n_bad)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);

	*out = NULL;
	*n_out = 0;
	if (ret)
		return ret;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		struct accel_intent in;
		char why[256];

		if (de->d_name[0] == '.')
			continue;
		/* An interrupted write: it never was an intent (the slots file's first making, too: empty). */
		if (strstr(de->d_name, ".intent.tmp.") ||
		    !strncmp(de->d_name, ACCEL_SLOTS_FILE ".tmp.", sizeof(ACCEL_SLOTS_FILE ".tmp.") - 1)) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
			continue;
		}
		if (!ends_with(de->d_name, ".intent"))
			continue;
		if (load_one(dir, de->d_name, &in, why, sizeof(why)) == 0) {
			struct accel_intent *n = realloc(*out, (*n_out + 1) * sizeof(*n));
			if (!n) {
				ret = -ENOMEM;
				break;
			}
			*out = n;
			n[(*n_out)++] = in;
		} else {
			char path[PATH_MAX + 256];
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if ((ret = add_bad(bad, n_bad, path, why)))
				break;
		}
	}
	closedir(d);
	if (!ret) {
		struct slots_load l = { dir, out, n_out, bad, n_bad };
		char slots[PATH_MAX];
		snprintf(slots, sizeof(slots), "%s/%s", dir, ACCEL_SLOTS_FILE);
		ret = accel_slots_each(slots, load_slot, &l);
		if (ret && ret != -ENOMEM)
			ret = add_bad(bad, n_bad, slots,
			              strerror(-ret)); /* which instances are the card's: unknowable */
	}
	return ret;
}

bool accel_intent_of_this_boot(const struct accel_intent *in)
{
	return !in->boot[0] || !accel_boot_id()[0] || !strcmp(in->boot, accel_boot_id());
}

bool accel_intent_matches(const struct accel_intent *in, const struct accel_live_gi *g)
{
	bool uuid_ok = !in->uuid[0];

	if (!accel_intent_of_this_boot(in) || in->profile_id != g->profile_id ||
	    in->placement.start != g->placement.start || in->placement.size != g->placement.size ||
	    (in->gi != UINT_MAX && in->gi != g->id))
		return false;
	for (unsigned i = 0; i < g->n_ci && !uuid_ok; i++)
		uuid_ok = !strcmp(g->ci[i].uuid, in->uuid);
	return uuid_ok;
}
