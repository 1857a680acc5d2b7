/* SPDX-License-Identifier: MIT */
/*
 * The utilization seam of the simulated drivers (MIG_ABI_USAGE_FUNCTIONS):
 * GPM samples and metrics, the card's energy counter, and the control calls
 * a test sets them with.  What they answer lives in the health page every
 * process of the vendor maps (struct sim_usage_card, sim_health.h), so a
 * value `accel-smi sim usage` sets is what the daemon's next sample reads.
 *
 * Behaviour reproduced (docs/simulator.md):
 *   - a sample holds counters that grow at the rates set (a hardware counter
 *     integrates activity over time), so GpmMetricsGet answers the mean rate
 *     between its two samples: the rate set when both come after the set;
 *   - a GPU instance made (again) starts idle, at rate 0 and no memory used,
 *     but its id's counters are not reset: a pair whose first sample was
 *     taken from an earlier instance with that id blends the two, as a
 *     consumer keying samples by GPU instance id alone would see;
 *   - GpmMetricsGet refuses samples of two targets, or a second sample not
 *     later than the first (INVALID_ARGUMENT), and answers NOT_SUPPORTED in a
 *     metric's own nvmlReturn for a metric it does not simulate;
 *   - a card marked without GPM (`accel-smi sim gpm -i N off`) says so in
 *     GpmQueryDeviceSupport and answers NOT_SUPPORTED to its samples;
 *   - the energy counter moves only when set (millijoules).
 */
#include <stdlib.h>
#include <string.h>

#include "sim/common/sim_api.h"
#include "sim/common/sim_handles.h"
#include "sim/common/sim_health.h"

#define SAMPLE_MAGIC 0x67706d73U /* "gpms" */
#define NO_TARGET 0xFFFFFFFFU

struct mig_gpm_sample_st {
	unsigned magic;
	unsigned ordinal;
	unsigned target; /* a GPU instance id, SIM_USAGE_CARD for the card, NO_TARGET before its first Get */
	int64_t t_ns;
	uint64_t acc[3]; /* sm, occupancy, dram: hundredths of a percent times nanoseconds */
};

static struct sim_usage_card *usage_card(struct sim_ctx *ctx, unsigned ordinal)
{
	return ordinal < SIM_HEALTH_CARDS ? &ctx->health->usage[ordinal] : NULL;
}

/* What target t's counters read now. */
static void read_target(const struct sim_usage_target *t, int64_t now, uint64_t acc[3])
{
	int64_t since = __atomic_load_n(&t->set_ns, __ATOMIC_ACQUIRE);
	uint64_t dt = now > since ? (uint64_t)(now - since) : 0;

	acc[0] = t->acc_sm + (uint64_t)t->sm * dt;
	acc[1] = t->acc_occ + (uint64_t)t->occ * dt;
	acc[2] = t->acc_dram + (uint64_t)t->dram * dt;
}

/* Set target t's rates from now on (the counters keep what they had). */
static void set_target(struct sim_usage_target *t, unsigned sm, unsigned occ, unsigned dram)
{
	int64_t now = sim_health_clock_ns();
	uint64_t acc[3];

	read_target(t, now, acc);
	t->acc_sm = acc[0];
	t->acc_occ = acc[1];
	t->acc_dram = acc[2];
	t->sm = sm;
	t->occ = occ;
	t->dram = dram;
	__atomic_store_n(&t->set_ns, now, __ATOMIC_RELEASE);
}

void sim_usage_gi_made(struct sim_ctx *ctx, unsigned ordinal, unsigned gi)
{
	struct sim_usage_card *u = usage_card(ctx, ordinal);

	if (!u || gi >= SIM_MAX_GI)
		return;
	set_target(&u->targets[gi], 0, 0, 0);
	u->targets[gi].mem_used = 0;
}

unsigned long long sim_usage_memory_used(struct sim_ctx *ctx, unsigned ordinal, unsigned gi)
{
	struct sim_usage_card *u = usage_card(ctx, ordinal);

	if (!u)
		return 0;
	return __atomic_load_n(&u->targets[gi < SIM_MAX_GI ? gi : SIM_USAGE_CARD].mem_used, __ATOMIC_RELAXED);
}

mig_return_t sim_GpmSampleAlloc(struct sim_ctx *ctx, mig_gpm_sample_t *gpmSample)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmSampleAlloc, &call);

	if (r)
		return r;
	if (!gpmSample)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	*gpmSample = calloc(1, sizeof(**gpmSample));
	if (!*gpmSample)
		return sim_leave(&call, MIG_ERROR_MEMORY);
	(*gpmSample)->magic = SAMPLE_MAGIC;
	(*gpmSample)->target = NO_TARGET;
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_GpmSampleFree(struct sim_ctx *ctx, mig_gpm_sample_t gpmSample)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmSampleFree, &call);

	if (r)
		return r;
	if (!gpmSample || gpmSample->magic != SAMPLE_MAGIC)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	gpmSample->magic = 0;
	free(gpmSample);
	return sim_leave(&call, MIG_SUCCESS);
}

/* Fill s from card d's target (SIM_USAGE_CARD or a live GPU instance's id). */
static mig_return_t take(struct sim_ctx *ctx, struct sim_device *d, unsigned target, mig_gpm_sample_t s)
{
	struct sim_usage_card *u = usage_card(ctx, d->ordinal);

	if (!s || s->magic != SAMPLE_MAGIC || !u)
		return MIG_ERROR_INVALID_ARGUMENT;
	if (__atomic_load_n(&u->no_gpm, __ATOMIC_RELAXED))
		return MIG_ERROR_NOT_SUPPORTED;
	s->ordinal = d->ordinal;
	s->target = target;
	s->t_ns = sim_health_clock_ns();
	read_target(&u->targets[target], s->t_ns, s->acc);
	return MIG_SUCCESS;
}

mig_return_t sim_GpmSampleGet(struct sim_ctx *ctx, mig_device_t device, mig_gpm_sample_t gpmSample)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmSampleGet, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r)
		r = take(ctx, d, SIM_USAGE_CARD, gpmSample);
	return sim_leave(&call, r);
}

mig_return_t sim_GpmMigSampleGet(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                                 mig_gpm_sample_t gpmSample)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmMigSampleGet, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && d->mig_current != MIG_DEVICE_MIG_ENABLE)
		r = MIG_ERROR_INVALID_ARGUMENT; /* what a real H200 answers with MIG off (driver 580) */
	else if (!r && !sim_gi_by_id(d, gpuInstanceId))
		r = MIG_ERROR_NOT_FOUND;
	if (!r)
		r = take(ctx, d, gpuInstanceId, gpmSample);
	return sim_leave(&call, r);
}

mig_return_t sim_GpmMetricsGet(struct sim_ctx *ctx, mig_gpm_metrics_get_t *metricsGet)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmMetricsGet, &call);
	const struct mig_gpm_sample_st *a, *b;
	double dt;

	if (r)
		return r;
	if (!metricsGet)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	if (metricsGet->version != MIG_GPM_METRICS_GET_VERSION)
		return sim_leave(&call, MIG_ERROR_ARGUMENT_VERSION_MISMATCH);
	a = metricsGet->sample1;
	b = metricsGet->sample2;
	if (!a || !b || a->magic != SAMPLE_MAGIC || b->magic != SAMPLE_MAGIC || a->target == NO_TARGET ||
	    a->ordinal != b->ordinal || a->target != b->target || b->t_ns <= a->t_ns ||
	    metricsGet->numMetrics > MIG_GPM_METRICS_MAX)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	dt = (double)(b->t_ns - a->t_ns);
	for (unsigned i = 0; i < metricsGet->numMetrics; i++) {
		mig_gpm_metric_t *m = &metricsGet->metrics[i];
		int k = m->metricId == MIG_GPM_METRIC_SM_UTIL        ? 0
		        : m->metricId == MIG_GPM_METRIC_SM_OCCUPANCY ? 1
		        : m->metricId == MIG_GPM_METRIC_DRAM_BW_UTIL ? 2
		                                                     : -1;

		memset(&m->metricInfo, 0, sizeof(m->metricInfo));
		if (k < 0) {
			m->nvmlReturn = MIG_ERROR_NOT_SUPPORTED;
			m->value = 0;
			continue;
		}
		/* A counter that went back (a card reset) reads as a wrap: the difference modulo 2^64. */
		m->value = (double)(b->acc[k] - a->acc[k]) / dt / 100.0;
		m->nvmlReturn = MIG_SUCCESS;
	}
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_GpmQueryDeviceSupport(struct sim_ctx *ctx, mig_device_t device, mig_gpm_support_t *gpmSupport)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_GpmQueryDeviceSupport, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && !gpmSupport)
		r = MIG_ERROR_INVALID_ARGUMENT;
	else if (!r && gpmSupport->version != MIG_GPM_SUPPORT_VERSION)
		r = MIG_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (!r) {
		struct sim_usage_card *u = usage_card(ctx, d->ordinal);

		gpmSupport->isSupportedDevice = u && !__atomic_load_n(&u->no_gpm, __ATOMIC_RELAXED);
	}
	return sim_leave(&call, r);
}

mig_return_t sim_DeviceGetTotalEnergyConsumption(struct sim_ctx *ctx, mig_device_t device, unsigned long long *energy)
{
	struct sim_call call;
	mig_return_t r = sim_enter(ctx, SIM_FN_DeviceGetTotalEnergyConsumption, &call);
	struct sim_device *d;

	if (r)
		return r;
	r = sim_resolve_device(&call, device, &d);
	if (!r && (!energy || !usage_card(ctx, d->ordinal)))
		r = MIG_ERROR_INVALID_ARGUMENT;
	if (!r)
		*energy = __atomic_load_n(&usage_card(ctx, d->ordinal)->energy_mj, __ATOMIC_RELAXED);
	return sim_leave(&call, r);
}

/* ---- the control extension ---------------------------------------------- */

/* What every setter starts with: the call entered, card index's usage found (INVALID_ARGUMENT, left, when none). */
static mig_return_t control_enter(struct sim_ctx *ctx, unsigned int index, struct sim_call *call,
                                  struct sim_usage_card **u)
{
	mig_return_t r = sim_enter(ctx, SIM_FN_NONE, call);

	if (r)
		return r;
	*u = index < ctx->n_devices ? usage_card(ctx, index) : NULL;
	return *u ? MIG_SUCCESS : sim_leave(call, MIG_ERROR_INVALID_ARGUMENT);
}

mig_return_t sim_SimSetUsage(struct sim_ctx *ctx, unsigned int index, unsigned int gpuInstanceId, unsigned int sm,
                             unsigned int occupancy, unsigned int dram, unsigned long long memoryUsed)
{
	struct sim_call call;
	struct sim_usage_card *u;
	unsigned target = gpuInstanceId == MIG_EVENT_NO_INSTANCE ? SIM_USAGE_CARD : gpuInstanceId;
	mig_return_t r = control_enter(ctx, index, &call, &u);

	if (r)
		return r;
	if ((gpuInstanceId != MIG_EVENT_NO_INSTANCE && gpuInstanceId >= SIM_MAX_GI) || sm > 10000 ||
	    occupancy > 10000 || dram > 10000)
		return sim_leave(&call, MIG_ERROR_INVALID_ARGUMENT);
	set_target(&u->targets[target], sm, occupancy, dram);
	__atomic_store_n(&u->targets[target].mem_used, memoryUsed, __ATOMIC_RELAXED);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_SimSetEnergy(struct sim_ctx *ctx, unsigned int index, unsigned long long energyMj)
{
	struct sim_call call;
	struct sim_usage_card *u;
	mig_return_t r = control_enter(ctx, index, &call, &u);

	if (r)
		return r;
	__atomic_store_n(&u->energy_mj, energyMj, __ATOMIC_RELAXED);
	return sim_leave(&call, MIG_SUCCESS);
}

mig_return_t sim_SimSetGpmSupport(struct sim_ctx *ctx, unsigned int index, unsigned int supported)
{
	struct sim_call call;
	struct sim_usage_card *u;
	mig_return_t r = control_enter(ctx, index, &call, &u);

	if (r)
		return r;
	__atomic_store_n(&u->no_gpm, supported ? 0U : 1U, __ATOMIC_RELAXED);
	return sim_leave(&call, MIG_SUCCESS);
}
