/* SPDX-License-Identifier: MIT */
/*
 * The health seam of the simulated drivers: event sets, ECC counters and
 * the recovery-action field, answered from the health page every process
 * of the vendor maps (sim_health.h), and the control calls that raise
 * what a real card would (SimRaiseEvent, SimAddEccErrors,
 * SimSetRecoveryAction).
 *
 * The shapes are NVML's: an event set sees only a card's events raised after
 * the card was registered in it; registering a type the card does not support answers NOT_SUPPORTED
 * (so a caller asks DeviceGetSupportedEventTypes first); an event arrives
 * with the parent card's handle and the instance ids, MIG_EVENT_NO_INSTANCE
 * when it concerns the card; a wait with nothing to deliver answers TIMEOUT;
 * once a registered card has fallen off the bus, a wait answers GPU_IS_LOST
 * after delivering what was raised before (Xid 79 among it).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_health.h"

#define MAX_SETS 64

struct sim_event_set {
	uint64_t next; /* the sequence number of the next event to look at */
	unsigned long long mask[SIM_HEALTH_CARDS];
	uint64_t since[SIM_HEALTH_CARDS]; /* a card's events count from its first registration */
	mig_device_t handle[SIM_HEALTH_CARDS];
};

/* The sets this process made: a pointer we never made is refused, not dereferenced. */
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_event_set *sets[MAX_SETS];

static struct sim_event_set *set_lookup(mig_event_set_t h)
{
	struct sim_event_set *found = NULL;

	pthread_mutex_lock(&sets_lock);
	for (size_t i = 0; h && i < MAX_SETS && !found; i++)
		if (sets[i] == (struct sim_event_set *)h)
			found = sets[i];
	pthread_mutex_unlock(&sets_lock);
	return found;
}

mig_return_t sim_EventSetCreate(struct sim_ctx *ctx, mig_event_set_t *set)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_EventSetCreate, &call);
	struct sim_event_set *s;

	if (r)
		return r;
	if (!set)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	s = calloc(1, sizeof(*s));
	if (!s)
		return sim_leave(&call, MIG_ERROR_MEMORY);
	s->next = sim_health_now(ctx->health);
	r = MIG_ERROR_INSUFFICIENT_RESOURCES;
	pthread_mutex_lock(&sets_lock);
	for (size_t i = 0; i < MAX_SETS && r; i++)
		if (!sets[i]) {
			sets[i] = s;
			r = MIG_SUCCESS;
		}
	pthread_mutex_unlock(&sets_lock);
	if (r)
		free(s);
	else
		*set = (mig_event_set_t)s;
	return sim_leave(&call, r);
}

mig_return_t sim_EventSetFree(struct sim_ctx *ctx, mig_event_set_t set)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_EventSetFree, &call);

	if (r)
		return r;
	r = MIG_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&sets_lock);
	for (size_t i = 0; set && i < MAX_SETS && r; i++)
		if (sets[i] == (struct sim_event_set *)set) {
			free(sets[i]);
			sets[i] = NULL;
			r = MIG_SUCCESS;
		}
	pthread_mutex_unlock(&sets_lock);
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceGetSupportedEventTypes(struct sim_ctx *ctx, mig_device_t device, unsigned long long *eventTypes)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetSupportedEventTypes, &call);
	struct sim_device *d;

	if (r)
		return r;
	if (!eventTypes)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_resolve_device(&call, device, &d);
	if (!r)
		*eventTypes = ctx->vendor->event_types;
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceRegisterEvents(struct sim_ctx *ctx, mig_device_t device, unsigned long long eventTypes,
                                      mig_event_set_t set)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceRegisterEvents, &call);
	struct sim_event_set *s = set_lookup(set);
	struct sim_device *d;

	if (r)
		return r;
	if (!s)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_resolve_device(&call, device, &d);
	if (r)
		return sim_leave(&call, r);
	if (d->ordinal >= SIM_HEALTH_CARDS)
		return sim_leave(&call, MIG_ERROR_INSUFFICIENT_RESOURCES);
	/* NVML: NOT_SUPPORTED when "some of requested event types" are not. */
	if (eventTypes & ~ctx->vendor->event_types)
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	s->handle[d->ordinal] = device;
	if (!s->mask[d->ordinal])
		s->since[d->ordinal] = sim_health_now(ctx->health);
	s->mask[d->ordinal] |= eventTypes;
	return sim_leave(&call, MIG_SUCCESS);
}

static bool registered_card_lost(const struct sim_ctx *ctx, const struct sim_event_set *s)
{
	for (unsigned i = 0; i < SIM_HEALTH_CARDS; i++)
		if (s->mask[i] && __atomic_load_n(&ctx->health->cards[i].absent, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

mig_return_t sim_EventSetWait_v2(struct sim_ctx *ctx, mig_event_set_t set, mig_event_data_t *data,
                                 unsigned int timeoutms)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_EventSetWait_v2, &call);
	struct sim_event_set *s = set_lookup(set);
	int64_t deadline = sim_health_clock_ns() + (int64_t)timeoutms * 1000000;
	struct sim_health_event e;

	if (r)
		return r;
	if (!s || !data)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	/* No card lock is held while it sleeps: only the lifetime lock, shared, which Shutdown waits for. */
	for (;;) {
		int got = sim_health_take(ctx->health, &s->next, &e);

		/* s->next - 1 is the event just taken: raised before its card was registered, it is not ours. */
		if (got > 0 && e.ordinal < SIM_HEALTH_CARDS && (s->mask[e.ordinal] & e.type) &&
		    s->next - 1 >= s->since[e.ordinal]) {
			memset(data, 0, sizeof(*data));
			data->device = s->handle[e.ordinal];
			data->eventType = e.type;
			data->eventData = e.data;
			data->gpuInstanceId = e.gi;
			data->computeInstanceId = e.ci;
			return sim_leave(&call, MIG_SUCCESS);
		}
		if (got != 0)
			continue; /* not for this set, or some were lost: look at the next */
		if (registered_card_lost(ctx, s))
			return sim_leave(&call, MIG_ERROR_GPU_IS_LOST);
		if (!sim_health_sleep(ctx->health, ctx->health_wake, s->next, deadline) &&
		    sim_health_now(ctx->health) == s->next)
			return sim_leave(&call, MIG_ERROR_TIMEOUT);
	}
}

mig_return_t sim_DeviceGetEccMode(struct sim_ctx *ctx, mig_device_t device, unsigned int *current,
                                  unsigned int *pending)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetEccMode, &call);
	struct sim_device *d;

	if (r)
		return r;
	if (!current || !pending)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_resolve_device(&call, device, &d);
	if (!r)
		*current = *pending = MIG_FEATURE_ENABLED;
	return sim_leave(&call, r);
}

static mig_return_t ecc_card(struct sim_call *call, mig_device_t device, unsigned errorType, unsigned counterType,
                             const struct sim_health_card **c)
{
	struct sim_device *d;
	mig_return_t r = sim_resolve_device(call, device, &d);

	if (r)
		return r;
	if (errorType > MIG_MEMORY_ERROR_UNCORRECTED || counterType > MIG_ECC_COUNTER_AGGREGATE ||
	    d->ordinal >= SIM_HEALTH_CARDS)
		return MIG_ERROR_INVALID_ARGUMENT;
	*c = &call->ctx->health->cards[d->ordinal];
	return MIG_SUCCESS;
}

mig_return_t sim_DeviceGetTotalEccErrors(struct sim_ctx *ctx, mig_device_t device, unsigned int errorType,
                                         unsigned int counterType, unsigned long long *eccCounts)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetTotalEccErrors, &call);
	const struct sim_health_card *c;
	unsigned long long sum = 0;

	if (r)
		return r;
	if (!eccCounts)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = ecc_card(&call, device, errorType, counterType, &c);
	if (r)
		return sim_leave(&call, r);
	for (unsigned l = 0; l < MIG_MEMORY_LOCATION_COUNT; l++)
		sum += __atomic_load_n(&c->ecc[errorType][counterType][l], __ATOMIC_RELAXED);
	*eccCounts = sum;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetMemoryErrorCounter(struct sim_ctx *ctx, mig_device_t device, unsigned int errorType,
                                             unsigned int counterType, unsigned int locationType,
                                             unsigned long long *count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetMemoryErrorCounter, &call);
	const struct sim_health_card *c;

	if (r)
		return r;
	if (!count)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = ecc_card(&call, device, errorType, counterType, &c);
	if (r)
		return sim_leave(&call, r);
	if (locationType >= MIG_MEMORY_LOCATION_COUNT || !(ctx->vendor->ecc_locations & 1U << locationType))
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	*count = __atomic_load_n(&c->ecc[errorType][counterType][locationType], __ATOMIC_RELAXED);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_DeviceGetFieldValues(struct sim_ctx *ctx, mig_device_t device, int valuesCount,
                                      mig_field_value_t *values)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetFieldValues, &call);
	struct sim_device *d;

	if (r)
		return r;
	if (valuesCount <= 0 || !values)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	r = sim_resolve_device(&call, device, &d);
	if (r)
		return sim_leave(&call, r);
	/* The call succeeds; each field carries its own result, as in NVML. */
	for (int i = 0; i < valuesCount; i++) {
		mig_field_value_t *v = &values[i];

		v->timestamp = sim_health_clock_ns() / 1000;
		v->latencyUsec = 0;
		if (v->fieldId == MIG_FI_DEV_GET_GPU_RECOVERY_ACTION && ctx->vendor->recovery_action_field &&
		    d->ordinal < SIM_HEALTH_CARDS) {
			v->valueType = MIG_VALUE_TYPE_UNSIGNED_INT;
			v->value.uiVal =
				__atomic_load_n(&ctx->health->cards[d->ordinal].recovery_action, __ATOMIC_ACQUIRE);
			v->nvmlReturn = MIG_SUCCESS;
		} else {
			v->nvmlReturn = MIG_ERROR_NOT_SUPPORTED;
		}
	}
	return sim_leave(&call, MIG_SUCCESS);
}

/* ---- the control extension: what a real card would raise ---------------- */

mig_return_t sim_SimRaiseEvent(struct sim_ctx *ctx, unsigned int index, unsigned long long eventType,
                               unsigned long long eventData, unsigned int gpuInstanceId, unsigned int computeInstanceId)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);

	if (r)
		return r;
	/* One type per event, one the vendor has. */
	if (index >= ctx->n_devices || index >= SIM_HEALTH_CARDS || !eventType || (eventType & (eventType - 1)) ||
	    !(eventType & ctx->vendor->event_types))
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	sim_health_raise(ctx->health, ctx->health_wake, index, eventType, eventData, gpuInstanceId, computeInstanceId);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_SimAddEccErrors(struct sim_ctx *ctx, unsigned int index, unsigned int errorType, unsigned int location,
                                 unsigned long long count)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_health_card *c;
	unsigned long long type;

	if (r)
		return r;
	if (index >= ctx->n_devices || index >= SIM_HEALTH_CARDS || errorType > MIG_MEMORY_ERROR_UNCORRECTED ||
	    location >= MIG_MEMORY_LOCATION_COUNT || !count)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	if (!(ctx->vendor->ecc_locations & 1U << location))
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	c = &ctx->health->cards[index];
	__atomic_fetch_add(&c->ecc[errorType][MIG_ECC_COUNTER_VOLATILE][location], count, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->ecc[errorType][MIG_ECC_COUNTER_AGGREGATE][location], count, __ATOMIC_RELAXED);
	type = errorType == MIG_MEMORY_ERROR_CORRECTED ? MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR
	                                               : MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR;
	if (ctx->vendor->event_types & type)
		sim_health_raise(ctx->health, ctx->health_wake, index, type, 0, MIG_EVENT_NO_INSTANCE,
		                 MIG_EVENT_NO_INSTANCE);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_SimSetRecoveryAction(struct sim_ctx *ctx, unsigned int index, unsigned int action)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, &call);
	struct sim_health_card *c;
	unsigned old;

	if (r)
		return r;
	if (index >= ctx->n_devices || index >= SIM_HEALTH_CARDS || action > MIG_GPU_RECOVERY_ACTION_DRAIN_AND_RESET)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	if (!ctx->vendor->recovery_action_field)
		return sim_leave(&call, MIG_ERROR_NOT_SUPPORTED);
	c = &ctx->health->cards[index];
	if (action == MIG_GPU_RECOVERY_ACTION_NONE)
		for (unsigned t = 0; t < 2; t++)
			for (unsigned l = 0; l < MIG_MEMORY_LOCATION_COUNT; l++)
				__atomic_store_n(&c->ecc[t][MIG_ECC_COUNTER_VOLATILE][l], 0, __ATOMIC_RELAXED);
	old = __atomic_exchange_n(&c->recovery_action, action, __ATOMIC_ACQ_REL);
	if (old != action) {
		/* Xid 154, "GPU recovery action changed", then the event that carries the new action. */
		sim_health_raise(ctx->health, ctx->health_wake, index, MIG_EVENT_TYPE_XID_CRITICAL_ERROR, 154,
		                 MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE);
		if (ctx->vendor->event_types & MIG_EVENT_TYPE_GPU_RECOVERY_ACTION)
			sim_health_raise(ctx->health, ctx->health_wake, index, MIG_EVENT_TYPE_GPU_RECOVERY_ACTION,
			                 action, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE);
	}
	return sim_leave(&call, MIG_SUCCESS);
}
