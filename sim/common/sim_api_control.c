/* SPDX-License-Identifier: MIT */
/*
 * The control extension (sim/accelsim.h): what a test or `accel-smi sim`
 * does to the simulated hardware that no driver call could.  None of these
 * is hit by injected faults.
 */
#include <stdio.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_faults.h"
#include "sim/common/sim_handles.h"

static mig_return_t find_ci(struct sim_ctx *ctx, mig_device_t device, unsigned gi_id, unsigned ci_id,
			    struct sim_ci **ci)
{
	struct sim_device *d;
	struct sim_gi *gi;
	mig_return_t r = sim_resolve_device(ctx, device, &d);

	if (r)
		return r;
	gi = sim_gi_by_id(d, gi_id);
	*ci = gi ? sim_ci_by_id(gi, ci_id) : NULL;
	return *ci ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}

mig_return_t sim_SimSetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
			    unsigned int computeInstanceId, unsigned int processes)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);
	struct sim_ci *ci;

	if (r)
		return r;
	r = find_ci(ctx, device, gpuInstanceId, computeInstanceId, &ci);
	if (r)
		return sim_leave(ctx, r);
	ci->processes = processes;
	return sim_leave(ctx, sim_commit(ctx));
}

mig_return_t sim_SimGetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
			    unsigned int computeInstanceId, unsigned int *processes)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);
	struct sim_ci *ci;

	if (r)
		return r;
	r = find_ci(ctx, device, gpuInstanceId, computeInstanceId, &ci);
	if (!r && !processes)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		*processes = ci->processes;
	return sim_leave(ctx, r);
}

mig_return_t sim_SimArmFault(struct sim_ctx *ctx, const char *function, mig_return_t ret, unsigned int skip,
			     unsigned int times)
{
	accelsim_fault_t f;
	mig_return_t r;

	r = sim_enter(ctx, SIM_FN_NONE);
	if (r)
		return r;
	if (!function || !sim_fault_function_known(function) || times == 0 || ret == MIG_SUCCESS)
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	memset(&f, 0, sizeof(f));
	snprintf(f.function, sizeof(f.function), "%s", function);
	f.ret = ret;
	f.skip = skip;
	f.times = times;
	r = sim_faults_arm(&ctx->state, &f);
	if (!r)
		r = sim_commit(ctx);
	return sim_leave(ctx, r);
}

mig_return_t sim_SimGetFaults(struct sim_ctx *ctx, accelsim_fault_t *faults, unsigned int *count)
{
	mig_return_t r;
	unsigned n;

	r = sim_enter(ctx, SIM_FN_NONE);
	if (r)
		return r;
	if (!count)
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	n = ctx->state.n_faults;
	if (faults && *count < n)
		r = MIG_ERROR_INSUFFICIENT_SIZE;
	else if (faults)
		memcpy(faults, ctx->state.faults, n * sizeof(*faults));
	*count = n;
	return sim_leave(ctx, r);
}

mig_return_t sim_SimClearFaults(struct sim_ctx *ctx)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);

	if (r)
		return r;
	ctx->state.n_faults = 0;
	return sim_leave(ctx, sim_commit(ctx));
}

mig_return_t sim_SimSetDevicePresent(struct sim_ctx *ctx, unsigned int index, unsigned int present)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);
	struct sim_device *d;

	if (r)
		return r;
	d = sim_ctx_device(ctx, index);
	if (!d)
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	d->present = present != 0;
	return sim_leave(ctx, sim_commit(ctx));
}

mig_return_t sim_SimGetPath(struct sim_ctx *ctx, unsigned int which, char *path, unsigned int length)
{
	mig_return_t r;
	const char *p;

	r = sim_enter(ctx, SIM_FN_NONE);
	if (r)
		return r;
	if (!path)
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	switch (which) {
	case ACCELSIM_PATH_ROOT:
		p = ctx->paths.root;
		break;
	case ACCELSIM_PATH_DEV:
		p = ctx->paths.dev;
		break;
	case ACCELSIM_PATH_PROC:
		p = ctx->paths.proc;
		break;
	case ACCELSIM_PATH_KMSG:
		p = ctx->paths.kmsg;
		break;
	case ACCELSIM_PATH_STATE:
		p = ctx->paths.state;
		break;
	default:
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	}
	if (strlen(p) + 1 > length)
		return sim_leave(ctx, MIG_ERROR_INSUFFICIENT_SIZE);
	memcpy(path, p, strlen(p) + 1);
	return sim_leave(ctx, MIG_SUCCESS);
}

mig_return_t sim_SimGetCalls(struct sim_ctx *ctx, accelsim_call_count_t *calls, unsigned int *count)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);
	unsigned room;

	if (r)
		return r;
	if (!count)
		return sim_leave(ctx, MIG_ERROR_INVALID_ARGUMENT);
	room = calls ? *count : 0;
	sim_counters_list(&ctx->counters, calls, count);
	return sim_leave(ctx, calls && *count > room ? MIG_ERROR_INSUFFICIENT_SIZE : MIG_SUCCESS);
}

mig_return_t sim_SimResetCalls(struct sim_ctx *ctx)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE);

	if (r)
		return r;
	sim_counters_reset(&ctx->counters);
	return sim_leave(ctx, MIG_SUCCESS);
}
