/* SPDX-License-Identifier: MIT */
#include "core/engine/rmdir_guard.h"

#include "core/model/log.h"
#include "core/engine/metrics.h"

int accel_job_rmdir(struct accel_node *node, struct accel_attach *reg, const char *device, const char *profile,
                    const char *job, const char *uuid, char *why, size_t whylen)
{
	int ret;

	if (reg) {
		ret = accel_attach_rmdir_begin(reg, job, uuid, why, whylen);
		if (ret) {
			accel_node_report(node, device, profile, false, why);
			/* The user's own command met a job in use: a notice, and a reclaim that failed as busy. */
			log_notice("%s/%s: rmdir %s refused: %s", device, profile, job, why);
			accel_metrics_reclaim(ret, 0);
			return ret;
		}
	}
	ret = accel_node_rmdir_instance(node, device, profile, job, uuid, why, whylen);
	if (reg)
		accel_attach_rmdir_end(reg, job, uuid, ret == 0);
	return ret;
}
