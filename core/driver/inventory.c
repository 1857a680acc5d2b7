/* SPDX-License-Identifier: MIT */
#include "core/driver/inventory.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/catalog.h"

#define MAX_GI_PER_PROFILE 32

void accel_inventory_clear(struct accel_inventory *inv)
{
	free(inv->gis);
	inv->gis = NULL;
	inv->n_gis = 0;
}

const struct accel_live_gi *accel_inventory_gi(const struct accel_inventory *inv, unsigned gi)
{
	for (size_t i = 0; i < inv->n_gis; i++)
		if (inv->gis[i].id == gi)
			return &inv->gis[i];
	return NULL;
}

size_t accel_inventory_spans(const struct accel_inventory *inv, struct accel_span *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < inv->n_gis && n < max; i++)
		out[n++] = inv->gis[i].placement;
	return n;
}

static int fail(char *err, size_t errlen, const struct accel_card *card, const char *what, mig_return_t r)
{
	snprintf(err, errlen, "%s: %s failed: %s (%s)", card->name, what, mig_lib_strerror(card->lib, r),
	         mig_return_name(r));
	return -mig_return_errno(r);
}

void accel_ci_cache_clear(struct accel_ci_cache *c)
{
	for (size_t i = 0; c && i < c->n; i++)
		free(c->entries[i].profiles);
	if (c) {
		free(c->entries);
		c->entries = NULL;
		c->n = 0;
	}
}

static mig_compute_instance_profile_info_v2_t *dup_profiles(const mig_compute_instance_profile_info_v2_t *p, size_t n)
{
	mig_compute_instance_profile_info_v2_t *d = malloc((n + 1) * sizeof(*d));

	if (d && n)
		memcpy(d, p, n * sizeof(*d));
	return d;
}

static int probe_ci_profiles(const struct accel_card *card, mig_gpu_instance_t gi,
                             mig_compute_instance_profile_info_v2_t **out, size_t *n, char *err, size_t errlen);

int accel_ci_profiles(const struct accel_card *card, mig_gpu_instance_t gi, unsigned gi_profile_id,
                      mig_compute_instance_profile_info_v2_t **out, size_t *n, char *err, size_t errlen)
{
	struct accel_ci_cache *c = card->ci_cache;
	struct accel_ci_cache_entry *grown;
	int ret;

	for (size_t i = 0; c && i < c->n; i++)
		if (c->entries[i].gi_profile_id == gi_profile_id) {
			*n = c->entries[i].n;
			*out = dup_profiles(c->entries[i].profiles, *n);
			return *out ? 0 : -ENOMEM;
		}
	ret = probe_ci_profiles(card, gi, out, n, err, errlen);
	if (ret || !c || *n == 0)
		return ret; /* an empty answer is never kept: it may be a driver's bad moment */
	grown = realloc(c->entries, (c->n + 1) * sizeof(*grown));
	if (!grown)
		return 0; /* the answer stands; only the cache is lost */
	c->entries = grown;
	grown[c->n].gi_profile_id = gi_profile_id;
	grown[c->n].n = *n;
	grown[c->n].profiles = dup_profiles(*out, *n);
	if (grown[c->n].profiles)
		c->n++;
	return 0;
}

static int probe_ci_profiles(const struct accel_card *card, mig_gpu_instance_t gi,
                             mig_compute_instance_profile_info_v2_t **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	for (unsigned index = 0; index < card->family->ci_profile_count; index++) {
		mig_compute_instance_profile_info_v2_t info, *grown;
		mig_return_t r;
		bool seen = false;

		memset(&info, 0, sizeof(info));
		info.version = MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2;
		r = card->lib->GpuInstanceGetComputeInstanceProfileInfoV(
			gi, index, MIG_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
		if (accel_catalog_absent(r))
			continue;
		if (r != MIG_SUCCESS) {
			free(*out);
			*out = NULL;
			*n = 0;
			return fail(err, errlen, card, "probing compute-instance profiles", r);
		}
		for (size_t i = 0; i < *n; i++)
			seen = seen || (*out)[i].id == info.id;
		if (seen)
			continue;
		grown = realloc(*out, (*n + 1) * sizeof(*grown));
		if (!grown) {
			free(*out);
			*out = NULL;
			*n = 0;
			return -ENOMEM;
		}
		*out = grown;
		(*out)[(*n)++] = info;
	}
	return 0;
}

/*
 * Visit every MIG device of the card: (gi, ci, uuid).  Empty slots are
 * skipped; a handle that cannot be resolved is an error, since a caller
 * proving identity must not skip what it could not read.
 */
static int walk_mig_devices(const struct accel_card *card,
                            void (*visit)(void *ctx, unsigned index, unsigned gi, unsigned ci, const char *uuid),
                            void *ctx, char *err, size_t errlen)
{
	unsigned max = 0;
	mig_return_t r;

	r = card->lib->DeviceGetMaxMigDeviceCount(card->handle, &max);
	if (r != MIG_SUCCESS)
		return fail(err, errlen, card, "reading the MIG device count", r);
	for (unsigned i = 0; i < max; i++) {
		char buf[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
		mig_device_t mig;
		unsigned g, c;

		r = card->lib->DeviceGetMigDeviceHandleByIndex(card->handle, i, &mig);
		if (r == MIG_ERROR_NOT_FOUND || r == MIG_ERROR_INVALID_ARGUMENT)
			continue; /* an empty slot */
		if (r == MIG_SUCCESS)
			r = card->lib->DeviceGetGpuInstanceId(mig, &g);
		if (r == MIG_SUCCESS)
			r = card->lib->DeviceGetComputeInstanceId(mig, &c);
		if (r == MIG_SUCCESS)
			r = card->lib->DeviceGetUUID(mig, buf, sizeof(buf));
		if (r != MIG_SUCCESS)
			return fail(err, errlen, card, "walking MIG devices", r);
		buf[sizeof(buf) - 1] = '\0';
		visit(ctx, i, g, c, buf);
	}
	return 0;
}

struct uuid_query {
	unsigned gi, ci, found, index;
	char *uuid;
	size_t len;
};

static void match_uuid(void *ctx, unsigned index, unsigned gi, unsigned ci, const char *uuid)
{
	struct uuid_query *q = ctx;

	if (gi != q->gi || ci != q->ci)
		return;
	if (!q->found++) {
		snprintf(q->uuid, q->len, "%s", uuid);
		q->index = index;
	}
}

/* The MIG device at one index, if it is (gi, ci): 1 found, 0 not there, -errno. */
static int uuid_at(const struct accel_card *card, unsigned index, unsigned gi, unsigned ci, char *uuid, size_t len,
                   char *err, size_t errlen)
{
	char buf[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
	mig_device_t mig;
	unsigned g, c;
	mig_return_t r = card->lib->DeviceGetMigDeviceHandleByIndex(card->handle, index, &mig);

	if (r == MIG_ERROR_NOT_FOUND || r == MIG_ERROR_INVALID_ARGUMENT)
		return 0;
	if (r == MIG_SUCCESS)
		r = card->lib->DeviceGetGpuInstanceId(mig, &g);
	if (r == MIG_SUCCESS)
		r = card->lib->DeviceGetComputeInstanceId(mig, &c);
	if (r == MIG_SUCCESS && (g != gi || c != ci))
		return 0;
	if (r == MIG_SUCCESS)
		r = card->lib->DeviceGetUUID(mig, buf, sizeof(buf));
	if (r != MIG_SUCCESS)
		return fail(err, errlen, card, "reading a MIG device", r);
	buf[sizeof(buf) - 1] = '\0';
	snprintf(uuid, len, "%s", buf);
	return 1;
}

int accel_mig_uuid(const struct accel_card *card, unsigned gi, unsigned ci, char *uuid, size_t len, unsigned *index,
                   char *err, size_t errlen)
{
	struct uuid_query q = { gi, ci, 0, UINT_MAX, uuid, len };
	int ret;

	uuid[0] = '\0';
	/*
	 * Where it was found before (a MIG device keeps its index while it
	 * lives): four calls instead of a walk.  Uniqueness was proven when
	 * the index was learnt.
	 */
	if (index && *index != UINT_MAX) {
		ret = uuid_at(card, *index, gi, ci, uuid, len, err, errlen);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	ret = walk_mig_devices(card, match_uuid, &q, err, errlen);
	if (ret)
		return ret;
	if (q.found > 1) {
		/* Two MIG devices claiming one instance: identity is ambiguous. */
		snprintf(err, errlen, "%s: %u MIG devices claim GPU instance %u compute instance %u", card->name,
		         q.found, gi, ci);
		uuid[0] = '\0';
		return -EIO;
	}
	if (!q.found) {
		snprintf(err, errlen, "%s: no MIG device for GPU instance %u compute instance %u", card->name, gi, ci);
		return -ENOENT;
	}
	if (index)
		*index = q.index;
	return 0;
}

static int read_cis(const struct accel_card *card, mig_gpu_instance_t handle, struct accel_live_gi *gi, char *err,
                    size_t errlen)
{
	mig_compute_instance_profile_info_v2_t *profiles;
	size_t n_profiles;
	int ret = accel_ci_profiles(card, handle, gi->profile_id, &profiles, &n_profiles, err, errlen);

	if (ret)
		return ret;
	unsigned whole = 0; /* the GPU instance's slice count: the largest compute-instance profile's */

	for (size_t p = 0; p < n_profiles; p++)
		if (profiles[p].sliceCount > whole)
			whole = profiles[p].sliceCount;
	for (size_t p = 0; p < n_profiles; p++) {
		mig_compute_instance_t cis[ACCEL_MAX_CI_PER_GI];
		unsigned count = ACCEL_MAX_CI_PER_GI;
		mig_return_t r = card->lib->GpuInstanceGetComputeInstances(handle, profiles[p].id, cis, &count);

		if (accel_catalog_absent(r))
			continue;
		if (r != MIG_SUCCESS) {
			free(profiles);
			return fail(err, errlen, card, "listing compute instances", r);
		}
		for (unsigned i = 0; i < count && gi->n_ci < ACCEL_MAX_CI_PER_GI; i++) {
			mig_compute_instance_info_t info;
			struct accel_live_ci *ci;

			memset(&info, 0, sizeof(info));
			r = card->lib->ComputeInstanceGetInfo_v2(cis[i], &info);
			if (r != MIG_SUCCESS) {
				free(profiles);
				return fail(err, errlen, card, "reading a compute instance", r);
			}
			ci = &gi->ci[gi->n_ci++];
			ci->id = info.id;
			ci->profile_id = info.profileId;
			ci->partial = profiles[p].sliceCount < whole;
			ci->uuid[0] = '\0';
		}
	}
	free(profiles);
	return 0;
}

static void fill_uuid(void *ctx, unsigned index, unsigned gi, unsigned ci, const char *uuid)
{
	(void)index;
	struct accel_inventory *inv = ctx;

	for (size_t k = 0; k < inv->n_gis; k++)
		for (unsigned j = 0; inv->gis[k].id == gi && j < inv->gis[k].n_ci; j++)
			if (inv->gis[k].ci[j].id == ci)
				snprintf(inv->gis[k].ci[j].uuid, sizeof(inv->gis[k].ci[j].uuid), "%s", uuid);
}

int accel_inventory_read(const struct accel_card *card, const unsigned *profile_ids, size_t n_ids,
                         struct accel_inventory *out, char *err, size_t errlen)
{
	int ret = 0;

	memset(out, 0, sizeof(*out));
	for (size_t p = 0; p < n_ids; p++) {
		mig_gpu_instance_t gis[MAX_GI_PER_PROFILE];
		unsigned count = MAX_GI_PER_PROFILE;
		mig_return_t r = card->lib->DeviceGetGpuInstances(card->handle, profile_ids[p], gis, &count);

		if (accel_catalog_absent(r))
			continue;
		if (r != MIG_SUCCESS) {
			ret = fail(err, errlen, card, "listing GPU instances", r);
			goto fail;
		}
		for (unsigned i = 0; i < count; i++) {
			mig_gpu_instance_info_t info;
			struct accel_live_gi *grown, *gi;

			memset(&info, 0, sizeof(info));
			r = card->lib->GpuInstanceGetInfo(gis[i], &info);
			if (r != MIG_SUCCESS) {
				ret = fail(err, errlen, card, "reading a GPU instance", r);
				goto fail;
			}
			if (accel_inventory_gi(out, info.id))
				continue; /* listed under two profile ids: count it once */
			grown = realloc(out->gis, (out->n_gis + 1) * sizeof(*grown));
			if (!grown) {
				ret = -ENOMEM;
				goto fail;
			}
			out->gis = grown;
			gi = &out->gis[out->n_gis++];
			memset(gi, 0, sizeof(*gi));
			gi->id = info.id;
			gi->profile_id = info.profileId;
			gi->placement = (struct accel_span){ info.placement.start, info.placement.size };
			ret = read_cis(card, gis[i], gi, err, errlen);
			if (ret)
				goto fail;
		}
	}
	if (out->n_gis) {
		ret = walk_mig_devices(card, fill_uuid, out, err, errlen);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	accel_inventory_clear(out);
	return ret;
}
