/* SPDX-License-Identifier: MIT */
/* `accel-smi mig`: the compute-instance commands (-lcip, -cci, -lci, -dci). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/smi-mig.h"

/*
 * Free instances of a CI profile: the ABI has no remaining-capacity call
 * for compute instances, so this is counted from what is there.
 */
static unsigned ci_free(const struct smi_ci_profile *c, const struct smi_ci *cis, unsigned nc, unsigned gi_slices)
{
	unsigned same = 0, used = 0, by_slices;

	for (unsigned i = 0; i < nc; i++) {
		same += cis[i].info.profileId == c->info.id;
		used += cis[i].info.placement.size;
	}
	if (same >= c->info.instanceCount || used >= gi_slices || c->info.sliceCount == 0)
		return 0;
	by_slices = (gi_slices - used) / c->info.sliceCount;
	return by_slices < c->info.instanceCount - same ? by_slices : c->info.instanceCount - same;
}

/* A selected GPU instance with its CI profiles and compute instances, as the -lcip/-lci/-dci walks see it. */
struct gi_view {
	unsigned dev_index;
	mig_device_t dev;
	const struct smi_gi *gi;
	struct smi_ci_profile cp[MAX_CI_PROFILES];
	unsigned np;
	struct smi_ci cis[MAX_CIS];
	unsigned nc;
};

/* Call fn for every GPU instance that -gi selects on each of the n devices, in order. */
static void each_selected_gi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n,
                             void (*fn)(struct smi *s, const struct gi_view *v, void *ctx), void *ctx)
{
	struct gi_view v;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = smi_mig_selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			v.dev_index = idx[d];
			v.dev = devs[d];
			v.gi = &gis[g];
			v.np = smi_ci_profiles(s, gis[g].handle, v.cp, MAX_CI_PROFILES);
			v.nc = smi_mig_cis(s, gis[g].handle, v.cp, v.np, v.cis, MAX_CIS);
			fn(s, &v, ctx);
		}
	}
}

struct listing {
	bool ids;    /* -lcip --ids: id:slices lines, no table */
	bool header; /* something was printed */
};

static void lcip_gi(struct smi *s, const struct gi_view *v, void *ctx)
{
	struct listing *l = ctx;
	unsigned gi_slices = 0;
	char gi_name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];

	for (unsigned i = 0; i < v->np; i++)
		if (v->cp[i].whole)
			gi_slices = v->cp[i].info.sliceCount;
	smi_mig_gi_profile_name(s, v->dev, v->gi->info.profileId, gi_name, sizeof(gi_name));
	for (unsigned i = 0; i < v->np; i++) {
		if (l->ids) {
			printf("%u:%u\n", v->cp[i].info.id, v->cp[i].info.sliceCount);
			l->header = true;
			continue;
		}
		if (!l->header)
			smi_print_lcip_header(s);
		l->header = true;
		smi_ci_profile_name(s, &v->cp[i], gi_name, name, sizeof(name));
		smi_print_lcip_row(s, v->dev_index, v->gi->info.id, name, &v->cp[i],
		                   ci_free(&v->cp[i], v->cis, v->nc, gi_slices));
	}
}

int smi_mig_lcip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, bool ids)
{
	struct listing l = { .ids = ids };

	each_selected_gi(s, devs, idx, n, lcip_gi, &l);
	if (!l.header && !ids)
		printf("No compute instance profiles found.\n");
	return SMI_OK;
}

/* A CI profile named by id, name or short name; NULL what means the default (whole-GI) one. */
static const struct smi_ci_profile *find_ci_profile(const struct smi *s, const struct smi_ci_profile *cp, unsigned np,
                                                    const char *what, const char *gi_name)
{
	char *end;
	unsigned long id;

	if (!what || !*what) {
		for (unsigned i = 0; i < np; i++)
			if (cp[i].whole)
				return &cp[i];
		return NULL;
	}
	id = strtoul(what, &end, 10);
	for (unsigned i = 0; i < np; i++) {
		char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];

		if (!*end && cp[i].info.id == id)
			return &cp[i];
		smi_ci_profile_name(s, &cp[i], gi_name, name, sizeof(name));
		if (*end && (!strcmp(name, what) || !strcmp(smi_short_name(name), what)))
			return &cp[i];
	}
	return NULL;
}

int smi_mig_create_ci(struct smi *s, unsigned dev_index, mig_gpu_instance_t gi, const char *what)
{
	struct smi_ci_profile cp[MAX_CI_PROFILES];
	unsigned np = smi_ci_profiles(s, gi, cp, MAX_CI_PROFILES);
	const struct smi_ci_profile *c;
	mig_gpu_instance_info_t gi_info;
	mig_compute_instance_info_t info;
	mig_compute_instance_t ci;
	char gi_name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];
	mig_return_t r;

	if (s->lib.GpuInstanceGetInfo(gi, &gi_info) != MIG_SUCCESS)
		return SMI_FAILED;
	smi_mig_gi_profile_name(s, gi_info.device, gi_info.profileId, gi_name, sizeof(gi_name));
	c = find_ci_profile(s, cp, np, what, gi_name);
	if (!c) {
		fprintf(stderr, "Unable to find a compute instance profile \"%s\" for GPU instance ID %u on %s %u\n",
		        what ? what : "(default)", gi_info.id, s->word, dev_index);
		return SMI_FAILED;
	}
	smi_ci_profile_name(s, c, gi_name, name, sizeof(name));
	r = s->lib.GpuInstanceCreateComputeInstance(gi, c->info.id, &ci);
	if (r)
		return smi_fail(
			s, r,
			s->thead
				? "Failed to create compute instance on PPU %u GPU instance ID %u using profile %s"
				: "Unable to create a compute instance on GPU %2u GPU instance ID %2u using profile %s",
			dev_index, gi_info.id, name);
	if (s->lib.ComputeInstanceGetInfo_v2(ci, &info) != MIG_SUCCESS)
		info.id = 0;
	if (s->thead)
		printf("Successfully created compute instance ID %u on PPU %u GPU instance ID %u using profile %s (Profile ID %u)\n",
		       info.id, dev_index, gi_info.id, name, c->info.id);
	else
		printf("Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u using profile %s (ID %2u)\n",
		       info.id, dev_index, gi_info.id, name, c->info.id);
	return SMI_OK;
}

int smi_mig_cci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a)
{
	char copy[512], *items[32];
	unsigned ni = a->list ? smi_mig_split(a->list, copy, sizeof(copy), items, 32) : 0;
	int rc = SMI_OK;
	bool found = false;

	for (unsigned i = 0; i < ni; i++)
		if (strchr(items[i], ':')) {
			fprintf(stderr,
			        "A compute-instance placement cannot be chosen through this driver interface\n");
			return SMI_USAGE;
		}
	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = smi_mig_selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			found = true;
			for (unsigned i = 0; i < (ni ? ni : 1); i++) {
				int r = smi_mig_create_ci(s, idx[d], gis[g].handle, ni ? items[i] : NULL);

				if (r != SMI_OK)
					rc = r;
			}
		}
	}
	if (!found) {
		fprintf(stderr, "No GPU instances found\n");
		return SMI_FAILED;
	}
	return rc;
}

/* Does -ci select this compute instance? */
static bool ci_selected(const struct smi *s, const struct smi_ci *ci)
{
	return s->ci == SMI_ALL || ci->info.id == (unsigned)s->ci;
}

static void lci_gi(struct smi *s, const struct gi_view *v, void *ctx)
{
	struct listing *l = ctx;
	char gi_name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];

	smi_mig_gi_profile_name(s, v->dev, v->gi->info.profileId, gi_name, sizeof(gi_name));
	for (unsigned c = 0; c < v->nc; c++) {
		const struct smi_ci_profile *prof = NULL;

		if (!ci_selected(s, &v->cis[c]))
			continue;
		for (unsigned k = 0; k < v->np && !prof; k++)
			if (v->cp[k].info.id == v->cis[c].info.profileId)
				prof = &v->cp[k];
		if (prof)
			smi_ci_profile_name(s, prof, gi_name, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "?");
		if (!l->header)
			smi_print_lci_header(s);
		l->header = true;
		smi_print_lci_row(s, v->dev_index, v->gi->info.id, name, &v->cis[c].info);
	}
}

int smi_mig_lci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	struct listing l = { .ids = false };

	each_selected_gi(s, devs, idx, n, lci_gi, &l);
	if (!l.header)
		printf("No compute instances found.\n");
	return SMI_OK;
}

/* What -dci found and how it went. */
struct removal {
	bool found;
	int rc;
};

static void dci_gi(struct smi *s, const struct gi_view *v, void *ctx)
{
	struct removal *rm = ctx;

	for (unsigned c = 0; c < v->nc; c++) {
		const mig_compute_instance_info_t *ci = &v->cis[c].info;
		mig_return_t r;

		if (!ci_selected(s, &v->cis[c]))
			continue;
		rm->found = true;
		r = s->lib.ComputeInstanceDestroy(v->cis[c].handle);
		if (r)
			rm->rc = smi_fail(
				s, r,
				s->thead ? "Failed to destroy compute instance ID %u from PPU %u GPU instance %u"
					 : "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID %2u",
				ci->id, v->dev_index, v->gi->info.id);
		else if (s->thead)
			printf("Successfully destroyed compute instance ID %u from PPU %u GPU instance %u\n", ci->id,
			       v->dev_index, v->gi->info.id);
		else
			printf("Successfully destroyed compute instance ID %2u from GPU %2u GPU instance ID %2u\n",
			       ci->id, v->dev_index, v->gi->info.id);
	}
}

int smi_mig_dci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	struct removal rm = { .found = false, .rc = SMI_OK };

	each_selected_gi(s, devs, idx, n, dci_gi, &rm);
	if (!rm.found) {
		fprintf(stderr, "No compute instances found\n");
		return SMI_FAILED;
	}
	return rm.rc;
}
