/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/common/sim_faults.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_nodes.h"
#include "sim/common/sim_store.h"
#include "sim/common/sim_topology.h"

/* Every message says which simulator speaks: a reader must never mistake it for hardware. */
static void complain(const struct sim_ctx *ctx, const char *msg)
{
	fprintf(stderr, "accelfs simulated %s driver: %s\n", ctx->vendor->dir, msg);
}

struct sim_device *sim_ctx_device(struct sim_ctx *ctx, unsigned ordinal)
{
	return ordinal < ctx->state.n_devices ? &ctx->state.devices[ordinal] : NULL;
}

/* Fault check inside the locks; a fired fault is the call's whole result. */
static bool fault_fires(struct sim_ctx *ctx, enum sim_fn fn, mig_return_t *ret)
{
	bool changed = false, fired;
	char err[256];

	fired = sim_faults_hit(&ctx->state, fn, ret, &changed);
	if (changed && sim_store_save(ctx, err, sizeof(err)) != 0)
		complain(ctx, err);
	return fired;
}

mig_return_t sim_enter(struct sim_ctx *ctx, enum sim_fn fn)
{
	char err[512];
	mig_return_t r;
	int ret;

	pthread_mutex_lock(&ctx->mutex);
	if (ctx->refcount == 0) {
		pthread_mutex_unlock(&ctx->mutex);
		return MIG_ERROR_UNINITIALIZED;
	}
	/* Received, whatever comes of it: a call a fault fails counts too. */
	sim_counters_hit(&ctx->counters, fn);
	/*
	 * A call that only reads, on a cache no other process has made stale,
	 * with no armed fault to count it down: it needs nothing from the
	 * flock.  Any writer stores its new generation before its call returns,
	 * so a call that starts after another process's change returned sees
	 * the mismatch and takes the path below; one that overlaps the change
	 * reads the state just before it.  A fault armed anywhere is a change
	 * too, so an armed fault is always seen.
	 */
	if (!sim_fn_changes_state(fn) && sim_store_current(ctx) && !sim_faults_armed_for(&ctx->state, fn))
		return MIG_SUCCESS;
	ret = sim_store_lock(ctx);
	if (ret) {
		snprintf(err, sizeof(err), "cannot lock %s: %s", ctx->paths.lock, strerror(-ret));
		complain(ctx, err);
		pthread_mutex_unlock(&ctx->mutex);
		return MIG_ERROR_UNKNOWN;
	}
	ret = sim_store_refresh(ctx, err, sizeof(err));
	if (ret) {
		complain(ctx, err);
		return sim_leave(ctx, MIG_ERROR_UNKNOWN);
	}
	if (fn != SIM_FN_NONE && fault_fires(ctx, fn, &r))
		return sim_leave(ctx, r);
	return MIG_SUCCESS;
}

mig_return_t sim_leave(struct sim_ctx *ctx, mig_return_t r)
{
	sim_store_unlock(ctx);
	pthread_mutex_unlock(&ctx->mutex);
	return r;
}

mig_return_t sim_commit(struct sim_ctx *ctx)
{
	char err[512];

	if (!ctx->flocked) {
		/* sim_fn_changes_state() is missing the function that called us: never write unlocked. */
		complain(ctx, "internal error: a change in a call taken for a read (see sim_fn_changes_state)");
		ctx->state_valid = false; /* drop whatever it changed in memory */
		return MIG_ERROR_UNKNOWN;
	}
	if (sim_store_save(ctx, err, sizeof(err)) == 0)
		return MIG_SUCCESS;
	complain(ctx, err);
	return MIG_ERROR_UNKNOWN;
}

/* The first Init of a process: find or make the hardware, and its files. */
static mig_return_t first_init(struct sim_ctx *ctx)
{
	const char *root = getenv("ACCELFS_SIM_ROOT");
	const char *topology = getenv("ACCELFS_SIM_TOPOLOGY");
	char err[1024], msg[1200];
	mig_return_t r = MIG_SUCCESS;
	int ret;

	if (!root || !*root) {
		complain(ctx, "ACCELFS_SIM_ROOT is not set; it names the directory that holds the simulated "
			      "hardware (accelfs --sim and accel-smi --sim set it to <state-dir>/sim)");
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	if (sim_paths_init(&ctx->paths, root, ctx->vendor->dir) != 0 || accel_mkdirs(ctx->paths.root, 0755) != 0) {
		snprintf(msg, sizeof(msg), "cannot create %s/%s", root, ctx->vendor->dir);
		complain(ctx, msg);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	ret = sim_store_lock(ctx);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot lock %s: %s", ctx->paths.lock, strerror(-ret));
		complain(ctx, msg);
		return MIG_ERROR_DRIVER_NOT_LOADED;
	}
	ret = sim_counters_open(&ctx->counters, ctx->paths.counters, err, sizeof(err));
	if (ret) {
		complain(ctx, err);
		r = MIG_ERROR_DRIVER_NOT_LOADED;
		goto out;
	}
	sim_counters_hit(&ctx->counters, SIM_FN_Init_v2);
	ret = sim_store_refresh(ctx, err, sizeof(err));
	if (ret == -ENOENT) {
		/* No hardware yet: this is its first power-on. */
		ret = sim_topology_build(ctx->vendor, topology && *topology ? topology : NULL, &ctx->state, err,
					 sizeof(err));
		if (!ret)
			ret = sim_store_save(ctx, err, sizeof(err));
		if (!ret)
			ret = sim_store_refresh(ctx, err, sizeof(err));
	}
	if (ret) {
		complain(ctx, err);
		r = MIG_ERROR_DRIVER_NOT_LOADED;
		goto out;
	}
	if (fault_fires(ctx, SIM_FN_Init_v2, &r))
		goto out;
	ret = sim_nodes_sync(ctx, err, sizeof(err));
	if (ret) {
		snprintf(msg, sizeof(msg), "%s: %s%s", err, strerror(-ret),
			 ret == -EPERM ? " (creating device nodes needs CAP_MKNOD: run as root)" : "");
		complain(ctx, msg);
		r = ret == -EPERM ? MIG_ERROR_NO_PERMISSION : MIG_ERROR_DRIVER_NOT_LOADED;
	}
out:
	sim_store_unlock(ctx);
	return r;
}

static void release_everything(struct sim_ctx *ctx)
{
	if (ctx->lock_fd >= 0)
		close(ctx->lock_fd);
	ctx->lock_fd = -1;
	sim_counters_close(&ctx->counters);
	sim_store_forget(ctx);
	sim_handles_free(ctx);
}

mig_return_t sim_init(struct sim_ctx *ctx)
{
	mig_return_t r = MIG_SUCCESS;

	pthread_mutex_lock(&ctx->mutex);
	if (ctx->refcount == 0) {
		r = first_init(ctx);
		if (r != MIG_SUCCESS)
			release_everything(ctx);
	} else {
		sim_counters_hit(&ctx->counters, SIM_FN_Init_v2);
	}
	if (r == MIG_SUCCESS)
		ctx->refcount++;
	pthread_mutex_unlock(&ctx->mutex);
	return r;
}

mig_return_t sim_shutdown(struct sim_ctx *ctx)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_Shutdown);

	if (r)
		return r;
	if (--ctx->refcount == 0) {
		sim_store_unlock(ctx);
		release_everything(ctx);
		pthread_mutex_unlock(&ctx->mutex);
		return MIG_SUCCESS;
	}
	return sim_leave(ctx, MIG_SUCCESS);
}

void sim_ctx_unload(struct sim_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mutex);
	ctx->refcount = 0;
	release_everything(ctx);
	pthread_mutex_unlock(&ctx->mutex);
}
