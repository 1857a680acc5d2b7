/* SPDX-License-Identifier: MIT */
/*
 * libhgml.so: the simulated T-Head HGML.  It lives in a directory named
 * lib64 so that PPU_HOME=<builddir>/sim/thead makes the product's real
 * lookup ($PPU_HOME/lib64/libhgml.so) find it, with no special case.
 */
#include "sim/common/sim_ctx.h"
#include "sim/common/sim_vendor.h"

static struct sim_ctx hgml_ctx = SIM_CTX_INITIALIZER(sim_vendor_thead);

#define SIM_PREFIX hgml
#define SIM_CTX hgml_ctx
#include "sim/common/sim_exports.h"
