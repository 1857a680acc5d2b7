/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_handles.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool same_identity(const struct sim_handle *a, const struct sim_handle *b)
{
	return a->kind == b->kind && a->ordinal == b->ordinal && a->gi_id == b->gi_id &&
	       a->gi_serial == b->gi_serial && a->ci_id == b->ci_id && a->ci_serial == b->ci_serial;
}

/* 64-bit mixing (splitmix64's finalizer): addresses and ids are far from random. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t hash_identity(const struct sim_handle *h)
{
	uint64_t x = mix(((uint64_t)h->kind << 32) | h->ordinal);

	x = mix(x ^ (((uint64_t)h->gi_id << 32) | h->ci_id));
	x = mix(x ^ h->gi_serial);
	return mix(x ^ h->ci_serial);
}

static uint64_t hash_ptr(const void *p)
{
	return mix((uint64_t)(uintptr_t)p);
}

/* Linear probing in a power-of-two table: the slot holding match, or the empty slot where it would go. */
static size_t probe_id(struct sim_handle **tab, size_t cap, const struct sim_handle *key)
{
	size_t i = (size_t)hash_identity(key) & (cap - 1);

	while (tab[i] && !same_identity(tab[i], key))
		i = (i + 1) & (cap - 1);
	return i;
}

static size_t probe_ptr(struct sim_handle **tab, size_t cap, const void *ptr)
{
	size_t i = (size_t)hash_ptr(ptr) & (cap - 1);

	while (tab[i] && (const void *)tab[i] != ptr)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Double both tables (kept at most half full, so probes stay short). */
static int grow(struct sim_handle_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct sim_handle **by_ptr = calloc(cap, sizeof(*by_ptr)), **by_id = calloc(cap, sizeof(*by_id));

	if (!by_ptr || !by_id) {
		free(by_ptr);
		free(by_id);
		return -1;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (t->by_ptr[i])
			by_ptr[probe_ptr(by_ptr, cap, t->by_ptr[i])] = t->by_ptr[i];
		if (t->by_id[i])
			by_id[probe_id(by_id, cap, t->by_id[i])] = t->by_id[i];
	}
	free(t->by_ptr);
	free(t->by_id);
	t->by_ptr = by_ptr;
	t->by_id = by_id;
	t->cap = cap;
	return 0;
}

struct sim_handle *sim_handle_intern(struct sim_ctx *ctx, const struct sim_handle *key)
{
	struct sim_handle_table *t = &ctx->handles;
	struct sim_handle *h = NULL;
	size_t i;

	pthread_mutex_lock(&ctx->handles_mutex);
	if (t->cap) {
		i = probe_id(t->by_id, t->cap, key);
		if (t->by_id[i]) {
			h = t->by_id[i];
			goto out;
		}
	}
	if (2 * (t->n + 1) > t->cap && grow(t) != 0)
		goto out;
	h = malloc(sizeof(*h));
	if (!h)
		goto out;
	*h = *key;
	t->by_id[probe_id(t->by_id, t->cap, h)] = h;
	t->by_ptr[probe_ptr(t->by_ptr, t->cap, h)] = h;
	t->n++;
out:
	pthread_mutex_unlock(&ctx->handles_mutex);
	return h;
}

const struct sim_handle *sim_handle_lookup(struct sim_ctx *ctx, const void *ptr)
{
	const struct sim_handle *h = NULL;

	if (!ptr)
		return NULL;
	pthread_mutex_lock(&ctx->handles_mutex);
	if (ctx->handles.cap)
		h = ctx->handles.by_ptr[probe_ptr(ctx->handles.by_ptr, ctx->handles.cap, ptr)];
	pthread_mutex_unlock(&ctx->handles_mutex);
	return h;
}

void sim_handles_free(struct sim_ctx *ctx)
{
	struct sim_handle_table *t = &ctx->handles;

	for (size_t i = 0; i < t->cap; i++)
		free(t->by_ptr[i]);
	free(t->by_ptr);
	free(t->by_id);
	memset(t, 0, sizeof(*t));
}

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

mig_return_t sim_resolve_ci(struct sim_call *call, mig_compute_instance_t h, struct sim_device **d,
			    struct sim_gi **gi, struct sim_ci **ci)
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
