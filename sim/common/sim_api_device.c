/* SPDX-License-Identifier: MIT */
/* Library lifetime and the per-card queries. */
#include <stdio.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"

mig_return_t sim_Init_v2(struct sim_ctx *ctx)
{
	return sim_init(ctx);
}

mig_return_t sim_Shutdown(struct sim_ctx *ctx)
{
	return sim_shutdown(ctx);
}

const char *sim_ErrorString(struct sim_ctx *ctx, mig_return_t result)
{
	const struct sim_vendor *v = ctx->vendor;

	if ((unsigned)result < v->n_error_strings && v->error_strings[result])
		return v->error_strings[result];
	return "Unknown Error";
}

mig_return_t sim_DeviceGetCount_v2(struct sim_ctx *ctx, unsigned int *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetCount_v2, &call);

	if (r)
		return r;
	if (!count)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	*count = ctx->n_devices; /* fixed at power-on: no card is looked at */
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetHandleByIndex_v2(struct sim_ctx *ctx, unsigned int index, mig_device_t *device)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetHandleByIndex_v2, &call);
	struct sim_device *d;

	if (r)
		return r;
	if (!device)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_resolve_card(&call, index, &d);
	if (r)
		return sim_leave(&call, r);
	*device = sim_device_handle(ctx, d);
	return sim_leave(&call, *device ? MIG_SUCCESS : MIG_ERROR_MEMORY);
}

static mig_return_t copy_out(char *dst, unsigned int length, const char *src)
{
	size_t n = strlen(src);

	if (n + 1 > length)
		return MIG_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, n + 1);
	return MIG_SUCCESS;
}

mig_return_t sim_DeviceGetName(struct sim_ctx *ctx, mig_device_t device, char *name, unsigned int length)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetName, &call);
	const struct sim_handle *hh;
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;
	char buf[2 * SIM_NAME_LEN];

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && !name)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	if (hh->kind == SIM_HANDLE_MIG_DEVICE) {
		/* As NVML names one: "NVIDIA H200 MIG 3g.71gb". */
		const struct sim_gi_profile *p;

		r = sim_resolve_mig_parts(hh, d, &gi, &ci);
		if (r)
			return sim_leave(&call, r);
		p = sim_gi_profile_by_id(d, gi->profile_id);
		snprintf(buf, sizeof(buf), "%s MIG %s", d->name, p ? sim_profile_short_name(p->name) : "");
	} else {
		snprintf(buf, sizeof(buf), "%s", d->name);
	}
	return sim_leave(&call, copy_out(name, length, buf));
}

mig_return_t sim_DeviceGetUUID(struct sim_ctx *ctx, mig_device_t device, char *uuid, unsigned int length)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetUUID, &call);
	const struct sim_handle *hh;
	struct sim_device *d;
	struct sim_gi *gi;
	struct sim_ci *ci;

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && !uuid)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	if (hh->kind == SIM_HANDLE_MIG_DEVICE) {
		r = sim_resolve_mig_parts(hh, d, &gi, &ci);
		return sim_leave(&call, r ? r : copy_out(uuid, length, ci->uuid));
	}
	return sim_leave(&call, copy_out(uuid, length, d->uuid));
}

mig_return_t sim_DeviceGetMinorNumber(struct sim_ctx *ctx, mig_device_t device, unsigned int *minor)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMinorNumber, &call);
	const struct sim_handle *hh;
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && !minor)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r && hh->kind == SIM_HANDLE_MIG_DEVICE)
		r = MIG_ERROR_NOT_SUPPORTED; /* a MIG device has no node of its own */
	if (!r)
		*minor = d->minor;
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceGetMigMode(struct sim_ctx *ctx, mig_device_t device, unsigned int *current,
                                  unsigned int *pending)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMigMode, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && (!current || !pending))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r) {
		*current = d->mig_current;
		*pending = d->mig_pending;
	}
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceGetPciInfo_v3(struct sim_ctx *ctx, mig_device_t device, mig_pci_info_t *pci)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetPciInfo_v3, &call);
	const struct sim_handle *hh;
	struct sim_device *d;
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && !pci)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	/* A MIG device reports its parent's PCI identity, as NVML does. */
	memset(pci, 0, sizeof(*pci));
	if (sscanf(d->bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		dom = bus = dev = fn = 0;
	snprintf(pci->busId, sizeof(pci->busId), "%s", d->bus_id);
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", dom & 0xffff, bus & 0xff, dev & 0xff,
	         fn & 0xf);
	pci->domain = dom;
	pci->bus = bus;
	pci->device = dev;
	pci->pciDeviceId = d->pci_device_id;
	pci->pciSubSystemId = d->pci_subsystem_id;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetMemoryInfo(struct sim_ctx *ctx, mig_device_t device, mig_memory_t *memory)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMemoryInfo, &call);
	const struct sim_handle *hh;
	struct sim_device *d;
	unsigned long long mib, used;

	if (r)
		return r;
	r = sim_resolve_any_device(&call, device, &hh, &d);
	if (!r && !memory)
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	mib = d->memory_mib;
	if (hh->kind == SIM_HANDLE_MIG_DEVICE) {
		const struct sim_gi_profile *p;
		struct sim_gi *gi;
		struct sim_ci *ci;

		r = sim_resolve_mig_parts(hh, d, &gi, &ci);
		if (r)
			return sim_leave(&call, r);
		p = sim_gi_profile_by_id(d, gi->profile_id);
		mib = p ? p->memory_mib : 0;
		used = sim_usage_memory_used(ctx, d->ordinal, gi->id);
	} else {
		used = sim_usage_memory_used(ctx, d->ordinal, MIG_EVENT_NO_INSTANCE);
	}
	/* Nothing really runs on simulated memory: used is what a test set (SimSetUsage), at most the total. */
	memory->total = mib << 20;
	memory->used = used < memory->total ? used : memory->total;
	memory->free = memory->total - memory->used;
	return sim_leave(&call, MIG_SUCCESS);
}
