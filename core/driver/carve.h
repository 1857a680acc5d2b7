/* SPDX-License-Identifier: MIT */
/*
 * Carving and reclaiming one partition: a GPU instance plus the single
 * compute instance that covers all of it.  These functions hold no lock of
 * their own; the caller serializes them per card (core/engine/node.c).
 *
 * A carve either completes, with the caller's commit (the durable record)
 * done, or leaves nothing behind: every step after the GPU instance exists
 * unwinds what came before.
 */
#ifndef ACCEL_CARVE_H
#define ACCEL_CARVE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/driver/card.h"
#include "core/model/ledger.h"
#include "core/model/model.h"

struct accel_carve_result {
	unsigned gi;
	unsigned ci;
	unsigned ci_profile_id;
	struct accel_span placement;
	char uuid[ACCEL_UUID_MAX];
	unsigned mig_index;          /* where the MIG device was found, a hint for later lookups */
	struct accel_devnode *nodes; /* malloc'd; the caller owns them on success */
	size_t n_nodes;
	/* On failure: the GPU instance was made and rolling it back failed, so it is still there. */
	bool left_behind;
};

/* Runs last, with everything proven; a nonzero return rolls the carve back. */
typedef int (*accel_commit_fn)(void *ctx, const struct accel_carve_result *res, char *why, size_t whylen);

/*
 * Carve one instance of profile p given the spans in use: at legal
 * placement `want` (an index into p->placements) when want >= 0, else at
 * the lowest free one.  Returns 0, or -errno with why set:
 *   -ENOSPC  no legal placement is free, or the driver lacks resources
 *   -EIO     the driver misbehaved (wrong profile, ambiguous CI profile, ...)
 *   other    the driver's result mapped by mig_return_errno, or a node check
 */
int accel_carve(const struct accel_card *card, const struct accel_profile *p, int want, const struct accel_span *used,
                size_t n_used, accel_commit_fn commit, void *ctx, struct accel_carve_result *out, char *why,
                size_t whylen);

/* What a reclaim must find before it destroys anything: GI ids are reused. */
struct accel_expect {
	unsigned profile_id;
	struct accel_span placement;
	const char *uuid;   /* MIG UUID of its compute instance; NULL: do not check */
	unsigned ci;        /* the compute instance that carries it */
	unsigned mig_index; /* where its MIG device was last seen; UINT_MAX: unknown */
	/*
	 * Resuming a removal that already destroyed the compute instance: a GPU
	 * instance with none left (same id, profile, placement) is still ours.
	 */
	bool resume;
};

/*
 * Destroy every compute instance under GPU instance gi, then the GPU
 * instance, by id.  A destroy the driver calls busy is retried a bounded
 * number of times.  Returns 0; -ENOENT when the instance is already gone;
 * -ESTALE when gi now holds something else (nothing destroyed); -EBUSY
 * when still busy after the retries; other -errno on driver failure.
 * *progressed (may be NULL) says whether anything was destroyed, so a
 * caller knows if a failed reclaim left the instance whole or half gone.
 */
int accel_reclaim(const struct accel_card *card, unsigned gi, const struct accel_expect *expect, bool *progressed,
                  char *why, size_t whylen);

#endif
