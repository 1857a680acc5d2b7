/* SPDX-License-Identifier: MIT */
/*
 * One card as the partition engine talks to it: the family's driver
 * library, the card's handle, and where its device nodes and capability
 * records live.  The engine's files (catalog.c, inventory.c, devnodes.c,
 * carve.c) take a card and nothing vendor-specific.
 */
#ifndef ACCEL_CARD_H
#define ACCEL_CARD_H

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"

struct accel_ci_cache;

struct accel_card {
	const struct accel_family *family;
	struct mig_lib *lib;
	mig_device_t handle;
	char name[16]; /* "ppu3", for messages */
	unsigned ordinal;
	unsigned minor;
	const char *dev_root;  /* "/dev" */
	const char *proc_root; /* "/proc" */
	/* Bounded retry of a destroy the driver calls busy. */
	unsigned busy_retries;
	unsigned busy_delay_ms;
	/*
	 * What compute-instance profiles a GPU instance of each profile takes:
	 * fixed while the MIG mode holds, so probed once (core/driver/inventory.h).
	 * NULL: probe every time.  Guarded like the card.
	 */
	struct accel_ci_cache *ci_cache;
};

#endif
