/* SPDX-License-Identifier: MIT */
/*
 * Changing the MIG mode, with the refusals the runbook measured: a card with
 * GPU instances, or a card any process holds open (its own node, or the
 * shared control nodes, whose holder holds every card).  No reset is needed:
 * a successful change applies at once, but on a card whose topology says
 * mode_needs_reset, where it stays pending (nothing here resets).
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/driver/holders.h"
#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"

#define MAX_NODES 8

/* The card's node and the control nodes, as paths under the simulated /dev. */
static size_t node_paths(struct sim_ctx *ctx, const struct sim_device *d, char (*paths)[PATH_MAX])
{
	char rel[64];
	size_t n = 0;

	ctx->vendor->card_node(d, rel, sizeof(rel));
	if (sim_path_join(paths[n], PATH_MAX, ctx->paths.dev, rel) == 0)
		n++;
	for (size_t i = 0; ctx->vendor->control_holders_block && ctx->vendor->control_nodes[i] && n < MAX_NODES; i++)
		if (sim_path_join(paths[n], PATH_MAX, ctx->paths.dev, ctx->vendor->control_nodes[i]) == 0)
			n++;
	return n;
}

/*
 * IN_USE when a process holds the card, with the kernel-log lines.  The
 * active count is the number of descriptors, not of processes: the runbook
 * saw "3 active process" above two holder lines.
 */
static mig_return_t check_holders(struct sim_ctx *ctx, const struct sim_device *d)
{
	char paths[MAX_NODES][PATH_MAX];
	const char *ptrs[MAX_NODES];
	struct accel_holder *holders = NULL;
	size_t n_paths = node_paths(ctx, d, paths), n = 0;
	unsigned active = 0;
	int ret;

	for (size_t i = 0; i < n_paths; i++)
		ptrs[i] = paths[i];
	ret = accel_holders_scan("/proc", ptrs, n_paths, true, &holders, &n);
	if (ret) {
		fprintf(stderr, "accelfs simulated %s driver: cannot scan /proc for holders\n", ctx->vendor->dir);
		return MIG_ERROR_UNKNOWN;
	}
	for (size_t i = 0; i < n; i++)
		active += holders[i].nfds;
	if (n)
		ctx->vendor->log_mode_refused(&ctx->paths, d, holders, n, active);
	free(holders);
	return n ? MIG_ERROR_IN_USE : MIG_SUCCESS;
}

mig_return_t sim_DeviceSetMigMode(struct sim_ctx *ctx, mig_device_t device, unsigned int mode,
                                  mig_return_t *activationStatus)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceSetMigMode, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && (!activationStatus || (mode != MIG_DEVICE_MIG_DISABLE && mode != MIG_DEVICE_MIG_ENABLE)))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (r)
		return sim_leave(&call, r);
	if (d->mig_current == mode && d->mig_pending == mode) {
		*activationStatus = MIG_SUCCESS;
		return sim_leave(&call, MIG_SUCCESS);
	}
	if (d->n_gis > 0) {
		ctx->vendor->log_mig_resources_in_use(&ctx->paths, d);
		return sim_leave(&call, MIG_ERROR_IN_USE);
	}
	r = check_holders(ctx, d);
	if (r)
		return sim_leave(&call, r);
	/* "A successful call is not an applied mode": on such a card only a reset would make it current. */
	d->mig_pending = mode;
	if (!d->mode_needs_reset)
		d->mig_current = mode;
	r = sim_commit(&call);
	if (!r)
		*activationStatus = MIG_SUCCESS;
	return sim_leave(&call, r);
}
