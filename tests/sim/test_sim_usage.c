/* SPDX-License-Identifier: MIT */
/*
 * The simulators' utilization seam (sim/common/sim_api_usage.c) through the
 * product's own seam: GPM support, a sample pair answering the rates set,
 * the refusals of GpmMetricsGet (two targets, a second sample not later,
 * another version), a metric not simulated answering in its own result, a
 * card without GPM, the energy counter, MIG memory, and HGML without any.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/sim/sim_fixture.h"

static mig_return_t metrics(struct sim_fixture *fx, mig_gpm_sample_t a, mig_gpm_sample_t b, unsigned version,
                            mig_gpm_metrics_get_t *m)
{
	static const unsigned ids[4] = { MIG_GPM_METRIC_SM_UTIL, MIG_GPM_METRIC_SM_OCCUPANCY,
		                         MIG_GPM_METRIC_DRAM_BW_UTIL, 5 /* ANY_TENSOR_UTIL: not simulated */ };

	memset(m, 0, sizeof(*m));
	m->version = version;
	m->numMetrics = 4;
	m->sample1 = a;
	m->sample2 = b;
	for (unsigned i = 0; i < 4; i++)
		m->metrics[i].metricId = ids[i];
	return fx->lib.GpmMetricsGet(m);
}

static void nvidia_gpm_and_energy(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_gpm_support_t support = { .version = MIG_GPM_SUPPORT_VERSION };
	mig_gpm_sample_t a, b, c;
	mig_gpm_metrics_get_t m;
	unsigned long long mj = 1;

	assert_int_equal(fx->lib.GpmQueryDeviceSupport(dev, &support), MIG_SUCCESS);
	assert_int_equal(support.isSupportedDevice, 1);
	support.version = 2;
	assert_int_equal(fx->lib.GpmQueryDeviceSupport(dev, &support), MIG_ERROR_ARGUMENT_VERSION_MISMATCH);
	assert_int_equal(FX_CONTROL(fx, SimSetUsage)(0, MIG_EVENT_NO_INSTANCE, 5000, 2500, 1250, 0), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleAlloc(&a), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleAlloc(&b), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleAlloc(&c), MIG_SUCCESS);
	assert_int_equal(metrics(fx, a, b, MIG_GPM_METRICS_GET_VERSION, &m), MIG_ERROR_INVALID_ARGUMENT); /* unfilled */
	assert_int_equal(fx->lib.GpmSampleGet(dev, a), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleGet(dev, b), MIG_SUCCESS);
	assert_int_equal(metrics(fx, a, b, MIG_GPM_METRICS_GET_VERSION, &m), MIG_SUCCESS);
	assert_int_equal(m.metrics[0].nvmlReturn, MIG_SUCCESS);
	assert_true(m.metrics[0].value > 49.99 && m.metrics[0].value < 50.01);
	assert_true(m.metrics[1].value > 24.99 && m.metrics[1].value < 25.01);
	assert_true(m.metrics[2].value > 12.49 && m.metrics[2].value < 12.51);
	assert_int_equal(m.metrics[3].nvmlReturn, MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(metrics(fx, b, a, MIG_GPM_METRICS_GET_VERSION, &m), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(metrics(fx, a, b, 2, &m), MIG_ERROR_ARGUMENT_VERSION_MISMATCH);
	/* An instance id no GPU instance has; a pair of two targets. */
	assert_int_equal(fx->lib.GpmMigSampleGet(dev, 15, c), MIG_ERROR_NOT_FOUND);
	/* A card without GPM. */
	assert_int_equal(FX_CONTROL(fx, SimSetGpmSupport)(0, 0), MIG_SUCCESS);
	support.version = MIG_GPM_SUPPORT_VERSION;
	assert_int_equal(fx->lib.GpmQueryDeviceSupport(dev, &support), MIG_SUCCESS);
	assert_int_equal(support.isSupportedDevice, 0);
	assert_int_equal(fx->lib.GpmSampleGet(dev, c), MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(FX_CONTROL(fx, SimSetGpmSupport)(0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleFree(a), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleFree(b), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpmSampleFree(c), MIG_SUCCESS);
	/* The energy counter is what was set, in millijoules. */
	assert_int_equal(FX_CONTROL(fx, SimSetEnergy)(0, 2429958), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetTotalEnergyConsumption(dev, &mj), MIG_SUCCESS);
	assert_int_equal(mj, 2429958);
	assert_int_equal(FX_CONTROL(fx, SimSetUsage)(0, 16, 0, 0, 0, 0), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(FX_CONTROL(fx, SimSetUsage)(0, 0, 10001, 0, 0, 0), MIG_ERROR_INVALID_ARGUMENT);
}

static void thead_has_none(void **state)
{
	struct sim_fixture *fx = *state;

	/* T-Head's documents name no GPM or energy call: the library exports none, and the seam finds none. */
	assert_null(fx->lib.GpmSampleAlloc);
	assert_null(fx->lib.GpmMigSampleGet);
	assert_null(fx->lib.GpmMetricsGet);
	assert_null(fx->lib.DeviceGetTotalEnergyConsumption);
	assert_non_null(fx->lib.DeviceGetMemoryInfo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(nvidia_gpm_and_energy, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(thead_has_none, fx_setup_thead, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
