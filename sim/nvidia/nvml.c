/* SPDX-License-Identifier: MIT */
/*
 * libnvidia-ml.so.1: the simulated NVML, found by the loader path like the
 * real one (LD_LIBRARY_PATH=<builddir>/sim/nvidia) or loaded by path.
 */
#include "sim/common/sim_ctx.h"
#include "sim/common/sim_vendor.h"

static struct sim_ctx nvml_ctx = SIM_CTX_INITIALIZER(sim_vendor_nvidia);

#define SIM_PREFIX nvml
#define SIM_CTX nvml_ctx
#include "sim/common/sim_exports.h"
