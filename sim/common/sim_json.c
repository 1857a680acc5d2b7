/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_FORMAT 1

int sim_json_check_keys(json_t *o, const char *const *allowed, const char *what, char *err, size_t errlen)
{
	const char *key;
	json_t *value;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: expected an object", what);
		return -EINVAL;
	}
	json_object_foreach(o, key, value) {
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

static int require(json_t *o, const char *const *keys, const char *what, char *err, size_t errlen)
{
	for (size_t i = 0; keys[i]; i++)
		if (!json_object_get(o, keys[i])) {
			snprintf(err, errlen, "%s: \"%s\" is required", what, keys[i]);
			return -EINVAL;
		}
	return 0;
}

int sim_json_read_gi_profile(json_t *o, struct sim_gi_profile *p, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "index", "id", "name", "slices", "instances", "multiprocessors",
					    "copy_engines", "decoders", "encoders", "jpegs", "ofas", "memory_mib",
					    "capabilities", "placements", NULL };
	static const char *const required[] = { "index", "id", "name", "slices", "instances", "memory_mib",
						"placements", NULL };
	json_t *pl;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = require(o, required, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "index", &p->index, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "id", &p->id, what, err, errlen);
	if (!ret)
		ret = sim_json_str(o, "name", p->name, sizeof(p->name), what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "slices", &p->slices, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "instances", &p->instances, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "multiprocessors", &p->multiprocessors, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "copy_engines", &p->copy_engines, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "decoders", &p->decoders, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "encoders", &p->encoders, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "jpegs", &p->jpegs, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "ofas", &p->ofas, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(o, "memory_mib", &p->memory_mib, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "capabilities", &p->capabilities, what, err, errlen);
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
		ret = require(o, required, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "index", &c->index, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "id", &c->id, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "slices", &c->slices, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "multiprocessors", &c->multiprocessors, what, err, errlen);
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
	json_array_foreach(list, i, v) {
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
	json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "index", (json_int_t)c->index, "id", (json_int_t)c->id,
			      "slices", (json_int_t)c->slices, "multiprocessors", (json_int_t)c->multiprocessors);

	if (o && c->n_gi_profiles) {
		json_t *list = json_array();

		for (unsigned i = 0; i < c->n_gi_profiles; i++)
			json_array_append_new(list, json_integer(c->gi_profiles[i]));
		json_object_set_new(o, "gi_profiles", list);
	}
	return o;
}

static json_t *placement_json(struct sim_placement p)
{
	return json_pack("{s:I, s:I}", "start", (json_int_t)p.start, "size", (json_int_t)p.size);
}

static json_t *ci_json(const struct sim_ci *ci)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:I}", "id", (json_int_t)ci->id, "profile_id",
			      (json_int_t)ci->profile_id, "serial", (json_int_t)ci->serial, "uuid", ci->uuid,
			      "processes", (json_int_t)ci->processes);

	json_object_set_new(o, "placement", placement_json(ci->placement));
	return o;
}

static json_t *gi_json(const struct sim_gi *gi)
{
	json_t *o = json_pack("{s:I, s:I, s:I}", "id", (json_int_t)gi->id, "profile_id", (json_int_t)gi->profile_id,
			      "serial", (json_int_t)gi->serial);
	json_t *cis = json_array();

	json_object_set_new(o, "placement", placement_json(gi->placement));
	for (unsigned i = 0; i < gi->n_cis; i++)
		json_array_append_new(cis, ci_json(&gi->cis[i]));
	json_object_set_new(o, "compute_instances", cis);
	return o;
}

static json_t *device_json(const struct sim_device *d)
{
	json_t *o = json_pack("{s:I, s:b, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "ordinal",
			      (json_int_t)d->ordinal, "present", d->present, "name", d->name, "uuid", d->uuid,
			      "bus_id", d->bus_id, "pci_device_id", (json_int_t)d->pci_device_id, "pci_subsystem_id",
			      (json_int_t)d->pci_subsystem_id, "minor", (json_int_t)d->minor, "memory_mib",
			      (json_int_t)d->memory_mib, "mig_current", (json_int_t)d->mig_current, "mig_pending",
			      (json_int_t)d->mig_pending, "memory_slices", (json_int_t)d->memory_slices,
			      "compute_slices", (json_int_t)d->compute_slices);
	json_t *gips = json_array(), *cips = json_array(), *gis = json_array();

	for (unsigned i = 0; i < d->n_gi_profiles; i++)
		json_array_append_new(gips, sim_json_gi_profile(&d->gi_profiles[i]));
	for (unsigned i = 0; i < d->n_ci_profiles; i++)
		json_array_append_new(cips, sim_json_ci_profile(&d->ci_profiles[i]));
	for (unsigned i = 0; i < d->n_gis; i++)
		json_array_append_new(gis, gi_json(&d->gis[i]));
	json_object_set_new(o, "profile_names", json_string(sim_name_policy_string(d->profile_names)));
	json_object_set_new(o, "gi_profiles", gips);
	json_object_set_new(o, "ci_profiles", cips);
	json_object_set_new(o, "gpu_instances", gis);
	return o;
}

static json_t *fault_json(const accelsim_fault_t *f)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I}", "function", f->function, "ret", (json_int_t)f->ret, "skip",
			 (json_int_t)f->skip, "times", (json_int_t)f->times, "fired", (json_int_t)f->fired);
}

json_t *sim_state_to_json(const struct sim_state *s, const char *vendor)
{
	json_t *root = json_pack("{s:I, s:s, s:I, s:I}", "format", (json_int_t)STATE_FORMAT, "vendor", vendor,
				 "generation", (json_int_t)s->generation, "next_serial", (json_int_t)s->next_serial);
	json_t *devices = json_array(), *faults = json_array();

	for (unsigned i = 0; i < s->n_devices; i++)
		json_array_append_new(devices, device_json(&s->devices[i]));
	for (unsigned i = 0; i < s->n_faults; i++)
		json_array_append_new(faults, fault_json(&s->faults[i]));
	json_object_set_new(root, "devices", devices);
	json_object_set_new(root, "faults", faults);
	return root;
}

static int read_placement(json_t *o, struct sim_placement *p, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "start", "size", NULL };
	int ret = sim_json_check_keys(o, keys, what, err, errlen);

	if (!ret)
		ret = require(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "start", &p->start, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "size", &p->size, what, err, errlen);
	return ret;
}

static int read_ci(json_t *o, struct sim_ci *ci, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "id", "profile_id", "serial", "uuid", "processes", "placement", NULL };
	int ret;

	memset(ci, 0, sizeof(*ci));
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = require(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "id", &ci->id, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "profile_id", &ci->profile_id, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(o, "serial", &ci->serial, what, err, errlen);
	if (!ret)
		ret = sim_json_str(o, "uuid", ci->uuid, sizeof(ci->uuid), what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "processes", &ci->processes, what, err, errlen);
	if (!ret)
		ret = read_placement(json_object_get(o, "placement"), &ci->placement, what, err, errlen);
	return ret;
}

static int read_gi(json_t *o, struct sim_gi *gi, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "id", "profile_id", "serial", "placement", "compute_instances", NULL };
	json_t *cis, *v;
	size_t i;
	int ret;

	memset(gi, 0, sizeof(*gi));
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = require(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "id", &gi->id, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "profile_id", &gi->profile_id, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(o, "serial", &gi->serial, what, err, errlen);
	if (!ret)
		ret = read_placement(json_object_get(o, "placement"), &gi->placement, what, err, errlen);
	if (ret)
		return ret;
	cis = json_object_get(o, "compute_instances");
	if (!json_is_array(cis) || json_array_size(cis) > SIM_MAX_CI) {
		snprintf(err, errlen, "%s: \"compute_instances\" must be an array of at most %d", what, SIM_MAX_CI);
		return -EINVAL;
	}
	json_array_foreach(cis, i, v) {
		ret = read_ci(v, &gi->cis[gi->n_cis++], what, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int read_device(json_t *o, struct sim_device *d, char *err, size_t errlen)
{
	static const char *const keys[] = { "ordinal", "present", "name", "uuid", "bus_id", "pci_device_id",
					    "pci_subsystem_id", "minor", "memory_mib", "mig_current", "mig_pending",
					    "memory_slices", "compute_slices", "profile_names", "gi_profiles",
					    "ci_profiles", "gpu_instances", NULL };
	char what[64];
	json_t *list, *v;
	size_t i;
	int ret;

	snprintf(what, sizeof(what), "state device %u", d->ordinal);
	ret = sim_json_check_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = require(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "ordinal", &d->ordinal, what, err, errlen);
	if (!ret)
		ret = sim_json_bool(o, "present", &d->present, what, err, errlen);
	if (!ret)
		ret = sim_json_str(o, "name", d->name, sizeof(d->name), what, err, errlen);
	if (!ret)
		ret = sim_json_str(o, "uuid", d->uuid, sizeof(d->uuid), what, err, errlen);
	if (!ret)
		ret = sim_json_str(o, "bus_id", d->bus_id, sizeof(d->bus_id), what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "pci_device_id", &d->pci_device_id, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "pci_subsystem_id", &d->pci_subsystem_id, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "minor", &d->minor, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(o, "memory_mib", &d->memory_mib, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "mig_current", &d->mig_current, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "mig_pending", &d->mig_pending, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "memory_slices", &d->memory_slices, what, err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "compute_slices", &d->compute_slices, what, err, errlen);
	if (!ret)
		ret = sim_json_name_policy(o, &d->profile_names, what, err, errlen);
	if (ret)
		return ret;

	list = json_object_get(o, "gi_profiles");
	if (!json_is_array(list))
		goto bad_list;
	d->gi_profiles = calloc(json_array_size(list) + 1, sizeof(*d->gi_profiles));
	if (!d->gi_profiles)
		return -ENOMEM;
	json_array_foreach(list, i, v) {
		ret = sim_json_read_gi_profile(v, &d->gi_profiles[d->n_gi_profiles++], what, err, errlen);
		if (ret)
			return ret;
	}
	list = json_object_get(o, "ci_profiles");
	if (!json_is_array(list))
		goto bad_list;
	d->ci_profiles = calloc(json_array_size(list) + 1, sizeof(*d->ci_profiles));
	if (!d->ci_profiles)
		return -ENOMEM;
	json_array_foreach(list, i, v) {
		ret = sim_json_read_ci_profile(v, &d->ci_profiles[d->n_ci_profiles++], what, err, errlen);
		if (ret)
			return ret;
	}
	list = json_object_get(o, "gpu_instances");
	if (!json_is_array(list) || json_array_size(list) > SIM_MAX_GI)
		goto bad_list;
	json_array_foreach(list, i, v) {
		ret = read_gi(v, &d->gis[d->n_gis++], what, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
bad_list:
	snprintf(err, errlen, "%s: gi_profiles, ci_profiles and gpu_instances must be arrays", what);
	return -EINVAL;
}

static int read_fault(json_t *o, accelsim_fault_t *f, char *err, size_t errlen)
{
	static const char *const keys[] = { "function", "ret", "skip", "times", "fired", NULL };
	unsigned ret_code = 0;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = sim_json_check_keys(o, keys, "state fault", err, errlen);
	if (!ret)
		ret = require(o, keys, "state fault", err, errlen);
	if (!ret)
		ret = sim_json_str(o, "function", f->function, sizeof(f->function), "state fault", err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "ret", &ret_code, "state fault", err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "skip", &f->skip, "state fault", err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "times", &f->times, "state fault", err, errlen);
	if (!ret)
		ret = sim_json_uint(o, "fired", &f->fired, "state fault", err, errlen);
	f->ret = (mig_return_t)ret_code;
	return ret;
}

int sim_state_from_json(json_t *root, const char *vendor, struct sim_state *s, char *err, size_t errlen)
{
	static const char *const keys[] = { "format", "vendor", "generation", "next_serial", "devices", "faults",
					    NULL };
	unsigned format = 0;
	char file_vendor[32] = "";
	json_t *list, *v;
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = sim_json_check_keys(root, keys, "state", err, errlen);
	if (!ret)
		ret = require(root, keys, "state", err, errlen);
	if (!ret)
		ret = sim_json_uint(root, "format", &format, "state", err, errlen);
	if (!ret)
		ret = sim_json_str(root, "vendor", file_vendor, sizeof(file_vendor), "state", err, errlen);
	if (!ret)
		ret = sim_json_ull(root, "generation", &s->generation, "state", err, errlen);
	if (!ret)
		ret = sim_json_ull(root, "next_serial", &s->next_serial, "state", err, errlen);
	if (ret)
		return ret;
	if (format != STATE_FORMAT || strcmp(file_vendor, vendor) != 0) {
		snprintf(err, errlen, "state: format %u of vendor \"%s\", expected format %d of \"%s\"", format,
			 file_vendor, STATE_FORMAT, vendor);
		return -EINVAL;
	}
	list = json_object_get(root, "devices");
	if (!json_is_array(list) || json_array_size(list) > SIM_MAX_DEVICES) {
		snprintf(err, errlen, "state: \"devices\" must be an array of at most %d", SIM_MAX_DEVICES);
		return -EINVAL;
	}
	s->devices = calloc(json_array_size(list) + 1, sizeof(*s->devices));
	if (!s->devices)
		return -ENOMEM;
	json_array_foreach(list, i, v) {
		s->devices[s->n_devices].ordinal = (unsigned)i;
		ret = read_device(v, &s->devices[s->n_devices++], err, errlen);
		if (ret)
			goto fail;
		if (s->devices[i].ordinal != i) {
			snprintf(err, errlen, "state: device %zu carries ordinal %u", i, s->devices[i].ordinal);
			ret = -EINVAL;
			goto fail;
		}
	}
	list = json_object_get(root, "faults");
	if (!json_is_array(list) || json_array_size(list) > ACCELSIM_MAX_FAULTS) {
		snprintf(err, errlen, "state: \"faults\" must be an array of at most %d", ACCELSIM_MAX_FAULTS);
		ret = -EINVAL;
		goto fail;
	}
	json_array_foreach(list, i, v) {
		ret = read_fault(v, &s->faults[s->n_faults++], err, errlen);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	sim_state_free(s);
	return ret;
}
