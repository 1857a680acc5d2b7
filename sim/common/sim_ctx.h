/* SPDX-License-Identifier: MIT */
/*
 * One loaded simulated driver: its vendor, its init count, its cached copy
 * of the hardware state and the handles it has given out.  Each library
 * (libhgml.so, libnvidia-ml.so.1) has exactly one, defined next to its
 * export shims; everything in sim/common takes it as the first argument.
 *
 * Every API call runs between sim_enter() and sim_leave(): the process-wide
 * mutex (threads of one process share one flock), then the flock on the
 * state's lock file (other processes), then a reload when another process
 * changed the state (the generation in the shared counters file says so),
 * then the armed faults.
 */
#ifndef ACCEL_SIM_CTX_H
#define ACCEL_SIM_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sim/common/sim_calls.h"
#include "sim/common/sim_counters.h"
#include "sim/common/sim_fs.h"
#include "sim/common/sim_model.h"
#include "sim/common/sim_vendor.h"

struct sim_handle;

struct sim_ctx {
	const struct sim_vendor *vendor;
	pthread_mutex_t mutex;
	unsigned refcount; /* Init_v2 minus Shutdown */
	struct sim_paths paths;
	int lock_fd;
	pid_t lock_pid; /* the process lock_fd was opened in: a fork must open its own */
	bool flocked;   /* this call holds the flock (a read-only call on a current cache does not) */
	struct sim_state state;
	bool state_valid;
	struct sim_counters counters; /* mapped from first Init to last Shutdown */
	struct sim_handle **handles;
	size_t n_handles, cap_handles;
};

#define SIM_CTX_INITIALIZER(vendor_desc)                                                                   \
	{ .vendor = &(vendor_desc), .mutex = PTHREAD_MUTEX_INITIALIZER, .lock_fd = -1 }

/*
 * Start an API call: fn is the ABI function answering (for the armed
 * faults), SIM_FN_NONE for a control-extension call, which faults never hit.
 * On SUCCESS the caller holds the locks and must call sim_leave(); on
 * anything else (a fault that fired included) nothing is held and nothing
 * was changed.
 */
mig_return_t sim_enter(struct sim_ctx *ctx, enum sim_fn fn);
/* Drop the locks; returns r, so a call can end with `return sim_leave(ctx, r);`. */
mig_return_t sim_leave(struct sim_ctx *ctx, mig_return_t r);
/* Persist the state changed by this call (inside enter/leave). */
mig_return_t sim_commit(struct sim_ctx *ctx);

mig_return_t sim_init(struct sim_ctx *ctx);
mig_return_t sim_shutdown(struct sim_ctx *ctx);
/* The library is being unloaded: free everything, whatever the init count. */
void sim_ctx_unload(struct sim_ctx *ctx);

/* The card at index, or NULL. */
struct sim_device *sim_ctx_device(struct sim_ctx *ctx, unsigned ordinal);

#endif
