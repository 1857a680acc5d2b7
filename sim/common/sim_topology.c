/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/common/sim_json.h"
#include "sim/common/sim_uuid.h"

static const char *const section_keys[] = { "count",
	                                    "name",
	                                    "memory_mib",
	                                    "mig_mode",
	                                    "profile_names",
	                                    "memory_slices",
	                                    "compute_slices",
	                                    "pci_device_id",
	                                    "pci_subsystem_id",
	                                    "gi_profiles",
	                                    "ci_profiles",
	                                    "extra_gi_profiles",
	                                    "extra_ci_profiles",
	                                    "devices",
	                                    NULL };

static const char *const device_keys[] = { "name",
	                                   "uuid",
	                                   "bus_id",
	                                   "minor",
	                                   "memory_mib",
	                                   "mig_mode",
	                                   "profile_names",
	                                   "present",
	                                   "mode_needs_reset",
	                                   "pci_device_id",
	                                   "pci_subsystem_id",
	                                   "gi_profiles",
	                                   "ci_profiles",
	                                   "extra_gi_profiles",
	                                   "extra_ci_profiles",
	                                   NULL };

/*
 * The user's section over the built-in one: scalars and profile lists
 * replace, "devices" merges card by card, and the "extra_*" lists add to the
 * profiles (so a test can append one quirky profile to the real table).
 */
static json_t *merge_section(json_t *builtin, json_t *user)
{
	json_t *merged = json_deep_copy(builtin);
	const char *key;
	json_t *value;

	json_object_foreach(user, key, value)
	{
		if (!strcmp(key, "devices") && json_is_object(value) && json_is_object(json_object_get(merged, key))) {
			json_t *devices = json_object_get(merged, key);
			const char *ord;
			json_t *dev;

			json_object_foreach(value, ord, dev)
			{
				json_t *base = json_object_get(devices, ord);

				if (json_is_object(base) && json_is_object(dev))
					json_object_update(base, dev);
				else
					json_object_set(devices, ord, dev);
			}
		} else {
			json_object_set(merged, key, value);
		}
	}
	return merged;
}

typedef int (*read_entry_fn)(json_t *o, void *out, const char *what, char *err, size_t errlen);

static int read_gi_entry(json_t *o, void *out, const char *what, char *err, size_t errlen)
{
	return sim_json_read_gi_profile(o, out, what, err, errlen);
}

static int read_ci_entry(json_t *o, void *out, const char *what, char *err, size_t errlen)
{
	return sim_json_read_ci_profile(o, out, what, err, errlen);
}

/* Append the entries of list (absent: none) to the array *arr of *n entries of size bytes each. */
static int read_list(json_t *list, const char *what, const char *of, void **arr, size_t size, unsigned *n,
                     read_entry_fn read_one, char *err, size_t errlen)
{
	size_t i;
	json_t *v;

	if (!list)
		return 0;
	if (!json_is_array(list)) {
		snprintf(err, errlen, "%s: expected an array of %s", what, of);
		return -EINVAL;
	}
	if (json_array_size(list)) {
		void *grown = realloc(*arr, (*n + json_array_size(list)) * size);

		if (!grown)
			return -ENOMEM;
		*arr = grown;
	}
	json_array_foreach(list, i, v)
	{
		int ret = read_one(v, (char *)*arr + (size_t)*n * size, what, err, errlen);

		if (ret)
			return ret;
		(*n)++;
	}
	return 0;
}

static int read_gi_list(json_t *list, const char *what, struct sim_gi_profile **arr, unsigned *n, char *err,
                        size_t errlen)
{
	void *a = *arr;
	int ret = read_list(list, what, "GPU-instance profiles", &a, sizeof(**arr), n, read_gi_entry, err, errlen);

	*arr = a;
	return ret;
}

static int read_ci_list(json_t *list, const char *what, struct sim_ci_profile **arr, unsigned *n, char *err,
                        size_t errlen)
{
	void *a = *arr;
	int ret = read_list(list, what, "compute-instance profiles", &a, sizeof(**arr), n, read_ci_entry, err, errlen);

	*arr = a;
	return ret;
}

/* A profile table the engine can trust: indices in range and unique, placements on the card. */
static int validate_profiles(const struct sim_vendor *v, const struct sim_device *d, const char *what, char *err,
                             size_t errlen)
{
	for (unsigned i = 0; i < d->n_gi_profiles; i++) {
		const struct sim_gi_profile *p = &d->gi_profiles[i];

		if (p->index >= v->gi_profile_count) {
			snprintf(err, errlen, "%s: GI profile index %u is not below the API's count %u", what, p->index,
			         v->gi_profile_count);
			return -EINVAL;
		}
		for (unsigned j = 0; j < i; j++)
			if (d->gi_profiles[j].index == p->index) {
				snprintf(err, errlen, "%s: two GI profiles at index %u", what, p->index);
				return -EINVAL;
			}
		if (p->slices == 0 || p->slices > d->compute_slices) {
			snprintf(err, errlen, "%s: GI profile %u: slices must be 1..%u", what, p->id,
			         d->compute_slices);
			return -EINVAL;
		}
		for (unsigned k = 0; k < p->n_placements; k++)
			if (p->placements[k].start + p->placements[k].size > d->memory_slices) {
				snprintf(err, errlen, "%s: GI profile %u: placement %u:%u leaves the %u memory slices",
				         what, p->id, p->placements[k].start, p->placements[k].size, d->memory_slices);
				return -EINVAL;
			}
	}
	for (unsigned i = 0; i < d->n_ci_profiles; i++) {
		const struct sim_ci_profile *c = &d->ci_profiles[i];

		if (c->index >= v->ci_profile_count) {
			snprintf(err, errlen, "%s: CI profile index %u is not below the API's count %u", what, c->index,
			         v->ci_profile_count);
			return -EINVAL;
		}
		for (unsigned j = 0; j < i; j++)
			if (d->ci_profiles[j].index == c->index) {
				snprintf(err, errlen, "%s: two CI profiles at index %u", what, c->index);
				return -EINVAL;
			}
		if (c->slices == 0) {
			snprintf(err, errlen, "%s: CI profile %u: slices must be at least 1", what, c->id);
			return -EINVAL;
		}
	}
	return 0;
}

static int build_device(const struct sim_vendor *v, json_t *section, json_t *over, unsigned ordinal,
                        struct sim_device *d, char *err, size_t errlen)
{
	char what[64];
	bool mig_mode = false;
	json_t *gi_list, *ci_list;
	int ret;

	snprintf(what, sizeof(what), "topology %s device %u", v->dir, ordinal);
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->present = true;
	d->next_serial = 1;
	d->minor = ordinal + v->minor_offset;
	snprintf(d->bus_id, sizeof(d->bus_id), "00000000:%02X:00.0", 0x10 + ordinal * 8);

	/* Section defaults first, then the card's own overrides. */
	json_t *layers[2] = { section, over };
	for (int l = 0; l < 2; l++) {
		json_t *o = layers[l];

		if (!o)
			continue;
		ret = sim_json_str(o, "name", d->name, sizeof(d->name), what, err, errlen);
		if (!ret)
			ret = sim_json_ull(o, "memory_mib", &d->memory_mib, what, err, errlen);
		if (!ret)
			ret = sim_json_bool(o, "mig_mode", &mig_mode, what, err, errlen);
		if (!ret)
			ret = sim_json_name_policy(o, &d->profile_names, what, err, errlen);
		if (!ret)
			ret = sim_json_uint(o, "pci_device_id", &d->pci_device_id, what, err, errlen);
		if (!ret)
			ret = sim_json_uint(o, "pci_subsystem_id", &d->pci_subsystem_id, what, err, errlen);
		if (ret)
			return ret;
	}
	ret = sim_json_uint(section, "memory_slices", &d->memory_slices, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(section, "compute_slices", &d->compute_slices, what, err, errlen);
	if (!ret && over)
		ret = sim_json_str(over, "uuid", d->uuid, sizeof(d->uuid), what, err, errlen);
	if (!ret && over)
		ret = sim_json_str(over, "bus_id", d->bus_id, sizeof(d->bus_id), what, err, errlen);
	if (!ret && over)
		ret = sim_json_uint(over, "minor", &d->minor, what, err, errlen);
	if (!ret && over)
		ret = sim_json_bool(over, "present", &d->present, what, err, errlen);
	if (!ret && over)
		ret = sim_json_bool(over, "mode_needs_reset", &d->mode_needs_reset, what, err, errlen);
	if (ret)
		return ret;
	if (d->memory_slices == 0 || d->memory_slices > SIM_MAX_SLICES || d->compute_slices == 0 ||
	    d->compute_slices > SIM_MAX_SLICES) {
		snprintf(err, errlen, "%s: memory_slices and compute_slices must be 1..%d", what, SIM_MAX_SLICES);
		return -EINVAL;
	}
	d->mig_current = d->mig_pending = mig_mode ? MIG_DEVICE_MIG_ENABLE : MIG_DEVICE_MIG_DISABLE;
	if (!d->uuid[0]) {
		ret = sim_uuid_generate("GPU-", d->uuid, sizeof(d->uuid));
		if (ret) {
			snprintf(err, errlen, "%s: no randomness for a UUID", what);
			return ret;
		}
	}

	/* The card's own table replaces the section's; both extras add to it. */
	gi_list = over && json_object_get(over, "gi_profiles") ? json_object_get(over, "gi_profiles")
	                                                       : json_object_get(section, "gi_profiles");
	ci_list = over && json_object_get(over, "ci_profiles") ? json_object_get(over, "ci_profiles")
	                                                       : json_object_get(section, "ci_profiles");
	ret = read_gi_list(gi_list, what, &d->gi_profiles, &d->n_gi_profiles, err, errlen);
	if (!ret)
		ret = read_gi_list(json_object_get(section, "extra_gi_profiles"), what, &d->gi_profiles,
		                   &d->n_gi_profiles, err, errlen);
	if (!ret && over)
		ret = read_gi_list(json_object_get(over, "extra_gi_profiles"), what, &d->gi_profiles, &d->n_gi_profiles,
		                   err, errlen);
	if (!ret)
		ret = read_ci_list(ci_list, what, &d->ci_profiles, &d->n_ci_profiles, err, errlen);
	if (!ret)
		ret = read_ci_list(json_object_get(section, "extra_ci_profiles"), what, &d->ci_profiles,
		                   &d->n_ci_profiles, err, errlen);
	if (!ret && over)
		ret = read_ci_list(json_object_get(over, "extra_ci_profiles"), what, &d->ci_profiles, &d->n_ci_profiles,
		                   err, errlen);
	if (!ret)
		ret = validate_profiles(v, d, what, err, errlen);
	return ret;
}

static int build_from_section(const struct sim_vendor *v, json_t *section, struct sim_state *s, char *err,
                              size_t errlen)
{
	char what[64];
	unsigned count = 0;
	json_t *devices;
	const char *key;
	json_t *value;
	int ret;

	snprintf(what, sizeof(what), "topology section \"%s\"", v->dir);
	ret = sim_json_check_keys(section, section_keys, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(section, "count", &count, what, err, errlen);
	if (ret)
		return ret;
	if (count > SIM_MAX_DEVICES) {
		snprintf(err, errlen, "%s: at most %d cards", what, SIM_MAX_DEVICES);
		return -EINVAL;
	}
	devices = json_object_get(section, "devices");
	if (devices) {
		if (!json_is_object(devices)) {
			snprintf(err, errlen, "%s: \"devices\" must map card ordinals to objects", what);
			return -EINVAL;
		}
		json_object_foreach(devices, key, value)
		{
			char *end;
			unsigned long ord = strtoul(key, &end, 10);
			char dwhat[96];

			snprintf(dwhat, sizeof(dwhat), "%s device \"%s\"", what, key);
			if (!*key || *end) {
				snprintf(err, errlen, "%s: not a card ordinal", dwhat);
				return -EINVAL;
			}
			(void)ord; /* overrides for cards beyond count are ignored: count may shrink a node */
			ret = sim_json_check_keys(value, device_keys, dwhat, err, errlen);
			if (ret)
				return ret;
		}
	}
	s->devices = calloc(count + 1, sizeof(*s->devices));
	if (!s->devices)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		char ord[16];

		snprintf(ord, sizeof(ord), "%u", i);
		ret = build_device(v, section, devices ? json_object_get(devices, ord) : NULL, i, &s->devices[i], err,
		                   errlen);
		s->n_devices++;
		if (ret)
			return ret;
	}
	return 0;
}

int sim_topology_build(const struct sim_vendor *v, const char *topology_path, struct sim_state *s, char *err,
                       size_t errlen)
{
	json_error_t jerr;
	json_t *builtin, *user = NULL, *section, *merged = NULL;
	int ret;

	memset(s, 0, sizeof(*s));
	builtin = json_loads(sim_builtin_topology, 0, &jerr);
	if (!builtin || !json_is_object(json_object_get(builtin, v->dir))) {
		snprintf(err, errlen, "the built-in topology has no \"%s\" section", v->dir);
		json_decref(builtin);
		return -EINVAL;
	}
	section = json_object_get(builtin, v->dir);
	if (topology_path) {
		user = json_load_file(topology_path, 0, &jerr);
		if (!user || !json_is_object(user)) {
			snprintf(err, errlen, "topology %s: %s (line %d)", topology_path,
			         user ? "not a JSON object" : jerr.text, jerr.line);
			ret = -EINVAL;
			goto out;
		}
		if (json_object_get(user, v->dir)) {
			json_t *us = json_object_get(user, v->dir);

			/* null: this vendor is absent from the node. */
			if (json_is_null(us)) {
				ret = 0;
				goto out;
			}
			if (!json_is_object(us)) {
				snprintf(err, errlen, "topology %s: \"%s\" must be an object or null", topology_path,
				         v->dir);
				ret = -EINVAL;
				goto out;
			}
			merged = merge_section(section, us);
			section = merged;
		}
	}
	ret = build_from_section(v, section, s, err, errlen);
out:
	if (ret)
		sim_state_free(s);
	json_decref(merged);
	json_decref(user);
	json_decref(builtin);
	return ret;
}
