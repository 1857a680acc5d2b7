/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi mig`: the GPU-instance commands, shaped like `ppu-smi mig` and
 * `nvidia-smi mig` (-lgip, -lgipp, -lgi, -cgi [-C], -dgi).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/ledger.h"
#include "tools/smi-mig.h"

/* Free instances of a profile: the driver's count when it offers one. */
static unsigned gi_free(struct smi *s, mig_device_t dev, const struct smi_gi_profile *p)
{
	struct smi_gi gis[MAX_GIS];
	unsigned remaining = 0, n, used = 0;

	if (s->lib.DeviceGetGpuInstanceRemainingCapacity &&
	    s->lib.DeviceGetGpuInstanceRemainingCapacity(dev, p->info.id, &remaining) == MIG_SUCCESS)
		return remaining;
	n = smi_gpu_instances(s, dev, gis, MAX_GIS);
	for (unsigned i = 0; i < n; i++)
		used += gis[i].info.profileId == p->info.id;
	return used < p->info.instanceCount ? p->info.instanceCount - used : 0;
}

int smi_mig_lgip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	bool header = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi_profile p[SMI_MAX_PROFILES];
		unsigned np = smi_gi_profiles(s, devs[d], p, SMI_MAX_PROFILES);

		smi_sort_for_display(p, np);
		for (unsigned i = 0; i < np; i++) {
			if (!header)
				smi_print_lgip_header(s);
			header = true;
			smi_print_lgip_row(s, idx[d], &p[i], gi_free(s, devs[d], &p[i]));
		}
	}
	if (!header)
		printf("No MIG-enabled devices found.\n");
	return SMI_OK;
}

int smi_mig_lgipp(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	bool any = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi_profile p[SMI_MAX_PROFILES];
		unsigned np = smi_gi_profiles(s, devs[d], p, SMI_MAX_PROFILES);

		smi_sort_for_display(p, np);
		for (unsigned i = 0; i < np; i++) {
			mig_gpu_instance_placement_t pl[64];
			unsigned count = 0;
			mig_return_t r;

			r = s->lib.DeviceGetGpuInstancePossiblePlacements_v2(devs[d], p[i].info.id, NULL, &count);
			if (!r && count > 64)
				r = MIG_ERROR_INSUFFICIENT_SIZE;
			if (!r)
				r = s->lib.DeviceGetGpuInstancePossiblePlacements_v2(devs[d], p[i].info.id, pl, &count);
			if (r) {
				smi_fail(s, r, "Unable to list placements of profile %u on %s %u", p[i].info.id,
				         s->word, idx[d]);
				continue;
			}
			smi_print_lgipp_row(s, idx[d], &p[i], pl, count);
			any = true;
		}
	}
	if (!any)
		printf("No MIG-enabled devices found.\n");
	return SMI_OK;
}

int smi_mig_lgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	bool enabled = false, header = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi_profile p[SMI_MAX_PROFILES];
		struct smi_gi gis[MAX_GIS];
		unsigned np, ng;

		if (!smi_mig_enabled(s, devs[d]))
			continue;
		enabled = true;
		np = smi_gi_profiles(s, devs[d], p, SMI_MAX_PROFILES);
		ng = smi_gpu_instances(s, devs[d], gis, MAX_GIS);
		for (unsigned g = 0; g < ng; g++) {
			const struct smi_gi_profile *prof = smi_gi_profile_by_id(p, np, gis[g].info.profileId);

			if (!header)
				smi_print_lgi_header(s);
			header = true;
			smi_print_lgi_row(s, idx[d], prof ? prof->name : "?", &gis[g].info);
		}
	}
	if (!enabled)
		printf("No MIG-enabled devices found.\n");
	else if (!header)
		printf("No GPU instances found.\n");
	return SMI_OK;
}

/* A profile named by id, full name or short name. */
static const struct smi_gi_profile *find_gi_profile(const struct smi_gi_profile *p, unsigned n, const char *what)
{
	char *end;
	unsigned long id = strtoul(what, &end, 10);

	if (*what && !*end)
		return smi_gi_profile_by_id(p, n, (unsigned)id);
	for (unsigned i = 0; i < n; i++)
		if (p[i].name[0] && (!strcmp(p[i].name, what) || !strcmp(smi_short_name(p[i].name), what)))
			return &p[i];
	return NULL;
}

/*
 * The lowest-start legal placement that overlaps no live GPU instance (the
 * daemon's own rule, core/model/ledger.c), or the lowest one, which the driver
 * then refuses with its own message, as ppu-smi would.
 */
static int pick_placement(struct smi *s, mig_device_t dev, const struct smi_gi_profile *p, long start,
                          mig_gpu_instance_placement_t *out)
{
	mig_gpu_instance_placement_t pl[64];
	struct accel_span legal[64], used[MAX_GIS];
	struct smi_gi gis[MAX_GIS];
	unsigned count = 0, ng;
	int pick;
	mig_return_t r = s->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, p->info.id, NULL, &count);

	if (!r && (count == 0 || count > 64))
		return -ENOENT;
	if (!r)
		r = s->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, p->info.id, pl, &count);
	if (r)
		return -EIO;
	if (start >= 0) {
		*out = (mig_gpu_instance_placement_t){ (unsigned)start, pl[0].size };
		return 0;
	}
	ng = smi_gpu_instances(s, dev, gis, MAX_GIS);
	for (unsigned k = 0; k < count; k++)
		legal[k] = (struct accel_span){ pl[k].start, pl[k].size };
	for (unsigned g = 0; g < ng; g++)
		used[g] = (struct accel_span){ gis[g].info.placement.start, gis[g].info.placement.size };
	pick = accel_ledger_pick(legal, count, used, ng);
	*out = pl[pick < 0 ? 0 : pick];
	return 0;
}

static int create_gi(struct smi *s, mig_device_t dev, unsigned dev_index, const char *tuple, bool with_ci)
{
	struct smi_gi_profile p[SMI_MAX_PROFILES];
	unsigned np = smi_gi_profiles(s, dev, p, SMI_MAX_PROFILES);
	char what[128], *colon;
	const struct smi_gi_profile *prof;
	mig_gpu_instance_placement_t pl;
	mig_gpu_instance_info_t info;
	mig_gpu_instance_t gi;
	long start = -1;
	mig_return_t r;

	snprintf(what, sizeof(what), "%s", tuple);
	colon = strrchr(what, ':');
	if (colon) {
		char *end;

		*colon = '\0';
		start = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || start < 0) {
			fprintf(stderr, "Invalid placement \"%s\"\n", colon + 1);
			return SMI_USAGE;
		}
	}
	prof = find_gi_profile(p, np, what);
	if (!prof) {
		fprintf(stderr, "Unable to find a GPU instance profile \"%s\" on %s %u\n", what, s->word, dev_index);
		return SMI_FAILED;
	}
	if (pick_placement(s, dev, prof, start, &pl) != 0) {
		fprintf(stderr, "Profile %s (ID %u) has no legal placement on %s %u\n", prof->name, prof->info.id,
		        s->word, dev_index);
		return SMI_FAILED;
	}
	r = s->lib.DeviceCreateGpuInstanceWithPlacement(dev, prof->info.id, &pl, &gi);
	if (r)
		return smi_fail(s, r,
		                s->thead ? "Failed to create GPU instance on PPU %u using profile %s"
		                         : "Unable to create a GPU instance on GPU %2u using profile %s",
		                dev_index, what);
	if (s->lib.GpuInstanceGetInfo(gi, &info) != MIG_SUCCESS)
		info.id = 0;
	if (s->thead)
		printf("Successfully created GPU instance ID %u on PPU %u using profile %s (Profile ID %u)\n", info.id,
		       dev_index, prof->name, prof->info.id);
	else
		printf("Successfully created GPU instance ID %2u on GPU %2u using profile %s (ID %2u)\n", info.id,
		       dev_index, prof->name, prof->info.id);
	return with_ci ? smi_mig_create_ci(s, dev_index, gi, NULL) : SMI_OK;
}

int smi_mig_cgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a)
{
	char copy[512], *items[32];
	unsigned ni = smi_mig_split(a->list, copy, sizeof(copy), items, 32);
	int rc = SMI_OK;

	if (ni == 0) {
		fprintf(stderr, "-cgi needs a profile id or name\n");
		return SMI_USAGE;
	}
	for (unsigned d = 0; d < n; d++)
		for (unsigned i = 0; i < ni; i++) {
			int r = create_gi(s, devs[d], idx[d], items[i], a->default_ci);

			if (r != SMI_OK)
				rc = r;
		}
	return rc;
}

static int destroy_gi(struct smi *s, unsigned dev_index, const struct smi_gi *gi)
{
	mig_return_t r = s->lib.GpuInstanceDestroy(gi->handle);

	if (r == MIG_SUCCESS) {
		if (s->thead)
			printf("Successfully destroyed GPU instance ID %u from PPU %u\n", gi->info.id, dev_index);
		else
			printf("Successfully destroyed GPU instance ID %2u from GPU %2u\n", gi->info.id, dev_index);
		return SMI_OK;
	}
	if (s->thead) {
		/* The driver's own words, spelling included (runbook). */
		if (r == MIG_ERROR_IN_USE)
			fprintf(stderr,
			        "GPU instance %u is in use, please destory related compute instances then try again\n",
			        gi->info.id);
		return smi_fail(s, r, "Failed to destroy GPU instance ID %u from PPU %u", gi->info.id, dev_index);
	}
	return smi_fail(s, r, "Unable to destroy GPU instance ID %2u from GPU %2u", gi->info.id, dev_index);
}

int smi_mig_dgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	int rc = SMI_OK;
	bool found = false;

	if (s->gi == SMI_ALL)
		fprintf(stderr, "Warning: -dgi without -gi destroys every GPU instance on the selected %s%s\n", s->word,
		        s->device == SMI_ALL ? "s" : "");
	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = smi_mig_selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			int r = destroy_gi(s, idx[d], &gis[g]);

			found = true;
			if (r != SMI_OK)
				rc = r;
		}
	}
	if (!found && s->gi != SMI_ALL) {
		fprintf(stderr, "Unable to find GPU instance ID %d\n", s->gi);
		return SMI_FAILED;
	}
	if (!found)
		printf("No GPU instances found.\n");
	return rc;
}
