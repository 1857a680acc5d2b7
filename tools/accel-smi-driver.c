/* SPDX-License-Identifier: MIT */
/*
 * What every accel-smi command asks the driver: the selected cards, their
 * profiles (probed index by index, as the product discovers them), their
 * instances.  Only ABI calls, so it works on a real driver too.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/names.h"
#include "core/driver/card.h"
#include "core/driver/inventory.h"
#include "tools/smi.h"

int smi_fail(struct smi *s, mig_return_t r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", mig_lib_strerror(&s->lib, r));
	return SMI_FAILED;
}

const char *smi_short_name(const char *name)
{
	return strncmp(name, "MIG ", 4) == 0 ? name + 4 : name;
}

unsigned smi_select_devices(struct smi *s, mig_device_t *devices, unsigned *indices, unsigned max)
{
	unsigned count = 0, n = 0;
	mig_return_t r = s->lib.DeviceGetCount_v2(&count);

	if (r) {
		smi_fail(s, r, "Unable to count %ss", s->word);
		return 0;
	}
	for (unsigned i = 0; i < count && n < max; i++) {
		if (s->device != SMI_ALL && (unsigned)s->device != i)
			continue;
		r = s->lib.DeviceGetHandleByIndex_v2(i, &devices[n]);
		if (r) {
			smi_fail(s, r, "Unable to open %s %u", s->word, i);
			continue;
		}
		indices[n++] = i;
	}
	if (n == 0 && r == MIG_SUCCESS)
		fprintf(stderr, "No devices were found\n");
	return n;
}

/*
 * A real H200 (NVML 580, MIG mode off) returns profile records without a
 * name, and nvidia-smi prints one anyway, from the geometry: the product's
 * own rule (core/model/names.c) names them the same way.
 */
static void nvml_profile_name(struct smi *s, mig_device_t dev, const struct smi_gi_profile *p, char *buf, size_t len)
{
	unsigned long long total_mib = 0;
	mig_memory_t mem;

	if (s->lib.DeviceGetMemoryInfo && s->lib.DeviceGetMemoryInfo(dev, &mem) == MIG_SUCCESS)
		total_mib = mem.total >> 20;
	accel_name_nvml_geometry(p->index, p->info.sliceCount, p->info.memorySizeMB, total_mib, buf, len);
}

unsigned smi_gi_profiles(struct smi *s, mig_device_t dev, struct smi_gi_profile *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned idx = 0; idx < s->family->gi_profile_count && n < max; idx++) {
		mig_gpu_instance_profile_info_v3_t info;

		memset(&info, 0, sizeof(info));
		info.version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
		if (s->lib.DeviceGetGpuInstanceProfileInfoV(dev, idx, &info) != MIG_SUCCESS)
			continue;
		out[n].index = idx;
		out[n].info = info;
		if (info.name[0] || s->thead)
			snprintf(out[n].name, sizeof(out[n].name), "%s", info.name);
		else
			nvml_profile_name(s, dev, &out[n], out[n].name, sizeof(out[n].name));
		n++;
	}
	return n;
}

/* Smallest first: memory, then compute slices, then probe index (nvidia-smi's order on an H200). */
static int display_order(const void *a, const void *b)
{
	const struct smi_gi_profile *x = a, *y = b;

	if (x->info.memorySizeMB != y->info.memorySizeMB)
		return x->info.memorySizeMB < y->info.memorySizeMB ? -1 : 1;
	if (x->info.sliceCount != y->info.sliceCount)
		return x->info.sliceCount < y->info.sliceCount ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

void smi_sort_for_display(struct smi_gi_profile *p, unsigned n)
{
	qsort(p, n, sizeof(*p), display_order);
}

const struct smi_gi_profile *smi_gi_profile_by_id(const struct smi_gi_profile *p, unsigned n, unsigned id)
{
	for (unsigned i = 0; i < n; i++)
		if (p[i].info.id == id)
			return &p[i];
	return NULL;
}

unsigned smi_ci_profiles(struct smi *s, mig_gpu_instance_t gi, struct smi_ci_profile *out, unsigned max)
{
	/* The engine's probe (core/driver/inventory.c), on a card that keeps no cache: a tool asks each time. */
	struct accel_card card = { .family = s->family, .lib = &s->lib, .name = "smi" };
	mig_compute_instance_profile_info_v2_t *profiles = NULL;
	mig_gpu_instance_info_t gi_info;
	mig_gpu_instance_profile_info_v3_t gp;
	unsigned gi_slices = 0, n = 0;
	size_t n_profiles = 0;
	char err[256];

	if (s->lib.GpuInstanceGetInfo(gi, &gi_info) != MIG_SUCCESS)
		return 0;
	/* The GI's slice count comes from its profile's record. */
	for (unsigned idx = 0; idx < s->family->gi_profile_count; idx++) {
		memset(&gp, 0, sizeof(gp));
		gp.version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
		if (s->lib.DeviceGetGpuInstanceProfileInfoV(gi_info.device, idx, &gp) == MIG_SUCCESS &&
		    gp.id == gi_info.profileId) {
			gi_slices = gp.sliceCount;
			break;
		}
	}
	if (accel_ci_profiles(&card, gi, gi_info.profileId, &profiles, &n_profiles, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < n_profiles && n < max; i++, n++) {
		out[n].info = profiles[i];
		out[n].whole = profiles[i].sliceCount == gi_slices;
	}
	free(profiles);
	return n;
}

void smi_ci_profile_name(const struct smi *s, const struct smi_ci_profile *c, const char *gi_profile_name, char *buf,
                         size_t len)
{
	if (c->info.name[0])
		snprintf(buf, len, "%s", c->info.name);
	else if (s->thead)
		snprintf(buf, len, "MIG %uu.%s", c->info.multiprocessorCount, smi_short_name(gi_profile_name));
	else if (c->whole)
		snprintf(buf, len, "%s", gi_profile_name);
	else
		snprintf(buf, len, "MIG %uc.%s", c->info.sliceCount, smi_short_name(gi_profile_name));
}

static int by_gi_id(const void *a, const void *b)
{
	const struct smi_gi *x = a, *y = b;

	return x->info.id < y->info.id ? -1 : x->info.id > y->info.id;
}

unsigned smi_gpu_instances(struct smi *s, mig_device_t dev, struct smi_gi *out, unsigned max)
{
	struct smi_gi_profile profiles[SMI_MAX_PROFILES];
	unsigned n_profiles = smi_gi_profiles(s, dev, profiles, SMI_MAX_PROFILES), n = 0;

	for (unsigned p = 0; p < n_profiles; p++) {
		/* NVML sizes the buffer by the profile's instance count. */
		unsigned cap = profiles[p].info.instanceCount, got = 0;
		mig_gpu_instance_t *list;

		if (cap == 0 || smi_gi_profile_by_id(profiles, p, profiles[p].info.id))
			continue; /* nothing to list, or an id already listed */
		list = calloc(cap, sizeof(*list));
		if (!list)
			break;
		if (s->lib.DeviceGetGpuInstances(dev, profiles[p].info.id, list, &got) == MIG_SUCCESS) {
			for (unsigned k = 0; k < got && n < max; k++) {
				out[n].handle = list[k];
				if (s->lib.GpuInstanceGetInfo(list[k], &out[n].info) == MIG_SUCCESS)
					n++;
			}
		}
		free(list);
	}
	qsort(out, n, sizeof(*out), by_gi_id);
	return n;
}
