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
#include "sim/common/sim_health.h"

static mig_return_t find_ci(struct sim_call *call, mig_device_t device, unsigned gi_id, unsigned ci_id,
                            struct sim_ci **ci)
{
	struct sim_device *d;
	struct sim_gi *gi;
	mig_return_t r = sim_resolve_device(call, device, &d);

	if (r)
		return r;
	gi = sim_gi_by_id(d, gi_id);
	*ci = gi ? sim_ci_by_id(gi, ci_id) : NULL;
	return *ci ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}

mig_return_t sim_SimSetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                            unsigned int computeInstanceId, unsigned int processes)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_ci *ci;

	if (r)
		return r;
	r = find_ci(&call, device, gpuInstanceId, computeInstanceId, &ci);
	if (r)
		return sim_leave(&call, r);
	ci->processes = processes;
	if (ci->n_procs > processes)
		ci->n_procs = processes;
	return sim_leave(&call, sim_commit(&call));
}

mig_return_t sim_SimSetProcesses(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                                 unsigned int computeInstanceId, unsigned int count, unsigned int named,
                                 const mig_process_info_t *infos)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_ci *ci;

	if (r)
		return r;
	if (named > ACCELSIM_MAX_PROCESSES || named > count || (named && !infos))
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	for (unsigned i = 0; i < named; i++)
		if (infos[i].pid == 0 || infos[i].pid > ACCELSIM_UNSEEN_PID)
			return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = find_ci(&call, device, gpuInstanceId, computeInstanceId, &ci);
	if (r)
		return sim_leave(&call, r);
	ci->processes = count;
	ci->n_procs = named;
	for (unsigned i = 0; i < named; i++)
		ci->procs[i] = (struct sim_proc){ infos[i].pid, infos[i].usedGpuMemory };
	return sim_leave(&call, sim_commit(&call));
}

mig_return_t sim_SimGetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                            unsigned int computeInstanceId, unsigned int *processes)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_ci *ci;

	if (r)
		return r;
	r = find_ci(&call, device, gpuInstanceId, computeInstanceId, &ci);
	if (!r && !processes)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		*processes = ci->processes;
	return sim_leave(&call, r);
}

mig_return_t sim_SimArmFault(struct sim_ctx *ctx, const char *function, mig_return_t ret, unsigned int skip,
                             unsigned int times)
{
	struct sim_call call;
	accelsim_fault_t f;
	mig_return_t r;

	r = sim_enter(ctx, SIM_FN_NONE, &call);
	if (r)
		return r;
	if (!function || !sim_fault_function_known(function) || times == 0 || ret == MIG_SUCCESS)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_call_node(&call);
	if (r)
		return sim_leave(&call, r);
	memset(&f, 0, sizeof(f));
	snprintf(f.function, sizeof(f.function), "%s", function);
	f.ret = ret;
	f.skip = skip;
	f.times = times;
	r = sim_faults_arm(&ctx->node, &f);
	if (!r)
		r = sim_commit(&call);
	return sim_leave(&call, r);
}

mig_return_t sim_SimGetFaults(struct sim_ctx *ctx, accelsim_fault_t *faults, unsigned int *count)
{
	struct sim_call call;
	mig_return_t r;
	unsigned n;

	r = sim_enter(ctx, SIM_FN_NONE, &call);
	if (r)
		return r;
	if (!count)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_call_node(&call);
	if (r)
		return sim_leave(&call, r);
	n = ctx->node.n_faults;
	if (faults && *count < n)
		r = MIG_ERROR_INSUFFICIENT_SIZE;
	else if (faults)
		memcpy(faults, ctx->node.faults, n * sizeof(*faults));
	*count = n;
	return sim_leave(&call, r);
}

mig_return_t sim_SimClearFaults(struct sim_ctx *ctx)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);

	if (r)
		return r;
	r = sim_call_node(&call);
	if (r)
		return sim_leave(&call, r);
	ctx->node.n_faults = 0;
	return sim_leave(&call, sim_commit(&call));
}

mig_return_t sim_SimSetDevicePresent(struct sim_ctx *ctx, unsigned int index, unsigned int present)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_device *d;

	if (r)
		return r;
	/* A card off the bus can be brought back: taken whether present or not. */
	r = sim_call_card(&call, index, &d);
	if (r)
		return sim_leave(&call, r);
	d->present = present != 0;
	r = sim_commit(&call);
	if (r == MIG_SUCCESS && index < SIM_HEALTH_CARDS) {
		bool was = !__atomic_exchange_n(&ctx->health->cards[index].absent, !d->present, __ATOMIC_ACQ_REL);
		/* Xid 79, "GPU has fallen off the bus", is what the driver says as it loses a card. */
		if (was && !d->present)
			sim_health_raise(ctx->health, ctx->health_wake, index, MIG_EVENT_TYPE_XID_CRITICAL_ERROR, 79,
			                 MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE);
	}
	return sim_leave(&call, r);
}

mig_return_t sim_SimGetPath(struct sim_ctx *ctx, unsigned int which, char *path, unsigned int length)
{
	struct sim_call call;
	mig_return_t r;
	const char *p;

	r = sim_enter(ctx, SIM_FN_NONE, &call);
	if (r)
		return r;
	if (!path)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
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
		p = ctx->paths.node;
		break;
	default:
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	}
	if (strlen(p) + 1 > length)
		return sim_leave(&call, MIG_ERROR_INSUFFICIENT_SIZE);
	memcpy(path, p, strlen(p) + 1);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_SimGetCalls(struct sim_ctx *ctx, accelsim_call_count_t *calls, unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	unsigned room;

	if (r)
		return r;
	if (!count)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	room = calls ? *count : 0;
	sim_counters_list(&ctx->counters, calls, count);
	return sim_leave(&call, calls && *count > room ? MIG_ERROR_INSUFFICIENT_SIZE : MIG_SUCCESS);
}

mig_return_t sim_SimResetCalls(struct sim_ctx *ctx)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);

	if (r)
		return r;
	sim_counters_reset(&ctx->counters);
	return sim_leave(&call, MIG_SUCCESS);
}
