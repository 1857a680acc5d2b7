/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_handles.h"

#include <stdlib.h>
#include <string.h>

static bool same_identity(const struct sim_handle *a, const struct sim_handle *b)
{
	return a->kind == b->kind && a->ordinal == b->ordinal && a->gi_id == b->gi_id &&
	       a->gi_serial == b->gi_serial && a->ci_id == b->ci_id && a->ci_serial == b->ci_serial;
}

struct sim_handle *sim_handle_intern(struct sim_ctx *ctx, const struct sim_handle *key)
{
	struct sim_handle *h;

	for (size_t i = 0; i < ctx->n_handles; i++)
		if (same_identity(ctx->handles[i], key))
			return ctx->handles[i];
	if (ctx->n_handles == ctx->cap_handles) {
		size_t cap = ctx->cap_handles ? ctx->cap_handles * 2 : 64;
		struct sim_handle **grown = realloc(ctx->handles, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		ctx->handles = grown;
		ctx->cap_handles = cap;
	}
	h = malloc(sizeof(*h));
	if (!h)
		return NULL;
	*h = *key;
	ctx->handles[ctx->n_handles++] = h;
	return h;
}

const struct sim_handle *sim_handle_lookup(const struct sim_ctx *ctx, const void *ptr)
{
	if (!ptr)
		return NULL;
	for (size_t i = 0; i < ctx->n_handles; i++)
		if ((const void *)ctx->handles[i] == ptr)
			return ctx->handles[i];
	return NULL;
}

void sim_handles_free(struct sim_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_handles; i++)
		free(ctx->handles[i]);
	free(ctx->handles);
	ctx->handles = NULL;
	ctx->n_handles = ctx->cap_handles = 0;
}

static mig_return_t card_of(struct sim_ctx *ctx, const struct sim_handle *hh, struct sim_device **d)
{
	struct sim_device *dev = sim_ctx_device(ctx, hh->ordinal);

	if (!dev)
		return MIG_ERROR_INVALID_ARGUMENT;
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

mig_return_t sim_resolve_device(struct sim_ctx *ctx, mig_device_t h, struct sim_device **d)
{
	const struct sim_handle *hh = sim_handle_lookup(ctx, h);

	if (!hh || hh->kind != SIM_HANDLE_DEVICE)
		return MIG_ERROR_INVALID_ARGUMENT;
	return card_of(ctx, hh, d);
}

mig_return_t sim_resolve_any_device(struct sim_ctx *ctx, mig_device_t h, const struct sim_handle **hh,
				    struct sim_device **d)
{
	*hh = sim_handle_lookup(ctx, h);
	if (!*hh || ((*hh)->kind != SIM_HANDLE_DEVICE && (*hh)->kind != SIM_HANDLE_MIG_DEVICE))
		return MIG_ERROR_INVALID_ARGUMENT;
	return card_of(ctx, *hh, d);
}

mig_return_t sim_resolve_gi(struct sim_ctx *ctx, mig_gpu_instance_t h, struct sim_device **d, struct sim_gi **gi)
{
	const struct sim_handle *hh = sim_handle_lookup(ctx, h);
	mig_return_t r;

	if (!hh || hh->kind != SIM_HANDLE_GI)
		return MIG_ERROR_INVALID_ARGUMENT;
	r = card_of(ctx, hh, d);
	if (r)
		return r;
	*gi = live_gi(*d, hh->gi_id, hh->gi_serial);
	return *gi ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}

mig_return_t sim_resolve_ci(struct sim_ctx *ctx, mig_compute_instance_t h, struct sim_device **d,
			    struct sim_gi **gi, struct sim_ci **ci)
{
	const struct sim_handle *hh = sim_handle_lookup(ctx, h);
	mig_return_t r;

	if (!hh || hh->kind != SIM_HANDLE_CI)
		return MIG_ERROR_INVALID_ARGUMENT;
	r = card_of(ctx, hh, d);
	if (r)
		return r;
	return sim_resolve_mig_parts(ctx, hh, *d, gi, ci);
}

mig_return_t sim_resolve_mig_parts(struct sim_ctx *ctx, const struct sim_handle *hh, struct sim_device *d,
				   struct sim_gi **gi, struct sim_ci **ci)
{
	(void)ctx;
	*gi = live_gi(d, hh->gi_id, hh->gi_serial);
	*ci = *gi ? live_ci(*gi, hh->ci_id, hh->ci_serial) : NULL;
	return *ci ? MIG_SUCCESS : MIG_ERROR_NOT_FOUND;
}

mig_device_t sim_device_handle(struct sim_ctx *ctx, const struct sim_device *d)
{
	struct sim_handle key = { .kind = SIM_HANDLE_DEVICE, .ordinal = d->ordinal };

	return (mig_device_t)sim_handle_intern(ctx, &key);
}

mig_gpu_instance_t sim_gi_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi)
{
	struct sim_handle key = {
		.kind = SIM_HANDLE_GI, .ordinal = d->ordinal, .gi_id = gi->id, .gi_serial = gi->serial
	};

	return (mig_gpu_instance_t)sim_handle_intern(ctx, &key);
}

static struct sim_handle ci_key(enum sim_handle_kind kind, const struct sim_device *d, const struct sim_gi *gi,
				const struct sim_ci *ci)
{
	return (struct sim_handle){ .kind = kind,
				    .ordinal = d->ordinal,
				    .gi_id = gi->id,
				    .gi_serial = gi->serial,
				    .ci_id = ci->id,
				    .ci_serial = ci->serial };
}

mig_compute_instance_t sim_ci_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
				     const struct sim_ci *ci)
{
	struct sim_handle key = ci_key(SIM_HANDLE_CI, d, gi, ci);

	return (mig_compute_instance_t)sim_handle_intern(ctx, &key);
}

mig_device_t sim_mig_device_handle(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
				   const struct sim_ci *ci)
{
	struct sim_handle key = ci_key(SIM_HANDLE_MIG_DEVICE, d, gi, ci);

	return (mig_device_t)sim_handle_intern(ctx, &key);
}
