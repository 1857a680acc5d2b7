/* SPDX-License-Identifier: MIT */
/* Compute-instance profiles and compute instances. */
#include <stdio.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_nodes.h"
#include "sim/common/sim_uuid.h"

/*
 * The CI profile name.  NVIDIA: the GI's own name for the profile covering
 * it, "MIG <n>c.<gi>" for a share.  T-Head: none (GPUStack saw CI profiles
 * without names before creation).
 */
static void ci_profile_name(const struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi_profile *gp,
                            const struct sim_ci_profile *c, char *buf, size_t len)
{
	if (!ctx->vendor->names_ci_profiles || !sim_device_names_profiles(d))
		buf[0] = '\0';
	else if (c->slices == gp->slices)
		snprintf(buf, len, "%s", gp->name);
	else
		snprintf(buf, len, "MIG %uc.%s", c->slices, sim_profile_short_name(gp->name));
}

mig_return_t sim_GpuInstanceGetComputeInstanceProfileInfoV(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                           unsigned int profile, unsigned int engProfile,
                                                           mig_compute_instance_profile_info_v2_t *info)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpuInstanceGetComputeInstanceProfileInfoV, &call);
	const struct sim_ci_profile *c = NULL;
	const struct sim_gi_profile *gp;
	struct sim_device *d;
	struct sim_gi *gi;

	if (r)
		return r;
	r = sim_resolve_gi(&call, gpuInstance, &d, &gi);
	if (!r && !info)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && info->version != MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2)
		r = info->version ? MIG_ERROR_ARGUMENT_VERSION_MISMATCH : MIG_ERROR_INVALID_ARGUMENT;
	if (!r &&
	    (profile >= ctx->vendor->ci_profile_count || engProfile != MIG_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	for (unsigned i = 0; i < d->n_ci_profiles && !c; i++)
		if (d->ci_profiles[i].index == profile && sim_ci_profile_fits(d, gi, &d->ci_profiles[i]))
			c = &d->ci_profiles[i];
	gp = sim_gi_profile_by_id(d, gi->profile_id);
	if (!c || !gp)
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	info->id = c->id;
	info->sliceCount = c->slices;
	info->instanceCount = sim_ci_instance_count(d, gi, c);
	/* The one covering the whole GI has all of its SMs; a share has the profile's. */
	info->multiprocessorCount = c->slices == gp->slices ? gp->multiprocessors : c->multiprocessors;
	info->sharedCopyEngineCount = gp->copy_engines;
	info->sharedDecoderCount = gp->decoders;
	info->sharedEncoderCount = gp->encoders;
	info->sharedJpegCount = gp->jpegs;
	info->sharedOfaCount = gp->ofas;
	ci_profile_name(ctx, d, gp, c, info->name, sizeof(info->name));
	return sim_leave(&call, MIG_SUCCESS);
}

/* The CI profile an id names for this GI, or the error it answers. */
static mig_return_t ci_profile_for(const struct sim_device *d, const struct sim_gi *gi, unsigned id,
                                   const struct sim_ci_profile **c)
{
	*c = sim_ci_profile_for_gi(d, gi, id);
	if (*c)
		return MIG_SUCCESS;
	return sim_ci_profile_id_known(d, id) ? MIG_ERROR_NOT_SUPPORTED : MIG_ERROR_INVALID_ARGUMENT;
}

mig_return_t sim_GpuInstanceCreateComputeInstance(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                  unsigned int profileId, mig_compute_instance_t *computeInstance)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpuInstanceCreateComputeInstance, &call);
	const struct sim_ci_profile *c;
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci ci;
	mig_compute_instance_t h;
	int id;

	if (r)
		return r;
	r = sim_resolve_gi(&call, gpuInstance, &d, &gi);
	if (!r && !computeInstance)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		r = ci_profile_for(d, gi, profileId, &c);
	if (r)
		return sim_leave(&call, r);
	memset(&ci, 0, sizeof(ci));
	r = sim_ci_next_placement(d, gi, c, &ci.placement);
	id = sim_ci_free_id(gi);
	if (!r && id < 0)
		r = MIG_ERROR_INSUFFICIENT_RESOURCES;
	if (r)
		return sim_leave(&call, r);
	ci.id = (unsigned)id;
	ci.profile_id = c->id;
	if (sim_uuid_generate("MIG-", ci.uuid, sizeof(ci.uuid)) != 0)
		return sim_leave(&call, MIG_ERROR_UNKNOWN);
	ci.serial = d->next_serial++;
	h = sim_ci_handle(ctx, d, gi, &ci);
	if (!h)
		return sim_leave(&call, MIG_ERROR_MEMORY);
	if (sim_nodes_ci_created(ctx, d, gi, &ci) != 0) {
		fprintf(stderr,
		        "accelfs simulated %s driver: cannot write the capability record of compute instance %u/%u\n",
		        ctx->vendor->dir, gi->id, ci.id);
		sim_nodes_ci_removed(ctx, d, gi->id, ci.id);
		return sim_leave(&call, MIG_ERROR_UNKNOWN);
	}
	gi->cis[gi->n_cis++] = ci;
	r = sim_commit(&call);
	if (r) {
		sim_nodes_ci_removed(ctx, d, gi->id, ci.id);
		return sim_leave(&call, r);
	}
	*computeInstance = h;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_GpuInstanceGetComputeInstances(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                unsigned int profileId, mig_compute_instance_t *computeInstances,
                                                unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpuInstanceGetComputeInstances, &call);
	const struct sim_ci_profile *c;
	struct sim_device *d;
	struct sim_gi *gi;
	unsigned n = 0;

	if (r)
		return r;
	r = sim_resolve_gi(&call, gpuInstance, &d, &gi);
	if (!r && (!computeInstances || !count))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		r = ci_profile_for(d, gi, profileId, &c);
	if (r)
		return sim_leave(&call, r);
	for (unsigned id = 0; id < SIM_MAX_CI; id++) {
		struct sim_ci *ci = sim_ci_by_id(gi, id);

		if (!ci || ci->profile_id != profileId)
			continue;
		computeInstances[n] = sim_ci_handle(ctx, d, gi, ci);
		if (!computeInstances[n])
			return sim_leave(&call, MIG_ERROR_MEMORY);
		n++;
	}
	*count = n;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_ComputeInstanceGetInfo_v2(struct sim_ctx *ctx, mig_compute_instance_t computeInstance,
                                           mig_compute_instance_info_t *info)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_ComputeInstanceGetInfo_v2, &call);
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;

	if (r)
		return r;
	r = sim_resolve_ci(&call, computeInstance, &d, &gi, &ci);
	if (!r && !info)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	info->device = sim_device_handle(ctx, d);
	info->gpuInstance = sim_gi_handle(ctx, d, gi);
	info->id = ci->id;
	info->profileId = ci->profile_id;
	info->placement = (mig_compute_instance_placement_t){ ci->placement.start, ci->placement.size };
	return sim_leave(&call, info->device && info->gpuInstance ? MIG_SUCCESS : MIG_ERROR_MEMORY);
}

mig_return_t sim_ComputeInstanceDestroy(struct sim_ctx *ctx, mig_compute_instance_t computeInstance)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_ComputeInstanceDestroy, &call);
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;
	unsigned id;

	if (r)
		return r;
	r = sim_resolve_ci(&call, computeInstance, &d, &gi, &ci);
	if (r)
		return sim_leave(&call, r);
	/* Something runs on it (SimSetBusy): the driver refuses, as for a live CUDA context. */
	if (ci->processes > 0)
		return sim_leave(&call, MIG_ERROR_IN_USE);
	id = ci->id;
	*ci = gi->cis[--gi->n_cis];
	r = sim_commit(&call);
	if (!r)
		sim_nodes_ci_removed(ctx, d, gi->id, id);
	return sim_leave(&call, r);
}
