/* SPDX-License-Identifier: MIT */
/*
 * Discovery: which profiles a card offers, read from the driver and never
 * computed.  Every profile index below the API's count is probed, and the
 * id the driver returns is carried; an index is not an id.  A profile is
 * offered only when its name round-trips through the normalizer, it is not
 * a +me/+gfx variant, and the driver lists at least one legal placement (the
 * span comes from those records, never from a slice count).
 */
#ifndef ACCEL_CATALOG_H
#define ACCEL_CATALOG_H

#include <stddef.h>

#include "core/driver/card.h"
#include "core/model/model.h"

struct accel_catalog_drop {
	unsigned index;
	unsigned id;
	char raw[96];
	char why[160];
	bool warn; /* a nameless or unplaceable profile is worth a warning; a variant is not */
};

struct accel_catalog {
	struct accel_profile *profiles;
	size_t n_profiles;
	/* Every profile id the driver answered, offered or not: instances of
	 * dropped profiles (carved by hand) still occupy slices. */
	unsigned *all_ids;
	size_t n_ids;
	struct accel_catalog_drop *drops;
	size_t n_drops;
};

/* Names a profile directory may not take: files beside it in mig/. */
bool accel_catalog_name_reserved(const char *name);

/*
 * Probe the card.  Returns 0 (possibly with no profiles: MIG off reads as
 * an empty catalogue), or -errno with err set when the driver answered
 * something other than "absent" for an index.
 */
int accel_catalog_probe(const struct accel_card *card, struct accel_catalog *out, char *err, size_t errlen);
void accel_catalog_clear(struct accel_catalog *c);

/* Is this raw result one that means "no profile at this index"? */
bool accel_catalog_absent(mig_return_t r);

#endif
