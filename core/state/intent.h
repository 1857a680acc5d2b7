/* SPDX-License-Identifier: MIT */
/*
 * Intents: what tells accelfs's own GPU instances from every other one when
 * no record names them.  A carve writes its intent before it asks the
 * driver for the instance (which card, profile and placement, which job,
 * and the boot), and removes it once the record is written or the carve
 * rolled back whole; a job forgotten on an absent card leaves one naming
 * its instance.  So after a crash of the daemon, an instance no record
 * accounts for is accelfs's own (an orphan, reclaimed as ever) exactly when
 * an intent of this boot matches it, and foreign (never destroyed unless
 * the operator says so) otherwise.
 *
 * Bound to the boot (core/driver/boot_id.h): an instance dies with the
 * kernel, so an intent of another boot names nothing, whatever made an
 * instance at the same placement since (mig-parted at boot).  The same
 * makes a sync needless: what the daemon wrote outlives the daemon in the
 * page cache, and a crash of the kernel that could lose it takes the
 * instance too.  An intent without a boot (an accelfs before 2026-12-05)
 * matches as it did.
 *
 * Layout: a slot of <state-dir>/records/<tree prefix>/<card uuid>/intents
 * (core/state/intent_slots.h: written in place), under the key
 * <job>@<start>, beside the card's records (which are *.json: the record
 * loader never reads it).  The start is in the key because a mkdir whose
 * first carve left an instance behind carves again, elsewhere: each attempt
 * has its own intent.  When no slot is free, and for what an accelfs before
 * the slots wrote, the intent is a file of its own, <job>@<start>.intent,
 * written and read as ever.
 */
#ifndef ACCEL_INTENT_H
#define ACCEL_INTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/driver/boot_id.h"
#include "core/driver/inventory.h"
#include "core/model/ledger.h"
#include "core/model/model.h"
#include "core/state/record.h"

#define ACCEL_INTENT_VERSION 1

struct accel_intent {
	char job[ACCEL_JOB_NAME_MAX + 1];
	unsigned profile_id;
	struct accel_span placement;
	unsigned gi;               /* UINT_MAX: not known (written before the driver was asked) */
	char uuid[ACCEL_UUID_MAX]; /* "": not known */
	int64_t created;
	char boot[ACCEL_BOOT_ID_MAX]; /* the boot it was written in; "": not known (an older accelfs) */
};

/* Serialize / parse (fails closed on any missing or mistyped field, or a job that is not the file's). */
char *accel_intent_to_json(const struct accel_intent *in);
int accel_intent_parse(const char *text, const char *expect_job, long expect_start, struct accel_intent *out, char *why,
                       size_t whylen);

/* Write (creates the card's directory; a file of its own, when no slot takes it, is written durably),
 * and removal; durable says whether the removal is synced. */
int accel_intent_write(const char *state_dir, const char *family, const char *card_uuid, const struct accel_intent *in,
                       char *why, size_t whylen);
int accel_intent_remove(const char *state_dir, const char *family, const char *card_uuid, const char *job,
                        unsigned start, bool durable, char *why, size_t whylen);

/*
 * Every intent of one card.  One that cannot be read is appended to bad
 * (the path, why): the caller treats it like an unreadable record, since
 * which instances are the card's own is then unknowable.
 */
int accel_intent_load_card(const char *state_dir, const char *family, const char *card_uuid, struct accel_intent **out,
                           size_t *n_out, struct accel_record_bad **bad, size_t *n_bad);

/* Was it written in this boot (or by an accelfs before boot ids, or where the kernel does not say)? */
bool accel_intent_of_this_boot(const struct accel_intent *in);

/* Does the intent name this live GPU instance (of this boot; profile, placement, and gi and uuid where it knows them)? */
bool accel_intent_matches(const struct accel_intent *in, const struct accel_live_gi *g);

#endif
