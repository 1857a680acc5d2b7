/* SPDX-License-Identifier: MIT */
/* What a GPU instance or a card uses, asked of its driver (core/driver/usage.h). */
#include "core/driver/usage.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void driver_failed(char *why, size_t len, const struct accel_usage_target *t, const char *what, mig_return_t r)
{
	snprintf(why, len, "%s: %s failed: %s (%s)", t->card_name, what, mig_lib_strerror(t->lib, r),
	         mig_return_name(r));
}

static void missing(char *why, size_t len, const struct accel_usage_target *t, const char *fn, const char *what)
{
	snprintf(why, len, "%s has no %s%s: the driver library cannot say %s", t->lib->path, t->lib->prefix, fn, what);
}

void accel_usage_sms(const struct accel_device *d, const struct accel_job *j, unsigned *sms, unsigned *card_sms)
{
	*sms = 0;
	*card_sms = 0;
	for (size_t i = 0; i < d->n_profiles; i++) {
		const struct accel_profile *p = &d->profiles[i];

		if (p->multiprocessors > *card_sms)
			*card_sms = p->multiprocessors;
		if (j && p->id == j->profile_id)
			*sms = p->multiprocessors;
	}
	if (!j)
		*sms = *card_sms;
}

void accel_usage_probe_init(struct accel_usage_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->prev = -1;
	p->mig_index = UINT_MAX;
	accel_usage_unknown(p, "not sampled yet: the next reading shows it");
}

void accel_usage_probe_free(struct accel_usage_probe *p)
{
	for (int i = 0; i < 2; i++)
		if (p->buf[i] && p->lib && p->lib->GpmSampleFree)
			p->lib->GpmSampleFree(p->buf[i]);
	p->buf[0] = p->buf[1] = NULL;
	p->prev = -1;
}

void accel_usage_unknown(struct accel_usage_probe *p, const char *why)
{
	struct accel_usage *u = &p->last;

	u->gpm = u->memory = u->energy = false;
	snprintf(u->gpm_why, sizeof(u->gpm_why), "%s", why);
	snprintf(u->memory_why, sizeof(u->memory_why), "%s", why);
	snprintf(u->energy_why, sizeof(u->energy_why), "%s", why);
}

/* Can this target be sampled at all?  Asked once per probe: the library's calls, then the card's answer. */
static bool gpm_usable(struct accel_usage_probe *p, const struct accel_usage_target *t)
{
	const struct mig_lib *lib = t->lib;
	const char *fn = !lib->GpmSampleAlloc              ? "GpmSampleAlloc"
	                 : !lib->GpmMetricsGet             ? "GpmMetricsGet"
	                 : t->mig && !lib->GpmMigSampleGet ? "GpmMigSampleGet"
	                 : !t->mig && !lib->GpmSampleGet   ? "GpmSampleGet"
	                 : !lib->GpmQueryDeviceSupport     ? "GpmQueryDeviceSupport"
	                                                   : NULL;

	if (p->support_asked)
		return p->supported;
	p->lib = lib;
	if (fn) {
		missing(p->support_why, sizeof(p->support_why), t, fn, "SM activity (GPU performance monitoring)");
	} else {
		mig_gpm_support_t s = { .version = MIG_GPM_SUPPORT_VERSION };
		mig_return_t r = lib->GpmQueryDeviceSupport(t->card, &s);

		if (r != MIG_SUCCESS) {
			driver_failed(p->support_why, sizeof(p->support_why), t, "asking for GPM support", r);
			return false; /* asked again next time: a failure is not an answer */
		}
		p->supported = s.isSupportedDevice != 0;
		if (!p->supported)
			snprintf(p->support_why, sizeof(p->support_why),
			         "%s has no GPU performance monitoring (GPM needs a Hopper or later card)",
			         t->card_name);
	}
	p->support_asked = true;
	return p->supported;
}

/* Sample into the buffer that is not prev: its index, or -1 with why in u. */
static int take_sample(struct accel_usage_probe *p, const struct accel_usage_target *t, struct accel_usage *u)
{
	int b = p->prev == 0 ? 1 : 0;
	mig_return_t r = MIG_SUCCESS;

	if (!p->buf[b])
		r = t->lib->GpmSampleAlloc(&p->buf[b]);
	if (r != MIG_SUCCESS) {
		driver_failed(u->gpm_why, sizeof(u->gpm_why), t, "allocating a GPM sample", r);
		return -1;
	}
	r = t->mig ? t->lib->GpmMigSampleGet(t->card, t->gi, p->buf[b]) : t->lib->GpmSampleGet(t->card, p->buf[b]);
	if (r != MIG_SUCCESS) {
		char what[64];

		snprintf(what, sizeof(what), t->mig ? "sampling GPU instance %u" : "sampling the card", t->gi);
		driver_failed(u->gpm_why, sizeof(u->gpm_why), t, what, r);
		return -1;
	}
	return b;
}

/* The window between buf[prev] and buf[cur] into u; false with why in u. */
static bool window(struct accel_usage_probe *p, const struct accel_usage_target *t, int cur, struct accel_usage *u)
{
	static const unsigned ids[3] = { MIG_GPM_METRIC_SM_UTIL, MIG_GPM_METRIC_SM_OCCUPANCY,
		                         MIG_GPM_METRIC_DRAM_BW_UTIL };
	double *out[3] = { &u->sm_activity, &u->sm_occupancy, &u->dram_bandwidth };
	mig_gpm_metrics_get_t m;
	mig_return_t r;

	memset(&m, 0, sizeof(m));
	m.version = MIG_GPM_METRICS_GET_VERSION;
	m.numMetrics = 3;
	m.sample1 = p->buf[p->prev];
	m.sample2 = p->buf[cur];
	for (unsigned i = 0; i < 3; i++)
		m.metrics[i].metricId = ids[i];
	r = t->lib->GpmMetricsGet(&m);
	if (r != MIG_SUCCESS) {
		driver_failed(u->gpm_why, sizeof(u->gpm_why), t, "computing GPM metrics", r);
		return false;
	}
	for (unsigned i = 0; i < 3; i++) {
		if (m.metrics[i].nvmlReturn != MIG_SUCCESS) {
			driver_failed(u->gpm_why, sizeof(u->gpm_why), t, "reading a GPM metric",
			              m.metrics[i].nvmlReturn);
			return false;
		}
		*out[i] = m.metrics[i].value;
	}
	return true;
}

static void gpm_step(struct accel_usage_probe *p, const struct accel_usage_target *t, int64_t now_ms, int64_t now_s)
{
	struct accel_usage *u = &p->last;
	int cur;

	u->gpm = false;
	if (!gpm_usable(p, t)) {
		snprintf(u->gpm_why, sizeof(u->gpm_why), "%s", p->support_why);
		return;
	}
	cur = take_sample(p, t, u);
	if (cur < 0)
		return;
	if (p->prev >= 0 && window(p, t, cur, u)) {
		u->gpm = true;
		u->window_ms = now_ms - p->prev_ms;
		if (!u->observed_since)
			u->observed_since = now_s - (u->window_ms + 999) / 1000;
		u->observed_ms += u->window_ms;
		p->sm_weighted += u->sm_activity * (double)u->window_ms;
		u->sm_activity_mean = u->observed_ms > 0 ? p->sm_weighted / (double)u->observed_ms : u->sm_activity;
		if (u->sm_activity > u->sm_activity_peak)
			u->sm_activity_peak = u->sm_activity;
	} else if (p->prev < 0) {
		snprintf(u->gpm_why, sizeof(u->gpm_why),
		         "the first sample was taken now: the next reading has a window");
	}
	p->prev = cur;
	p->prev_ms = now_ms;
}

/* The MIG device handle whose UUID is t->uuid, from where it was last found, else by a walk. */
static mig_return_t mig_device(struct accel_usage_probe *p, const struct accel_usage_target *t, mig_device_t *out)
{
	char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
	unsigned max = 0;
	mig_return_t r;

	if (p->mig_index != UINT_MAX && t->lib->DeviceGetMigDeviceHandleByIndex(t->card, p->mig_index, out) == 0 &&
	    t->lib->DeviceGetUUID(*out, uuid, sizeof(uuid)) == 0 && !strcmp(uuid, t->uuid))
		return MIG_SUCCESS;
	p->mig_index = UINT_MAX;
	r = t->lib->DeviceGetMaxMigDeviceCount(t->card, &max);
	for (unsigned i = 0; r == MIG_SUCCESS && i < max; i++) {
		if (t->lib->DeviceGetMigDeviceHandleByIndex(t->card, i, out) != MIG_SUCCESS)
			continue; /* an index without a MIG device */
		r = t->lib->DeviceGetUUID(*out, uuid, sizeof(uuid));
		if (r == MIG_SUCCESS && !strcmp(uuid, t->uuid)) {
			p->mig_index = i;
			return MIG_SUCCESS;
		}
	}
	return r == MIG_SUCCESS ? MIG_ERROR_NOT_FOUND : r;
}

/* False when the job's MIG device is gone: its GPU instance id may be another job's by now. */
static bool memory_step(struct accel_usage_probe *p, const struct accel_usage_target *t)
{
	struct accel_usage *u = &p->last;
	mig_device_t dev = t->card;
	mig_memory_t m;
	mig_return_t r;

	u->memory = false;
	r = t->mig ? mig_device(p, t, &dev) : MIG_SUCCESS;
	if (r == MIG_ERROR_NOT_FOUND) {
		snprintf(u->memory_why, sizeof(u->memory_why), "%s: MIG device %s is gone", t->card_name, t->uuid);
		return false;
	}
	if (r != MIG_SUCCESS) {
		driver_failed(u->memory_why, sizeof(u->memory_why), t, "finding the MIG device", r);
		return true;
	}
	if (!t->lib->DeviceGetMemoryInfo) {
		missing(u->memory_why, sizeof(u->memory_why), t, "DeviceGetMemoryInfo", "memory use");
		return true;
	}
	r = t->lib->DeviceGetMemoryInfo(dev, &m);
	if (r != MIG_SUCCESS) {
		driver_failed(u->memory_why, sizeof(u->memory_why), t, "reading memory", r);
		return true;
	}
	u->memory = true;
	u->memory_used = m.used;
	u->memory_total = m.total;
	if (m.used > u->memory_used_peak)
		u->memory_used_peak = m.used;
	return true;
}

static void energy_step(struct accel_usage_probe *p, const struct accel_usage_target *t, int64_t now_s)
{
	struct accel_usage *u = &p->last;
	unsigned long long mj;
	mig_return_t r;

	u->energy = false;
	if (!t->lib->DeviceGetTotalEnergyConsumption) {
		missing(u->energy_why, sizeof(u->energy_why), t, "DeviceGetTotalEnergyConsumption", "energy");
		return;
	}
	if (t->mig && (!t->sms || !t->card_sms)) {
		snprintf(u->energy_why, sizeof(u->energy_why),
		         "%s: the SM counts of the instance and the card are not known", t->card_name);
		return;
	}
	r = t->lib->DeviceGetTotalEnergyConsumption(t->card, &mj);
	if (r != MIG_SUCCESS) {
		driver_failed(u->energy_why, sizeof(u->energy_why), t, "reading the energy counter", r);
		return;
	}
	if (!p->have_energy0 || mj < p->energy0_mj) { /* a counter that went back: the driver reloaded */
		p->have_energy0 = true;
		p->energy0_mj = mj;
		u->energy_since = now_s;
	}
	u->energy = true;
	u->sms = t->sms;
	u->card_sms = t->card_sms;
	u->energy_joules = (double)(mj - p->energy0_mj) / 1000.0;
	if (t->mig)
		u->energy_joules = u->energy_joules * t->sms / t->card_sms;
}

bool accel_usage_step(struct accel_usage_probe *p, const struct accel_usage_target *t, int64_t now_ms, int64_t now_s)
{
	/* The MIG device first: found by its UUID, it proves the GPU instance id is still this job's. */
	if (memory_step(p, t)) {
		gpm_step(p, t, now_ms, now_s);
	} else {
		p->last.gpm = false;
		snprintf(p->last.gpm_why, sizeof(p->last.gpm_why), "%s", p->last.memory_why);
	}
	energy_step(p, t, now_s);
	p->last_ms = now_ms;
	return p->last.gpm;
}
