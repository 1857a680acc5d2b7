/* SPDX-License-Identifier: MIT */
/* The words of health: states and recovery actions (the `health` files' text is fs/health_text.c's). */
#include "core/model/health.h"
#include "core/model/health_xid.h"
#include "core/model/mig_abi.h"

const char *accel_health_state_str(enum accel_health_state s)
{
	switch (s) {
	case ACCEL_HEALTH_OK:
		return "ok";
	case ACCEL_HEALTH_UNKNOWN:
		return "unknown";
	case ACCEL_HEALTH_DEGRADED:
		return "degraded";
	case ACCEL_HEALTH_FAILED:
		return "failed";
	}
	return "unknown";
}

const char *accel_health_action_name(unsigned action)
{
	switch (action) {
	case MIG_GPU_RECOVERY_ACTION_NONE:
		return "NONE";
	case MIG_GPU_RECOVERY_ACTION_GPU_RESET:
		return "GPU_RESET";
	case MIG_GPU_RECOVERY_ACTION_NODE_REBOOT:
		return "NODE_REBOOT";
	case MIG_GPU_RECOVERY_ACTION_DRAIN_P2P:
		return "DRAIN_P2P";
	case MIG_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
		return "DRAIN_AND_RESET";
	case ACCEL_HEALTH_ACTION_UNKNOWN:
		return "unknown";
	}
	return "UNRECOGNIZED";
}

const char *accel_health_action_advice(unsigned action)
{
	switch (action) {
	case MIG_GPU_RECOVERY_ACTION_NONE:
		return "nothing to do on the card";
	case MIG_GPU_RECOVERY_ACTION_GPU_RESET:
		return "stop every job on the card, then reset the GPU";
	case MIG_GPU_RECOVERY_ACTION_NODE_REBOOT:
		return "drain the node, then reboot it";
	case MIG_GPU_RECOVERY_ACTION_DRAIN_P2P:
		return "stop peer-to-peer traffic, then look again";
	case MIG_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
		return "let running jobs finish, start no new one, then reset the GPU";
	case ACCEL_HEALTH_ACTION_UNKNOWN:
		return "the driver does not say: see docs/operations.md";
	}
	return "an action accelfs does not know: see the driver's documentation";
}

enum accel_health_state accel_health_action_state(unsigned action)
{
	switch (action) {
	case MIG_GPU_RECOVERY_ACTION_NONE:
	case ACCEL_HEALTH_ACTION_UNKNOWN:
		return ACCEL_HEALTH_OK;
	case MIG_GPU_RECOVERY_ACTION_DRAIN_P2P:
		return ACCEL_HEALTH_DEGRADED;
	default:
		return ACCEL_HEALTH_FAILED;
	}
}

unsigned long long accel_health_events(const struct accel_health *h)
{
	unsigned long long n = 0;

	for (size_t i = 0; i < ACCEL_HEALTH_XIDS; i++)
		n += h->counts[i].events;
	return n;
}
