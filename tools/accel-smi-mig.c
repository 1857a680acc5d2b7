/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi mig ...`: the instance operations, shaped like `ppu-smi mig`
 * and `nvidia-smi mig` (-lgip, -lgipp, -lgi, -cgi [-C], -dgi, -lcip, -cci,
 * -lci, -dci).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ledger.h"
#include "tools/smi-commands.h"

#define MAX_DEVICES 256
#define MAX_GIS 32
#define MAX_CIS 16
#define MAX_CI_PROFILES 32

enum mig_action {
	ACT_NONE,
	ACT_LGIP,
	ACT_LGIPP,
	ACT_LGI,
	ACT_CGI,
	ACT_DGI,
	ACT_LCIP,
	ACT_CCI,
	ACT_LCI,
	ACT_DCI,
};

struct mig_args {
	enum mig_action action;
	const char *list; /* -cgi / -cci argument */
	bool default_ci;  /* -C */
	bool ids;         /* -lcip --ids: "<id>:<slices>" per distinct CI profile, for scripts */
};

struct smi_ci {
	mig_compute_instance_t handle;
	mig_compute_instance_info_t info;
};

static int by_ci_id(const void *a, const void *b)
{
	const struct smi_ci *x = a, *y = b;

	return x->info.id < y->info.id ? -1 : x->info.id > y->info.id;
}

/* The CIs of a GI, under every CI profile, sorted by id. */
static unsigned compute_instances(struct smi *s, mig_gpu_instance_t gi, const struct smi_ci_profile *profiles,
                                  unsigned n_profiles, struct smi_ci *out, unsigned max)
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

static bool mig_enabled(struct smi *s, mig_device_t dev)
{
	unsigned cur = 0, pend = 0;

	return s->lib.DeviceGetMigMode(dev, &cur, &pend) == MIG_SUCCESS && cur == MIG_DEVICE_MIG_ENABLE;
}

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

static int cmd_lgip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
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

static int cmd_lgipp(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
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

static int cmd_lgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	bool enabled = false, header = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi_profile p[SMI_MAX_PROFILES];
		struct smi_gi gis[MAX_GIS];
		unsigned np, ng;

		if (!mig_enabled(s, devs[d]))
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
 * daemon's own rule, core/ledger.c), or the lowest one, which the driver
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

static int create_ci(struct smi *s, unsigned dev_index, mig_gpu_instance_t gi, const char *what);

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
	return with_ci ? create_ci(s, dev_index, gi, NULL) : SMI_OK;
}

/* Split a comma-separated list into a static copy; returns the items. */
static unsigned split(const char *list, char *copy, size_t len, char **items, unsigned max)
{
	unsigned n = 0;
	char *save = NULL;

	snprintf(copy, len, "%s", list);
	for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
		items[n++] = t;
	return n;
}

static int cmd_cgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a)
{
	char copy[512], *items[32];
	unsigned ni = split(a->list, copy, sizeof(copy), items, 32);
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

/* The GPU instances -gi selects on a card. */
static unsigned selected_gis(struct smi *s, mig_device_t dev, struct smi_gi *out)
{
	struct smi_gi all[MAX_GIS];
	unsigned n = smi_gpu_instances(s, dev, all, MAX_GIS), k = 0;

	for (unsigned i = 0; i < n; i++)
		if (s->gi == SMI_ALL || all[i].info.id == (unsigned)s->gi)
			out[k++] = all[i];
	return k;
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

static int cmd_dgi(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	int rc = SMI_OK;
	bool found = false;

	if (s->gi == SMI_ALL)
		fprintf(stderr, "Warning: -dgi without -gi destroys every GPU instance on the selected %s%s\n", s->word,
		        s->device == SMI_ALL ? "s" : "");
	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = selected_gis(s, devs[d], gis);

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

/* The GI's profile name (for CI naming). */
static void gi_profile_name(struct smi *s, mig_device_t dev, unsigned profile_id, char *buf, size_t len)
{
	struct smi_gi_profile p[SMI_MAX_PROFILES];
	unsigned np = smi_gi_profiles(s, dev, p, SMI_MAX_PROFILES);
	const struct smi_gi_profile *prof = smi_gi_profile_by_id(p, np, profile_id);

	snprintf(buf, len, "%s", prof ? prof->name : "");
}

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

static int cmd_lcip(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, bool ids)
{
	bool header = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			struct smi_ci_profile cp[MAX_CI_PROFILES];
			struct smi_ci cis[MAX_CIS];
			unsigned np = smi_ci_profiles(s, gis[g].handle, cp, MAX_CI_PROFILES), nc, gi_slices = 0;
			char gi_name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];

			nc = compute_instances(s, gis[g].handle, cp, np, cis, MAX_CIS);
			for (unsigned i = 0; i < np; i++)
				if (cp[i].whole)
					gi_slices = cp[i].info.sliceCount;
			gi_profile_name(s, devs[d], gis[g].info.profileId, gi_name, sizeof(gi_name));
			for (unsigned i = 0; i < np; i++) {
				if (ids) {
					printf("%u:%u\n", cp[i].info.id, cp[i].info.sliceCount);
					header = true;
					continue;
				}
				if (!header)
					smi_print_lcip_header(s);
				header = true;
				smi_ci_profile_name(s, &cp[i], gi_name, name, sizeof(name));
				smi_print_lcip_row(s, idx[d], gis[g].info.id, name, &cp[i],
				                   ci_free(&cp[i], cis, nc, gi_slices));
			}
		}
	}
	if (!header && !ids)
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

static int create_ci(struct smi *s, unsigned dev_index, mig_gpu_instance_t gi, const char *what)
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
	gi_profile_name(s, gi_info.device, gi_info.profileId, gi_name, sizeof(gi_name));
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

static int cmd_cci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n, const struct mig_args *a)
{
	char copy[512], *items[32];
	unsigned ni = a->list ? split(a->list, copy, sizeof(copy), items, 32) : 0;
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
		unsigned ng = selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			found = true;
			for (unsigned i = 0; i < (ni ? ni : 1); i++) {
				int r = create_ci(s, idx[d], gis[g].handle, ni ? items[i] : NULL);

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

static int cmd_lci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	bool header = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			struct smi_ci_profile cp[MAX_CI_PROFILES];
			struct smi_ci cis[MAX_CIS];
			unsigned np = smi_ci_profiles(s, gis[g].handle, cp, MAX_CI_PROFILES);
			unsigned nc = compute_instances(s, gis[g].handle, cp, np, cis, MAX_CIS);
			char gi_name[MIG_DEVICE_NAME_V2_BUFFER_SIZE], name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2];

			gi_profile_name(s, devs[d], gis[g].info.profileId, gi_name, sizeof(gi_name));
			for (unsigned c = 0; c < nc; c++) {
				const struct smi_ci_profile *prof = NULL;

				if (s->ci != SMI_ALL && cis[c].info.id != (unsigned)s->ci)
					continue;
				for (unsigned k = 0; k < np && !prof; k++)
					if (cp[k].info.id == cis[c].info.profileId)
						prof = &cp[k];
				if (prof)
					smi_ci_profile_name(s, prof, gi_name, name, sizeof(name));
				else
					snprintf(name, sizeof(name), "?");
				if (!header)
					smi_print_lci_header(s);
				header = true;
				smi_print_lci_row(s, idx[d], gis[g].info.id, name, &cis[c].info);
			}
		}
	}
	if (!header)
		printf("No compute instances found.\n");
	return SMI_OK;
}

static int cmd_dci(struct smi *s, mig_device_t *devs, unsigned *idx, unsigned n)
{
	int rc = SMI_OK;
	bool found = false;

	for (unsigned d = 0; d < n; d++) {
		struct smi_gi gis[MAX_GIS];
		unsigned ng = selected_gis(s, devs[d], gis);

		for (unsigned g = 0; g < ng; g++) {
			struct smi_ci_profile cp[MAX_CI_PROFILES];
			struct smi_ci cis[MAX_CIS];
			unsigned np = smi_ci_profiles(s, gis[g].handle, cp, MAX_CI_PROFILES);
			unsigned nc = compute_instances(s, gis[g].handle, cp, np, cis, MAX_CIS);

			for (unsigned c = 0; c < nc; c++) {
				mig_return_t r;

				if (s->ci != SMI_ALL && cis[c].info.id != (unsigned)s->ci)
					continue;
				found = true;
				r = s->lib.ComputeInstanceDestroy(cis[c].handle);
				if (r) {
					rc = smi_fail(
						s, r,
						s->thead
							? "Failed to destroy compute instance ID %u from PPU %u GPU instance %u"
							: "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID %2u",
						cis[c].info.id, idx[d], gis[g].info.id);
				} else if (s->thead) {
					printf("Successfully destroyed compute instance ID %u from PPU %u GPU instance %u\n",
					       cis[c].info.id, idx[d], gis[g].info.id);
				} else {
					printf("Successfully destroyed compute instance ID %2u from GPU %2u GPU instance ID %2u\n",
					       cis[c].info.id, idx[d], gis[g].info.id);
				}
			}
		}
	}
	if (!found) {
		fprintf(stderr, "No compute instances found\n");
		return SMI_FAILED;
	}
	return rc;
}

static int parse_id(const char *arg, const char *opt, int *out)
{
	char *end;
	long v;

	if (!arg) {
		fprintf(stderr, "%s needs a value\n", opt);
		return -1;
	}
	v = strtol(arg, &end, 10);
	if (!*arg || *end || v < 0 || v > 100000) {
		/* ppu-smi answers a list (or anything but one id) like a missing device. */
		fprintf(stderr, "No devices were found\n");
		return -2;
	}
	*out = (int)v;
	return 0;
}

static int set_action(struct mig_args *a, enum mig_action act)
{
	if (a->action != ACT_NONE) {
		fprintf(stderr, "Only one mig operation at a time\n");
		return -1;
	}
	a->action = act;
	return 0;
}

int smi_cmd_mig(struct smi *s, int argc, char **argv)
{
	static const struct {
		const char *short_opt, *long_opt;
		enum mig_action act;
	} actions[] = {
		{ "-lgip", "--list-gpu-instance-profiles", ACT_LGIP },
		{ "-lgipp", "--list-gpu-instance-possible-placements", ACT_LGIPP },
		{ "-lgi", "--list-gpu-instances", ACT_LGI },
		{ "-cgi", "--create-gpu-instance", ACT_CGI },
		{ "-dgi", "--destroy-gpu-instance", ACT_DGI },
		{ "-lcip", "--list-compute-instance-profiles", ACT_LCIP },
		{ "-cci", "--create-compute-instance", ACT_CCI },
		{ "-lci", "--list-compute-instances", ACT_LCI },
		{ "-dci", "--destroy-compute-instance", ACT_DCI },
	};
	mig_device_t devs[MAX_DEVICES];
	unsigned idx[MAX_DEVICES], n;
	struct mig_args a = { 0 };
	int r;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		bool matched = false;

		if (!strcmp(arg, "-i") || !strcmp(arg, "--id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->device)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-gi") || !strcmp(arg, "--gpu-instance-id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->gi)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-ci") || !strcmp(arg, "--compute-instance-id")) {
			if ((r = parse_id(i + 1 < argc ? argv[++i] : NULL, arg, &s->ci)))
				return r == -2 ? SMI_NO_DEVICE : SMI_USAGE;
			continue;
		}
		if (!strcmp(arg, "-C") || !strcmp(arg, "--default-compute-instance")) {
			a.default_ci = true;
			continue;
		}
		if (!strcmp(arg, "--ids")) {
			a.ids = true;
			continue;
		}
		for (size_t k = 0; k < sizeof(actions) / sizeof(actions[0]) && !matched; k++) {
			if (strcmp(arg, actions[k].short_opt) && strcmp(arg, actions[k].long_opt))
				continue;
			matched = true;
			if (set_action(&a, actions[k].act))
				return SMI_USAGE;
			if (actions[k].act == ACT_CGI || actions[k].act == ACT_CCI) {
				/* -cgi needs its list; -cci's is optional (the default profile). */
				if (i + 1 < argc && (argv[i + 1][0] != '-' || actions[k].act == ACT_CGI))
					a.list = argv[++i];
				else if (actions[k].act == ACT_CGI) {
					fprintf(stderr, "-cgi needs a profile id or name\n");
					return SMI_USAGE;
				}
			}
		}
		if (!matched) {
			fprintf(stderr, "Invalid mig option \"%s\" (-mig is a top-level flag: accel-smi -i N -mig 1)\n",
			        arg);
			return SMI_USAGE;
		}
	}
	if (a.action == ACT_NONE) {
		fprintf(stderr, "mig needs one of -lgip -lgipp -lgi -cgi -dgi -lcip -cci -lci -dci\n");
		return SMI_USAGE;
	}
	if (a.default_ci && a.action != ACT_CGI) {
		fprintf(stderr, "-C only goes with -cgi\n");
		return SMI_USAGE;
	}
	if (a.ids && a.action != ACT_LCIP) {
		fprintf(stderr, "--ids only goes with -lcip\n");
		return SMI_USAGE;
	}
	n = smi_select_devices(s, devs, idx, MAX_DEVICES);
	if (n == 0)
		return SMI_NO_DEVICE;
	switch (a.action) {
	case ACT_LGIP:
		return cmd_lgip(s, devs, idx, n);
	case ACT_LGIPP:
		return cmd_lgipp(s, devs, idx, n);
	case ACT_LGI:
		return cmd_lgi(s, devs, idx, n);
	case ACT_CGI:
		return cmd_cgi(s, devs, idx, n, &a);
	case ACT_DGI:
		return cmd_dgi(s, devs, idx, n);
	case ACT_LCIP:
		return cmd_lcip(s, devs, idx, n, a.ids);
	case ACT_CCI:
		return cmd_cci(s, devs, idx, n, &a);
	case ACT_LCI:
		return cmd_lci(s, devs, idx, n);
	case ACT_DCI:
		return cmd_dci(s, devs, idx, n);
	case ACT_NONE:
		break;
	}
	return SMI_USAGE;
}
