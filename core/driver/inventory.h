/* SPDX-License-Identifier: MIT */
/*
 * What is carved on a card right now, read from the driver: every GPU
 * instance of every profile id the driver knows (offered or not), the
 * compute instances under each, and the MIG UUID of each compute instance.
 * This, not anything remembered, is what the ledger and the reconciler
 * work from.
 */
#ifndef ACCEL_INVENTORY_H
#define ACCEL_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/driver/card.h"
#include "core/model/ledger.h"
#include "core/model/model.h"

#define ACCEL_MAX_CI_PER_GI 8

struct accel_live_ci {
	unsigned id;
	unsigned profile_id;
	bool partial; /* its profile covers part of the GPU instance (made by hand: accelfs's cover it all) */
	char uuid[ACCEL_UUID_MAX];
};

struct accel_live_gi {
	unsigned id;
	unsigned profile_id;
	struct accel_span placement;
	unsigned n_ci;
	struct accel_live_ci ci[ACCEL_MAX_CI_PER_GI];
};

struct accel_inventory {
	struct accel_live_gi *gis;
	size_t n_gis;
};

int accel_inventory_read(const struct accel_card *card, const unsigned *profile_ids, size_t n_ids,
                         struct accel_inventory *out, char *err, size_t errlen);
void accel_inventory_clear(struct accel_inventory *inv);
const struct accel_live_gi *accel_inventory_gi(const struct accel_inventory *inv, unsigned gi);
/*
 * Is the GPU instance subdivided: more than one compute instance, or one
 * covering part of it?  Such an instance is no one device: accelfs never
 * makes one, and neither adopts nor reclaims one it finds.
 */
static inline bool accel_live_gi_subdivided(const struct accel_live_gi *g)
{
	return g->n_ci > 1 || (g->n_ci == 1 && g->ci[0].partial);
}
/* The used spans of every live GI, optionally skipping one GI id (-1: none). */
size_t accel_inventory_spans(const struct accel_inventory *inv, struct accel_span *out, size_t max);

/*
 * The distinct compute-instance profile ids a GI accepts, probed over every
 * CI profile index with shared engines (several indices can alias one id).
 * gi_profile_id is the GI's own profile: with card->ci_cache the answer is
 * probed once per GI profile and served from the cache after that.  *out
 * is the caller's to free.
 */
int accel_ci_profiles(const struct accel_card *card, mig_gpu_instance_t gi, unsigned gi_profile_id,
                      mig_compute_instance_profile_info_v2_t **out, size_t *n, char *err, size_t errlen);

struct accel_ci_cache_entry {
	unsigned gi_profile_id;
	mig_compute_instance_profile_info_v2_t *profiles;
	size_t n;
};

struct accel_ci_cache {
	struct accel_ci_cache_entry *entries;
	size_t n;
};

/* Forget everything (the MIG mode changed: the catalogue is probed again). */
void accel_ci_cache_clear(struct accel_ci_cache *c);

/*
 * The MIG UUID of compute instance (gi, ci).  The MIG device index where a
 * previous call found it (*index, UINT_MAX: unknown) is tried first; else
 * every MIG device handle is walked, and two claimants are an error.
 * *index (may be NULL) receives where it was found.
 */
int accel_mig_uuid(const struct accel_card *card, unsigned gi, unsigned ci, char *uuid, size_t len, unsigned *index,
                   char *err, size_t errlen);

#endif
