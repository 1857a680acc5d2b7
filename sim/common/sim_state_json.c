/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_state_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/common/sim_json.h"

/* The keys of a card's fixed part and of its changing part, in every format that holds them. */
#define HW_KEYS                                                                                                        \
	"name", "uuid", "bus_id", "pci_device_id", "pci_subsystem_id", "minor", "memory_mib", "memory_slices",         \
		"compute_slices", "profile_names", "gi_profiles", "ci_profiles"
#define LIVE_KEYS "present", "mig_current", "mig_pending", "gpu_instances"

unsigned sim_json_format_of(json_t *root)
{
	json_t *v = json_is_object(root) ? json_object_get(root, "format") : NULL;

	return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 1000
	               ? (unsigned)json_integer_value(v)
	               : 0;
}

/* "format" and "vendor" are what the reader expects: a file of another vendor or format is refused. */
static int check_header(json_t *root, unsigned format, const char *vendor, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(root, "vendor");
	unsigned have = sim_json_format_of(root);

	if (have != format || !json_is_string(v) || strcmp(json_string_value(v), vendor) != 0) {
		snprintf(err, errlen, "%s: format %u of vendor \"%s\", expected format %u of \"%s\"", what, have,
		         json_is_string(v) ? json_string_value(v) : "", format, vendor);
		return -EINVAL;
	}
	return 0;
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
	json_t *procs = json_array();

	for (unsigned i = 0; i < ci->n_procs; i++)
		json_array_append_new(procs, json_pack("{s:I, s:I}", "pid", (json_int_t)ci->procs[i].pid, "used_bytes",
		                                       (json_int_t)ci->procs[i].used_bytes));
	json_object_set_new(o, "placement", placement_json(ci->placement));
	json_object_set_new(o, "procs", procs);
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

static json_t *fault_json(const accelsim_fault_t *f)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I}", "function", f->function, "ret", (json_int_t)f->ret, "skip",
	                 (json_int_t)f->skip, "times", (json_int_t)f->times, "fired", (json_int_t)f->fired);
}

json_t *sim_json_node(const struct sim_node *n, const char *vendor)
{
	json_t *root = json_pack("{s:I, s:s, s:I, s:I}", "format", (json_int_t)SIM_STATE_FORMAT, "vendor", vendor,
	                         "generation", (json_int_t)n->generation, "devices", (json_int_t)n->n_devices);
	json_t *faults = json_array();

	for (unsigned i = 0; i < n->n_faults; i++)
		json_array_append_new(faults, fault_json(&n->faults[i]));
	json_object_set_new(root, "faults", faults);
	return root;
}

json_t *sim_json_card_hw(const struct sim_device *d, const char *vendor)
{
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "format",
	                      (json_int_t)SIM_STATE_FORMAT, "vendor", vendor, "ordinal", (json_int_t)d->ordinal, "name",
	                      d->name, "uuid", d->uuid, "bus_id", d->bus_id, "pci_device_id",
	                      (json_int_t)d->pci_device_id, "pci_subsystem_id", (json_int_t)d->pci_subsystem_id,
	                      "minor", (json_int_t)d->minor, "memory_mib", (json_int_t)d->memory_mib, "memory_slices",
	                      (json_int_t)d->memory_slices, "compute_slices", (json_int_t)d->compute_slices,
	                      "profile_names", sim_name_policy_string(d->profile_names));
	json_t *gips = json_array(), *cips = json_array();

	for (unsigned i = 0; i < d->n_gi_profiles; i++)
		json_array_append_new(gips, sim_json_gi_profile(&d->gi_profiles[i]));
	for (unsigned i = 0; i < d->n_ci_profiles; i++)
		json_array_append_new(cips, sim_json_ci_profile(&d->ci_profiles[i]));
	json_object_set_new(o, "gi_profiles", gips);
	json_object_set_new(o, "ci_profiles", cips);
	if (d->mode_needs_reset)
		json_object_set_new(o, "mode_needs_reset", json_true());
	return o;
}

json_t *sim_json_card(const struct sim_device *d, uint64_t generation, const char *vendor)
{
	json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:b, s:I, s:I}", "format", (json_int_t)SIM_STATE_FORMAT,
	                      "vendor", vendor, "ordinal", (json_int_t)d->ordinal, "generation", (json_int_t)generation,
	                      "next_serial", (json_int_t)d->next_serial, "present", d->present, "mig_current",
	                      (json_int_t)d->mig_current, "mig_pending", (json_int_t)d->mig_pending);
	json_t *gis = json_array();

	for (unsigned i = 0; i < d->n_gis; i++)
		json_array_append_new(gis, gi_json(&d->gis[i]));
	json_object_set_new(o, "gpu_instances", gis);
	return o;
}

/* The plain fields of each object; the keys checked are these and the nested objects'. */
static const struct sim_field placement_fields[] = {
	SIM_UINT("start", struct sim_placement, start),
	SIM_UINT("size", struct sim_placement, size),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field ci_fields[] = {
	SIM_UINT("id", struct sim_ci, id),
	SIM_UINT("profile_id", struct sim_ci, profile_id),
	SIM_ULL("serial", struct sim_ci, serial),
	SIM_STR("uuid", struct sim_ci, uuid),
	SIM_UINT("processes", struct sim_ci, processes),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field gi_fields[] = {
	SIM_UINT("id", struct sim_gi, id),
	SIM_UINT("profile_id", struct sim_gi, profile_id),
	SIM_ULL("serial", struct sim_gi, serial),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field hw_fields[] = {
	SIM_STR("name", struct sim_device, name),
	SIM_STR("uuid", struct sim_device, uuid),
	SIM_STR("bus_id", struct sim_device, bus_id),
	SIM_UINT("pci_device_id", struct sim_device, pci_device_id),
	SIM_UINT("pci_subsystem_id", struct sim_device, pci_subsystem_id),
	SIM_UINT("minor", struct sim_device, minor),
	SIM_ULL("memory_mib", struct sim_device, memory_mib),
	SIM_UINT("memory_slices", struct sim_device, memory_slices),
	SIM_UINT("compute_slices", struct sim_device, compute_slices),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field live_fields[] = {
	SIM_BOOL("present", struct sim_device, present),
	SIM_UINT("mig_current", struct sim_device, mig_current),
	SIM_UINT("mig_pending", struct sim_device, mig_pending),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field fault_fields[] = {
	SIM_STR("function", accelsim_fault_t, function),
	SIM_UINT("skip", accelsim_fault_t, skip),
	SIM_UINT("times", accelsim_fault_t, times),
	SIM_UINT("fired", accelsim_fault_t, fired),
	{ NULL, 0, 0, 0 },
};

static const struct sim_field node_fields[] = {
	SIM_ULL("generation", struct sim_node, generation),
	SIM_UINT("devices", struct sim_node, n_devices),
	{ NULL, 0, 0, 0 },
};

static int read_placement(json_t *o, struct sim_placement *p, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "start", "size", NULL };
	int ret = sim_json_exact_keys(o, keys, what, err, errlen);

	return ret ? ret : sim_json_fields(o, placement_fields, p, what, err, errlen);
}

static int read_ci(json_t *o, struct sim_ci *ci, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "id",        "profile_id", "serial", "uuid",
		                            "processes", "placement",  "procs",  NULL };
	json_t *procs, *v;
	size_t i;
	int ret;

	memset(ci, 0, sizeof(*ci));
	ret = sim_json_exact_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_fields(o, ci_fields, ci, what, err, errlen);
	if (!ret)
		ret = read_placement(json_object_get(o, "placement"), &ci->placement, what, err, errlen);
	if (ret)
		return ret;
	procs = json_object_get(o, "procs");
	if (!json_is_array(procs) || json_array_size(procs) > ACCELSIM_MAX_PROCESSES ||
	    json_array_size(procs) > ci->processes) {
		snprintf(err, errlen, "%s: \"procs\" must be an array of at most %d, and at most \"processes\"", what,
		         ACCELSIM_MAX_PROCESSES);
		return -EINVAL;
	}
	json_array_foreach(procs, i, v)
	{
		json_t *pid = json_object_get(v, "pid"), *used = json_object_get(v, "used_bytes");

		if (!json_is_integer(pid) || !json_is_integer(used) || json_object_size(v) != 2) {
			snprintf(err, errlen, "%s: each of \"procs\" is {\"pid\", \"used_bytes\"}", what);
			return -EINVAL;
		}
		ci->procs[ci->n_procs++] = (struct sim_proc){ (unsigned)json_integer_value(pid),
			                                      (unsigned long long)json_integer_value(used) };
	}
	return 0;
}

static int read_gi(json_t *o, struct sim_gi *gi, const char *what, char *err, size_t errlen)
{
	static const char *const keys[] = { "id", "profile_id", "serial", "placement", "compute_instances", NULL };
	json_t *cis, *v;
	size_t i;
	int ret;

	memset(gi, 0, sizeof(*gi));
	ret = sim_json_exact_keys(o, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_fields(o, gi_fields, gi, what, err, errlen);
	if (!ret)
		ret = read_placement(json_object_get(o, "placement"), &gi->placement, what, err, errlen);
	if (ret)
		return ret;
	cis = json_object_get(o, "compute_instances");
	if (!json_is_array(cis) || json_array_size(cis) > SIM_MAX_CI) {
		snprintf(err, errlen, "%s: \"compute_instances\" must be an array of at most %d", what, SIM_MAX_CI);
		return -EINVAL;
	}
	json_array_foreach(cis, i, v)
	{
		ret = read_ci(v, &gi->cis[gi->n_cis++], what, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* The fixed fields of a card, from its hw file. */
static int read_hw_fields(json_t *o, struct sim_device *d, const char *what, char *err, size_t errlen)
{
	json_t *gips = json_object_get(o, "gi_profiles"), *cips = json_object_get(o, "ci_profiles"), *v;
	size_t i;
	int ret = sim_json_fields(o, hw_fields, d, what, err, errlen);

	if (!ret)
		ret = sim_json_name_policy(o, &d->profile_names, what, err, errlen);
	if (ret)
		return ret;
	if (!json_is_array(gips) || !json_is_array(cips)) {
		snprintf(err, errlen, "%s: gi_profiles and ci_profiles must be arrays", what);
		return -EINVAL;
	}
	d->gi_profiles = calloc(json_array_size(gips) + 1, sizeof(*d->gi_profiles));
	d->ci_profiles = calloc(json_array_size(cips) + 1, sizeof(*d->ci_profiles));
	if (!d->gi_profiles || !d->ci_profiles)
		return -ENOMEM;
	json_array_foreach(gips, i, v)
	{
		ret = sim_json_read_gi_profile(v, &d->gi_profiles[d->n_gi_profiles++], what, err, errlen);
		if (ret)
			return ret;
	}
	json_array_foreach(cips, i, v)
	{
		ret = sim_json_read_ci_profile(v, &d->ci_profiles[d->n_ci_profiles++], what, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* The changing fields of a card, from its card file. */
static int read_live_fields(json_t *o, struct sim_device *d, const char *what, char *err, size_t errlen)
{
	json_t *list = json_object_get(o, "gpu_instances"), *v;
	size_t i;
	int ret = sim_json_fields(o, live_fields, d, what, err, errlen);

	if (ret)
		return ret;
	if (!json_is_array(list) || json_array_size(list) > SIM_MAX_GI) {
		snprintf(err, errlen, "%s: \"gpu_instances\" must be an array of at most %d", what, SIM_MAX_GI);
		return -EINVAL;
	}
	d->n_gis = 0;
	json_array_foreach(list, i, v)
	{
		ret = read_gi(v, &d->gis[d->n_gis++], what, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int check_ordinal(json_t *o, unsigned ordinal, const char *what, char *err, size_t errlen)
{
	unsigned have = ~0u;
	int ret = sim_json_uint(o, "ordinal", &have, what, err, errlen);

	if (!ret && have != ordinal) {
		snprintf(err, errlen, "%s: carries ordinal %u", what, have);
		ret = -EINVAL;
	}
	return ret;
}

int sim_json_read_card_hw(json_t *root, const char *vendor, unsigned ordinal, struct sim_device *d, char *err,
                          size_t errlen)
{
	static const char *const keys[] = { "format", "vendor", "ordinal", HW_KEYS, NULL };
	/* Optional: a state made before it was known reads as the default. */
	static const char *const known[] = { "format", "vendor", "ordinal", HW_KEYS, "mode_needs_reset", NULL };
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "card %u (hw)", ordinal);
	ret = sim_json_check_keys(root, known, what, err, errlen);
	if (!ret)
		ret = sim_json_require(root, keys, what, err, errlen);
	if (!ret)
		ret = sim_json_bool(root, "mode_needs_reset", &d->mode_needs_reset, what, err, errlen);
	if (!ret)
		ret = check_header(root, SIM_STATE_FORMAT, vendor, what, err, errlen);
	if (!ret)
		ret = check_ordinal(root, ordinal, what, err, errlen);
	d->ordinal = ordinal;
	if (!ret)
		ret = read_hw_fields(root, d, what, err, errlen);
	return ret;
}

int sim_json_read_card(json_t *root, const char *vendor, unsigned ordinal, struct sim_device *d, uint64_t *generation,
                       char *err, size_t errlen)
{
	static const char *const keys[] = {
		"format", "vendor", "ordinal", "generation", "next_serial", LIVE_KEYS, NULL
	};
	unsigned long long gen = 0;
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "card %u", ordinal);
	ret = sim_json_exact_keys(root, keys, what, err, errlen);
	if (!ret)
		ret = check_header(root, SIM_STATE_FORMAT, vendor, what, err, errlen);
	if (!ret)
		ret = check_ordinal(root, ordinal, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(root, "generation", &gen, what, err, errlen);
	if (!ret)
		ret = sim_json_ull(root, "next_serial", &d->next_serial, what, err, errlen);
	if (!ret)
		ret = read_live_fields(root, d, what, err, errlen);
	*generation = gen;
	return ret;
}

static int read_faults(json_t *list, struct sim_node *n, char *err, size_t errlen)
{
	static const char *const keys[] = { "function", "ret", "skip", "times", "fired", NULL };
	json_t *o;
	size_t i;

	if (!json_is_array(list) || json_array_size(list) > ACCELSIM_MAX_FAULTS) {
		snprintf(err, errlen, "state: \"faults\" must be an array of at most %d", ACCELSIM_MAX_FAULTS);
		return -EINVAL;
	}
	n->n_faults = 0;
	json_array_foreach(list, i, o)
	{
		accelsim_fault_t *f = &n->faults[n->n_faults++];
		unsigned ret_code = 0;
		int ret;

		memset(f, 0, sizeof(*f));
		ret = sim_json_exact_keys(o, keys, "state fault", err, errlen);
		if (!ret)
			ret = sim_json_fields(o, fault_fields, f, "state fault", err, errlen);
		/* The driver's code is an enum: read as a number, then converted. */
		if (!ret)
			ret = sim_json_uint(o, "ret", &ret_code, "state fault", err, errlen);
		f->ret = (mig_return_t)ret_code;
		if (ret)
			return ret;
	}
	return 0;
}

int sim_json_read_node(json_t *root, const char *vendor, struct sim_node *n, char *err, size_t errlen)
{
	static const char *const keys[] = { "format", "vendor", "generation", "devices", "faults", NULL };
	int ret;

	memset(n, 0, sizeof(*n));
	ret = sim_json_exact_keys(root, keys, "node", err, errlen);
	if (!ret)
		ret = check_header(root, SIM_STATE_FORMAT, vendor, "node", err, errlen);
	if (!ret)
		ret = sim_json_fields(root, node_fields, n, "node", err, errlen);
	if (!ret && n->n_devices > SIM_MAX_DEVICES) {
		snprintf(err, errlen, "node: at most %d cards", SIM_MAX_DEVICES);
		ret = -EINVAL;
	}
	if (!ret)
		ret = read_faults(json_object_get(root, "faults"), n, err, errlen);
	return ret;
}
