/* SPDX-License-Identifier: MIT */
/* `accel-smi mig`: what the GPU- and compute-instance commands both select and list by. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/smi-mig.h"

static int by_ci_id(const void *a, const void *b)
{
	const struct smi_ci *x = a, *y = b;

	return x->info.id < y->info.id ? -1 : x->info.id > y->info.id;
}

/* The CIs of a GI, under every CI profile, sorted by id. */
unsigned smi_mig_cis(struct smi *s, mig_gpu_instance_t gi, const struct smi_ci_profile *profiles, unsigned n_profiles,
                     struct smi_ci *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned p = 0; p < n_profiles; p++) {
		mig_compute_instance_t list[MAX_CIS];
		unsigned got = 0;

		if (profiles[p].info.instanceCount > MAX_CIS ||
		    s->lib.GpuInstanceGetComputeInstances(gi, profiles[p].info.id, list, &got) != MIG_SUCCESS)
			continue;
		for (unsigned k = 0; k < got && n < max; k++) {
			out[n].handle = list[k];
			if (s->lib.ComputeInstanceGetInfo_v2(list[k], &out[n].info) == MIG_SUCCESS)
				n++;
		}
	}
	qsort(out, n, sizeof(*out), by_ci_id);
	return n;
}

bool smi_mig_enabled(struct smi *s, mig_device_t dev)
{
	unsigned cur = 0, pend = 0;

	return s->lib.DeviceGetMigMode(dev, &cur, &pend) == MIG_SUCCESS && cur == MIG_DEVICE_MIG_ENABLE;
}

/* Split a comma-separated list into a static copy; returns the items. */
unsigned smi_mig_split(const char *list, char *copy, size_t len, char **items, unsigned max)
{
	unsigned n = 0;
	char *save = NULL;

	snprintf(copy, len, "%s", list);
	for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
		items[n++] = t;
	return n;
}

/* The GPU instances -gi selects on a card. */
unsigned smi_mig_selected_gis(struct smi *s, mig_device_t dev, struct smi_gi *out)
{
	struct smi_gi all[MAX_GIS];
	unsigned n = smi_gpu_instances(s, dev, all, MAX_GIS), k = 0;

	for (unsigned i = 0; i < n; i++)
		if (s->gi == SMI_ALL || all[i].info.id == (unsigned)s->gi)
			out[k++] = all[i];
	return k;
}

/* The GI's profile name (for CI naming). */
void smi_mig_gi_profile_name(struct smi *s, mig_device_t dev, unsigned profile_id, char *buf, size_t len)
{
	struct smi_gi_profile p[SMI_MAX_PROFILES];
	unsigned np = smi_gi_profiles(s, dev, p, SMI_MAX_PROFILES);
	const struct smi_gi_profile *prof = smi_gi_profile_by_id(p, np, profile_id);

	snprintf(buf, len, "%s", prof ? prof->name : "");
}
