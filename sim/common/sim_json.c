/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_json_check_keys(json_t *o, const char *const *allowed, const char *what, char *err, size_t errlen)
{
	const char *key;
	json_t *value;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: expected an object", what);
		return -EINVAL;
	}
	json_object_foreach(o, key, value)
	{
		bool ok = key[0] == '_';

		(void)value;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = !strcmp(key, allowed[i]);
		if (!ok) {
			snprintf(err, errlen, "%s: unknown key \"%s\"", what, key);
			return -EINVAL;
		}
	}
	return 0;
}

int sim_json_ull(json_t *o, const char *key, unsigned long long *out, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (unsigned long long)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		errno = 0;
		*out = strtoull(s, &end, 0);
		if (*s && !*end && !errno)
			return 0;
	}
	snprintf(err, errlen, "%s: \"%s\" must be a non-negative integer", what, key);
	return -EINVAL;
}

int sim_json_uint(json_t *o, const char *key, unsigned *out, const char *what, char *err, size_t errlen)
{
	unsigned long long v = *out;
	int ret = sim_json_ull(o, key, &v, what, err, errlen);

	if (ret)
		return ret;
	if (v > 0xffffffffull) {
		snprintf(err, errlen, "%s: \"%s\" is out of range", what, key);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int sim_json_bool(json_t *o, const char *key, bool *out, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "%s: \"%s\" must be true or false", what, key);
		return -EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}

int sim_json_str(json_t *o, const char *key, char *out, size_t len, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) >= len) {
		snprintf(err, errlen, "%s: \"%s\" must be a string shorter than %zu bytes", what, key, len);
		return -EINVAL;
	}
	memcpy(out, json_string_value(v), strlen(json_string_value(v)) + 1);
	return 0;
}

int sim_json_name_policy(json_t *o, enum sim_name_policy *out, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, "profile_names");

	if (!v)
		return 0;
	if (!json_is_string(v) || sim_name_policy_parse(json_string_value(v), out)) {
		snprintf(err, errlen, "%s: \"profile_names\" must be \"always\", \"when_enabled\" or \"never\"", what);
		return -EINVAL;
	}
	return 0;
}

int sim_json_require(json_t *o, const char *const *keys, const char *what, char *err, size_t errlen)
{
	for (size_t i = 0; keys[i]; i++)
		if (!json_object_get(o, keys[i])) {
			snprintf(err, errlen, "%s: \"%s\" is required", what, keys[i]);
			return -EINVAL;
		}
	return 0;
}

/* The plain fields of a profile entry; "placements" and "gi_profiles" are read apart. */
static const struct sim_field gi_profile_fields[] = {
	SIM_UINT("index", struct sim_gi_profile, index),
	SIM_UINT("id", struct sim_gi_profile, id),
	SIM_STR("name", struct sim_gi_profile, name),
	SIM_UINT("slices", struct sim_gi_profile, slices),
	SIM_UINT("instances", struct sim_gi_profile, instances),
	SIM_UINT("multiprocessors", struct sim_gi_profile, multiprocessors),
	SIM_UINT("copy_engines", struct sim_gi_profile, copy_engines),
	SIM_UINT("decoders", struct sim_gi_profile, decoders),
	SIM_UINT("encoders", struct sim_gi_profile, encoders),
	SIM_UINT("jpegs", struct sim_gi_profile, jpegs),
	SIM_UINT("ofas", struct sim_gi_profile, ofas),
	SIM_ULL("memory_mib", struct sim_gi_profile, memory_mib),
	SIM_UINT("capabilities", struct sim_gi_profile, capabilities),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field ci_profile_fields[] = {
	SIM_UINT("index", struct sim_ci_profile, index),
	SIM_UINT("id", struct sim_ci_profile, id),
	SIM_UINT("slices", struct sim_ci_profile, slices),
	SIM_UINT("multiprocessors", struct sim_ci_profile, multiprocessors),
	{ NULL, 0, 0, 0 },
};

int sim_json_read_gi_profile(json_t *o, struct sim_gi_profile *p, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "index",        "id",         "name",
		                            "slices",       "instances",  "multiprocessors",
		                            "copy_engines", "decoders",   "encoders",
		                            "jpegs",        "ofas",       "memory_mib",
		                            "capabilities", "placements", NULL };
	static const char *const required[] = { "index",     "id",         "name",       "slices",
		                                "instances", "memory_mib", "placements", NULL };
	json_t *pl;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_require(o, required, what, err, errlen);
	if (!ret)
		ret = sim_json_fields(o, gi_profile_fields, p, what, err, errlen);
	if (ret)
		return ret;
	pl = json_object_get(o, "placements");
	if (!json_is_string(pl) ||
	    sim_placements_parse(json_string_value(pl), p->placements, SIM_MAX_PLACEMENTS, &p->n_placements)) {
		snprintf(err, errlen, "%s: \"placements\" must read like \"{0,4}:4\" (or \"\" for none)", what);
		return -EINVAL;
	}
	return 0;
}

int sim_json_read_ci_profile(json_t *o, struct sim_ci_profile *c, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "index", "id", "slices", "multiprocessors", "gi_profiles", NULL };
	static const char *const required[] = { "index", "id", "slices", NULL };
	json_t *list, *v;
	size_t i;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_require(o, required, what, err, errlen);
	if (!ret)
		ret = sim_json_fields(o, ci_profile_fields, c, what, err, errlen);
	if (ret)
		return ret;
	list = json_object_get(o, "gi_profiles");
	if (!list)
		return 0;
	if (!json_is_array(list) || json_array_size(list) > SIM_MAX_GI_PROFILE_FILTER) {
		snprintf(err, errlen, "%s: \"gi_profiles\" must be an array of at most %d profile ids", what,
		         SIM_MAX_GI_PROFILE_FILTER);
		return -EINVAL;
	}
	json_array_foreach(list, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(err, errlen, "%s: \"gi_profiles\" entries must be profile ids", what);
			return -EINVAL;
		}
		c->gi_profiles[c->n_gi_profiles++] = (unsigned)json_integer_value(v);
	}
	return 0;
}

json_t *sim_json_gi_profile(const struct sim_gi_profile *p)
{
	char placements[128];

	sim_placements_format(p->placements, p->n_placements, placements, sizeof(placements));
	return json_pack("{s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "index",
	                 (json_int_t)p->index, "id", (json_int_t)p->id, "name", p->name, "slices",
	                 (json_int_t)p->slices, "instances", (json_int_t)p->instances, "multiprocessors",
	                 (json_int_t)p->multiprocessors, "copy_engines", (json_int_t)p->copy_engines, "decoders",
	                 (json_int_t)p->decoders, "encoders", (json_int_t)p->encoders, "jpegs", (json_int_t)p->jpegs,
	                 "ofas", (json_int_t)p->ofas, "memory_mib", (json_int_t)p->memory_mib, "capabilities",
	                 (json_int_t)p->capabilities, "placements", placements);
}

json_t *sim_json_ci_profile(const struct sim_ci_profile *c)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "index", (json_int_t)c->index, "id", (json_int_t)c->id, "slices",
	                      (json_int_t)c->slices, "multiprocessors", (json_int_t)c->multiprocessors);

	if (o && c->n_gi_profiles) {
		json_t *list = json_array();

		for (unsigned i = 0; i < c->n_gi_profiles; i++)
			json_array_append_new(list, json_integer(c->gi_profiles[i]));
		json_object_set_new(o, "gi_profiles", list);
	}
	return o;
}

int sim_json_fields(json_t *o, const struct sim_field *fields, void *base, const char *what, char *err, size_t errlen)
{
	int ret = 0;

	for (const struct sim_field *f = fields; !ret && f->key; f++) {
		void *at = (char *)base + f->offset;

		switch (f->type) {
		case SIM_FIELD_UINT:
			ret = sim_json_uint(o, f->key, at, what, err, errlen);
			break;
		case SIM_FIELD_ULL:
			ret = sim_json_ull(o, f->key, at, what, err, errlen);
			break;
		case SIM_FIELD_BOOL:
			ret = sim_json_bool(o, f->key, at, what, err, errlen);
			break;
		case SIM_FIELD_STR:
			ret = sim_json_str(o, f->key, at, f->size, what, err, errlen);
			break;
		}
	}
	return ret;
}

int sim_json_exact_keys(json_t *o, const char *const *keys, const char *what, char *err, size_t errlen)
{
	int ret = sim_json_check_keys(o, keys, what, err, errlen);

	return ret ? ret : sim_json_require(o, keys, what, err, errlen);
}
