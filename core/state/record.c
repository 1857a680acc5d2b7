/* SPDX-License-Identifier: MIT */
#include "core/state/record.h"

#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int accel_record_dir(char *buf, size_t len, const char *state_dir, const char *family, const char *card_uuid)
{
	int n = snprintf(buf, len, "%s/records/%s/%s", state_dir, family, card_uuid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static const char *phase_str(enum accel_record_phase p)
{
	return p == ACCEL_RECORD_REMOVING ? "removing" : "active";
}

char *accel_record_to_json(const struct accel_record *r)
{
	json_t *o = json_pack(
		"{s:i, s:s, s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:{s:i, s:i}, s:s, s:I, s:I, s:I, s:s}", "version",
		ACCEL_RECORD_VERSION, "family", r->family, "card", r->card_uuid, "ordinal", (int)r->ordinal, "job",
		r->job, "profile", r->profile, "profile_id", (int)r->profile_id, "gi", (int)r->gi, "ci", (int)r->ci,
		"ci_profile_id", (int)r->ci_profile_id, "placement", "start", (int)r->placement.start, "size",
		(int)r->placement.size, "uuid", r->uuid, "uid", (json_int_t)r->uid, "gid", (json_int_t)r->gid,
		"created", (json_int_t)r->created, "phase", phase_str(r->phase));

	return accel_state_json_text(o);
}

static bool get_uint(json_t *o, const char *key, unsigned *out)
{
	return accel_state_json_uint(o, key, 0xffffffffULL, out);
}

static bool get_str(json_t *o, const char *key, char *out, size_t len, bool allow_empty)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	if ((!allow_empty && !*s) || strlen(s) >= len)
		return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

int accel_record_parse(const char *text, const char *expect_family, const char *expect_card, const char *expect_job,
                       struct accel_record *out, char *why, size_t whylen)
{
	json_error_t jerr;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr), *pl;
	unsigned version, uid, gid;
	char phase[16];
	const char *bad = NULL;

	memset(out, 0, sizeof(*out));
	out->mig_index = UINT_MAX; /* a lookup hint, learnt again at the first lookup */
	if (!o) {
		snprintf(why, whylen, "not JSON: %s (line %d)", jerr.text, jerr.line);
		return -EINVAL;
	}
	if (!json_is_object(o))
		bad = "not a JSON object";
	else if (!get_uint(o, "version", &version))
		bad = "missing version";
	else if (version != ACCEL_RECORD_VERSION)
		bad = "unknown record version";
	else if (!get_str(o, "family", out->family, sizeof(out->family), false))
		bad = "missing family";
	else if (!get_str(o, "card", out->card_uuid, sizeof(out->card_uuid), false))
		bad = "missing card";
	else if (!get_uint(o, "ordinal", &out->ordinal))
		bad = "missing ordinal";
	else if (!get_str(o, "job", out->job, sizeof(out->job), false))
		bad = "missing job";
	else if (!get_str(o, "profile", out->profile, sizeof(out->profile), false))
		bad = "missing profile";
	else if (!get_uint(o, "profile_id", &out->profile_id))
		bad = "missing profile_id";
	else if (!get_uint(o, "gi", &out->gi))
		bad = "missing gi";
	else if (!get_uint(o, "ci", &out->ci))
		bad = "missing ci";
	else if (!get_uint(o, "ci_profile_id", &out->ci_profile_id))
		bad = "missing ci_profile_id";
	else if (!json_is_object(pl = json_object_get(o, "placement")) ||
	         !get_uint(pl, "start", &out->placement.start) || !get_uint(pl, "size", &out->placement.size) ||
	         out->placement.size == 0)
		bad = "missing or empty placement";
	else if (!get_str(o, "uuid", out->uuid, sizeof(out->uuid), false))
		bad = "missing uuid";
	else if (!get_uint(o, "uid", &uid) || !get_uint(o, "gid", &gid))
		bad = "missing uid/gid";
	else if (!json_is_integer(json_object_get(o, "created")))
		bad = "missing created";
	else if (!get_str(o, "phase", phase, sizeof(phase), false) ||
	         (strcmp(phase, "active") && strcmp(phase, "removing")))
		bad = "missing or unknown phase";
	else if (accel_job_name_check_stored(out->job))
		bad = "job name is not valid";
	else if (expect_family && strcmp(out->family, expect_family))
		bad = "family does not match the directory";
	else if (expect_card && strcmp(out->card_uuid, expect_card))
		bad = "card does not match the directory it is filed under";
	else if (expect_job && strcmp(out->job, expect_job))
		bad = "job does not match the file name";

	if (!bad) {
		out->uid = (uid_t)uid;
		out->gid = (gid_t)gid;
		out->created = json_integer_value(json_object_get(o, "created"));
		out->phase = strcmp(phase, "removing") ? ACCEL_RECORD_ACTIVE : ACCEL_RECORD_REMOVING;
	}
	json_decref(o);
	if (bad) {
		snprintf(why, whylen, "%s", bad);
		return -EINVAL;
	}
	return 0;
}

static int record_path(char *buf, size_t len, const char *state_dir, const struct accel_record *r)
{
	char dir[PATH_MAX];
	int ret = accel_record_dir(dir, sizeof(dir), state_dir, r->family, r->card_uuid);

	if (ret)
		return ret;
	return snprintf(buf, len, "%s/%s.json", dir, r->job) >= (int)len ? -ENAMETOOLONG : 0;
}

int accel_record_write(const char *state_dir, const struct accel_record *r, char *why, size_t whylen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int ret;

	ret = accel_record_dir(dir, sizeof(dir), state_dir, r->family, r->card_uuid);
	if (!ret)
		ret = record_path(path, sizeof(path), state_dir, r);
	if (ret) {
		snprintf(why, whylen, "record path too long");
		return ret;
	}
	return accel_state_file_write(dir, path, accel_record_to_json(r), "the record", why, whylen);
}

int accel_record_remove(const char *state_dir, const struct accel_record *r, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int ret = record_path(path, sizeof(path), state_dir, r);

	return ret ? ret : accel_state_file_remove(path, true, "the record", why, whylen);
}

int accel_record_load(const char *path, const char *expect_family, const char *expect_card, struct accel_record *out,
                      char *why, size_t whylen)
{
	char name[ACCEL_JOB_NAME_MAX + 8];
	const char *base = strrchr(path, '/');
	size_t blen;
	int err;
	char *text;

	base = base ? base + 1 : path;
	blen = strlen(base);
	if (blen <= 5 || blen - 5 > ACCEL_JOB_NAME_MAX || strcmp(base + blen - 5, ".json")) {
		snprintf(why, whylen, "not a record file name");
		return -EINVAL;
	}
	memcpy(name, base, blen - 5);
	name[blen - 5] = '\0';
	text = accel_state_file_read(path, 64 * 1024, &err, why, whylen);
	if (!text)
		return err;
	err = accel_record_parse(text, expect_family, expect_card, name, out, why, whylen);
	free(text);
	return err;
}

/* One record file of a card's directory; ctx: the family and card it must say. */
static int load_one(const char *dir, const char *name, void *item, void *ctx, char *why, size_t whylen)
{
	const char *const *expect = ctx;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return accel_record_load(path, expect[0], expect[1], item, why, whylen);
}

int accel_record_load_card(const char *state_dir, const char *family, const char *card_uuid, struct accel_record **out,
                           size_t *n_out, struct accel_record_bad **bad, size_t *n_bad)
{
	const char *expect[] = { family, card_uuid };
	char dir[PATH_MAX];
	void *items = NULL;
	int ret;

	*out = NULL;
	*n_out = 0;
	*bad = NULL;
	*n_bad = 0;
	ret = accel_record_dir(dir, sizeof(dir), state_dir, family, card_uuid);
	if (ret)
		return ret;
	ret = accel_state_files_load(dir, ".json", sizeof(**out), load_one, expect, &items, n_out, bad, n_bad);
	*out = items;
	return ret;
}
