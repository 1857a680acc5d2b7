/* SPDX-License-Identifier: MIT */
/*
 * Reconciliation: the records say what accelfs made, the driver says what
 * exists; this decides what each job's state is and what to clean up.  It
 * is a pure function (no driver, no disk, no clock) so every rule can be
 * unit tested:
 *
 *  - a record whose instance is live (same GI id, profile, placement and
 *    MIG UUID: GI ids are reused) is a ready job;
 *  - a record whose instance is gone is a lost job: it fails closed;
 *  - a record caught half-removed (a crash, or a destroy the driver
 *    refused) is finished (destroy if still there, then drop the record),
 *    never resurrected; until then it still owns its GPU instance, even one
 *    whose compute instance its own removal already destroyed;
 *  - a live instance no record accounts for is accelfs's own when an intent
 *    names it (core/state/intent.h: a carve cut between the driver's create and
 *    the record, a job forgotten on an absent card): an orphan, reclaimed
 *    once it has been seen for the grace period and its card is idle;
 *  - any other is foreign (made by an operator, mig-parted, another tool):
 *    shown, taken, and kept, unless the operator asked for foreign
 *    instances to be reclaimed (foreign_reclaim), then as an orphan is;
 *  - nothing is reclaimed while a card's records are unreadable (ownership
 *    there is unknowable);
 *  - an intent that names no live instance nobody else owns is spent: the
 *    caller drops it (intent_live false);
 *  - a job's GPU instance with more than one compute instance was
 *    subdivided by hand: its card is refused (no carving, no orphan
 *    reclaim) until it is back to one, and only that card;
 *  - a GPU instance no job owns that is subdivided (several compute
 *    instances, or one covering part of it: accel_live_gi_subdivided) is
 *    someone's devices: shown, taken, never reclaimed, and it refuses
 *    nothing (the rest of the card carves as usual).
 */
#ifndef ACCEL_RECONCILE_H
#define ACCEL_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/state/intent.h"
#include "core/driver/inventory.h"
#include "core/state/record.h"

/* An unmanaged GPU instance and when it was first seen. */
struct accel_orphan_seen {
	unsigned gi;
	unsigned profile_id;
	struct accel_span placement;
	int64_t first_seen_ms;
};

enum accel_action_kind {
	ACCEL_ACTION_RECLAIM_ORPHAN,  /* destroy gi (expecting profile/placement); ours: record is its intent */
	ACCEL_ACTION_RECLAIM_FOREIGN, /* destroy gi (expecting profile/placement/uuid): not ours, asked for */
	ACCEL_ACTION_FINISH_REMOVAL,  /* destroy record's instance, then delete the record */
	ACCEL_ACTION_DELETE_RECORD,   /* a removing record whose instance is already gone */
};

struct accel_action {
	enum accel_action_kind kind;
	size_t record; /* index into the input records (FINISH_REMOVAL, DELETE_RECORD), intents (RECLAIM_ORPHAN) */
	unsigned gi;
	unsigned profile_id;
	struct accel_span placement;
	unsigned n_ci;             /* what it carries (RECLAIM_*), for the log and the identity check */
	unsigned ci;               /* its compute instance, when it has one */
	char uuid[ACCEL_UUID_MAX]; /* its MIG UUID, when it has one compute instance */
};

struct accel_reconcile_in {
	const struct accel_record *records;
	size_t n_records;
	bool records_unreadable;
	const struct accel_inventory *inv;
	const struct accel_orphan_seen *seen; /* from the previous pass */
	size_t n_seen;
	int64_t now_ms;
	int64_t grace_ms;
	const struct accel_intent *intents; /* what accelfs set out to make and no record names yet */
	size_t n_intents;
	bool foreign_reclaim; /* the operator asked for foreign instances to be reclaimed (default: kept) */
	bool card_idle;       /* nobody holds the card's device nodes */
	bool read_only;       /* the daemon observes only: say what would be done, do nothing */
};

struct accel_reconcile_out {
	/* Per input record: its job state. */
	enum accel_job_state *state;
	char (*reason)[ACCEL_TEXT_MAX];
	/* Per live GI (inventory order): the record index owning it, or -1. */
	long *owner;
	char (*note)[160];
	bool *foreign; /* per live GI: made by nobody accelfs knows of */
	/* Per input intent: it names a live instance no record owns (false: spent, drop it). */
	bool *intent_live;
	struct accel_orphan_seen *seen; /* the tracker for the next pass */
	size_t n_seen;
	struct accel_action *actions;
	size_t n_actions;
	bool refused;
	char refusal[512];
};

int accel_reconcile(const struct accel_reconcile_in *in, struct accel_reconcile_out *out);
void accel_reconcile_clear(struct accel_reconcile_out *out);

#endif
