/* SPDX-License-Identifier: MIT */
/* The words of health: states, recovery actions, and the text of the `health` files. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/health.h"
#include "core/health_xid.h"
#include "core/mig_abi.h"
#include "core/utc.h"

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

struct out {
	char *buf;
	size_t len, used;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->used + 1 >= o->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used = o->used + (size_t)n < o->len ? o->used + (size_t)n : o->len - 1;
}

size_t accel_health_text(const struct accel_health *h, bool device, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	bool fault = h->state == ACCEL_HEALTH_DEGRADED || h->state == ACCEL_HEALTH_FAILED;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (h->state == ACCEL_HEALTH_OK)
		put(&o, "ok\n");
	else
		put(&o, "%s: %s\n", accel_health_state_str(h->state), h->why);
	if (fault) {
		if (h->xid)
			put(&o, "xid: %u\nmeaning: %s\n", h->xid, accel_xid_meaning(h->xid)->meaning);
		put(&o, "recovery: %s (%s)\n", accel_health_action_name(h->action),
		    accel_health_action_advice(h->action));
		if (h->since > 0) {
			char when[ACCEL_UTC_MAX];

			accel_utc(h->since, when, sizeof(when));
			put(&o, "time: %s\n", when);
		}
		if (h->gi == MIG_EVENT_NO_INSTANCE)
			put(&o, "scope: card\njobs touched: %s\n", h->touched[0] ? h->touched : "none");
		else if (h->ci == MIG_EVENT_NO_INSTANCE)
			put(&o, "scope: gpu instance %u\n", h->gi);
		else
			put(&o, "scope: gpu instance %u compute instance %u\n", h->gi, h->ci);
	}
	put(&o, "events: %llu", accel_health_events(h));
	for (size_t i = 0; i < ACCEL_HEALTH_XIDS && h->counts[i].events; i++)
		put(&o, "%sxid%u=%llu", i ? " " : " (", h->counts[i].xid, h->counts[i].events);
	put(&o, "%s\n", h->counts[0].events ? ")" : "");
	if (device && h->ecc_known)
		put(&o, "ecc: corrected=%llu uncorrected=%llu (volatile)\n", h->ecc_corrected, h->ecc_uncorrected);
	return o.used;
}
