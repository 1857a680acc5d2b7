/* SPDX-License-Identifier: MIT */
#include "fs/health_text.h"

#include "core/model/health_xid.h"
#include "core/model/mig_abi.h"
#include "core/model/utc.h"

void fs_health_text(struct fs_text *t, const struct accel_health *h, bool device)
{
	bool fault = h->state == ACCEL_HEALTH_DEGRADED || h->state == ACCEL_HEALTH_FAILED;

	if (h->state == ACCEL_HEALTH_OK)
		fs_put(t, "ok\n");
	else
		fs_put(t, "%s: %s\n", accel_health_state_str(h->state), h->why);
	if (fault) {
		if (h->xid)
			fs_put(t, "xid: %u\nmeaning: %s\n", h->xid, accel_xid_meaning(h->xid)->meaning);
		fs_put(t, "recovery: %s (%s)\n", accel_health_action_name(h->action),
		       accel_health_action_advice(h->action));
		if (h->since > 0) {
			char when[ACCEL_UTC_MAX];

			accel_utc(h->since, when, sizeof(when));
			fs_put(t, "time: %s\n", when);
		}
		if (h->gi == MIG_EVENT_NO_INSTANCE)
			fs_put(t, "scope: card\njobs touched: %s\n", h->touched[0] ? h->touched : "none");
		else if (h->ci == MIG_EVENT_NO_INSTANCE)
			fs_put(t, "scope: gpu instance %u\n", h->gi);
		else
			fs_put(t, "scope: gpu instance %u compute instance %u\n", h->gi, h->ci);
	}
	fs_put(t, "events: %llu", accel_health_events(h));
	for (size_t i = 0; i < ACCEL_HEALTH_XIDS && h->counts[i].events; i++)
		fs_put(t, "%sxid%u=%llu", i ? " " : " (", h->counts[i].xid, h->counts[i].events);
	fs_put(t, "%s\n", h->counts[0].events ? ")" : "");
	if (device && h->ecc_known)
		fs_put(t, "ecc: corrected=%llu uncorrected=%llu (volatile)\n", h->ecc_corrected, h->ecc_uncorrected);
}
