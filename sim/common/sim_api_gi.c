/* SPDX-License-Identifier: MIT */
/* GPU-instance profiles, placements and GPU instances. */
#include <stdio.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_nodes.h"

/* T-Head: a card with the mode off reports no slicing capability at all (runbook). */
static bool profiles_hidden(const struct sim_ctx *ctx, const struct sim_device *d)
{
	return ctx->vendor->profiles_need_mig_mode && d->mig_current != MIG_DEVICE_MIG_ENABLE;
}

mig_return_t sim_DeviceGetGpuInstanceProfileInfoV(struct sim_ctx *ctx, mig_device_t device, unsigned int profile,
                                                  mig_gpu_instance_profile_info_v3_t *info)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstanceProfileInfoV, &call);
	const struct sim_gi_profile *p;
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && !info)
		r = MIG_ERROR_INVALID_ARGUMENT;
	/* A real NVML 580 answers a zero version INVALID_ARGUMENT, another one a mismatch. */
	if (!r && info->version != MIG_GPU_INSTANCE_PROFILE_INFO_V3)
		r = info->version ? MIG_ERROR_ARGUMENT_VERSION_MISMATCH : MIG_ERROR_INVALID_ARGUMENT;
	if (!r && profile >= ctx->vendor->gi_profile_count)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	p = profiles_hidden(ctx, d) ? NULL : sim_gi_profile_by_index(d, profile);
	if (!p)
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	/* The record carries its own id, which is not the index it was probed at. */
	info->id = p->id;
	info->sliceCount = p->slices;
	info->instanceCount = p->instances;
	info->multiprocessorCount = p->multiprocessors;
	info->copyEngineCount = p->copy_engines;
	info->decoderCount = p->decoders;
	info->encoderCount = p->encoders;
	info->jpegCount = p->jpegs;
	info->ofaCount = p->ofas;
	info->memorySizeMB = p->memory_mib;
	snprintf(info->name, sizeof(info->name), "%s", sim_device_names_profiles(d) ? p->name : "");
	info->capabilities = p->capabilities;
	return sim_leave(&call, MIG_SUCCESS);
}

/* The profile a call names by id, or the error it answers. */
static mig_return_t profile_for(struct sim_call *call, mig_device_t device, unsigned int profileId,
                                struct sim_device **d, const struct sim_gi_profile **p)
{
	mig_return_t r = sim_resolve_device(call, device, d);

	if (r)
		return r;
	if (profiles_hidden(call->ctx, *d))
		return MIG_ERROR_NOT_SUPPORTED;
	*p = sim_gi_profile_by_id(*d, profileId);
	return *p ? MIG_SUCCESS : MIG_ERROR_INVALID_ARGUMENT;
}

/*
 * Every legal placement, whatever is carved: the -lgipp quirk the ledger
 * relies on.  As in NVML, a non-NULL buffer must hold the count a NULL
 * query returned; *count is not read.
 */
mig_return_t sim_DeviceGetGpuInstancePossiblePlacements_v2(struct sim_ctx *ctx, mig_device_t device,
                                                           unsigned int profileId,
                                                           mig_gpu_instance_placement_t *placements,
                                                           unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstancePossiblePlacements_v2, &call);
	const struct sim_gi_profile *p;
	struct sim_device *d;

	if (r)
		return r;
	r = profile_for(&call, device, profileId, &d, &p);
	if (!r && !count)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	if (placements)
		for (unsigned i = 0; i < p->n_placements; i++)
			placements[i] = (mig_gpu_instance_placement_t){ p->placements[i].start, p->placements[i].size };
	*count = p->n_placements;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetGpuInstanceRemainingCapacity(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                                       unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstanceRemainingCapacity, &call);
	const struct sim_gi_profile *p;
	struct sim_device *d;

	if (r)
		return r;
	r = profile_for(&call, device, profileId, &d, &p);
	if (!r && !count)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		*count = sim_gi_remaining(d, p);
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceCreateGpuInstanceWithPlacement(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                                      const mig_gpu_instance_placement_t *placement,
                                                      mig_gpu_instance_t *gpuInstance)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceCreateGpuInstanceWithPlacement, &call);
	const struct sim_gi_profile *p;
	struct sim_device *d;
	struct sim_gi gi;
	mig_gpu_instance_t h;
	int id;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && (!placement || !gpuInstance))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && d->mig_current != MIG_DEVICE_MIG_ENABLE)
		r = MIG_ERROR_NOT_SUPPORTED;
	if (r)
		return sim_leave(&call, r);
	p = sim_gi_profile_by_id(d, profileId);
	if (!p)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_gi_fits(d, p, (struct sim_placement){ placement->start, placement->size });
	id = sim_gi_free_id(d);
	if (!r && id < 0)
		r = MIG_ERROR_INSUFFICIENT_RESOURCES;
	if (r)
		return sim_leave(&call, r);

	memset(&gi, 0, sizeof(gi));
	gi.id = (unsigned)id;
	gi.profile_id = p->id;
	gi.placement = (struct sim_placement){ placement->start, placement->size };
	gi.serial = d->next_serial++;
	h = sim_gi_handle(ctx, d, &gi);
	if (!h)
		return sim_leave(&call, MIG_ERROR_MEMORY);
	/* Records first, state last: the state file is the truth, and a crash leaves at most a stale record. */
	if (sim_nodes_gi_created(ctx, d, &gi) != 0) {
		fprintf(stderr, "accelfs simulated %s driver: cannot write the capability record of GPU instance %u\n",
		        ctx->vendor->dir, gi.id);
		sim_nodes_gi_removed(ctx, d, gi.id);
		return sim_leave(&call, MIG_ERROR_UNKNOWN);
	}
	d->gis[d->n_gis++] = gi;
	r = sim_commit(&call);
	if (r) {
		sim_nodes_gi_removed(ctx, d, gi.id);
		return sim_leave(&call, r);
	}
	sim_usage_gi_made(ctx, d->ordinal, gi.id);
	*gpuInstance = h;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetGpuInstances(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                       mig_gpu_instance_t *gpuInstances, unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstances, &call);
	const struct sim_gi_profile *p;
	struct sim_device *d;
	unsigned n = 0;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && (!gpuInstances || !count))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && profiles_hidden(ctx, d))
		r = MIG_ERROR_NOT_SUPPORTED;
	if (r)
		return sim_leave(&call, r);
	/* NVIDIA with the mode off: SUCCESS and no instance (a real H200 answers so). */
	p = sim_gi_profile_by_id(d, profileId);
	if (!p)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	/* In id order, so listings are stable; NVML sizes the buffer by the profile's instanceCount. */
	for (unsigned id = 0; id < SIM_MAX_GI; id++) {
		struct sim_gi *gi = sim_gi_by_id(d, id);

		if (!gi || gi->profile_id != profileId)
			continue;
		gpuInstances[n] = sim_gi_handle(ctx, d, gi);
		if (!gpuInstances[n])
			return sim_leave(&call, MIG_ERROR_MEMORY);
		n++;
	}
	*count = n;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetGpuInstanceById(struct sim_ctx *ctx, mig_device_t device, unsigned int id,
                                          mig_gpu_instance_t *gpuInstance)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstanceById, &call);
	struct sim_device *d;
	struct sim_gi *gi;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && !gpuInstance)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && profiles_hidden(ctx, d))
		r = MIG_ERROR_NOT_SUPPORTED;
	if (r)
		return sim_leave(&call, r);
	/* NVIDIA with the mode off answers NOT_FOUND (a real H200 does). */
	gi = sim_gi_by_id(d, id);
	if (!gi)
		return sim_leave(&call, MIG_ERROR_NOT_FOUND);
	*gpuInstance = sim_gi_handle(ctx, d, gi);
	return sim_leave(&call, *gpuInstance ? MIG_SUCCESS : MIG_ERROR_MEMORY);
}

mig_return_t sim_GpuInstanceGetInfo(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance, mig_gpu_instance_info_t *info)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpuInstanceGetInfo, &call);
	struct sim_device *d;
	struct sim_gi *gi;

	if (r)
		return r;
	r = sim_resolve_gi(&call, gpuInstance, &d, &gi);
	if (!r && !info)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	info->device = sim_device_handle(ctx, d);
	info->id = gi->id;
	info->profileId = gi->profile_id;
	info->placement = (mig_gpu_instance_placement_t){ gi->placement.start, gi->placement.size };
	return sim_leave(&call, info->device ? MIG_SUCCESS : MIG_ERROR_MEMORY);
}

mig_return_t sim_GpuInstanceDestroy(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpuInstanceDestroy, &call);
	struct sim_device *d;
	struct sim_gi *gi;
	unsigned id;

	if (r)
		return r;
	r = sim_resolve_gi(&call, gpuInstance, &d, &gi);
	if (r)
		return sim_leave(&call, r);
	if (gi->n_cis > 0) {
		ctx->vendor->log_gi_in_use(&ctx->paths, d, gi->id);
		return sim_leave(&call, MIG_ERROR_IN_USE);
	}
	id = gi->id;
	*gi = d->gis[--d->n_gis];
	r = sim_commit(&call);
	/* The record goes with the instance; the capability node stays (runbook). */
	if (!r)
		sim_nodes_gi_removed(ctx, d, id);
	return sim_leave(&call, r);
}
