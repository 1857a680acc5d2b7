/* SPDX-License-Identifier: MIT */
#include "core/intent.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"

char *accel_intent_to_json(const struct accel_intent *in)
{
	json_t *o = json_pack("{s:i, s:s, s:i, s:{s:i, s:i}, s:I, s:s, s:I}", "version", ACCEL_INTENT_VERSION, "job",
	                      in->job, "profile_id", (int)in->profile_id, "placement", "start",
	                      (int)in->placement.start, "size", (int)in->placement.size, "gi",
	                      in->gi == UINT_MAX ? (json_int_t)-1 : (json_int_t)in->gi, "uuid", in->uuid, "created",
	                      (json_int_t)in->created);
	char *s;

	if (!o)
		return NULL;
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static bool get_uint(json_t *o, const char *key, unsigned *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0xfffffffeLL)
		return false;
	*out = (unsigned)json_integer_value(v);
	return true;
}

int accel_intent_parse(const char *text, const char *expect_job, long expect_start, struct accel_intent *out, char *why,
                       size_t whylen)
{
	json_error_t jerr;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr), *v, *pl;
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
	if (!bad) {
		snprintf(out->job, sizeof(out->job), "%s", json_string_value(json_object_get(o, "job")));
		out->gi = json_integer_value(v) < 0 ? UINT_MAX : (unsigned)json_integer_value(v);
		snprintf(out->uuid, sizeof(out->uuid), "%s", json_string_value(json_object_get(o, "uuid")));
		out->created = json_integer_value(json_object_get(o, "created"));
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

int accel_intent_write(const char *state_dir, const char *family, const char *card_uuid, const struct accel_intent *in,
                       char *why, size_t whylen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	char *json;
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);

	if (!ret)
		ret = intent_path(path, sizeof(path), state_dir, family, card_uuid, in->job, in->placement.start);
	if (ret) {
		snprintf(why, whylen, "intent path too long");
		return ret;
	}
	json = accel_intent_to_json(in);
	if (!json) {
		snprintf(why, whylen, "out of memory serializing the intent");
		return -ENOMEM;
	}
	ret = accel_durable_write(path, json, strlen(json), 0600);
	if (ret == -ENOENT || ret == -ENOTDIR) {
		ret = accel_mkdirs(dir, 0700);
		if (!ret)
			ret = accel_durable_write(path, json, strlen(json), 0600);
	}
	free(json);
	if (ret)
		snprintf(why, whylen, "cannot write the intent %s: %s", path, strerror(-ret));
	return ret;
}

int accel_intent_remove(const char *state_dir, const char *family, const char *card_uuid, const char *job,
                        unsigned start, bool durable, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int ret = intent_path(path, sizeof(path), state_dir, family, card_uuid, job, start);

	if (ret) {
		snprintf(why, whylen, "intent path too long");
		return ret;
	}
	if (durable)
		ret = accel_durable_unlink(path);
	else
		ret = unlink(path) ? -errno : 0;
	if (ret && ret != -ENOENT) {
		snprintf(why, whylen, "cannot remove the intent %s: %s", path, strerror(-ret));
		return ret;
	}
	return 0;
}

static int load_one(const char *dir, const char *name, struct accel_intent *out, char *why, size_t whylen)
{
	char path[PATH_MAX], job[ACCEL_JOB_NAME_MAX + 1], text[4096], *end;
	const char *at = strchr(name, '@');
	size_t len = at ? (size_t)(at - name) : 0;
	long start = at ? strtol(at + 1, &end, 10) : -1;
	FILE *f;
	size_t n;
	int ret;

	if (len == 0 || len >= sizeof(job) || start < 0 || strcmp(end, ".intent")) {
		snprintf(why, whylen, "not an intent file name (<job>@<start>.intent)");
		return -EINVAL;
	}
	memcpy(job, name, len);
	job[len] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f) {
		snprintf(why, whylen, "cannot read: %s", strerror(errno));
		return -errno;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (ret) {
		snprintf(why, whylen, "cannot read: %s", strerror(EIO));
		return ret;
	}
	text[n] = '\0';
	return accel_intent_parse(text, job, start, out, why, whylen);
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
		if (strstr(de->d_name, ".intent.tmp.")) { /* an interrupted write: it never was an intent */
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
			struct accel_record_bad *n = realloc(*bad, (*n_bad + 1) * sizeof(*n));
			if (!n) {
				ret = -ENOMEM;
				break;
			}
			*bad = n;
			snprintf(n[*n_bad].path, sizeof(n[*n_bad].path), "%s/%s", dir, de->d_name);
			snprintf(n[*n_bad].why, sizeof(n[*n_bad].why), "%s", why);
			(*n_bad)++;
		}
	}
	closedir(d);
	return ret;
}

bool accel_intent_matches(const struct accel_intent *in, const struct accel_live_gi *g)
{
	bool uuid_ok = !in->uuid[0];

	if (in->profile_id != g->profile_id || in->placement.start != g->placement.start ||
	    in->placement.size != g->placement.size || (in->gi != UINT_MAX && in->gi != g->id))
		return false;
	for (unsigned i = 0; i < g->n_ci && !uuid_ok; i++)
		uuid_ok = !strcmp(g->ci[i].uuid, in->uuid);
	return uuid_ok;
}
