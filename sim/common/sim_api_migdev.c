/* SPDX-License-Identifier: MIT */
/*
 * MIG devices: one per compute instance, enumerated densely in (GI id, CI
 * id) order under the card, as the identity walk of the runbook reads them
 * (GetMaxMigDeviceCount, GetMigDeviceHandleByIndex, GetGpuInstanceId,
 * GetComputeInstanceId, GetUUID).
 */
#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"

mig_return_t sim_DeviceGetMaxMigDeviceCount(struct sim_ctx *ctx, mig_device_t device, unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMaxMigDeviceCount, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && !count)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		*count = d->mig_current == MIG_DEVICE_MIG_ENABLE ? d->compute_slices : 0;
	return sim_leave(&call, r);
}

/* The index-th compute instance of the card in (GI id, CI id) order. */
static bool nth_ci(struct sim_device *d, unsigned index, struct sim_gi **gi_out, struct sim_ci **ci_out)
{
	unsigned seen = 0;

	for (unsigned g = 0; g < SIM_MAX_GI; g++) {
		struct sim_gi *gi = sim_gi_by_id(d, g);

		for (unsigned c = 0; gi && c < SIM_MAX_CI; c++) {
			struct sim_ci *ci = sim_ci_by_id(gi, c);

			if (!ci)
				continue;
			if (seen++ == index) {
				*gi_out = gi;
				*ci_out = ci;
				return true;
			}
		}
	}
	return false;
}

mig_return_t sim_DeviceGetMigDeviceHandleByIndex(struct sim_ctx *ctx, mig_device_t device, unsigned int index,
                                                 mig_device_t *migDevice)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMigDeviceHandleByIndex, &call);
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && !migDevice)
		r = MIG_ERROR_INVALID_ARGUMENT;
	/* Past the card's slots: invalid; a slot without a MIG device (mode off included): not found. */
	if (!r && index >= d->compute_slices)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	if (!nth_ci(d, index, &gi, &ci))
		return sim_leave(&call, MIG_ERROR_NOT_FOUND);
	*migDevice = sim_mig_device_handle(ctx, d, gi, ci);
	return sim_leave(&call, *migDevice ? MIG_SUCCESS : MIG_ERROR_MEMORY);
}

/* The live parts of a MIG-device handle; a whole card answers INVALID_ARGUMENT (as a real NVML does). */
static mig_return_t mig_parts(struct sim_call *call, mig_device_t device, void *out, struct sim_gi **gi,
                              struct sim_ci **ci)
{
	const struct sim_handle *hh;
	struct sim_device *d;
	mig_return_t r = sim_resolve_any_device(call, device, &hh, &d);

	if (!r && !out)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && hh->kind != SIM_HANDLE_MIG_DEVICE)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		r = sim_resolve_mig_parts(hh, d, gi, ci);
	return r;
}

mig_return_t sim_DeviceGetGpuInstanceId(struct sim_ctx *ctx, mig_device_t device, unsigned int *id)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetGpuInstanceId, &call);
	struct sim_gi *gi;
	struct sim_ci *ci;

	if (r)
		return r;
	r = mig_parts(&call, device, id, &gi, &ci);
	if (!r)
		*id = gi->id;
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceGetComputeInstanceId(struct sim_ctx *ctx, mig_device_t device, unsigned int *id)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetComputeInstanceId, &call);
	struct sim_gi *gi;
	struct sim_ci *ci;

	if (r)
		return r;
	r = mig_parts(&call, device, id, &gi, &ci);
	if (!r)
		*id = ci->id;
	return sim_leave(&call, r);
}

/* The processes of one compute instance, as the running-process query reports them (sim/accelsim.h). */
static unsigned ci_processes(const struct sim_gi *gi, const struct sim_ci *ci, mig_process_info_t *out, unsigned room,
                             unsigned at)
{
	for (unsigned i = 0; i < ci->processes; i++, at++) {
		mig_process_info_t p = { ACCELSIM_UNSEEN_PID + 1 + i, 0, gi->id, ci->id };

		if (i < ci->n_procs) {
			p.pid = ci->procs[i].pid;
			p.usedGpuMemory = ci->procs[i].used_bytes;
		}
		if (at < room)
			out[at] = p;
	}
	return at;
}

/*
 * On a MIG device handle: that instance's processes.  On a card: with the
 * mode enabled, every instance's (NVML gives the aggregate to a privileged
 * caller, and the simulator's callers are); else none (the simulator runs
 * nothing on a whole card).  Too small a *infoCount: INSUFFICIENT_SIZE, and
 * *infoCount says how many there are.
 */
mig_return_t sim_DeviceGetComputeRunningProcesses_v3(struct sim_ctx *ctx, mig_device_t device, unsigned int *infoCount,
                                                     mig_process_info_t *infos)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetComputeRunningProcesses_v3, &call);
	const struct sim_handle *hh;
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;
	unsigned room, n = 0;

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && (!infoCount || (*infoCount && !infos)))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	room = *infoCount;
	if (hh->kind == SIM_HANDLE_MIG_DEVICE) {
		r = sim_resolve_mig_parts(hh, d, &gi, &ci);
		if (r)
			return sim_leave(&call, r);
		n = ci_processes(gi, ci, infos, room, 0);
	} else if (d->mig_current == MIG_DEVICE_MIG_ENABLE) {
		for (unsigned g = 0; g < SIM_MAX_GI; g++) {
			gi = sim_gi_by_id(d, g);
			for (unsigned c = 0; gi && c < SIM_MAX_CI; c++) {
				ci = sim_ci_by_id(gi, c);
				if (ci)
					n = ci_processes(gi, ci, infos, room, n);
			}
		}
	}
	*infoCount = n;
	return sim_leave(&call, n > room ? MIG_ERROR_INSUFFICIENT_SIZE : MIG_SUCCESS);
}
