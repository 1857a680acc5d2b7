/* SPDX-License-Identifier: MIT */
/*
 * accel-smi with no command: a status table of every card and its MIG
 * devices, as nvidia-smi prints with no arguments; and --json: the cards
 * as node.json's devices[] says them (the keys the driver itself knows:
 * the job names and notes are the daemon's).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/names.h"
#include "tools/smi-mig.h"

/* One card as both forms say it. */
struct card {
	unsigned index, minor, mode, pending, n_gis;
	char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE], bus_id[32];
	unsigned long long total_mib, used_mib;
	bool have_mode, have_minor, have_memory;
	struct smi_gi gis[MAX_GIS];
};

static void read_card(struct smi *s, mig_device_t dev, unsigned index, struct card *c)
{
	mig_pci_info_t pci;
	mig_memory_t mem;

	memset(c, 0, sizeof(*c));
	c->index = index;
	snprintf(c->name, sizeof(c->name), "N/A");
	snprintf(c->uuid, sizeof(c->uuid), "N/A");
	s->lib.DeviceGetName(dev, c->name, sizeof(c->name));
	s->lib.DeviceGetUUID(dev, c->uuid, sizeof(c->uuid));
	c->have_minor = s->lib.DeviceGetMinorNumber(dev, &c->minor) == MIG_SUCCESS;
	c->have_mode = s->lib.DeviceGetMigMode(dev, &c->mode, &c->pending) == MIG_SUCCESS;
	if (s->lib.DeviceGetPciInfo_v3 && s->lib.DeviceGetPciInfo_v3(dev, &pci) == MIG_SUCCESS)
		snprintf(c->bus_id, sizeof(c->bus_id), "%s", pci.busId);
	if (s->lib.DeviceGetMemoryInfo && s->lib.DeviceGetMemoryInfo(dev, &mem) == MIG_SUCCESS) {
		c->have_memory = true;
		c->total_mib = mem.total >> 20;
		c->used_mib = mem.used >> 20;
	}
	if (c->have_mode && c->mode == MIG_DEVICE_MIG_ENABLE)
		c->n_gis = smi_gpu_instances(s, dev, c->gis, MAX_GIS);
}

/* The MIG device (its UUID) of GPU instance gi's compute instance ci: "" if the driver lists none. */
static void mig_uuid(struct smi *s, mig_device_t dev, unsigned gi, unsigned ci, char *out, size_t len)
{
	unsigned max = 0;

	out[0] = '\0';
	if (s->lib.DeviceGetMaxMigDeviceCount(dev, &max) != MIG_SUCCESS)
		return;
	for (unsigned i = 0; i < max; i++) {
		mig_device_t mig;
		unsigned g = 0, c = 0;

		if (s->lib.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) != MIG_SUCCESS ||
		    s->lib.DeviceGetGpuInstanceId(mig, &g) != MIG_SUCCESS ||
		    s->lib.DeviceGetComputeInstanceId(mig, &c) != MIG_SUCCESS || g != gi || c != ci)
			continue;
		s->lib.DeviceGetUUID(mig, out, len);
		return;
	}
}

/* The compute instances of a GPU instance, by id (at most max). */
static unsigned ci_ids(struct smi *s, mig_gpu_instance_t gi, unsigned *ids, unsigned max)
{
	struct smi_ci_profile p[SMI_MAX_PROFILES];
	unsigned np = smi_ci_profiles(s, gi, p, SMI_MAX_PROFILES), n = 0;

	for (unsigned k = 0; k < np && n < max; k++) {
		mig_compute_instance_t cis[16];
		unsigned got = 0;

		if (s->lib.GpuInstanceGetComputeInstances(gi, p[k].info.id, cis, &got) != MIG_SUCCESS)
			continue;
		for (unsigned c = 0; c < got && n < max; c++) {
			mig_compute_instance_info_t info;
			if (s->lib.ComputeInstanceGetInfo_v2(cis[c], &info) == MIG_SUCCESS)
				ids[n++] = info.id;
		}
	}
	return n;
}

/* The tree's name of a GPU-instance profile ("4g.48gb"), as node.json's instances say it. */
static void tree_profile(struct smi *s, mig_device_t dev, unsigned profile_id, char *out, size_t len)
{
	char raw[MIG_DEVICE_NAME_V2_BUFFER_SIZE];

	smi_mig_gi_profile_name(s, dev, profile_id, raw, sizeof(raw));
	if (accel_name_from_driver(raw, s->family->publish_geometry, out, len, NULL, 0) != ACCEL_NAME_OK)
		snprintf(out, len, "%s", raw); /* not offered in the tree: the vendor's, as node.json does */
}

int smi_cmd_status(struct smi *s)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES];
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES), rows = 0;
	static struct card c;

	if (!n)
		return SMI_NO_DEVICE;
	printf("accel-smi %s   driver library: %s\n\n", ACCELFS_VERSION, s->lib.path);
	printf("%-4s %-6s %-24s %-16s %-9s %-17s %s\n", s->word, "TREE", "NAME", "BUS-ID", "MIG", "MEMORY-USAGE",
	       "MIG-DEVICES");
	for (unsigned i = 0; i < n; i++) {
		char tree[24], mem[32] = "N/A";

		read_card(s, devices[i], indices[i], &c);
		snprintf(tree, sizeof(tree), "%s%u", s->family->tree_prefix, c.index);
		if (c.have_memory)
			snprintf(mem, sizeof(mem), "%llu/%llu MiB", c.used_mib, c.total_mib);
		printf("%-4u %-6s %-24.24s %-16s %-9s %-17s %u\n", c.index, tree, c.name,
		       c.bus_id[0] ? c.bus_id : "N/A",
		       !c.have_mode                         ? "N/A"
		       : c.mode == c.pending                ? (c.mode == MIG_DEVICE_MIG_ENABLE ? "Enabled" : "Disabled")
		       : c.pending == MIG_DEVICE_MIG_ENABLE ? "Off>On"
		                                            : "On>Off",
		       mem, c.n_gis);
	}
	printf("\n%-4s %-4s %-4s %-12s %-11s %s\n", s->word, "GI", "CI", "PROFILE", "PLACEMENT", "UUID");
	for (unsigned i = 0; i < n; i++) {
		read_card(s, devices[i], indices[i], &c);
		for (unsigned g = 0; g < c.n_gis; g++) {
			unsigned ids[8], nci = ci_ids(s, c.gis[g].handle, ids, 8);
			char profile[MIG_DEVICE_NAME_V2_BUFFER_SIZE], place[24], uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
			const mig_gpu_instance_info_t *gi = &c.gis[g].info;

			tree_profile(s, devices[i], gi->profileId, profile, sizeof(profile));
			snprintf(place, sizeof(place), "%u:%u", gi->placement.start, gi->placement.size);
			for (unsigned k = 0; k < (nci ? nci : 1); k++, rows++) {
				char ci[12] = "-";
				uuid[0] = '\0';
				if (nci) {
					snprintf(ci, sizeof(ci), "%u", ids[k]);
					mig_uuid(s, devices[i], gi->id, ids[k], uuid, sizeof(uuid));
				}
				printf("%-4u %-4u %-4s %-12s %-11s %s\n", c.index, gi->id, ci, profile, place,
				       uuid[0] ? uuid : "-");
			}
		}
	}
	if (!rows)
		printf("(no MIG devices)\n");
	return SMI_OK;
}

static json_t *instance_json(struct smi *s, mig_device_t dev, const struct smi_gi *g)
{
	unsigned ids[8], nci = ci_ids(s, g->handle, ids, 8);
	char profile[MIG_DEVICE_NAME_V2_BUFFER_SIZE], uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE] = "";
	json_t *ci = json_array();

	for (unsigned k = 0; ci && k < nci; k++)
		json_array_append_new(ci, json_integer(ids[k]));
	if (nci)
		mig_uuid(s, dev, g->info.id, ids[0], uuid, sizeof(uuid));
	tree_profile(s, dev, g->info.profileId, profile, sizeof(profile));
	return json_pack("{s:I,s:o,s:s,s:I,s:{s:I,s:I},s:o}", "gi", (json_int_t)g->info.id, "ci", ci, "profile",
	                 profile, "profile_id", (json_int_t)g->info.profileId, "placement", "start",
	                 (json_int_t)g->info.placement.start, "size", (json_int_t)g->info.placement.size, "uuid",
	                 uuid[0] ? json_string(uuid) : json_null());
}

static json_t *card_json(struct smi *s, mig_device_t dev, const struct card *c)
{
	char tree[24];
	json_t *o, *instances = json_array();

	snprintf(tree, sizeof(tree), "%s%u", s->family->tree_prefix, c->index);
	for (unsigned g = 0; instances && g < c->n_gis; g++)
		json_array_append_new(instances, instance_json(s, dev, &c->gis[g]));
	o = json_pack(
		"{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:s,s:o}", "name", tree, "vendor", s->family->vendor, "product",
		c->name, "uuid", c->uuid, "minor", c->have_minor ? json_integer(c->minor) : json_null(), "bus_id",
		c->bus_id[0] ? json_string(c->bus_id) : json_null(), "memory_mib",
		c->have_memory ? json_integer((json_int_t)c->total_mib) : json_null(), "mig_mode",
		c->have_mode ? json_string(c->mode == MIG_DEVICE_MIG_ENABLE ? "enabled" : "disabled") : json_null(),
		"mig_pending",
		c->have_mode ? json_string(c->pending == MIG_DEVICE_MIG_ENABLE ? "enabled" : "disabled") : json_null(),
		"driver_library", s->lib.path, "instances", instances);
	/* The tree's number, named as node.json names it (T-Head's ordinal, NVIDIA's index). */
	if (o)
		json_object_set_new(o, s->family->card_node_by_minor ? "index" : "ordinal", json_integer(c->index));
	return o;
}

int smi_cmd_json(struct smi *s)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES];
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES);
	static struct card c;
	json_t *list = json_array(), *root;
	int ret;

	for (unsigned i = 0; list && i < n; i++) {
		read_card(s, devices[i], indices[i], &c);
		json_array_append_new(list, card_json(s, devices[i], &c));
	}
	root = json_pack("{s:o}", "devices", list);
	ret = root ? json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
	json_decref(root);
	if (ret || putchar('\n') == EOF) {
		fprintf(stderr, "accel-smi: out of memory writing JSON\n");
		return SMI_FAILED;
	}
	return n ? SMI_OK : SMI_NO_DEVICE;
}
