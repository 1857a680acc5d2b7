/* SPDX-License-Identifier: MIT */
/*
 * Handles are process-local objects interned by identity: asking twice for
 * the same card or instance yields the same pointer, and a pointer once
 * given out stays valid (it is never freed before the last Shutdown).  An
 * instance is identified by its id and its creation serial, so a handle to
 * a destroyed instance stays stale even after its id is reused.
 *
 * Every handle a caller passes in is first looked up among the ones given
 * out: a pointer we never made is rejected, not dereferenced.  Both lookups
 * are hashed, so their cost does not grow with the cards, nor with the
 * instances a long-running process has seen, and take no lock (struct
 * sim_handle_table): threads on different cards share nothing here but
 * the mutex that adds a new handle.
 */
#ifndef ACCEL_SIM_HANDLES_H
#define ACCEL_SIM_HANDLES_H

#include "sim/common/sim_ctx.h"

enum sim_handle_kind {
	SIM_HANDLE_DEVICE = 1, /* a whole card: mig_device_t */
	SIM_HANDLE_GI,         /* mig_gpu_instance_t */
	SIM_HANDLE_CI,         /* mig_compute_instance_t */
	SIM_HANDLE_MIG_DEVICE, /* a MIG device: also a mig_device_t */
};

struct sim_handle {
	enum sim_handle_kind kind;
	unsigned ordinal;
	unsigned gi_id;
	unsigned long long gi_serial;
	unsigned ci_id;
	unsigned long long ci_serial;
};

/* The interned handle equal to key (made on first use); NULL when out of memory. */
struct sim_handle *sim_handle_intern(struct sim_ctx *ctx, const struct sim_handle *key);
/* The handle ptr points to, if this library gave it out; else NULL.  Handles never change once made. */
const struct sim_handle *sim_handle_lookup(struct sim_ctx *ctx, const void *ptr);
void sim_handles_free(struct sim_ctx *ctx);

/*
 * Resolving a handle to the live hardware, taking its card for the call
 * (sim_call_card).  Each returns SUCCESS, INVALID_ARGUMENT (NULL, not ours,
 * or the wrong kind), GPU_IS_LOST (the card fell off the bus), NOT_FOUND
 * (the instance is gone) or UNKNOWN (the card's state cannot be read).
 */
mig_return_t sim_resolve_device(struct sim_call *call, mig_device_t h, struct sim_device **d);
/* A card or a MIG device; *hh tells which. */
mig_return_t sim_resolve_any_device(struct sim_call *call, mig_device_t h, const struct sim_handle **hh,
                                    struct sim_device **d);
mig_return_t sim_resolve_gi(struct sim_call *call, mig_gpu_instance_t h, struct sim_device **d, struct sim_gi **gi);
mig_return_t sim_resolve_ci(struct sim_call *call, mig_compute_instance_t h, struct sim_device **d, struct sim_gi **gi,
                            struct sim_ci **ci);
/* The live GI/CI of a MIG-device handle on its (already taken) card. */
mig_return_t sim_resolve_mig_parts(const struct sim_handle *hh, struct sim_device *d, struct sim_gi **gi,
                                   struct sim_ci **ci);
/* Take card `ordinal` for the call if it is present: INVALID_ARGUMENT, GPU_IS_LOST, UNKNOWN. */
mig_return_t sim_resolve_card(struct sim_call *call, unsigned ordinal, struct sim_device **d);

/* Handles for live objects; NULL when out of memory. */
mig_device_t sim_device_handle(struct sim_ctx *ctx, const struct sim_device *d);
mig_gpu_instance_t sim_gi_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi);
mig_compute_instance_t sim_ci_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
                                     const struct sim_ci *ci);
mig_device_t sim_mig_device_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
                                   const struct sim_ci *ci);

#endif
