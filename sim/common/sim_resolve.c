/* SPDX-License-Identifier: MIT */
/*
 * Resolving a handle to the live hardware for a call: apart from the handle
 * table (sim_handles.c), because it takes the card through the call
 * (sim_ctx.c), which itself frees the table at the last Shutdown.
 */
#include "sim/common/sim_handles.h"

#include "sim/common/sim_ctx.h"

mig_return_t sim_resolve_card(struct sim_call *call, unsigned ordinal, struct sim_device **d)
{
	struct sim_device *dev;
	mig_return_t r = sim_call_card(call, ordinal, &dev);

	if (r)
		return r;
	if (!dev->present)
		return MIG_ERROR_GPU_IS_LOST;
	*d = dev;
	return MIG_SUCCESS;
}

static struct sim_gi *live_gi(struct sim_device *d, unsigned id, unsigned long long serial)
{
	struct sim_gi *gi = sim_gi_by_id(d, id);

	return gi && gi->serial == serial ? gi : NULL;
}

static struct sim_ci *live_ci(struct sim_gi *gi, unsigned id, unsigned long long serial)
{
	struct sim_ci *ci = sim_ci_by_id(gi, id);

	return ci && ci->serial == serial ? ci : NULL;
}

mig_return_t sim_resolve_device(struct sim_call *call, mig_device_t h, struct sim_device **d)
{
	const struct sim_handle *hh = sim_handle_lookup(call->ctx, h);

	if (!hh || hh->kind != SIM_HANDLE_DEVICE)
		return MIG_ERROR_INVALID_ARGUMENT;
	return sim_resolve_card(call, hh->ordinal, d);
}

mig_return_t sim_resolve_any_device(struct sim_call *call, mig_device_t h, const struct sim_handle **hh,
                                    struct sim_device **d)
{
	*hh = sim_handle_lookup(call->ctx, h);
	if (!*hh || ((*hh)->kind != SIM_HANDLE_DEVICE && (*hh)->kind != SIM_HANDLE_MIG_DEVICE))
		return MIG_ERROR_INVALID_ARGUMENT;
	return sim_resolve_card(call, (*hh)->ordinal, d);
}

mig_return_t sim_resolve_gi(struct sim_call *call, mig_gpu_instance_t h, struct sim_device **d, struct sim_gi **gi)
{
	const struct sim_handle *hh = sim_handle_lookup(call->ctx, h);
	mig_return_t r;

	if (!hh || hh->kind != SIM_HANDLE_GI)
		return MIG_ERROR_INVALID_ARGUMENT;
	r = sim_resolve_card(call, hh->ordinal, d);
	if (r)
		return r;
	*gi = live_gi(*d, hh->gi_id, hh->gi_serial);
	return *gi ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}

mig_return_t sim_resolve_ci(struct sim_call *call, mig_compute_instance_t h, struct sim_device **d, struct sim_gi **gi,
                            struct sim_ci **ci)
{
	const struct sim_handle *hh = sim_handle_lookup(call->ctx, h);
	mig_return_t r;

	if (!hh || hh->kind != SIM_HANDLE_CI)
		return MIG_ERROR_INVALID_ARGUMENT;
	r = sim_resolve_card(call, hh->ordinal, d);
	if (r)
		return r;
	return sim_resolve_mig_parts(hh, *d, gi, ci);
}

mig_return_t sim_resolve_mig_parts(const struct sim_handle *hh, struct sim_device *d, struct sim_gi **gi,
                                   struct sim_ci **ci)
{
	*gi = live_gi(d, hh->gi_id, hh->gi_serial);
	*ci = *gi ? live_ci(*gi, hh->ci_id, hh->ci_serial) : NULL;
	return *ci ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}
