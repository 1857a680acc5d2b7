/* SPDX-License-Identifier: MIT */
/*
 * hw-usage-probe [gpu|ppu]: what the utilization seam (core/model/mig_abi.h's
 * MIG_ABI_USAGE_FUNCTIONS) answers on card 0, through the daemon's loader.
 * Read-only: it allocates two GPM samples, takes them a second apart, asks
 * for the metrics accelfs shows, frees them, reads the energy counter twice
 * and the memory; nothing is created, enabled or reset.  One line each:
 *
 *   gpm support: SUCCESS isSupportedDevice=1
 *   gpm card window: SUCCESS 1000 ms
 *   metric 2: SUCCESS 0.000000
 *   gpm mig sample gi 0: INVALID_ARGUMENT
 *   energy: SUCCESS 2429958 mJ -> 2581956 mJ over 2004 ms = 75.8 W
 *   memory: SUCCESS used=644939776 total=150754820096
 *
 * Exit 0 when every call that should answer did, 1 otherwise, 2 when the
 * library could not be loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int gpm(struct mig_lib *lib, mig_device_t dev)
{
	static const unsigned ids[] = { MIG_GPM_METRIC_SM_UTIL, MIG_GPM_METRIC_SM_OCCUPANCY,
		                        MIG_GPM_METRIC_DRAM_BW_UTIL };
	mig_gpm_support_t support = { .version = MIG_GPM_SUPPORT_VERSION };
	mig_gpm_sample_t a = NULL, b = NULL, c = NULL;
	mig_gpm_metrics_get_t m;
	long long t0, t1;
	mig_return_t r;
	int bad = 0;

	if (!lib->GpmQueryDeviceSupport || !lib->GpmSampleAlloc || !lib->GpmSampleGet || !lib->GpmMetricsGet ||
	    !lib->GpmSampleFree || !lib->GpmMigSampleGet) {
		printf("gpm: the library lacks a GPM call\n");
		return 1;
	}
	r = lib->GpmQueryDeviceSupport(dev, &support);
	printf("gpm support: %s isSupportedDevice=%u\n", mig_return_name(r), support.isSupportedDevice);
	bad |= r != MIG_SUCCESS;
	if (lib->GpmSampleAlloc(&a) || lib->GpmSampleAlloc(&b) || lib->GpmSampleAlloc(&c)) {
		printf("gpm: cannot allocate samples\n");
		return 1;
	}
	t0 = now_ms();
	r = lib->GpmSampleGet(dev, a);
	nap_ms(1000);
	t1 = now_ms();
	if (r == MIG_SUCCESS)
		r = lib->GpmSampleGet(dev, b);
	printf("gpm card window: %s %lld ms\n", mig_return_name(r), t1 - t0);
	bad |= r != MIG_SUCCESS;
	memset(&m, 0, sizeof(m));
	m.version = MIG_GPM_METRICS_GET_VERSION;
	m.numMetrics = 3;
	m.sample1 = a;
	m.sample2 = b;
	for (unsigned i = 0; i < 3; i++)
		m.metrics[i].metricId = ids[i];
	r = lib->GpmMetricsGet(&m);
	printf("gpm metrics: %s\n", mig_return_name(r));
	bad |= r != MIG_SUCCESS;
	for (unsigned i = 0; r == MIG_SUCCESS && i < 3; i++) {
		printf("metric %u: %s %f\n", ids[i], mig_return_name(m.metrics[i].nvmlReturn), m.metrics[i].value);
		bad |= m.metrics[i].nvmlReturn != MIG_SUCCESS;
	}
	/* With MIG off there is no GPU instance: what the driver says of one (the H200: INVALID_ARGUMENT). */
	r = lib->GpmMigSampleGet(dev, 0, c);
	printf("gpm mig sample gi 0: %s\n", mig_return_name(r));
	lib->GpmSampleFree(a);
	lib->GpmSampleFree(b);
	lib->GpmSampleFree(c);
	return bad;
}

int main(int argc, char **argv)
{
	const struct accel_family *f = accel_family_by_prefix(argc > 1 ? argv[1] : "gpu");
	unsigned long long e0 = 0, e1 = 0;
	struct mig_lib lib;
	mig_device_t dev;
	mig_memory_t mem;
	char err[512];
	long long t0, t1;
	mig_return_t r;
	int bad = 0;

	if (!f) {
		fprintf(stderr, "usage: hw-usage-probe [gpu|ppu]\n");
		return 2;
	}
	memset(&lib, 0, sizeof(lib));
	if (accel_family_open_lib(f, getenv("ACCELFS_LIBRARY"), &lib, err, sizeof(err))) {
		fprintf(stderr, "hw-usage-probe: %s\n", err);
		return 2;
	}
	r = lib.DeviceGetHandleByIndex_v2(0, &dev);
	if (r != MIG_SUCCESS) {
		fprintf(stderr, "hw-usage-probe: card 0: %s\n", mig_return_name(r));
		mig_lib_close(&lib);
		return 2;
	}
	bad |= gpm(&lib, dev);
	if (!lib.DeviceGetTotalEnergyConsumption) {
		printf("energy: the library lacks DeviceGetTotalEnergyConsumption\n");
		bad = 1;
	} else {
		t0 = now_ms();
		r = lib.DeviceGetTotalEnergyConsumption(dev, &e0);
		nap_ms(2000);
		t1 = now_ms();
		if (r == MIG_SUCCESS)
			r = lib.DeviceGetTotalEnergyConsumption(dev, &e1);
		printf("energy: %s %llu mJ -> %llu mJ over %lld ms = %.1f W\n", mig_return_name(r), e0, e1, t1 - t0,
		       r == MIG_SUCCESS && t1 > t0 ? (double)(e1 - e0) / (double)(t1 - t0) : 0.0);
		bad |= r != MIG_SUCCESS;
	}
	r = lib.DeviceGetMemoryInfo ? lib.DeviceGetMemoryInfo(dev, &mem) : MIG_ERROR_FUNCTION_NOT_FOUND;
	printf("memory: %s used=%llu total=%llu\n", mig_return_name(r), r == MIG_SUCCESS ? mem.used : 0,
	       r == MIG_SUCCESS ? mem.total : 0);
	bad |= r != MIG_SUCCESS;
	mig_lib_close(&lib);
	return bad;
}
