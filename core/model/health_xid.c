/* SPDX-License-Identifier: MIT */
/*
 * The Xid table.  The numbers and what they stand for are NVIDIA's public
 * Xid catalogue; the severity is ours: an Xid that only says a program on
 * the partition faulted (its own bad access, its own exception) leaves the
 * partition usable: degraded; one that says the hardware or the driver
 * lost state (ECC, the bus, the GSP, a halted micro-controller) fails it.
 */
#include "core/model/health_xid.h"

#include <stddef.h>

static const struct accel_xid_meaning table[] = {
	{ 13, ACCEL_HEALTH_DEGRADED, "graphics engine exception (usually the program's own fault)" },
	{ 31, ACCEL_HEALTH_DEGRADED, "GPU memory page fault (usually the program's illegal access)" },
	{ 32, ACCEL_HEALTH_DEGRADED, "invalid or corrupted push buffer stream" },
	{ 43, ACCEL_HEALTH_DEGRADED, "GPU stopped processing (the program's fault; the GPU stays usable)" },
	{ 45, ACCEL_HEALTH_DEGRADED, "preemptive cleanup after an earlier error (a program was stopped)" },
	{ 48, ACCEL_HEALTH_FAILED, "double-bit ECC error (uncorrectable memory error)" },
	{ 61, ACCEL_HEALTH_FAILED, "internal micro-controller breakpoint or warning" },
	{ 62, ACCEL_HEALTH_FAILED, "internal micro-controller halt" },
	{ 63, ACCEL_HEALTH_DEGRADED, "ECC page retirement or row remapping recorded" },
	{ 64, ACCEL_HEALTH_FAILED, "ECC page retirement or row remapping failed" },
	{ 68, ACCEL_HEALTH_DEGRADED, "video decoder exception" },
	{ 69, ACCEL_HEALTH_DEGRADED, "graphics engine class error" },
	{ 74, ACCEL_HEALTH_FAILED, "NVLink error" },
	{ 79, ACCEL_HEALTH_FAILED, "GPU has fallen off the bus" },
	{ 92, ACCEL_HEALTH_DEGRADED, "high single-bit ECC error rate" },
	{ 94, ACCEL_HEALTH_DEGRADED, "contained ECC error (only the programs that touched it are affected)" },
	{ 95, ACCEL_HEALTH_FAILED, "uncontained ECC error" },
	{ 109, ACCEL_HEALTH_DEGRADED, "context switch timeout" },
	{ 119, ACCEL_HEALTH_FAILED, "GSP RPC timeout" },
	{ 120, ACCEL_HEALTH_FAILED, "GSP error" },
	{ 121, ACCEL_HEALTH_FAILED, "C2C link error" },
	{ 140, ACCEL_HEALTH_FAILED, "unrecovered ECC error" },
	{ 154, ACCEL_HEALTH_DEGRADED, "GPU recovery action changed" },
};

static const struct accel_xid_meaning unlisted = { 0, ACCEL_HEALTH_FAILED,
	                                           "an Xid not in accelfs's table: treat as fatal" };

const struct accel_xid_meaning *accel_xid_meaning(unsigned xid)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].xid == xid)
			return &table[i];
	return &unlisted;
}
