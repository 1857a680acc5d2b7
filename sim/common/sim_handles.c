/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_handles.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool same_identity(const struct sim_handle *a, const struct sim_handle *b)
{
	return a->kind == b->kind && a->ordinal == b->ordinal && a->gi_id == b->gi_id && a->gi_serial == b->gi_serial &&
	       a->ci_id == b->ci_id && a->ci_serial == b->ci_serial;
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

/*
 * Linear probing: the slot holding the match, or the empty slot where it
 * would go.  Slots are read with acquire loads: a writer may fill an empty
 * one meanwhile (with a release store, once the handle is complete), and a
 * probe that missed it was looking for a handle no caller could yet hold.
 */
static size_t probe_id(struct sim_handle *const *tab, size_t cap, const struct sim_handle *key)
{
	size_t i = (size_t)hash_identity(key) & (cap - 1);
	struct sim_handle *h;

	while ((h = __atomic_load_n(&tab[i], __ATOMIC_ACQUIRE)) && !same_identity(h, key))
		i = (i + 1) & (cap - 1);
	return i;
}

static size_t probe_ptr(struct sim_handle *const *tab, size_t cap, const void *ptr)
{
	size_t i = (size_t)hash_ptr(ptr) & (cap - 1);
	struct sim_handle *h;

	while ((h = __atomic_load_n(&tab[i], __ATOMIC_ACQUIRE)) && (const void *)h != ptr)
		i = (i + 1) & (cap - 1);
	return i;
}

static struct sim_handle_slots *current(const struct sim_ctx *ctx)
{
	return __atomic_load_n(&ctx->handles.cur, __ATOMIC_ACQUIRE);
}

/* The interned handle equal to key, if any; takes no lock. */
static struct sim_handle *find_identity(const struct sim_ctx *ctx, const struct sim_handle *key)
{
	struct sim_handle_slots *t = current(ctx);

	return t ? __atomic_load_n(&t->slot[t->cap + probe_id(t->slot + t->cap, t->cap, key)], __ATOMIC_ACQUIRE) : NULL;
}

/* A table twice the size holding every handle; the old one is retired, not freed. */
static int grow(struct sim_handle_table *t)
{
	struct sim_handle_slots *old = t->cur, *fresh;
	size_t cap = old ? old->cap * 2 : 64;

	fresh = calloc(1, sizeof(*fresh) + 2 * cap * sizeof(fresh->slot[0]));
	if (!fresh)
		return -1;
	fresh->cap = cap;
	fresh->retired = old;
	for (size_t i = 0; old && i < old->cap; i++) {
		struct sim_handle *h = old->slot[i];

		if (h) {
			fresh->slot[probe_ptr(fresh->slot, cap, h)] = h;
			fresh->slot[cap + probe_id(fresh->slot + cap, cap, h)] = h;
		}
	}
	__atomic_store_n(&t->cur, fresh, __ATOMIC_RELEASE);
	return 0;
}

struct sim_handle *sim_handle_intern(struct sim_ctx *ctx, const struct sim_handle *key)
{
	struct sim_handle_table *t = &ctx->handles;
	struct sim_handle *h = find_identity(ctx, key);
	struct sim_handle_slots *cur;

	if (h)
		return h;
	pthread_mutex_lock(&ctx->handles_mutex);
	/* Another thread may have made it meanwhile. */
	h = find_identity(ctx, key);
	if (h || (2 * (t->n + 1) > (t->cur ? t->cur->cap : 0) && grow(t) != 0))
		goto out;
	h = malloc(sizeof(*h));
	if (!h)
		goto out;
	*h = *key;
	cur = t->cur;
	__atomic_store_n(&cur->slot[probe_ptr(cur->slot, cur->cap, h)], h, __ATOMIC_RELEASE);
	__atomic_store_n(&cur->slot[cur->cap + probe_id(cur->slot + cur->cap, cur->cap, h)], h, __ATOMIC_RELEASE);
	t->n++;
out:
	pthread_mutex_unlock(&ctx->handles_mutex);
	return h;
}

const struct sim_handle *sim_handle_lookup(struct sim_ctx *ctx, const void *ptr)
{
	struct sim_handle_slots *t = current(ctx);

	if (!ptr || !t)
		return NULL;
	return __atomic_load_n(&t->slot[probe_ptr(t->slot, t->cap, ptr)], __ATOMIC_ACQUIRE);
}

/* With the lifetime lock held alone: no lookup is running. */
void sim_handles_free(struct sim_ctx *ctx)
{
	struct sim_handle_slots *t = ctx->handles.cur;

	for (size_t i = 0; t && i < t->cap; i++)
		free(t->slot[i]);
	while (t) {
		struct sim_handle_slots *next = t->retired;

		free(t);
		t = next;
	}
	memset(&ctx->handles, 0, sizeof(ctx->handles));
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
