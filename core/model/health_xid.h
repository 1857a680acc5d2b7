/* SPDX-License-Identifier: MIT */
/*
 * What an Xid means: NVIDIA's published catalogue of Xid errors, in our
 * words, with how bad each is for the partition that saw it.  HGML reports
 * the same numbers (T-Head's driver mirrors NVML's event calls); an Xid
 * not listed is `failed` with "an Xid not in accelfs's table", never ok.
 */
#ifndef ACCEL_HEALTH_XID_H
#define ACCEL_HEALTH_XID_H

#include "core/model/health.h"

struct accel_xid_meaning {
	unsigned xid;
	enum accel_health_state state; /* DEGRADED or FAILED */
	const char *meaning;
};

/* The meaning of xid; a catch-all entry (xid 0, FAILED) when it is not in the table. */
const struct accel_xid_meaning *accel_xid_meaning(unsigned xid);

/* Xid 154: the driver changed the recovery action it asks for (read it again). */
#define ACCEL_XID_RECOVERY_ACTION_CHANGED 154U
/* Xid 79: the card fell off the bus. */
#define ACCEL_XID_FELL_OFF_BUS 79U

#endif
