/* SPDX-License-Identifier: MIT */
#include "core/driver/carve.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/driver/catalog.h"
#include "core/driver/devnodes.h"
#include "core/driver/inventory.h"
#include "core/model/log.h"

static int driver_fail(const struct accel_card *card, const char *what, mig_return_t r, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s failed: %s (%s)", what, mig_lib_strerror(card->lib, r), mig_return_name(r));
	return -mig_return_errno(r);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * What a destroy the driver calls busy adds to why.  An rmdir retries
 * --busy-retries times; the poller, resuming a removal, asks once per pass
 * (card->busy_retries 0): each says what it did, so that status (the
 * poller's last word) and last_error (the rmdir's) never give one attempt
 * two different counts.
 */
static void still_in_use(const struct accel_card *card, const char *what, char *why, size_t whylen)
{
	size_t l = strlen(why);

	if (card->busy_retries)
		snprintf(why + l, whylen - l, "; %s after %u retries: stop it, then rmdir again", what,
		         card->busy_retries);
	else
		snprintf(why + l, whylen - l, "; %s: stop it; the poller tries again at each pass", what);
}

/* Call a destroy, retrying a bounded number of times while the driver says busy. */
#define DESTROY_WITH_RETRY(card, call, result)                                                                         \
	do {                                                                                                           \
		for (unsigned attempt_ = 0;; attempt_++) {                                                             \
			(result) = (call);                                                                             \
			if ((result) != MIG_ERROR_IN_USE || attempt_ >= (card)->busy_retries)                          \
				break;                                                                                 \
			sleep_ms((card)->busy_delay_ms *(attempt_ + 1));                                               \
		}                                                                                                      \
	} while (0)

/*
 * The compute-instance profile that covers the whole GI: shared engines,
 * slice count equal to the GI's.  Indices can alias one profile, so the
 * candidates are distinct ids; anything but exactly one is refused.
 */
static int whole_gi_ci_profile(const struct accel_card *card, mig_gpu_instance_t gi, unsigned gi_profile_id,
                               unsigned gi_slices, unsigned *ci_profile_id, char *why, size_t whylen)
{
	mig_compute_instance_profile_info_v2_t *profiles;
	size_t n, matches = 0;
	int ret = accel_ci_profiles(card, gi, gi_profile_id, &profiles, &n, why, whylen);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		if (profiles[i].sliceCount != gi_slices)
			continue;
		*ci_profile_id = profiles[i].id;
		matches++;
	}
	free(profiles);
	if (matches != 1) {
		snprintf(why, whylen,
		         "%zu compute-instance profiles cover all %u slices of the GPU instance (expected exactly one)",
		         matches, gi_slices);
		return -EIO;
	}
	return 0;
}

static void rollback(const struct accel_card *card, mig_gpu_instance_t gi, mig_compute_instance_t ci,
                     const char *profile, bool *left_behind, char *why, size_t whylen)
{
	mig_return_t r = MIG_SUCCESS;

	if (ci)
		DESTROY_WITH_RETRY(card, card->lib->ComputeInstanceDestroy(ci), r);
	if (r == MIG_SUCCESS)
		DESTROY_WITH_RETRY(card, card->lib->GpuInstanceDestroy(gi), r);
	if (r != MIG_SUCCESS) {
		size_t l = strlen(why);
		*left_behind = true;
		snprintf(why + l, whylen - l,
		         "; rolling back failed too (%s): the instance is left for the orphan reclaim",
		         mig_lib_strerror(card->lib, r));
		log_error("%s/%s: rollback failed: %s (%s)", card->name, profile, mig_lib_strerror(card->lib, r),
		          mig_return_name(r));
	}
}

int accel_carve(const struct accel_card *card, const struct accel_profile *p, int want, const struct accel_span *used,
                size_t n_used, accel_commit_fn commit, void *ctx, struct accel_carve_result *out, char *why,
                size_t whylen)
{
	mig_gpu_instance_placement_t placement;
	mig_gpu_instance_t gi = NULL;
	mig_compute_instance_t ci = NULL;
	mig_gpu_instance_info_t gi_info;
	mig_compute_instance_info_t ci_info;
	mig_return_t r;
	int pick, ret;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (want >= 0) {
		pick = (size_t)want < p->n_placements && accel_ledger_is_free(p->placements[want], used, n_used) ? want
		                                                                                                 : -1;
		if (pick < 0) {
			snprintf(why, whylen, "the chosen placement is no longer free");
			return -EAGAIN;
		}
	} else {
		pick = accel_ledger_pick(p->placements, p->n_placements, used, n_used);
	}
	if (pick < 0) {
		char legal[128];
		accel_ledger_format(p->placements, p->n_placements, legal, sizeof(legal));
		snprintf(why, whylen, "no free placement: every legal placement %s overlaps a live instance", legal);
		return -ENOSPC;
	}
	placement.start = p->placements[pick].start;
	placement.size = p->placements[pick].size;
	out->placement = p->placements[pick];
	log_debug("%s/%s: creating a GPU instance of profile %u at placement %u:%u (%zu instance(s) on the card)",
	          card->name, p->name, p->id, placement.start, placement.size, n_used);

	r = card->lib->DeviceCreateGpuInstanceWithPlacement(card->handle, p->id, &placement, &gi);
	if (r != MIG_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "creating the GPU instance at %u:%u", placement.start, placement.size);
		return driver_fail(card, what, r, why, whylen);
	}

	memset(&gi_info, 0, sizeof(gi_info));
	r = card->lib->GpuInstanceGetInfo(gi, &gi_info);
	if (r != MIG_SUCCESS) {
		ret = driver_fail(card, "reading the new GPU instance", r, why, whylen);
		goto undo;
	}
	if (gi_info.profileId != p->id || gi_info.placement.start != placement.start ||
	    gi_info.placement.size != placement.size) {
		snprintf(why, whylen, "the driver made GPU instance %u with profile %u at %u:%u, not %u at %u:%u",
		         gi_info.id, gi_info.profileId, gi_info.placement.start, gi_info.placement.size, p->id,
		         placement.start, placement.size);
		ret = -EIO;
		goto undo;
	}
	out->gi = gi_info.id;

	ret = whole_gi_ci_profile(card, gi, p->id, p->slice_count, &out->ci_profile_id, why, whylen);
	if (ret)
		goto undo;
	log_debug("%s/%s: GPU instance %u made; creating its compute instance of profile %u", card->name, p->name,
	          out->gi, out->ci_profile_id);
	r = card->lib->GpuInstanceCreateComputeInstance(gi, out->ci_profile_id, &ci);
	if (r != MIG_SUCCESS) {
		ret = driver_fail(card, "creating the compute instance", r, why, whylen);
		ci = NULL;
		goto undo;
	}
	memset(&ci_info, 0, sizeof(ci_info));
	r = card->lib->ComputeInstanceGetInfo_v2(ci, &ci_info);
	if (r != MIG_SUCCESS) {
		ret = driver_fail(card, "reading the new compute instance", r, why, whylen);
		goto undo;
	}
	out->ci = ci_info.id;

	out->mig_index = UINT_MAX;
	ret = accel_mig_uuid(card, out->gi, out->ci, out->uuid, sizeof(out->uuid), &out->mig_index, why, whylen);
	if (ret)
		goto undo;
	ret = accel_job_nodes(card, out->gi, out->ci, &out->nodes, &out->n_nodes, why, whylen);
	if (ret)
		goto undo;
	log_debug("%s/%s: compute instance %u made (%s, %zu device node(s)); recording the job", card->name, p->name,
	          out->ci, out->uuid, out->n_nodes);
	if (commit) {
		ret = commit(ctx, out, why, whylen);
		if (ret)
			goto undo;
	}
	return 0;

undo:
	free(out->nodes);
	out->nodes = NULL;
	out->n_nodes = 0;
	rollback(card, gi, ci, p->name, &out->left_behind, why, whylen);
	return ret;
}

/* The compute instances under one GPU instance: handles and ids, read once for the proof and the destroys. */
struct ci_list {
	mig_compute_instance_t handle[ACCEL_MAX_CI_PER_GI];
	unsigned id[ACCEL_MAX_CI_PER_GI];
	unsigned n;
};

static int list_cis(const struct accel_card *card, mig_gpu_instance_t gi, unsigned gi_profile_id, bool want_ids,
                    struct ci_list *out, char *why, size_t whylen)
{
	mig_compute_instance_profile_info_v2_t *profiles;
	size_t n_profiles;
	int ret = accel_ci_profiles(card, gi, gi_profile_id, &profiles, &n_profiles, why, whylen);

	out->n = 0;
	if (ret)
		return ret;
	for (size_t p = 0; p < n_profiles; p++) {
		unsigned count = ACCEL_MAX_CI_PER_GI - out->n;
		mig_return_t r =
			card->lib->GpuInstanceGetComputeInstances(gi, profiles[p].id, out->handle + out->n, &count);

		if (accel_catalog_absent(r))
			continue;
		if (r != MIG_SUCCESS) {
			free(profiles);
			return driver_fail(card, "listing compute instances", r, why, whylen);
		}
		for (unsigned i = 0; i < count && want_ids; i++) {
			mig_compute_instance_info_t info;

			memset(&info, 0, sizeof(info));
			r = card->lib->ComputeInstanceGetInfo_v2(out->handle[out->n + i], &info);
			if (r != MIG_SUCCESS) {
				free(profiles);
				return driver_fail(card, "reading a compute instance", r, why, whylen);
			}
			out->id[out->n + i] = info.id;
		}
		out->n += count;
	}
	free(profiles);
	return 0;
}

/*
 * Does GPU instance gi carry the expected MIG device (or, resuming a removal,
 * no compute instance at all)?  1 yes, 0 no, -errno when the driver could
 * not say: a failed look is never taken for "someone else's".
 */
static int proven_ours(const struct accel_card *card, unsigned gi_id, const struct accel_expect *expect,
                       const struct ci_list *cis, char *why, size_t whylen)
{
	for (unsigned i = 0; i < cis->n; i++) {
		char uuid[ACCEL_UUID_MAX];
		unsigned index = expect->mig_index;
		int ret;

		if (cis->id[i] != expect->ci)
			continue;
		ret = accel_mig_uuid(card, gi_id, cis->id[i], uuid, sizeof(uuid), &index, why, whylen);
		if (ret == -ENOENT)
			return 0; /* no MIG device for it: not the recorded one */
		if (ret)
			return ret;
		return !strcmp(uuid, expect->uuid);
	}
	return expect->resume && cis->n == 0 ? 1 : 0;
}

int accel_reclaim(const struct accel_card *card, unsigned gi_id, const struct accel_expect *expect, bool *progressed,
                  char *why, size_t whylen)
{
	struct ci_list cis;
	mig_gpu_instance_info_t info;
	mig_gpu_instance_t gi;
	mig_return_t r;
	int ret;

	why[0] = '\0';
	if (progressed)
		*progressed = false;
	r = card->lib->DeviceGetGpuInstanceById(card->handle, gi_id, &gi);
	if (r == MIG_ERROR_NOT_FOUND || r == MIG_ERROR_INVALID_ARGUMENT) {
		snprintf(why, whylen, "GPU instance %u no longer exists", gi_id);
		return -ENOENT;
	}
	if (r != MIG_SUCCESS)
		return driver_fail(card, "looking up the GPU instance", r, why, whylen);
	memset(&info, 0, sizeof(info));
	r = card->lib->GpuInstanceGetInfo(gi, &info);
	if (r != MIG_SUCCESS)
		return driver_fail(card, "reading the GPU instance", r, why, whylen);

	if (expect) {
		if (info.profileId != expect->profile_id || info.placement.start != expect->placement.start ||
		    info.placement.size != expect->placement.size) {
			snprintf(why, whylen,
			         "GPU instance %u is now profile %u at %u:%u, not the recorded %u at %u:%u; left alone",
			         gi_id, info.profileId, info.placement.start, info.placement.size, expect->profile_id,
			         expect->placement.start, expect->placement.size);
			return -ESTALE;
		}
	}

	ret = list_cis(card, gi, info.profileId, expect && expect->uuid, &cis, why, whylen);
	if (ret)
		return ret;
	if (expect && expect->uuid) {
		/* The MIG UUID is the only proof the instance is the one recorded. */
		ret = proven_ours(card, gi_id, expect, &cis, why, whylen);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			snprintf(why, whylen, "GPU instance %u no longer carries MIG device %s; left alone", gi_id,
			         expect->uuid);
			return -ESTALE;
		}
	}

	/* Compute instances first: the driver refuses a GPU instance that still has one. */
	for (unsigned i = 0; i < cis.n; i++) {
		DESTROY_WITH_RETRY(card, card->lib->ComputeInstanceDestroy(cis.handle[i]), r);
		if (r != MIG_SUCCESS) {
			ret = driver_fail(card, "destroying a compute instance", r, why, whylen);
			if (r == MIG_ERROR_IN_USE)
				still_in_use(card, "something runs on it (the job's processes file says what)", why,
				             whylen);
			return ret;
		}
		if (progressed)
			*progressed = true;
	}

	DESTROY_WITH_RETRY(card, card->lib->GpuInstanceDestroy(gi), r);
	if (r != MIG_SUCCESS) {
		ret = driver_fail(card, "destroying the GPU instance", r, why, whylen);
		if (r == MIG_ERROR_IN_USE)
			still_in_use(card, "still in use", why, whylen);
		return ret;
	}
	return 0;
}
